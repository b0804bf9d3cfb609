"""``ExperienceWrapper``: experience retrieval, injection and episode recording for one env."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs

from ..bank import ExperienceBank
from ..keys import KeyEncoder
from ..keys.base import add_batch_axis
from ..manager import ExperienceManager, resolve_manager, success_from_info
from .checks import check_finite_observation
from .injector import ExperienceInjector, TaskIdSource
from .masks import find_action_masks, mask_priors
from .spaces import experience_space

__all__ = ["ExperienceWrapper"]


class ExperienceWrapper(gym.Wrapper, RecordConstructorArgs):
    """Show retrieved experience to the agent and hand finished episodes to the manager.

    At each reset the episode is drawn experience-guided (probability
    ``manager.guided_ratio``, scheduled by :class:`~integrations.sb3.CRLCallback`) or
    experience-free. Guided episodes retrieve ``k`` entries at reset and every
    ``retrieve_every`` steps; free ones show zeros with mask 0. The observation becomes a
    Dict: the original observation (its own keys if it was a Dict, else under
    ``"observation"``) plus ``experience`` ``(k, d)``, ``experience_utility`` ``(k,)``,
    ``experience_mask`` ``(k,)`` and, with ``action_prior=True``,
    ``experience_action_prior``. ``info`` carries ``experience_guided``,
    ``experience_ids`` (the entries shown in the observation the action was taken
    from; after a re-retrieval the returned observation may show others) and, at an
    episode's end, ``experience_outcome``. The wrapper trains nothing.

    Every wrapper on one bank shares one :class:`ExperienceManager` (created on first
    use; pass ``manager`` or ``key_encoder`` / ``manager_kwargs`` to choose).

    Args:
        env: the env to wrap.
        bank: the experience bank.
        k: entries shown per step.
        retrieve_every: retrieve again every this many steps (0: only at reset).
        key_encoder: frozen key encoder of the (unwrapped) observations.
        task_id: fixed task id, or ``fn(obs, info) -> int`` evaluated at each reset.
        action_prior: add the entries' action priors to the observation.
        query_mode: ``"utility"`` (default), ``"knn"`` or ``"random"`` (ablation).
        learn: hand episodes to the manager and count retrievals. None (the default): yes,
            unless another env trains this bank under :class:`~integrations.sb3.CRLCallback`
            (then this one is an evaluation env and learns nothing); True or False: always or never.
        manager: an existing manager of this bank.
        manager_kwargs: :class:`~experience_wrappers.manager.ManagerConfig` fields for a new manager.
        seed: seed of the guided / free draws.

    >>> env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={"mode": "sync"})
    >>> obs, info = env.reset(seed=0)
    >>> sorted(obs), obs in env.observation_space
    (['experience', 'experience_mask', 'experience_utility', 'observation'], True)
    """

    def __init__(self, env: gym.Env, bank: ExperienceBank, *, k: int = 4, retrieve_every: int = 8,
                 key_encoder: KeyEncoder | None = None, task_id: TaskIdSource = 0,
                 action_prior: bool = False, query_mode: str = "utility", learn: bool | None = None,
                 manager: ExperienceManager | None = None, manager_kwargs: dict[str, Any] | None = None,
                 seed: int | None = None) -> None:
        # the bank and manager are shared objects: record them, never copy them
        RecordConstructorArgs.__init__(self, _disable_deepcopy=True, bank=bank, k=k, retrieve_every=retrieve_every,
                                       key_encoder=key_encoder, task_id=task_id, action_prior=action_prior,
                                       query_mode=query_mode, learn=learn, manager=manager,
                                       manager_kwargs=manager_kwargs, seed=seed)
        gym.Wrapper.__init__(self, env)
        manager = resolve_manager(bank, env.observation_space, env.action_space, manager, key_encoder,
                                  manager_kwargs)
        self.experience_manager = manager
        self.injector = ExperienceInjector(manager, 1, env.observation_space, k=k,
                                           retrieve_every=retrieve_every, task_id=task_id,
                                           action_prior=action_prior, query_mode=query_mode,
                                           learn=learn, seed=seed)
        self.observation_space = experience_space(env.observation_space, k, manager.exp_dim,
                                                  manager.prior_dim if action_prior else None)
        self._last_obs: Any = None
        self._ended = True
        # an env with action_masks() (MaskablePPO's convention): the prior never advises a masked action
        self._action_masks = find_action_masks(env) if action_prior else None

    @property
    def bank(self) -> ExperienceBank:
        return self.experience_manager.bank

    def set_force_guided(self, value: bool | None) -> None:
        """Force every episode guided (True) or free (False); None restores the schedule."""
        self.injector.force_guided = value

    def _wrap(self, obs: Any) -> dict[str, Any]:
        out = self.injector.observation_of(0, obs)
        if self._action_masks is not None:
            out["experience_action_prior"] = mask_priors(out["experience_action_prior"], self._action_masks())
        return out

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self.injector.rng = np.random.default_rng([seed, 0x5EED])
        obs, info = self.env.reset(seed=seed, options=options)
        check_finite_observation(obs, "reset")
        self.injector.begin(np.array([0]), add_batch_axis(obs), [info])
        self._last_obs, self._ended = obs, False
        return self._wrap(obs), {**info, **self.injector.info(0)}

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        if self._ended:
            raise RuntimeError("step() called before reset() or after the episode ended; call reset()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        check_finite_observation(obs, "step")
        inj = self.injector
        step_info = inj.info(0)
        inj.record(add_batch_axis(self._last_obs), np.asarray([action]), np.asarray([reward], dtype=np.float64))
        self._last_obs = obs
        if terminated or truncated:
            ep = inj.finish(0, success_from_info(info))
            step_info["experience_outcome"] = ep.outcome
            self._ended = True
        elif len(inj.due()):
            inj.retrieve(np.array([0]), add_batch_axis(obs))
        return self._wrap(obs), reward, terminated, truncated, {**info, **step_info}
