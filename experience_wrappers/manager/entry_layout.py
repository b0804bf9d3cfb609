"""What a run scope's entry holds and what the policy reads of it: one home for both layouts.

Run scope distils a trial into one entry per step (the manager's
:class:`~experience_wrappers.manager.episode_entries.Distiller` with ``segment_every=1`` and
this layout); task scope's entries hold the extractor's vector alone.

An *entry* is one step of a finished trial, stored in the bank under its key (the
state's key) with a value laid out as::

    [key | action code | trial return | steps to go / horizon | (step reward) | extractor vector z]

The step's own reward is there only with ``step_reward=True`` (dense rewards, e.g. Meta-World's:
a trial's steps with their rewards say where the goal is not and roughly where it is). The key is kept inside the value so that a reader can say where the entry lies
relative to the query without a second look-up. Everything but ``z`` is decodable
as it is; ``z`` is the extractor's vector for the rest of the trial from that step.

A *row* is what the policy reads of one retrieved entry::

    [entry key - query key | distance | same instance | action code | return | steps to go | (reward) | z]

``same instance`` is 1 for an entry of the reading run's own instance (its earlier
trials, or a demonstration of it) and 0 for an entry of another instance (the
random-retrieval ablation). Rows of missing entries are zeros with mask 0.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..validators import check_int

__all__ = ["EntryLayout", "trial_outcome"]


def trial_outcome(rewards: Any, success: bool | None) -> bool:
    """A finished trial's outcome: ``success`` where given, else whether its rewards sum above 0."""
    return bool(success) if success is not None else bool(np.asarray(rewards, dtype=np.float64).sum() > 0)


