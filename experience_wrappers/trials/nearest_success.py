"""The action of the nearest shown success: what entry imitation copies (and retrieve-and-play plays).

Among the entries a trial env shows (:class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`) whose
trial succeeded (return > 0; a demonstration counts), the nearest, then the one fewest steps
from its trial's end, gives the action. :class:`~integrations.sb3.trials_imitation.EntryImitationCallback`
trains the policy towards it; the learning-free peer ``benchmarks.peers.retrieve_and_play``
plays it.
"""

from __future__ import annotations

import numpy as np

from ..manager.entry_layout import EntryLayout

__all__ = ["success_actions", "success_codes"]


def success_actions(rows: np.ndarray, mask: np.ndarray, layout: EntryLayout,
                    max_distance: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """The (Discrete) action of the nearest shown entry of a successful trial (or a demonstration), per row.

    Among the entries whose trial return is positive and whose distance is at most
    ``max_distance``, the nearest, then the one fewest steps from its trial's end.
    Returns ``(actions (n,), found (n,) bool)``; ``actions`` is 0 where none was found.
    The action is the index of its one-hot code (:func:`success_codes` gives the code itself).

    Raises:
        ValueError: ``rows`` are not ``(n, k, layout.row_dim)`` (see :func:`success_codes`).
    """
    codes, found = success_codes(rows, mask, layout, max_distance)
    return np.where(found, codes.argmax(-1), 0), found


def success_codes(rows: np.ndarray, mask: np.ndarray, layout: EntryLayout,
                  max_distance: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """The action code of the nearest shown entry of a successful trial, per row (as :func:`success_actions`).

    Returns ``(codes (n, action_dim), found (n,) bool)``; a row's code is meaningless where
    ``found`` is False.

    Raises:
        ValueError: ``rows`` are not ``(n, k, layout.row_dim)`` (rows of another memory's layout,
            whose columns would be read as the wrong fields).
    """
    rows = np.asarray(rows)
    if rows.ndim != 3 or rows.shape[-1] != layout.row_dim:
        raise ValueError(f"the entry rows are {rows.shape[-1] if rows.ndim else 0} wide (shape {rows.shape}), and "
                         f"the layout read with reads rows {layout.row_dim} wide ({layout}): use the layout of the "
                         "memory the envs read (memory.layout)")
    won = (np.asarray(mask) > 0.5) & (rows[..., layout.row_return_col] > 0)
    won &= rows[..., layout.row_distance_col] <= max_distance
    dist = np.where(won, rows[..., layout.row_distance_col], np.inf)
    stg = np.where(won, rows[..., layout.steps_to_go_col + 2], np.inf)
    nearest = dist == dist.min(axis=-1, keepdims=True)
    best = np.argmin(np.where(nearest, stg, np.inf), axis=-1)
    codes = np.take_along_axis(rows[..., layout.row_action_slice()], best[:, None, None], axis=1)[:, 0]
    return codes, np.asarray(won.any(axis=-1))
