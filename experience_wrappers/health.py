"""When a bank is degenerate: too few entries, or an extractor that never learns, after many episodes.

A key encoder that maps most observations to one key (the default random projection of an
observation whose varying part is tiny, say a dark MiniHack room's glyphs, or MountainCar's two
numbers at one scale) leaves the bank with a handful of entries that dedup merges into one
another, and nothing the agent is shown differs from one state to the next. Nothing fails;
training just gains nothing. :func:`degeneracy` says so, with the remedy;
:class:`~integrations.sb3.CRLCallback` warns once with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .bank.search import pairwise_distances

__all__ = ["degeneracy", "key_collapse", "DEGENERATE_AFTER", "MIN_ENTRIES", "EXTRACTOR_AFTER", "KEY_SAMPLE",
           "MIN_DISTINCT"]

#: episodes after which a bank of fewer than :data:`MIN_ENTRIES` entries is degenerate
DEGENERATE_AFTER = 200
MIN_ENTRIES = 8
#: episodes after which an extractor never updated is said to be stuck
EXTRACTOR_AFTER = 500
#: the steps of an episode whose keys :func:`key_collapse` compares, and the distinct observations it needs among them
KEY_SAMPLE = 64
MIN_DISTINCT = 4


def degeneracy(manager: Any) -> str | None:
    """What is degenerate about ``manager``'s bank and extractor, with the remedy (None: nothing).

    >>> class M:  # the fields read: episodes processed, bank size, extractor version
    ...     episodes_processed, bank, extractor_version, key_encoder = 300, [0, 1], 3, None
    >>> degeneracy(M()).split(":")[0]
    'the bank holds 2 entries after 300 episodes'
    """
    if not hasattr(manager, "episodes_processed"):  # a remote manager: its service's learner keeps count
        return None
    episodes = int(manager.episodes_processed)
    size = len(manager.bank)
    encoder = type(manager.key_encoder).__name__
    if episodes >= DEGENERATE_AFTER and size < MIN_ENTRIES:
        return (f"the bank holds {size} entries after {episodes} episodes: the key encoder ({encoder}) maps most "
                "observations to nearly the same key, so entries merge and every state is shown the same "
                "experience; give the wrapper a key encoder that separates the states (key_encoder=...: the env "
                "family's, e.g. integrations.minihack.MiniHackKeyEncoder, or a CallableKeyEncoder of your own)")
    if episodes >= EXTRACTOR_AFTER and int(manager.extractor_version) == 0:
        return (f"the extractor has not been updated after {episodes} episodes (extractor/version 0): too few "
                f"distinct segments reach its batch ({size} entries in the bank); check the key encoder "
                "(key_encoder=...) and the manager's batch_size")
    return None


def key_collapse(manager: Any, observations: Any, n_steps: int, task_id: int) -> tuple[bool, str | None]:
    """Whether the key encoder tells apart the distinct observations among an episode's first
    :data:`KEY_SAMPLE` steps: ``(checked, warning)``. ``checked`` is False where they hold fewer than
    :data:`MIN_DISTINCT` distinct observations (ask again with a later episode); the warning (None:
    they are told apart) says that every pair of their keys lies within the bank's
    ``dedup_threshold``, so each new entry merges into one already there: what :func:`degeneracy`
    says after :data:`DEGENERATE_AFTER` episodes, said at the first episode, with its usual cause.

    The observations are an episode's (an array or a dict of arrays, one row per step).
    """
    take = min(int(n_steps), KEY_SAMPLE)
    if isinstance(observations, dict):
        parts = [np.asarray(v)[:take] for _, v in sorted(observations.items())]
    else:
        parts = [np.asarray(observations)[:take]]
    firsts: dict[bytes, int] = {}
    for i in range(take):
        firsts.setdefault(b"".join(np.ascontiguousarray(p[i]).tobytes() for p in parts), i)
    if len(firsts) < MIN_DISTINCT:
        return False, None
    rows = np.fromiter(firsts.values(), dtype=np.int64, count=len(firsts))
    sample = ({k: np.asarray(v)[rows] for k, v in observations.items()} if isinstance(observations, dict)
              else np.asarray(observations)[rows])
    keys = manager.encode_keys(sample, np.full(len(rows), task_id, dtype=np.int64))
    config = manager.bank.config
    d = pairwise_distances(keys, keys, config.space)
    widest = float(d[~np.eye(len(rows), dtype=bool)].max())
    if widest >= config.dedup_threshold:
        return True, None
    return True, (
        f"the key encoder ({type(manager.key_encoder).__name__}) gives {len(rows)} different observations of the "
        f"first episode keys within {widest:.2g} of one another, under the bank's dedup_threshold "
        f"({config.dedup_threshold:g}): their entries will merge into one, and every state will be shown the same "
        "experience. The default encoder scales a Box by its declared bounds, so values that fill a small part of "
        "them (codes 0-10 in MiniGrid's Box(0, 255) images) get nearly equal keys: declare the bounds the values "
        "take, or give the wrapper a key encoder that separates the states (key_encoder=...: the env family's, a "
        "FlatKeyEncoder, or a CallableKeyEncoder of your own)")
