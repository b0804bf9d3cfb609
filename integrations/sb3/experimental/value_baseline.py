"""The value baseline's SB3 side: ``V(s0)`` of each episode that is credited against it.

Where an env cannot replay a task instance (so there is no free episode of the same
instance to pair a guided one with), a guided episode is credited against the critic's
value of its first observation seen *without* experience
(:func:`~experience_wrappers.credit.value_delta`). The wrapper says which episodes want
it (:meth:`ExperienceInjector.wants_start_value
<experience_wrappers.wrappers.ExperienceInjector.wants_start_value>`); this module computes
the values from the policy, and :class:`~integrations.sb3.experimental.ExperimentalCRLCallback`
calls it at each step (nothing on the main path does).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm

from experience_wrappers.wrappers import EXPERIENCE_KEYS, ExperienceInjector

from ..guards import on_policy
from ..self_imitation import free_view

__all__ = ["StartValues"]

log = logging.getLogger(__name__)


class StartValues:
    """Fills in ``V(s0)`` for the episodes of a training VecEnv that ask for it.

    Args:
        injectors: the training env's experience injectors, as
            :func:`~integrations.sb3.find_experience` returns them: one for the whole VecEnv
            (``ExperienceVecEnv``: row ``i`` is env ``i``), or one per env (``ExperienceWrapper``
            on each env of a ``DummyVecEnv``: row 0 of injector ``i`` is env ``i``).
        n_envs: the VecEnv's size.
    """

    def __init__(self, injectors: list[ExperienceInjector], n_envs: int) -> None:
        self.per_env = len(injectors) == n_envs and all(inj.n == 1 for inj in injectors)
        # (index, injector) of the injectors whose episodes may want V(s0)
        self.slots = [(e, inj) for e, inj in enumerate(injectors) if inj.value_baseline or inj.paired]
        if self.slots and not self.per_env and not (len(injectors) == 1 and injectors[0].n == n_envs):
            log.warning("the value baseline needs one experience wrapper on every env, or one ExperienceVecEnv; "
                        "found %d wrappers for %d envs: no start values are filled in", len(injectors), n_envs)
            self.slots = []

    def wanted(self) -> list[tuple[ExperienceInjector, np.ndarray, np.ndarray]]:
        """``(injector, rows, env indices)`` of the episodes that want ``V(s0)`` now."""
        out = []
        for e, inj in self.slots:
            rows = inj.wants_start_value()
            if rows.size:
                out.append((inj, rows, np.full(rows.size, e) if self.per_env else rows))
        return out

    def fill(self, model: BaseAlgorithm) -> int:
        """Compute and record ``V(s0)`` of the episodes that want it; returns how many.

        Call it from a callback's ``_on_step``: ``model._last_obs`` is then still the
        observation the step's actions were taken from, which for an episode after its
        first step is its first observation.
        """
        wanted = self.wanted()
        if not wanted:
            return 0
        model = on_policy(model)
        envs = np.concatenate([w[2] for w in wanted])
        values = start_values(model, envs)
        i = 0
        for inj, rows, _ in wanted:
            inj.set_start_values(rows, values[i:i + rows.size], float(model.gamma))
            i += rows.size
        return int(envs.size)


def start_values(model: BaseAlgorithm, envs: np.ndarray) -> np.ndarray:
    """The critic's values of ``model._last_obs`` at ``envs``, the experience keys zeroed."""
    obs: Any = model._last_obs
    if isinstance(obs, dict):
        base = {k: np.asarray(v)[envs] for k, v in obs.items() if k not in EXPERIENCE_KEYS}
    else:
        raise TypeError("the value baseline needs the experience wrapper's Dict observation, got "
                        f"{type(obs).__name__}")
    free = free_view(base, model.observation_space)
    policy: Any = model.policy  # an ActorCriticPolicy, or sb3-contrib's recurrent one (predict_values takes its states)
    with th.no_grad():
        tensor, _ = policy.obs_to_tensor(free)
        shape = getattr(policy, "lstm_hidden_state_shape", None)
        if shape is None:
            values = policy.predict_values(tensor)
        else:  # sb3-contrib's recurrent policy: a start state has a fresh memory
            zeros = th.zeros((shape[0], len(envs), shape[2]), device=policy.device)
            values = policy.predict_values(tensor, (zeros, zeros), th.ones(len(envs), device=policy.device))
    return values.reshape(-1).cpu().numpy().astype(np.float64)
