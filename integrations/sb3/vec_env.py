"""``ExperienceVecEnv``: the experience wrapper for a whole SB3 VecEnv, one batched query per step."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize, unwrap_vec_wrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.manager.sharing import hold, let_go, released_if_refused, same_layout
from experience_wrappers.validators import check_int
from experience_wrappers.wrappers import EXPERIENCE_KEYS, ExperienceInjector, ExperienceOptions
from experience_wrappers.wrappers.env_checks import check_finite_observation, warn_drifting_keys
from experience_wrappers.wrappers.injector import subset_rows

from .guards import check_vec_env
from .reset_infos import reset_infos_below

__all__ = ["ExperienceVecEnv", "norm_obs_keys", "check_one_layout"]


def _check_not_wrapped(venv: VecEnv) -> None:
    """Refuse a VecEnv whose envs are experience-wrapped already (either scope: a run scope's trials
    are not task scope's episodes, and two wrappers would record and credit every episode twice); warn
    of one that normalises what the experience records (a ``VecNormalize``: it goes on top)."""
    if unwrap_vec_wrapper(venv, ExperienceVecEnv) is not None:
        raise ValueError("ExperienceVecEnv: this VecEnv is an ExperienceVecEnv already (or wraps one); wrap the "
                         "plain vector env once")
    try:
        wrapped = venv.env_is_wrapped(ExperienceWrapper)
    except (AttributeError, NotImplementedError, TypeError):
        return
    if any(wrapped):
        raise ValueError("ExperienceVecEnv: the VecEnv's envs are wrapped in ExperienceWrapper already (in either "
                         "scope); use the per-env wrappers or ExperienceVecEnv over plain envs, not both")
    below = unwrap_vec_wrapper(venv, VecNormalize)
    if below is not None and (below.norm_obs or below.norm_reward):  # the episodes' outcomes and keys are normalised
        warnings.warn("ExperienceVecEnv over a VecNormalize: the experience records normalised rewards (the outcome "
                      "of an env that reports no success) and keys drifting normalised observations; put the "
                      "VecNormalize on top, VecNormalize(ExperienceVecEnv(venv, bank), norm_obs_keys=norm_obs_keys(...))",
                      UserWarning, stacklevel=3)


def check_one_layout(venv: VecEnv) -> None:
    """Raise ValueError unless every env of ``venv`` has the observation layout of env 0.

    SB3's VecEnvs take env 0's spaces for all and copy each env's observations into buffers
    of that shape, so an env of another shape fails at reset deep inside the VecEnv, or is
    broadcast into the wrong shape without a word. Box bounds may differ (the tasks of
    Meta-World's MT10 share a layout). A VecEnv that cannot list its envs' spaces
    (``get_attr`` unsupported) is not checked.
    """
    try:
        found = venv.get_attr("observation_space")
    except (AttributeError, NotImplementedError, TypeError):
        return
    if not found:
        return
    first = found[0]
    for i, space in enumerate(found[1:], start=1):
        if not same_layout(first, space):
            raise ValueError(
                f"ExperienceVecEnv needs one observation layout for every env of the VecEnv: env {i}'s observation "
                f"space {space} differs from env 0's {first} (kind, keys, shapes or dtypes; Box bounds may differ). "
                "Build the VecEnv from envs of one family, or use one VecEnv and one ExperienceVecEnv per family")


def norm_obs_keys(env_or_space: VecEnv | spaces.Dict) -> list[str]:
    """The observation keys that SB3's ``VecNormalize`` may normalise: every key but the experience channel.

    Pass them as ``VecNormalize(venv, norm_obs_keys=norm_obs_keys(venv))``. Only float Box
    keys are listed (normalising MiniHack's integer glyphs would be meaningless).
    :class:`~integrations.sb3.CRLCallback` also takes the experience keys out of a
    ``VecNormalize`` built without them, with a warning.

    >>> space = spaces.Dict({"observation": spaces.Box(-1, 1, (3,)), "experience_mask": spaces.Box(0, 1, (4,))})
    >>> norm_obs_keys(space)
    ['observation']
    """
    space = env_or_space if isinstance(env_or_space, spaces.Dict) else env_or_space.observation_space
    if not isinstance(space, spaces.Dict):
        raise ValueError(f"expected an experience-wrapped env (a Dict observation space), got {space}")
    return [k for k, s in space.spaces.items() if k not in EXPERIENCE_KEYS
            and isinstance(s, spaces.Box) and np.issubdtype(s.dtype, np.floating)]


class ExperienceVecEnv(VecEnvWrapper):
    """Retrieval for all envs of a VecEnv in one batched bank query, in the main process.

    Gives the same observations and infos as :class:`~experience_wrappers.ExperienceWrapper`
    on each env, and works with ``SubprocVecEnv`` (whose workers cannot share a bank).
    Terminal observations in ``info["terminal_observation"]`` are wrapped as well, so PPO
    can bootstrap truncated episodes.

    Arguments are those of :class:`~experience_wrappers.ExperienceWrapper`: ``options``, an
    :class:`~experience_wrappers.wrappers.ExperienceOptions`, and its fields as keywords. With
    ``VecNormalize`` on top, normalise :attr:`norm_obs_keys` only.

    Raises:
        ValueError: the envs of ``venv`` have observation spaces of different layouts
            (:func:`check_one_layout`), or an option is out of range.
        TypeError: an option of the wrong type.
    """

    def __init__(self, venv: VecEnv, bank: ExperienceBank, *, options: ExperienceOptions | None = None,
                 **kwargs: Any) -> None:
        check_vec_env(venv, "ExperienceVecEnv")
        opts = ExperienceOptions.of(options, **kwargs)
        check_one_layout(venv)
        _check_not_wrapped(venv)
        for e in getattr(venv.unwrapped, "envs", [])[:1]:  # (an in-process VecEnv's envs are built alike)
            warn_drifting_keys(e, "ExperienceVecEnv")
        self.options = opts
        self.manager = opts.resolve_manager(bank, venv.observation_space, venv.action_space)
        with released_if_refused(self.manager):  # refused: the bank is left free for the next try
            self.injector = ExperienceInjector(self.manager, venv.num_envs, venv.observation_space, opts)
            super().__init__(venv, observation_space=self.injector.retriever.observation_space(venv.observation_space))
        self._held = hold(self.manager)  # until close(): the last wrapper closes a manager built for them
        self._last_obs: Any = None
        self._actions: np.ndarray | None = None

    @property
    def bank(self) -> ExperienceBank:
        return self.manager.bank

    @property
    def norm_obs_keys(self) -> list[str]:
        """The keys for ``VecNormalize(..., norm_obs_keys=...)``: all but the experience channel."""
        space = self.observation_space
        assert isinstance(space, spaces.Dict)  # the injector's observation space
        return norm_obs_keys(space)

    def set_force_guided(self, value: bool | None) -> None:
        """Force every episode guided (True) or free (False); None restores the schedule."""
        self.injector.force_guided = value

    def close(self) -> None:
        """Close the envs below; as the last wrapper on a bank whose manager the wrappers built, that
        manager too (:func:`~experience_wrappers.manager.sharing.let_go`: its learner process stops)."""
        held, self._held = self._held, None
        try:
            let_go(held)
        finally:
            self.venv.close()

    def seed(self, seed: int | None = None) -> Any:
        """Seed the envs below and this wrapper's guided / free draws.

        SB3's ``PPO(seed=...)`` calls it; ``ExperienceWrapper.reset(seed=...)`` seeds a per-env
        wrapper's draws the same way."""
        if seed is not None:
            seed = check_int("seed", seed, minimum=0, numpy=True, type_error=TypeError)
            self.injector.rng = np.random.default_rng([seed, 0x5EED])
        return self.venv.seed(seed)

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        check_finite_observation(obs, "reset")
        self.reset_infos = infos = reset_infos_below(self.venv)  # (kept for the layers above)
        self.injector.begin(np.arange(self.num_envs), obs, infos)
        self._last_obs = obs
        return self.injector.retriever.observation(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Step the envs below with one action per env (refused before any env steps otherwise)."""
        self._actions = np.asarray(actions)
        if self._actions.shape[:1] != (self.num_envs,):
            raise ValueError(f"step_async takes one action per env: {self.num_envs} envs, got actions of shape "
                             f"{self._actions.shape}; no env was stepped")
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        check_finite_observation(obs, "step")
        inj = self.injector
        assert self._actions is not None, "step_wait() without step_async()"
        step_infos = inj.infos()
        inj.record(self._last_obs, self._actions, rewards)
        done_rows = np.flatnonzero(dones)
        for i in done_rows.tolist():
            term = infos[i].get("terminal_observation")
            if term is not None:
                infos[i]["terminal_observation"] = inj.retriever.observation(term, i)
            ep = inj.finish(i, inj.reports(infos[i]))
            step_infos[i]["experience_outcome"] = ep.outcome
        if done_rows.size:
            self.reset_infos = reset_infos = reset_infos_below(self.venv)
            inj.begin(done_rows, subset_rows(obs, done_rows), [reset_infos[i] for i in done_rows.tolist()])
        due = inj.due()
        if due.size:
            inj.retrieve(due, subset_rows(obs, due))
        self._last_obs = obs
        for i in range(self.num_envs):
            infos[i].update(step_infos[i])
        return inj.retriever.observation(obs), rewards, dones, infos
