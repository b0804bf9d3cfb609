"""``sync`` mode's learner backend: every step inside the manager's call, in this process.

:class:`InlineBackend` holds the extractor's learner (:class:`~.learner.ExtractorLearner`) and
the distiller, and runs an episode's steps in order (:mod:`.backend`): credit, samples,
distillation, the bank write, the extractor's updates. ``async`` mode's
:class:`~.thread_backend.ThreadBackend` runs the same steps on a worker thread.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from ..bank import Provenance
from ..errors import ManagerFileError
from ..extractor import ExtractorConfig
from ..keys import KeyEncoder
from .backend import CreditRule, LearnerFigures, Restore
from .config import ManagerConfig
from .episode import Episode
from .episode_entries import Distiller, EntryWriter, Proposal
from .learner import ExtractorLearner

__all__ = ["InlineBackend", "read_generator"]


class InlineBackend:
    """The learner in this process, run on the caller's thread.

    Args:
        key_encoder: the frozen key encoder (the distiller's keys).
        action_space: the env's action space.
        config: the manager's config.
        extractor_config: the extractor's config.
        writer: the bank's entry writer.
        credit: the manager's credit rule.
        lock: the manager's stats lock (guards the figures).
    """

    def __init__(self, key_encoder: KeyEncoder, action_space: spaces.Space, config: ManagerConfig,
                 extractor_config: ExtractorConfig, writer: EntryWriter, credit: CreditRule,
                 lock: threading.Lock) -> None:
        self.config = config
        self.writer = writer
        self.credit = credit
        self.lock = lock
        self.generator = torch.Generator().manual_seed(config.seed)
        self.learner = ExtractorLearner(extractor_config, config, lock)
        self._distiller = Distiller(key_encoder, action_space, config, self.generator)
        self.episodes_processed = 0
        self.busy_seconds = 0.0

    # -------------------------------------------------------------- protocol
    @property
    def local(self) -> ExtractorLearner:
        return self.learner

    @property
    def distiller(self) -> Distiller:
        return self._distiller

    @property
    def pid(self) -> None:
        return None

    @property
    def pending(self) -> int:
        return 0

    def episode(self, ep: Episode) -> None:
        t0 = time.perf_counter()
        # proposed first (it reads no credit): an episode distillation refuses changes nothing
        proposal = self._distiller.propose(ep, self.learner.trainer_for(ep.task_id))
        for ids, entries, rewards in self.credit(ep):
            self.learner.add_credit(ids, entries, rewards)
        self.write(ep, proposal)
        self.learner.train_if_ready()
        with self.lock:
            self.episodes_processed += 1
            self.busy_seconds += time.perf_counter() - t0

    def merge(self) -> None:
        t0 = time.perf_counter()
        self.learner.after_merge(self.writer.merge())
        with self.lock:
            self.busy_seconds += time.perf_counter() - t0

    def ingest(self, ep: Episode, provenance: Provenance, every: int | None, utility: float | None) -> int:
        return len(self.distil(ep, provenance, every, utility))

    def poll(self) -> None:
        pass

    def flush(self, timeout: float | None = None) -> None:
        pass

    def close(self) -> None:
        pass

    def check(self) -> None:
        pass

    def figures(self) -> LearnerFigures:
        return LearnerFigures(extractor_version=self.learner.extractor_version, ssl_updates=self.learner.ssl_updates,
                              last_losses=dict(self.learner.last_losses),
                              episodes_processed=self.episodes_processed, busy_seconds=self.busy_seconds)

    def save(self, folder: Path) -> dict[str, str]:
        return self.learner.save(folder, self.generator)

    def prepare_restore(self, blobs: dict[str, bytes], state: dict[str, Any], path: Path) -> Restore:
        parsed = self.learner.read_state(blobs, state, path)
        generator_state = read_generator(blobs, path)

        def apply(episodes_processed: int) -> None:
            self.learner.adopt(parsed)
            self.generator.set_state(generator_state)
            with self.lock:
                self.episodes_processed = episodes_processed
        return apply

    # ----------------------------------------------------------------- steps
    def distil(self, ep: Episode, provenance: Provenance = Provenance.EXTRACTED, every: int | None = None,
               utility: float | None = None) -> np.ndarray:
        """Distil ``ep`` into the bank (its entries written now); returns their ids."""
        return self.write(ep, self._distiller.propose(ep, self.learner.trainer_for(ep.task_id), provenance, every),
                          utility)

    def write(self, ep: Episode, p: Proposal | None, utility: float | None = None) -> np.ndarray:
        """Write ``ep``'s proposed entries ``p`` into the bank and keep its segments for the extractor's
        self-supervised step; returns the new entries' ids."""
        if p is None:
            return np.zeros(0, np.int64)
        ids = np.zeros(0, np.int64)
        if p.size:
            ids = self.writer.write([(p, self.learner.extractor_version)], utility, self.learner.forget)
        self.learner.add_segments(p.all_contexts, ep.task_id)
        return ids


def read_generator(blobs: dict[str, bytes], path: Path) -> torch.Tensor:
    """The distiller's saved generator state (``samples.npz``), checked by loading it into a generator.

    Raises:
        ManagerFileError: missing or invalid.
    """
    try:
        if "samples.npz" not in blobs:
            raise KeyError("samples.npz is not listed in meta.json")
        with np.load(io.BytesIO(blobs["samples.npz"]), allow_pickle=False) as z:
            state = torch.from_numpy(z["generator"])
        torch.Generator().set_state(state)
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ManagerFileError(f"manager state at {str(path)!r} is invalid ({type(exc).__name__}: {exc})") from exc
    return state
