"""Distillation: an episode's segments, the extractor's proposed entries for them, and their write.

One home for what turns a finished episode into bank entries, shared by the
manager's own thread (``sync`` / ``async`` modes), the learner process (``process``
mode, :mod:`experience_wrappers.manager.process`) and run scope's memory: keys of the segments'
first states, segment contexts, and the extractor's sampled experience vectors (task scope's
values), or with an :class:`~.entry_layout.EntryLayout` one entry per step holding its key,
action, return and steps to go beside the vector (run scope's values); :class:`EntryWriter`
writes the proposals into the bank, one ``add`` per batch.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
import torch
from gymnasium import spaces

from ..bank import AddResult, ExperienceBank, Provenance
from ..extractor import ActionCoder, ExtractorTrainer, encode_segment
from ..keys import KeyEncoder
from ..keys.base import checked_keys
from .config import ManagerConfig
from .episode import Episode

__all__ = ["Distiller", "EntryWriter", "Proposal", "add_arguments"]


@attrs.frozen
class Proposal:
    """The entries proposed for one episode: the kept rows of every array, and the contexts
    of all its segments (for the self-supervised step)."""

    keys: np.ndarray
    values: np.ndarray
    contexts: np.ndarray
    logp: np.ndarray
    all_contexts: np.ndarray
    task_id: int
    provenance: Provenance
    step: int

    @property
    def size(self) -> int:
        return len(self.keys)

    def add_kwargs(self) -> dict[str, Any]:
        """The ``ExperienceBank.add`` keywords of these entries (all but utility and version)."""
        return dict(task_ids=self.task_id, context=self.contexts, sample_logp=self.logp,
                    provenance=self.provenance, step=self.step)


def add_arguments(proposals: Sequence[tuple[Proposal, int]]) -> dict[str, Any]:
    """The ``ExperienceBank.add`` arguments (all but utility) that write several proposals at once,
    each with the extractor version that made it: rows stacked in order, ``task_ids``, ``step`` and
    ``extractor_version`` one per row.

    Raises:
        ValueError: no proposals, or proposals of different provenance (one ``add`` has one).
    """
    if not proposals:
        raise ValueError("no proposals to write")
    provenance = {p.provenance for p, _ in proposals}
    if len(provenance) > 1:
        raise ValueError(f"proposals of one write must share a provenance, got {sorted(provenance)}")
    if len(proposals) == 1:
        p, version = proposals[0]
        return dict(keys=p.keys, values=p.values, extractor_version=version, **p.add_kwargs())
    sizes = [p.size for p, _ in proposals]

    def per_row(values: list[int]) -> np.ndarray:
        return np.repeat(np.asarray(values, dtype=np.int64), sizes)
    return dict(keys=np.concatenate([p.keys for p, _ in proposals]),
                values=np.concatenate([p.values for p, _ in proposals]),
                task_ids=per_row([p.task_id for p, _ in proposals]),
                context=np.concatenate([p.contexts for p, _ in proposals]),
                sample_logp=np.concatenate([p.logp for p, _ in proposals]),
                provenance=provenance.pop(), step=per_row([p.step for p, _ in proposals]),
                extractor_version=per_row([v for _, v in proposals]))


#: the median key norms taken without a word (the default encoders' rows have norm 1)
KEY_NORMS = (0.1, 10.0)
#: the episodes whose keys are checked so (an encoder's scale shows in its first episodes)
SCALE_CHECKS = 20


class Distiller:
    """Segments an episode and asks the extractor for its entries.

    Args:
        key_encoder: the frozen key encoder.
        action_space: the env's action space.
        config: the manager's config (``segment_every``, ``max_len``, ``skip_below``).
        generator: the torch generator the extractor samples with (seeded by the manager).

    With ``config.layout`` the values are run scope's entries, one per step
    (:meth:`ManagerConfig.entry_layout`); without, the extractor's vectors.
    """

    def __init__(self, key_encoder: KeyEncoder, action_space: spaces.Space, config: ManagerConfig,
                 generator: torch.Generator) -> None:
        self.key_encoder = key_encoder
        self.action_coder = ActionCoder(action_space)
        self.config = config
        self.max_len = config.max_len  # the config is frozen: read once, used at every segment
        self.generator = generator
        self.layout = config.entry_layout(key_encoder.key_dim, self.action_coder.dim)
        self._scale_checks = SCALE_CHECKS if self.layout is None else 0  # (run scope's keys are not distance-deduplicated)

    def _check_scale(self, keys: np.ndarray) -> None:
        """Say once when the keys are far from unit norm: the bank's distances (``dedup_threshold``,
        ``merge_threshold``) are set for the default encoders' unit rows, and keys 1,000 times
        smaller fold every entry into one without a word."""
        self._scale_checks -= 1
        norms = np.linalg.norm(keys, axis=1)
        norms = norms[norms > 0]  # (an all-zero observation keys to 0 with the default encoders: not a scale)
        norm = float(np.median(norms)) if len(norms) else 1.0
        if not KEY_NORMS[0] <= norm <= KEY_NORMS[1]:
            self._scale_checks = 0
            warnings.warn(f"the key encoder {type(self.key_encoder).__name__} returns keys of median norm {norm:.3g}: "
                          "the bank's distances (BankConfig dedup_threshold, merge_threshold) are set for keys of "
                          "unit norm, as the default encoders return; at this scale entries fold into one another "
                          "(or never do). Return unit rows (experience_wrappers.keys.base.normalise_rows) or scale "
                          "the thresholds", UserWarning, stacklevel=2)

    def segments(self, ep: Episode, every: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keys and contexts of an episode's segments (one starting every ``every`` steps,
        default ``config.segment_every``), and their start steps."""
        n = ep.length
        keys = checked_keys(self.key_encoder, ep.observations, np.full(n, ep.task_id, dtype=np.int64))
        if self._scale_checks > 0:
            self._check_scale(keys)
        acts = self.action_coder.encode(ep.actions)
        every = self.config.segment_every if every is None else every
        starts = np.arange(0, n, every) if every else np.zeros(1, dtype=np.int64)
        rewards = np.asarray(ep.rewards, dtype=np.float64)
        contexts = np.stack([encode_segment(keys[s:], acts[s:], rewards[s:], self.max_len)
                             for s in starts.tolist()])
        return keys[starts], contexts, starts

    def propose(self, ep: Episode, trainer: ExtractorTrainer, provenance: Provenance = Provenance.EXTRACTED,
                every: int | None = None) -> Proposal | None:
        """The entries ``trainer``'s extractor proposes for ``ep`` (None for an empty episode).

        Segments whose predicted utility is below ``config.skip_below`` are left out
        (never a demonstration's).
        """
        if ep.length == 0:
            return None
        keys, contexts, _ = self.segments(ep, every)
        z, logp, util = trainer.extractor.propose(contexts, self.generator)
        keep = np.ones(len(z), dtype=bool)
        if self.config.skip_below is not None and provenance != Provenance.DEMO:
            keep = util >= self.config.skip_below
        values = z
        if self.layout is not None:  # one entry per step (checked at construction), with its content
            values = self.layout.trial_values(keys, self.action_coder.encode(ep.actions), z, ep.rewards, ep.success)
        return Proposal(keys=keys[keep], values=values[keep], contexts=contexts[keep],
                        logp=logp[keep], all_contexts=contexts, task_id=int(ep.task_id), provenance=provenance,
                        step=int(ep.env_steps))