@attrs.frozen
class EntryLayout:
    """Widths of an entry's value and of the row the policy reads.

    Args:
        key_dim: width of a state's key.
        action_dim: width of an encoded action (see :class:`~experience_wrappers.extractor.ActionCoder`).
        exp_dim: width of the extractor's vector.
        horizon: the trial's step cap; steps to go are divided by it.
        step_reward: one more column, each step's own reward (after steps to go); False (the
            default): none, the entries carry the trial's return only.

    >>> lay = EntryLayout(key_dim=2, action_dim=8, exp_dim=4, horizon=25)
    >>> lay.value_dim, lay.row_dim
    (16, 18)
    >>> v = lay.values(np.zeros((3, 2)), np.eye(8)[[1, 2, 3]], 1.0, np.zeros((3, 4)))
    >>> [round(float(x), 2) for x in v[:, lay.steps_to_go_col]]  # 3, 2 and 1 steps left of 25
    [0.12, 0.08, 0.04]
    >>> dense = EntryLayout(key_dim=2, action_dim=8, exp_dim=4, horizon=25, step_reward=True)
    >>> v = dense.values(np.zeros((2, 2)), np.eye(8)[[1, 2]], 1.0, np.zeros((2, 4)), rewards=[0.25, 0.5])
    >>> dense.value_dim, v[:, dense.reward_col].tolist()
    (17, [0.25, 0.5])
    """

    # (checked, not truncated: a horizon of 2.5 or 25.0 is an error, numpy's 25 is 25)
    key_dim: int = attrs.field(converter=lambda v: check_int("key_dim", v, minimum=1, numpy=True))
    action_dim: int = attrs.field(converter=lambda v: check_int("action_dim", v, minimum=1, numpy=True))
    exp_dim: int = attrs.field(converter=lambda v: check_int("exp_dim", v, minimum=0, numpy=True))
    horizon: int = attrs.field(converter=lambda v: check_int("horizon", v, minimum=1, numpy=True))
    step_reward: bool = attrs.field(default=False, converter=bool)

    @property
    def value_dim(self) -> int:
        return self.key_dim + self.action_dim + 2 + int(self.step_reward) + self.exp_dim

    @property
    def row_dim(self) -> int:
        """Width of a row: the value with the key replaced by its offset, plus distance and same-instance."""
        return self.value_dim + 2

    @property
    def return_col(self) -> int:
        """Column of the trial's return in a value."""
        return self.key_dim + self.action_dim

    @property
    def steps_to_go_col(self) -> int:
        return self.return_col + 1

    @property
    def reward_col(self) -> int:
        """Column of the step's reward in a value (``step_reward=True`` only).

        Raises:
            AttributeError: the layout has no step-reward column.
        """
        if not self.step_reward:
            raise AttributeError("this EntryLayout has no step-reward column (build it with step_reward=True)")
        return self.steps_to_go_col + 1

    @property
    def row_reward_col(self) -> int:
        """Column of the step's reward in a row (``step_reward=True`` only)."""
        return self.reward_col + 2

    @property
    def row_distance_col(self) -> int:
        """Column of the distance in a row."""
        return self.key_dim

    @property
    def row_return_col(self) -> int:
        """Column of the entry's trial return in a row."""
        return self.return_col + 2

    def row_action_slice(self) -> slice:
        """Columns of the action code in a row."""
        return slice(self.key_dim + 2, self.key_dim + 2 + self.action_dim)

    def action_slice(self) -> slice:
        """Columns of the action code in a value."""
        return slice(self.key_dim, self.key_dim + self.action_dim)

    def values(self, keys: np.ndarray, action_codes: np.ndarray, trial_return: float,
               z: np.ndarray, rewards: Any = None) -> np.ndarray:
        """The values of a trial's ``T`` entries, one per step: ``(T, value_dim)`` float32.

        Args:
            keys: ``(T, key_dim)`` the keys of the states the steps started from.
            action_codes: ``(T, action_dim)`` the encoded actions taken.
            trial_return: the trial's (undiscounted) return, the same for every step.
            z: ``(T, exp_dim)`` the extractor's vectors.
            rewards: ``(T,)`` each step's reward; needed with ``step_reward``, ignored without.

        Raises:
            ValueError: ``step_reward`` and no ``rewards``, or not one per step.
        """
        t = len(keys)
        stg = (t - np.arange(t, dtype=np.float32)) / np.float32(self.horizon)
        ret = np.full((t, 1), trial_return, dtype=np.float32)
        parts = [np.asarray(keys, np.float32), np.asarray(action_codes, np.float32), ret, stg[:, None]]
        if self.step_reward:
            r = np.asarray([] if rewards is None else rewards, np.float32).reshape(-1)
            if len(r) != t:
                raise ValueError(f"a layout with step_reward needs one reward per step: {t} steps, {len(r)} rewards")
            parts.append(r[:, None])
        parts.append(np.asarray(z, np.float32).reshape(t, self.exp_dim))
        return np.concatenate(parts, axis=1)

    def trial_values(self, keys: np.ndarray, action_codes: np.ndarray, z: np.ndarray, rewards: Any,
                     success: bool | None) -> np.ndarray:
        """:meth:`values` of a finished trial, with its return by the layout's rule.

        The return column holds the rewards' sum; with ``step_reward`` (dense, positive rewards,
        whose sum is positive for any trial) it holds the outcome instead: 1 for a success, 0 for
        a failure (``success`` None: a positive sum counts as success).
        """
        rewards = np.asarray(rewards, dtype=np.float64).reshape(-1)
        trial_return = float(trial_outcome(rewards, success)) if self.step_reward else float(rewards.sum())
        return self.values(keys, action_codes, trial_return, z, rewards)

    def vectors(self, values: np.ndarray) -> np.ndarray:
        """The extractor's vectors ``(..., exp_dim)`` of entries' values (their last columns)."""
        return values[..., values.shape[-1] - self.exp_dim:]

    def rows(self, values: np.ndarray, query_keys: np.ndarray, distances: np.ndarray, same: np.ndarray,
             mask: np.ndarray) -> np.ndarray:
        """Rows the policy reads: ``(n, k, row_dim)`` float32 from retrieved ``values`` ``(n, k, value_dim)``.

        Args:
            values: the retrieved entries' values (any content where ``mask`` is False).
            query_keys: ``(n, key_dim)`` the keys queried with.
            distances: ``(n, k)`` the bank's distances.
            same: ``(n,)`` or ``(n, k)`` 1 where the entries are of the reader's own instance.
            mask: ``(n, k)`` bool, the slots that hold an entry.
        """
        n, k = mask.shape
        out = np.zeros((n, k, self.row_dim), np.float32)
        if values.shape[-1] != self.value_dim:  # an empty bank answers with zero-width values
            return out
        kd = self.key_dim
        out[..., :kd] = values[..., :kd] - query_keys[:, None, :]
        out[..., kd] = np.where(mask, distances, 0.0)
        out[..., kd + 1] = np.broadcast_to(np.asarray(same, np.float32).reshape(n, -1), (n, k))
        out[..., kd + 2:] = values[..., kd:]
        out[~mask] = 0.0
        return out
