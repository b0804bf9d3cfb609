"""``PathTrialMemory``: run scope reading each earlier trial along its whole path too (measured to hurt).

Besides the ``per_trial`` steps of each earlier trial nearest the agent's state
(:meth:`~experience_wrappers.trials.TrialMemory.read`), it reads ``path`` steps spread evenly
along the trial, first and last included, whatever the agent's state: where that trial went,
which a failed trial's nearest steps do not say. Measured not to help: on the hidden-goal room
(5 seeds, ``path=6``, ``crl-trials-novelty-paths``) cumulative success ties and following a
success falls from 0.86 to 0.55; on Meta-World reach with the goal hidden (3 seeds, ``path=2``,
``crl-trials-imitate-nearest-strong-path``) one demonstration's trial 1 falls to 0.20 from 0.62.
Where a trial got to is better shown as a key of its own
(:class:`~experience_wrappers.trials.run_best.RunBest`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trials import TrialMemory
from ..validators import check_int

__all__ = ["PathTrialMemory"]


class PathTrialMemory(TrialMemory):
    """A :class:`~experience_wrappers.trials.TrialMemory` that also reads ``path`` steps along each earlier trial.

    Args:
        path: steps read along each earlier trial (``k // (per_trial + path)`` trials are read).
        *args, **kwargs: :class:`~experience_wrappers.trials.TrialMemory`'s.

    Raises:
        ValueError: ``path`` below 0, or above ``k - per_trial``.

    >>> from gymnasium import spaces
    >>> mem = PathTrialMemory(spaces.Box(0, 9, (2,)), spaces.Discrete(8), horizon=25, k=4, path=2, exp_dim=0)
    >>> s = mem.new_scope()
    >>> ids = mem.write(s, np.array([[0, 0], [1, 1], [2, 2], [3, 3]]), np.zeros(4, int), [0, 0, 0, 1.0])
    >>> _, mask, shown = mem.read(np.array([s]), np.array([[1, 1]]), np.array([1.0]))
    >>> shown[0].tolist()   # the 2 nearest (1, 1 then 0, 0 or 2, 2), then the first and the last step
    [1, 2, 0, 3]
    """

    def __init__(self, *args: Any, path: int = 2, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.path = check_int("path", path, minimum=0, maximum=self.k - self.per_trial)

    def _read_paths(self, keys: np.ndarray, rows_of: list[int], starts: list[int], trial_ids: list[np.ndarray],
                    mask: np.ndarray, ids: np.ndarray, values: np.ndarray, dist: np.ndarray) -> None:
        """Fill ``path`` slots from ``starts`` with steps spread along each read trial (in place)."""
        picks = [t[np.unique(np.linspace(0, len(t) - 1, min(self.path, len(t))).round().astype(np.int64))]
                 for t in trial_ids]
        wanted = np.unique(np.concatenate(picks)) if picks else np.zeros(0, np.int64)
        if not wanted.size:
            return
        got = self.bank.get(wanted)["value"]
        row_of = {int(e): r for r, e in enumerate(wanted.tolist())}
        kd = self.layout.key_dim
        for i, start, pick in zip(rows_of, starts, picks, strict=True):
            v = got[[row_of[int(e)] for e in pick.tolist()]]
            span = slice(start, start + len(pick))
            mask[i, span] = True
            ids[i, span] = pick
            values[i, span] = v
            dist[i, span] = ((v[:, :kd] - keys[i]) ** 2).sum(axis=1)  # the bank's "l2": squared distance