class EntryWriter:
    """Writes the learner's proposed entries into the bank and runs its merges.

    Every backend writes through it (:mod:`.backend`); it returns what the learner must
    forget (evicted entries) or fold (merged ones), and counts the entries added.

    Args:
        bank: the bank to write into.
        lock: guards ``entries_added`` (the manager's stats lock).
    """

    def __init__(self, bank: ExperienceBank, lock: threading.Lock) -> None:
        self.bank = bank
        self.lock = lock
        self.entries_added = 0

    def write(self, proposals: list[tuple[Proposal, int]], utility: float | None,
              forget: Callable[[np.ndarray], None]) -> np.ndarray:
        """Write proposed entries (each proposal with its extractor version) in one ``add``;
        the entries evicted to make room go to ``forget`` (they leave the learner's samples).
        Returns the ids of the rows written, in order (a row the bank folded into a near
        duplicate gives that entry's id).

        One ``add`` for several episodes' proposals (process mode) differs from one per episode
        only in a full bank: the batch's new entries do not evict each other, where writes one
        by one could evict an earlier episode's fresh entries. If the bank refuses the batch,
        each proposal is written on its own and the first refusal raised after the others.
        """
        if len(proposals) > 1:
            try:
                res = self.bank.add(**add_arguments(proposals), utility=utility)
            except Exception:  # noqa: BLE001 - a refused add changes nothing: write them one by one
                res = None
            if res is not None:
                return self._record(res, forget)
        refused: Exception | None = None
        ids = []
        for one in proposals:
            try:
                res = self.bank.add(**add_arguments([one]), utility=utility)
            except Exception as exc:  # noqa: BLE001 - raised after the others are written
                refused = refused or exc
                continue
            ids.append(self._record(res, forget))
        if refused is not None:
            raise refused
        return np.concatenate(ids) if ids else np.zeros(0, np.int64)

    def merge(self) -> dict[int, list[int]]:
        """Merge the bank's near duplicates; returns survivor id -> the ids merged into it."""
        return self.bank.merge().merged

    def _record(self, res: AddResult, forget: Callable[[np.ndarray], None]) -> np.ndarray:
        if res.evicted.size:
            forget(res.evicted)
        with self.lock:
            self.entries_added += int(res.added.sum())
        return np.asarray(res.ids, np.int64)
