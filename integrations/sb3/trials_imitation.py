"""Imitation of the retrieved successful step: the action a successful trial took where the agent stands."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import obs_as_tensor

from experience_wrappers.extractor import ActionCoder
from experience_wrappers.manager.entry_layout import EntryLayout
from experience_wrappers.trials.nearest_success import success_codes
from experience_wrappers.trials.wrapper import ENTRIES_KEY, MASK_KEY
from experience_wrappers.validators import check_int

from .guards import on_policy

__all__ = ["EntryImitationCallback"]


class EntryImitationCallback(BaseCallback):
    """After each PPO update, raise the probability of the action a shown successful entry took.

    On the last rollout's states where a shown entry of a successful trial (or a
    demonstration) lies within ``max_distance`` of the state, the loss is
    ``-log pi(a_entry | s)`` with the entries in the input: the policy learns to *read* a
    success of its instance (the learned form of retrieve-and-play,
    ``benchmarks.peers.retrieve_and_play.RetrieveAndPlay``). It runs ``n_batches`` steps of
    ``batch_size`` states with the policy's optimizer, as self-imitation does. With a Box
    action space the entry's action code is decoded back to the action taken
    (:meth:`ActionCoder.decode <experience_wrappers.extractor.ActionCoder.decode>`) and its
    Gaussian log-probability raised.

    Measured (5 seeds each, docs/trials.md): on by default in run scope, where the entries
    shown are the agent's own instance's (its run's earlier trials or a demonstration of it):
    on the hidden key and door, following a run's success 0.91 and one demonstration 0.99
    from the first trial, against 0.68 and 0.83 without it; on the hidden-goal room a tie
    (0.94; 0.99-1.00). The same operator in task scope, copying the action of the nearest
    entry of *other* instances (neighbour imitation, since removed), hurt: KeyRoom-S5 from 5
    demonstrations 0.34 against 0.46. The scope of what is shown decides its sign, which is why
    it is a run-scope part, and the only one. With continuous actions and a goal that is a
    place (Meta-World reach, the goal hidden), copying the nearest shown action is not what
    follows a demonstration: beside ``TrialMemory(run_best=True)`` it took trial 1 with one
    demonstration from 0.94 to 0.30 (seed 0; ``crl-trials-best-bonus-inf`` against
    ``crl-trials-best-noimitate-bonus-inf``): turn it off there (``imitate=False``).

    Args:
        layout: the memory's :class:`~experience_wrappers.manager.entry_layout.EntryLayout`.
        coef: the loss coefficient.
        max_distance: the farthest an entry may lie (the bank's distance; the default takes
            the agent's own state only, for position keys; None: any shown success, the
            nearest, as retrieve-and-play reads it: for continuous states, which never repeat exactly).
        n_batches, batch_size: gradient steps and states per step.
        seed: sampling seed.
    """

    def __init__(self, layout: EntryLayout, *, coef: float = 1.0, max_distance: float | None = 1e-4, n_batches: int = 4,
                 batch_size: int = 256, seed: int | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        if not (np.isfinite(coef) and coef >= 0):
            raise ValueError(f"coef must be finite and >= 0, got {coef!r}")
        self.layout = layout
        self.coef = float(coef)
        self.max_distance = np.inf if max_distance is None else float(max_distance)
        if not self.max_distance >= 0:
            raise ValueError(f"max_distance must be >= 0 or None (any), got {max_distance!r}")
        self.n_batches = check_int("n_batches", n_batches, minimum=0)
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.rng = np.random.default_rng(seed)
        self._states: dict[str, np.ndarray] | None = None
        self._targets: np.ndarray | None = None
        self.stats: dict[str, float] = {}

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        """Keep the rollout's states that stand on a shown success, with its action."""
        model = on_policy(self.model)
        observations = model.rollout_buffer.observations
        space = model.observation_space
        assert isinstance(observations, dict) and isinstance(space, spaces.Dict)  # run scope's wrapper's Dict
        obs = {k: np.asarray(v).reshape(-1, *(space[k].shape or ())) for k, v in observations.items()}
        codes, found = success_codes(obs[ENTRIES_KEY], obs[MASK_KEY], self.layout, self.max_distance)
        action_space = model.action_space
        if isinstance(action_space, spaces.Discrete):
            actions = codes.argmax(-1)  # the index in the space (the policy's own numbering)
        elif isinstance(action_space, spaces.Box):
            actions = ActionCoder(action_space).decode(codes).astype(np.float32)
        else:
            raise ValueError(f"entry imitation copies a Discrete or Box action, the policy acts in {action_space}")
        idx = np.flatnonzero(found)
        self._states = {k: v[idx].copy() for k, v in obs.items()} if len(idx) else None
        self._targets = actions[idx] if len(idx) else None
        self.logger.record("trials/imitation_states", float(len(idx)))

    def _on_rollout_start(self) -> None:
        """After the PPO update: the imitation steps on the states kept."""
        if self._states is None or self._targets is None or self.coef == 0 or self.n_batches == 0:
            return
        model = on_policy(self.model)
        policy = model.policy
        policy.set_training_mode(True)
        n = len(self._targets)
        losses = []
        for _ in range(self.n_batches):
            idx = self.rng.choice(n, size=min(n, self.batch_size), replace=False)
            obs = obs_as_tensor({k: v[idx] for k, v in self._states.items()}, self.model.device)
            act = th.as_tensor(self._targets[idx], device=self.model.device)
            act = act.long() if isinstance(self.model.action_space, spaces.Discrete) else act.float()
            _, log_prob, _ = policy.evaluate_actions(obs, act)
            loss = -self.coef * log_prob.mean()
            policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
            policy.optimizer.step()
            losses.append(float(loss.detach()))
        self.stats = {"loss": float(np.mean(losses)), "states": float(n)}
        self.logger.record("trials/imitation_loss", self.stats["loss"])
        self._states = self._targets = None

    def state(self) -> dict[str, Any]:
        return dict(self.stats)
