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

__all__ = ["degeneracy", "DEGENERATE_AFTER", "MIN_ENTRIES", "EXTRACTOR_AFTER"]

#: episodes after which a bank of fewer than :data:`MIN_ENTRIES` entries is degenerate
DEGENERATE_AFTER = 200
MIN_ENTRIES = 8
#: episodes after which an extractor never updated is said to be stuck
EXTRACTOR_AFTER = 500


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
