"""The extractor's learner: its trainers, the samples waiting for an update, and its version.

The learner owns everything about training the extractor: the credited samples (context,
sampled experience, its log-prob, the rewards credited to it), the fresh segments for the
self-supervised step, the trainers (one shared, or one per task), how often it trained on
each entry (:class:`~experience_wrappers.manager.training_counts.TrainingCounts`), and the
count of outcome updates, ``extractor_version`` (the version stamped on the entries it
proposes). It never reads the bank: what it needs of an entry comes with its credit, and
the bank's evictions and merges reach it through :meth:`ExtractorLearner.forget` and
:meth:`ExtractorLearner.after_merge` (which folds the samples as
:func:`~experience_wrappers.bank.merge.fold_samples` says).

A sample's reward is the mean of the rewards credited to it (:func:`sample_rewards`); the
trainer centres those over the batch (:func:`~experience_wrappers.extractor.losses.batch_advantages`).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch

from ..bank.merge import fold_samples, is_stale
from ..bank.save_load import bytes_as_file
from ..errors import ExperienceFileError, ManagerFileError
from ..extractor import ExperienceExtractor, ExtractorConfig, ExtractorTrainer
from .config import ManagerConfig
from .training_counts import TrainingCounts

__all__ = ["ExtractorLearner", "Sample", "sample_rewards"]


@attrs.define
class Sample:
    """A credited entry waiting for an extractor update."""

    context: np.ndarray
    z: np.ndarray
    logp: float
    rewards: list[float]
    task: int = 0


def sample_rewards(samples: list[Sample]) -> np.ndarray:
    """The reward of each sample in an update: the mean of the rewards credited to it.

    >>> sample_rewards([Sample(np.zeros(1), np.zeros(1), 0.0, [1.0, 0.0, 0.5])]).tolist()
    [0.5]
    """
    return np.array([np.mean(s.rewards) for s in samples], dtype=np.float32)


class ExtractorLearner:
    """Trains the extractor from credited samples and fresh segments.

    Args:
        extractor_config: the extractor's config (each per-task extractor gets its own seed).
        config: the manager's config (batch sizes, ``extractor_per_task``, ``train_extractor``, seed).
        lock: guards the counters and losses that :meth:`ExperienceManager.stats` reads.
    """

    def __init__(self, extractor_config: ExtractorConfig, config: ManagerConfig, lock: threading.Lock) -> None:
        self.extractor_config = extractor_config
        self.config = config
        self.lock = lock
        self.trainer = ExtractorTrainer(ExperienceExtractor(extractor_config))
        self.task_trainers: dict[int, ExtractorTrainer] = {}
        self.samples: dict[int, Sample] = {}
        self.ssl_contexts: list[np.ndarray] = []
        self.ssl_tasks: list[int] = []
        #: how often each entry was trained on, and when last (the count-aware weights)
        self.trained = TrainingCounts()
        #: outcome (policy-gradient) updates so far: the extractor's version, stamped on new entries
        self.extractor_version = 0
        self.ssl_updates = 0
        self.last_losses: dict[str, float] = {}

    def trainer_for(self, task_id: int) -> ExtractorTrainer:
        """The extractor trainer of a task: the shared one, or the task's own with
        ``extractor_per_task`` (created on first use, seeded from the manager seed and the task)."""
        if not self.config.extractor_per_task:
            return self.trainer
        trainer = self.task_trainers.get(int(task_id))
        if trainer is None:
            cfg = attrs.evolve(self.extractor_config, seed=(self.config.seed + 7919 * (int(task_id) + 1)) % 2 ** 63)
            trainer = self.task_trainers[int(task_id)] = ExtractorTrainer(ExperienceExtractor(cfg))
        return trainer

    # ------------------------------------------------------------------ input
    def add_credit(self, ids: np.ndarray, entries: Mapping[str, np.ndarray], reward: float | np.ndarray) -> None:
        """Credit ``reward`` (one for all, or one per entry) to the entries ``ids`` (their fields
        in ``entries``, as ``bank.get`` gives)."""
        rewards = np.broadcast_to(np.asarray(reward, dtype=np.float64), (len(ids),)).tolist()
        for i, (entry_id, r) in enumerate(zip(ids.tolist(), rewards, strict=True)):
            s = self.samples.get(entry_id)
            if s is None:
                self.samples[entry_id] = Sample(entries["context"][i].astype(np.float32), entries["value"][i].copy(),
                                                float(entries["sample_logp"][i]), [r],
                                                task=int(entries["task_id"][i]))
            else:
                s.rewards.append(r)

    def add_segments(self, contexts: np.ndarray, task_id: int) -> None:
        """Fresh segment contexts of a task, for the self-supervised step (none kept without one:
        ``config.ssl_batch_size`` 0)."""
        if not self.config.ssl_batch_size:
            return
        self.ssl_contexts.extend(contexts)
        self.ssl_tasks.extend([int(task_id)] * len(contexts))

    def forget(self, ids: np.ndarray) -> None:
        """Drop the samples and training counts of entries that left the bank (evicted)."""
        for i in np.asarray(ids).tolist():
            self.samples.pop(int(i), None)
        self.trained.forget(ids)

    def after_merge(self, merged: Mapping[int, list[int]]) -> None:
        """Fold the samples of merged-away entries into their survivors' (:func:`.fold_samples`),
        and their training counts (:meth:`.TrainingCounts.after_merge`)."""
        fold_samples(self.samples, merged)
        self.trained.after_merge(merged)

    # --------------------------------------------------------------- training
    def train_if_ready(self) -> None:
        """A self-supervised step per full batch of segments, then an outcome step per full batch of samples."""
        cfg = self.config
        if not cfg.train_extractor:
            self.samples.clear()
            self.ssl_contexts.clear()
            self.ssl_tasks.clear()
            return
        tasks = np.asarray(self.ssl_tasks, dtype=np.int64)
        groups = np.unique(tasks) if cfg.extractor_per_task else np.zeros(1 if len(tasks) else 0, np.int64)
        done = np.zeros(len(tasks), dtype=bool)
        for task in groups.tolist():
            rows = np.flatnonzero(tasks == task) if cfg.extractor_per_task else np.arange(len(tasks))
            if len(rows) < cfg.ssl_batch_size:
                continue
            out = self.trainer_for(task).ssl_update(np.stack([self.ssl_contexts[r] for r in rows[-cfg.ssl_batch_size:]]))
            done[rows] = True
            with self.lock:
                self.ssl_updates += 1
                self.last_losses.update({f"ssl_{k.removeprefix('ssl_')}": v for k, v in out.items()})
        if done.any():
            self.ssl_contexts = [c for c, d in zip(self.ssl_contexts, done, strict=True) if not d]
            self.ssl_tasks = [t for t, d in zip(self.ssl_tasks, done, strict=True) if not d]
        while True:
            batch = self._next_batch()
            if batch is None:
                break
            self._train_step(*batch)

    def _next_batch(self) -> tuple[np.ndarray, ExtractorTrainer] | None:
        """The oldest ``batch_size`` credited samples (of one task with per-task extractors)."""
        size = self.config.batch_size
        if not self.config.extractor_per_task:
            if len(self.samples) < size:
                return None
            return np.fromiter(list(self.samples)[:size], dtype=np.int64), self.trainer
        by_task: dict[int, list[int]] = {}
        for entry_id, sample in self.samples.items():
            group = by_task.setdefault(sample.task, [])
            group.append(entry_id)
            if len(group) == size:
                return np.asarray(group, dtype=np.int64), self.trainer_for(sample.task)
        return None

    def _train_step(self, ids: np.ndarray, trainer: ExtractorTrainer) -> None:
        samples = [self.samples.pop(int(i)) for i in ids]
        contexts = np.stack([s.context for s in samples])
        z = np.stack([s.z for s in samples])
        logp = np.array([s.logp for s in samples], dtype=np.float32)
        rewards = sample_rewards(samples)
        stale = is_stale(logp)  # merged entries: their value was averaged, recompute
        if stale.any():
            with torch.no_grad():
                inputs, lengths = trainer.extractor.decode(contexts[stale])
                logp[stale] = trainer.extractor.distribution(inputs, lengths).log_prob(
                    torch.from_numpy(z[stale])).numpy()
        n_trained, last = self.trained.get(ids)
        recent = (last >= 0) & (last >= self.extractor_version - 1)
        out = trainer.update(contexts, z, logp, rewards, n_trained, recent)
        with self.lock:
            self.extractor_version += 1
            self.last_losses.update(out)
        self.trained.mark(ids, self.extractor_version)

    # ------------------------------------------------------------ persistence
    def save(self, folder: Path, generator: torch.Generator) -> dict[str, str]:
        """Write the trainers and ``samples.npz`` (the samples, segments, training counts and the
        distiller's ``generator`` state) into ``folder``; returns the per-task file names by task."""
        self.trainer.save(folder / "extractor.pt")
        task_files = {str(t): f"extractor_task{t}.pt" for t in sorted(self.task_trainers)}
        for t, name in task_files.items():
            self.task_trainers[int(t)].save(folder / name)
        cfg = self.extractor_config
        np.savez(folder / "samples.npz", **self.sample_arrays(cfg.context_size, cfg.exp_dim),  # type: ignore[arg-type]  # numpy stub: **arrays matched to allow_pickle: bool
                 generator=generator.get_state().numpy())
        return task_files

    def sample_arrays(self, context_dim: int, exp_dim: int) -> dict[str, np.ndarray]:
        """The samples and segments as arrays (the content of ``samples.npz``)."""
        ids = np.fromiter(self.samples, dtype=np.int64, count=len(self.samples))
        samples = list(self.samples.values())
        return dict(ids=ids,
                    context=np.stack([s.context for s in samples]) if samples else np.zeros((0, context_dim), np.float32),
                    z=np.stack([s.z for s in samples]) if samples else np.zeros((0, exp_dim), np.float32),
                    logp=np.array([s.logp for s in samples], dtype=np.float32),
                    reward_sum=np.array([sum(s.rewards) for s in samples], dtype=np.float64),
                    reward_count=np.array([len(s.rewards) for s in samples], dtype=np.int64),
                    task=np.array([s.task for s in samples], dtype=np.int64),
                    ssl_tasks=np.array(self.ssl_tasks, dtype=np.int64),
                    ssl_contexts=(np.stack(self.ssl_contexts).astype(np.float32) if self.ssl_contexts
                                  else np.zeros((0, context_dim), np.float32)),
                    **self.trained.arrays())

    def read_state(self, blobs: dict[str, bytes], state: dict, path: Path) -> dict[str, Any]:
        """Parse the learner's part of a saved manager folder, changing nothing (see :meth:`adopt`).

        ``extractor_version`` is read from the key of that name, else from ``pg_updates``
        (states saved before the rename), else from the trainer's update count.

        Raises:
            ManagerFileError: a listed file is missing or damaged, or the state is invalid.
        """
        trainer = self._retuned(_trainer_from(blobs, "extractor.pt", path), path)
        try:
            task_trainers = {int(t): self._retuned(_trainer_from(blobs, str(name), path), path)
                             for t, name in state.get("task_extractors", {}).items()}
        except (TypeError, ValueError) as exc:
            raise ManagerFileError(f"manager state at {str(path)!r} lists bad task extractors: {exc}") from exc
        try:
            if "samples.npz" not in blobs:
                raise KeyError("samples.npz is not listed in meta.json")
            with np.load(io.BytesIO(blobs["samples.npz"]), allow_pickle=False) as z:
                tasks = z["task"] if "task" in z.files else np.zeros(len(z["ids"]), np.int64)
                samples = {
                    int(i): Sample(z["context"][j], z["z"][j], float(z["logp"][j]),
                                   [float(z["reward_sum"][j]) / max(int(z["reward_count"][j]), 1)]
                                   * int(z["reward_count"][j]), task=int(tasks[j]))
                    for j, i in enumerate(z["ids"].tolist())}
                ssl_contexts = list(z["ssl_contexts"]) if "ssl_contexts" in z.files else []
                ssl_tasks = z["ssl_tasks"].tolist() if "ssl_tasks" in z.files else [0] * len(ssl_contexts)
                # saved before the learner kept them (they were the bank's): counted afresh
                trained = (TrainingCounts.from_arrays(z["trained_ids"], z["n_trained"], z["last_trained"])
                           if "trained_ids" in z.files else TrainingCounts())
            ssl_updates = int(state["ssl_updates"])
            version = state.get("extractor_version", state.get("pg_updates", trainer.updates - ssl_updates))
            version = int(version)
        except (OSError, KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
            raise ManagerFileError(f"manager state at {str(path)!r} is invalid ({type(exc).__name__}: {exc})") from exc
        return {"trainer": trainer, "task_trainers": task_trainers, "samples": samples,
                "ssl_contexts": ssl_contexts, "ssl_tasks": [int(t) for t in ssl_tasks],
                "extractor_version": version, "ssl_updates": ssl_updates, "trained": trained}

    def _retuned(self, saved: ExtractorTrainer, path: Path) -> ExtractorTrainer:
        """``saved``'s weights, optimizer state and count under this learner's knobs (learning rate,
        loss weights, clipping: ``extractor_config``, with the saved network's seed kept)."""
        config = attrs.evolve(self.extractor_config, seed=saved.config.seed)
        if config.shape_differences(saved.config.to_dict()):
            raise ManagerFileError(f"manager state at {str(path)!r}: an extractor file's network is "
                                   f"{saved.config}, not this manager's shape {self.extractor_config}")
        saved.extractor.config = config  # (the knobs are read where they are used, never kept at construction)
        for group in saved.optimizer.param_groups:  # (the saved optimizer state carries the saved rate)
            group["lr"] = config.lr
        return saved

    def adopt(self, parsed: dict[str, Any]) -> None:
        """Take the state :meth:`read_state` parsed."""
        for name, value in parsed.items():
            setattr(self, name, value)


def _trainer_from(blobs: dict[str, bytes], name: str, path: Path) -> ExtractorTrainer:
    """An extractor trainer parsed from the verified bytes of ``name``."""
    if name not in blobs:
        raise ManagerFileError(f"manager state at {str(path)!r}: {name} is not listed in meta.json")
    try:
        with bytes_as_file(blobs[name]) as f:
            return ExtractorTrainer.load(f)
    except ExperienceFileError as exc:
        raise ManagerFileError(f"manager state at {str(path)!r}: {name} cannot be loaded ({exc})") from exc
