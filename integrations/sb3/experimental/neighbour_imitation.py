"""Neighbour imitation: the agent's own rollout states, labelled by the bank's nearest successful entry.

Self-imitation (:mod:`integrations.sb3.self_imitation`) trains on the successful states
themselves; a plain buffer does that as well as the bank. What only a state-keyed index can
do is label the states the agent *visits now*: for each state of the last rollout, the
nearest demonstration entry of the bank (a :class:`~experience_wrappers.rollin.BankGuide`:
the manager's frozen keys, a ``knn`` query, a distance floor) gives the action a successful
episode took in a similar state; states with no entry within the floor get no label.

After each PPO update (at the next rollout's start, as self-imitation) the policy's own
distribution (the free view: every experience key zero) is trained toward those labels for
``n_batches`` steps of behaviour cloning, ``coef * -log pi(a_entry | s)``, the same
gradient step as :func:`~integrations.sb3.self_imitation.self_imitation_step` with
``weight="bc"`` (the labelled states go through a one-rollout
:class:`~experience_wrappers.replay.SuccessReplay`). The coefficient follows a linear schedule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback

from experience_wrappers.replay import SOURCE_OWN, SuccessReplay
from experience_wrappers.rollin import BankGuide
from experience_wrappers.schedule import linear
from experience_wrappers.validators import check_int, check_real
from experience_wrappers.wrappers import BASE_KEY, EXPERIENCE_KEYS

from ..guards import on_policy
from ..schedules import training_progress
from ..self_imitation import self_imitation_step

__all__ = ["NeighbourImitationCallback"]


class NeighbourImitationCallback(BaseCallback):
    """Behaviour cloning of the last rollout's states toward their nearest demonstrated action.

    Args:
        guide: the look-up (its manager's bank, keys and distance floor).
        coef: the loss coefficient, or ``(start, end)`` linear over training.
        n_batches: gradient steps after each PPO update.
        batch_size: states per step.
        seed: sampling seed.

    After each update, ``stats`` holds ``loss``, ``states`` (labelled states of the rollout)
    and ``labelled`` (their fraction of the rollout); they are logged as ``nbr/...``.
    """

    def __init__(self, guide: BankGuide, *, coef: float | tuple[float, float] = 1.0, n_batches: int = 4,
                 batch_size: int = 256, seed: int | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        if not isinstance(guide, BankGuide):
            raise TypeError(f"guide must be a BankGuide, got {type(guide).__name__}")
        for c in np.atleast_1d(np.asarray(coef, dtype=float)).tolist():
            check_real("coef", c, minimum=0)
        self.guide = guide
        self.coef = coef
        self.n_batches = check_int("n_batches", n_batches, minimum=0)
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.rng = np.random.default_rng(seed)
        self.stats: dict[str, float] = {}
        self.history: list[dict[str, float]] = []
        self._labelled: SuccessReplay | None = None

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        """Label the rollout's states (before PPO's update; trained on after it)."""
        model = on_policy(self.model)
        buf = model.rollout_buffer
        obs: Any = buf.observations
        if not isinstance(obs, dict):
            raise TypeError("NeighbourImitationCallback needs the experience wrapper's Dict observation")
        n = buf.buffer_size * buf.n_envs
        space = model.observation_space
        assert isinstance(space, spaces.Dict)  # a Dict observation, as the buffer's
        # SB3's buffer keeps every key as float32, a Discrete one with a trailing axis of 1:
        # back to the env's own shapes and dtypes, as the keys were computed from them
        base = {k: np.asarray(v).reshape(n, *(space[k].shape or ())).astype(space[k].dtype, copy=False)
                for k, v in obs.items() if k not in EXPERIENCE_KEYS}
        # the keys read the env's own observation: a dict of its keys, or its one array
        spaces_dict = isinstance(self.guide.manager.observation_space, spaces.Dict)
        res = self.guide.act(base if spaces_dict else base[BASE_KEY], 0)
        self._labelled = None
        self.stats = {"labelled": float(res.found.mean()) if n else 0.0, "states": float(res.found.sum())}
        if res.found.any():
            rows = np.flatnonzero(res.found)
            replay = SuccessReplay(capacity=len(rows))
            replay.add_episode({k: v[rows] for k, v in base.items()}, res.actions[rows],
                               np.zeros(len(rows)), model.gamma, SOURCE_OWN)
            self._labelled = replay

    def _on_rollout_start(self) -> None:
        if self._labelled is None:
            return
        model = on_policy(self.model)
        coef = linear(self.coef, training_progress(model, self.num_timesteps))
        out = self_imitation_step(model, self._labelled, coef=coef, weight="bc", n_batches=self.n_batches,
                                  batch_size=self.batch_size, rng=self.rng)
        self._labelled = None
        self.stats.update(out)
        self.stats["coef"] = coef
        self.history.append({"steps": float(self.num_timesteps), **self.stats})
        for key in ("loss", "labelled", "coef"):
            if key in self.stats:
                self.logger.record(f"nbr/{key}", self.stats[key])
