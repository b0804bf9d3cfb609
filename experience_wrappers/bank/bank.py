"""The experience bank: entries, an HNSW index over their keys, and the rules that keep both."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BankStateError
from .config import MAX_DIM, MAX_K, MAX_UTILITY, MIN_TEMPERATURE, BankConfig, resolve_config
from .distance import pairwise_distances
from .entries import EntryStore
from .index import HnswIndex
from .lock import RWLock
from .merge import merge_weights, plan_clusters
from .provenance import CURATED, Provenance
from .results import AddResult, MergeResult, QueryResult
from .retrieval import MODES, retrieval_scores, sample_without_replacement
from .transaction import Transaction, interrupts_deferred, transaction
from .validation import (
    as_float_vector,
    as_int_vector,
    as_matrix,
    as_real,
    check_bounded,
    check_int64,
    check_positive_int,
    check_unit,
)

__all__ = ["ExperienceBank", "NOT_PICKLABLE"]

#: why banks (and their managers) refuse to be pickled or copied, and what to do instead
NOT_PICKLABLE = (
    "{what} cannot be pickled or copied: every process would hold its own copy and learn apart from the others "
    "(this is what happens to per-env ExperienceWrappers inside a SubprocVecEnv). Wrap the vector env instead: "
    "ExperienceVecEnv(SubprocVecEnv([...plain env factories...]), bank) from integrations.sb3 keeps the bank in "
    "the main process; integrations.ray shares one bank between processes; save() and load() copy a bank."
)


class ExperienceBank:
    """A bounded store of experience entries with HNSW retrieval, safe to share between threads.

    An entry holds a key (where it applies), a value (the experience vector), an optional
    action prior and training context, a utility score, counters (retrieved, credited,
    trained), a task id and provenance. Ids are stable for the life of an entry.

    Dimensions are taken from the first :meth:`add` unless given here.

    Changes are all-or-nothing: :meth:`add`, :meth:`update`, :meth:`merge`, :meth:`evict`,
    :meth:`remove` and :meth:`mark_trained` check every argument before they change
    anything, and a change that fails (or is interrupted) half-way is rolled back, so the
    bank is exactly as it was (Ctrl-C in the main thread is held back until the change is
    complete). :meth:`save` checks that entries and index agree before it writes.

    Args:
        config: a :class:`BankConfig`; keyword overrides build one (``ExperienceBank(capacity=64)``).
        key_dim, value_dim, prior_dim, context_dim: fix the dimensions up front.

    >>> bank = ExperienceBank(capacity=8)
    >>> res = bank.add(np.eye(3, dtype=np.float32), np.ones((3, 2), dtype=np.float32))
    >>> res.ids.tolist(), len(bank)
    ([0, 1, 2], 3)
    >>> hit = bank.query(np.array([1.0, 0.0, 0.0]), k=1, mode="knn")
    >>> hit.ids.tolist(), hit.mask.tolist()
    ([[0]], [[True]])
    """

    FORMAT = "complementary-rl.experience-bank"
    VERSION = 2  # 2: data files named per save (entries-<gen>.npz); 1 still loads

    def __init__(self, config: BankConfig | None = None, *, key_dim: int | None = None,
                 value_dim: int | None = None, prior_dim: int = 0, context_dim: int = 0,
                 **overrides: Any) -> None:
        self.config = config = resolve_config(config, overrides)
        self._lock = RWLock()
        self._count_lock = threading.Lock()
        self._rng = np.random.default_rng(config.seed)
        self._next_id = 0
        self._tick = 0
        self._task_counts: Counter[int] = Counter()
        self._task_sets: dict[int, frozenset[int]] = {}
        self._store: EntryStore | None = None
        self._index: HnswIndex | None = None
        self._txn: Transaction | None = None
        self._save_id: str | None = None  # the save this bank was loaded from (see persistence)
        if key_dim is not None or value_dim is not None:
            if key_dim is None or value_dim is None:
                raise ValueError(f"give both key_dim and value_dim, got {key_dim!r} and {value_dim!r}")
            self._init_dims({"key_dim": check_positive_int("key_dim", key_dim),
                             "value_dim": check_positive_int("value_dim", value_dim),
                             "prior_dim": _non_negative_int("prior_dim", prior_dim),
                             "context_dim": _non_negative_int("context_dim", context_dim)})

    # ------------------------------------------------------------------ basics
    def _init_dims(self, dims: dict[str, int]) -> None:
        for name, width in dims.items():
            if width > MAX_DIM:
                raise ValueError(f"{name} must be <= {MAX_DIM}, got {width}")
        c = self.config
        self._store = EntryStore(dims)
        self._index = HnswIndex(c.space, dims["key_dim"], c.capacity, c.M, c.ef_construction,
                                c.ef_search, seed=c.seed or 0)

    @property
    def dims(self) -> dict[str, int] | None:
        """``key_dim``, ``value_dim``, ``prior_dim``, ``context_dim``; None before the first add."""
        return None if self._store is None else dict(self._store.dims)

    def __len__(self) -> int:
        return 0 if self._store is None else self._store.size

    def __contains__(self, entry_id: object) -> bool:
        return self._store is not None and isinstance(entry_id, (int, np.integer)) and entry_id in self._store

    def __repr__(self) -> str:
        return f"ExperienceBank(size={len(self)}, capacity={self.config.capacity}, dims={self.dims})"

    def __reduce__(self) -> Any:
        raise TypeError(NOT_PICKLABLE.format(what="an ExperienceBank"))

    # --------------------------------------------------------------------- add
    def add(self, keys: Any, values: Any, *, task_ids: Any = 0, utility: Any = None,
            prior: Any = None, context: Any = None, sample_logp: Any = None,
            provenance: Provenance | int = Provenance.EXTRACTED, step: int = 0,
            extractor_version: int = 0) -> AddResult:
        """Add a batch of entries, deduplicating against the bank and within the batch.

        An item closer than ``dedup_threshold`` to an entry of the same task (already in the
        bank, or added earlier in this batch) refreshes that entry instead: its value, prior,
        context, sample log-prob and extractor version are replaced by the item's, its key,
        utility and counters stay. A refresh never crosses between curated entries
        (demonstrations) and the agent's: such an item becomes a new entry. When the new
        entries do not fit, existing entries are evicted, lowest utility first, then oldest,
        demonstrations last; a batch larger than the capacity keeps
        only its last ``capacity`` new entries.

        Returns:
            :class:`AddResult` with, per item, the id it now lives in.
        """
        keys_arr = as_matrix("keys", keys, None if self._store is None else self._store.dims["key_dim"])
        n = len(keys_arr)
        vals = as_matrix("values", values, None if self._store is None else self._store.dims["value_dim"])
        if len(vals) != n:
            raise ValueError(f"values must have {n} rows (one per key), got {len(vals)}")
        for name, arr in (("keys", keys_arr), ("values", vals)):
            if arr.shape[1] == 0:
                raise ValueError(f"{name} must have at least one column, got {arr.shape}")
        tasks = as_int_vector("task_ids", task_ids, n)
        util = as_float_vector("utility", self.config.initial_utility if utility is None else utility, n)
        check_bounded("utility", util, MAX_UTILITY)
        pri = self._optional("prior", prior, n, np.float32)
        ctx = self._optional("context", context, n, np.float16)
        logp = as_float_vector("sample_logp", 0.0 if sample_logp is None else sample_logp, n,
                               dtype=np.float32)
        try:
            prov = Provenance(int(provenance))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"provenance must be one of {[int(p) for p in Provenance]}, got {provenance!r}") from exc
        step, extractor_version = check_int64("step", step), check_int64("extractor_version", extractor_version)
        if self._store is None:
            for name, width in (("keys", keys_arr.shape[1]), ("values", vals.shape[1]),
                                ("prior", pri.shape[1]), ("context", ctx.shape[1])):
                if width > MAX_DIM:
                    raise ValueError(f"{name} must have at most {MAX_DIM} columns, got {width}")
        if self.config.space != "l2" and np.any(np.linalg.norm(keys_arr, axis=1) == 0):
            raise ValueError(f"keys must be non-zero for space {self.config.space!r}")

        with interrupts_deferred(), self._lock.write(), transaction(self) as txn:
            if self._store is None:
                self._init_dims({"key_dim": keys_arr.shape[1], "value_dim": vals.shape[1],
                                 "prior_dim": pri.shape[1], "context_dim": ctx.shape[1]})
            store, index = self._store, self._index
            assert store is not None and index is not None
            target, source = self._dedup_targets(keys_arr, tasks)
            # a refresh never crosses between curated entries (demonstrations) and the agent's: an
            # agent's item beside a demonstration is a new entry, and the demonstration keeps its
            # content (DESIGN.md, bank maintenance)
            crossing = np.flatnonzero(target >= 0)
            if crossing.size:
                their = np.isin(store.cols["provenance"][store.slots_of(target[crossing])], CURATED)
                target[crossing[their != (int(prov) in CURATED)]] = -1
            result_ids = np.full(n, -1, dtype=np.int64)

            # refresh existing entries, in item order (a later item wins)
            refreshed = np.flatnonzero(target >= 0)
            store.touch(store.slots_of(target[refreshed]))
            for i in refreshed.tolist():
                slot = store.slots_of([target[i]])[0]
                self._refresh(slot, vals[i], pri[i], ctx[i], logp[i], extractor_version)
                result_ids[i] = target[i]

            new_items = np.flatnonzero((target < 0) & (source < 0))
            # the final content of a new item is that of the last batch item folded into it
            final_src = new_items.copy()
            pos = {int(j): p for p, j in enumerate(new_items.tolist())}
            for i in np.flatnonzero(source >= 0).tolist():
                final_src[pos[int(source[i])]] = i
            keep_from = max(0, len(new_items) - self.config.capacity)
            kept_items, kept_src = new_items[keep_from:], final_src[keep_from:]

            excess = store.size + len(kept_items) - self.config.capacity
            store.reserve(store.size + len(kept_items))  # allocations first: they change nothing
            evicted = self._evict_locked(excess) if excess > 0 else np.zeros(0, dtype=np.int64)

            new_ids = np.arange(self._next_id, self._next_id + len(kept_items), dtype=np.int64)
            self._next_id += len(kept_items)
            slots = store.append(len(kept_items))
            c = store.cols
            c["id"][slots] = new_ids
            c["key"][slots] = keys_arr[kept_items]
            c["value"][slots] = vals[kept_src]
            c["prior"][slots] = pri[kept_src]
            c["context"][slots] = ctx[kept_src]
            c["sample_logp"][slots] = logp[kept_src]
            c["utility"][slots] = util[kept_items]
            c["last_retrieved"][slots] = -1
            c["last_trained"][slots] = -1
            c["task_id"][slots] = tasks[kept_items]
            c["provenance"][slots] = int(prov)
            c["created_step"][slots] = step
            c["extractor_version"][slots] = extractor_version
            store.reindex(slots)
            txn.index_touched = True
            index.add(keys_arr[kept_items], new_ids)
            self._task_counts.update(tasks[kept_items].tolist())
            self._task_sets.clear()

            result_ids[kept_items] = new_ids
            id_of_item = dict(zip(kept_items.tolist(), new_ids.tolist(), strict=True))
            for i in np.flatnonzero(source >= 0).tolist():
                result_ids[i] = id_of_item.get(int(source[i]), -1)
            if len(evicted):  # an entry refreshed above may have been evicted to make room
                result_ids[np.isin(result_ids, evicted)] = -1
            added = np.zeros(n, dtype=bool)
            added[kept_items] = True
            return AddResult(ids=result_ids, added=added, evicted=evicted)

    def _optional(self, name: str, x: Any, n: int, dtype: type) -> np.ndarray:
        width = None if self._store is None else self._store.dims[f"{name}_dim"]
        if x is None:
            return np.zeros((n, width or 0), dtype=dtype)
        if width == 0:
            raise ValueError(f"this bank stores no {name} ({name}_dim=0), but {name} was given")
        arr = as_matrix(name, x, width, dtype=dtype)
        if len(arr) != n:
            raise ValueError(f"{name} must have {n} rows (one per key), got {len(arr)}")
        return arr.astype(dtype)

    def _refresh(self, slot: int, value: np.ndarray, prior: np.ndarray, context: np.ndarray,
                 logp: float, version: int) -> None:
        c = self._store.cols  # type: ignore[union-attr]
        c["value"][slot] = value
        c["prior"][slot] = prior
        c["context"][slot] = context
        c["sample_logp"][slot] = logp
        c["extractor_version"][slot] = version

    def _dedup_targets(self, keys: np.ndarray, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per item: the existing id it refreshes (or -1) and the earlier batch item it folds into (or -1)."""
        n = len(keys)
        target = np.full(n, -1, dtype=np.int64)
        source = np.full(n, -1, dtype=np.int64)
        thr = self.config.dedup_threshold
        if thr <= 0:
            return target, source
        best = np.full(n, np.inf)
        if len(self) > 0:
            ids, dists = self._nearest(keys, 1, tasks)
            close = (ids[:, 0] >= 0) & (dists[:, 0] < thr)
            target[close] = ids[close, 0]
            best[close] = dists[close, 0]
        if n > 1:
            for lo in range(0, n, 1024):  # chunks bound the pairwise matrix
                hi = min(n, lo + 1024)
                d = pairwise_distances(keys[lo:hi], keys[:hi], self.config.space)
                close = (d < thr) & (tasks[lo:hi, None] == tasks[None, :hi])
                close &= np.arange(hi)[None, :] < np.arange(lo, hi)[:, None]
                for r in np.flatnonzero(close.any(axis=1)).tolist():
                    i = lo + r
                    earlier = np.flatnonzero(close[r] & (target[:hi] < 0) & (source[:hi] < 0))
                    earlier = earlier[earlier < i]
                    if earlier.size:
                        j = earlier[np.argmin(d[r, earlier])]
                        if d[r, j] < best[i]:
                            source[i], target[i] = j, -1
        return target, source

    # ------------------------------------------------------------------ search
    def _task_set(self, task: int) -> frozenset[int]:
        s = self._task_sets.get(task)
        if s is None:
            store = self._store
            assert store is not None
            s = frozenset(store.view("id")[store.view("task_id") == task].tolist())
            self._task_sets[task] = s
        return s

    def _nearest(self, keys: np.ndarray, m: int, tasks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``m`` nearest ids per row (same task when ``tasks`` is given); -1 / inf padded."""
        store, index = self._store, self._index
        assert store is not None and index is not None
        n = len(keys)
        if tasks is None or (len(self._task_counts) == 1 and np.all(tasks == next(iter(self._task_counts)))):
            if m <= store.size:  # the usual case: one unfiltered search fills every row
                try:
                    return index.search(keys, m)
                except RuntimeError:  # hnswlib could not fill m results: exact search instead
                    return self._brute_nearest(keys, m, None)
            groups = [(np.arange(n), None, store.size)]
        else:
            groups = []
            for t in np.unique(tasks).tolist():
                rows = np.flatnonzero(tasks == t)
                count = self._task_counts.get(t, 0)
                if count:
                    groups.append((rows, t, count))
        ids = np.full((n, m), -1, dtype=np.int64)
        dists = np.full((n, m), np.inf)
        for rows, task, count in groups:
            mm = min(m, count)
            try:
                if task is None:
                    lab, dis = index.search(keys[rows], mm)
                else:
                    members = self._task_set(task)
                    lab, dis = index.search(keys[rows], mm, filter_fn=members.__contains__)
            except RuntimeError:  # hnswlib could not fill mm results: exact search instead
                lab, dis = self._brute_nearest(keys[rows], mm, task)
            ids[rows, :mm] = lab
            dists[rows, :mm] = dis
        return ids, dists

    def _brute_nearest(self, keys: np.ndarray, m: int, task: int | None) -> tuple[np.ndarray, np.ndarray]:
        store = self._store
        assert store is not None
        sel = np.arange(store.size) if task is None else np.flatnonzero(store.view("task_id") == task)
        d = pairwise_distances(keys, store.view("key")[sel], self.config.space)
        order = np.argsort(d, axis=1, kind="stable")[:, :m]
        return store.view("id")[sel][order], np.take_along_axis(d, order, axis=1)

    # ------------------------------------------------------------------- query
    def query(self, keys: Any, k: int = 4, *, task_ids: Any = None, mode: str = "utility",
              temperature: float | None = None, record: bool = True,
              rng: np.random.Generator | None = None) -> QueryResult:
        """Retrieve up to ``k`` entries per key.

        Modes:
            ``"utility"`` (default): the ``k * candidate_factor`` nearest entries are
            candidates; entries under ``utility_floor`` are dropped; ``k`` are sampled
            without replacement with probabilities ``softmax(utility / temperature -
            diversity_penalty * log(1 + times retrieved))``.
            ``"knn"``: the ``k`` nearest above the floor, nearest first (deterministic).
            ``"random"``: ``k`` entries drawn uniformly from the bank (same task if
            ``task_ids`` is given), ignoring the key: the ablation baseline.

        A query on an empty or small bank returns what exists; missing picks have
        ``mask == False``. ``record=False`` leaves the retrieval counters alone (evaluation).
        """
        k = check_positive_int("k", k)
        if k > MAX_K:
            raise ValueError(f"k must be <= {MAX_K}, got {k}")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator or None, got {type(rng).__name__}")
        if not isinstance(record, (bool, np.bool_)):
            raise TypeError(f"record must be a bool, got {record!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        temp = self.config.temperature if temperature is None else as_real("temperature", temperature)
        if not (np.isfinite(temp) and temp >= MIN_TEMPERATURE):
            raise ValueError(f"temperature must be finite and >= {MIN_TEMPERATURE}, got {temperature!r}")
        dims = self.dims
        q = as_matrix("keys", keys, None if dims is None else dims["key_dim"])
        n = len(q)
        tasks = None if task_ids is None else as_int_vector("task_ids", task_ids, n)
        vdim = 0 if dims is None else dims["value_dim"]
        pdim = 0 if dims is None else dims["prior_dim"]
        with self._lock.read():
            store = self._store
            if store is None or store.size == 0:
                return QueryResult(ids=np.full((n, k), -1, dtype=np.int64),
                                   values=np.zeros((n, k, vdim), np.float32),
                                   utility=np.zeros((n, k)), prior=np.zeros((n, k, pdim), np.float32),
                                   distances=np.full((n, k), np.inf), mask=np.zeros((n, k), dtype=bool))
            if mode != "random":
                m = min(store.size, k * self.config.candidate_factor)
                if mode == "knn" and self.config.utility_floor is None:
                    m = k
                cand_ids, cand_d = self._nearest(q, m, tasks)
            with self._count_lock:
                generator = self._rng if rng is None else rng
                if mode == "random":
                    cand_ids, cand_d = self._random_candidates(n, k, tasks, generator)
                slots = store.find(cand_ids)
                valid = slots >= 0
                floor = self.config.utility_floor
                if mode == "utility" or floor is not None:
                    util = np.where(valid, store.cols["utility"][np.maximum(slots, 0)], -np.inf)
                    if floor is not None:
                        valid &= util >= floor
                if mode == "utility":
                    scores = retrieval_scores(util, store.cols["n_retrieved"][np.maximum(slots, 0)],
                                              temp, self.config.diversity_penalty)
                    cols, mask = sample_without_replacement(scores, valid, k, generator)
                elif valid.shape[1] >= k and valid[:, :k].all():  # the usual case: the first k
                    cols, mask = None, np.ones((n, k), dtype=bool)
                else:  # nearest first / random order, among the valid
                    cols = np.argsort(~valid, axis=1, kind="stable")[:, :k]
                    mask = np.take_along_axis(valid, cols, axis=1)
                    if cols.shape[1] < k:  # fewer candidates than k: pad (np.pad is slow, avoid it)
                        cols = np.concatenate([cols, np.zeros((n, k - cols.shape[1]), np.int64)], axis=1)
                        mask = np.concatenate([mask, np.zeros((n, k - mask.shape[1]), bool)], axis=1)
                if cols is None:  # every pick is real: plain gathers, nothing to mask
                    chosen = slots[:, :k]
                    out_ids, out_d = store.cols["id"][chosen], cand_d[:, :k]
                    values, prior = store.cols["value"][chosen], store.cols["prior"][chosen]
                    utility = store.cols["utility"][chosen]
                else:
                    rows = np.arange(n)[:, None]
                    chosen = np.where(mask, slots[rows, cols], 0)
                    out_ids = np.where(mask, store.cols["id"][chosen], -1)
                    out_d = np.where(mask, cand_d[rows, cols], np.inf)
                    values = np.where(mask[..., None], store.cols["value"][chosen], 0).astype(np.float32, copy=False)
                    prior = np.where(mask[..., None], store.cols["prior"][chosen], 0).astype(np.float32, copy=False)
                    utility = np.where(mask, store.cols["utility"][chosen], 0.0)
                if record:
                    hit = chosen[mask]
                    np.add.at(store.cols["n_retrieved"], hit, 1)
                    store.cols["last_retrieved"][hit] = self._tick
                    self._tick += 1
        return QueryResult(ids=out_ids, values=values, utility=utility, prior=prior,
                           distances=out_d, mask=mask)

    def _random_candidates(self, n: int, k: int, tasks: np.ndarray | None,
                           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        store = self._store
        assert store is not None
        all_ids = store.view("id")
        m = store.size
        m = min(m, self.config.candidate_factor * max(1, k))
        ids = np.full((n, m), -1, dtype=np.int64)
        for r in range(n):
            pool = all_ids if tasks is None else all_ids[store.view("task_id") == tasks[r]]
            pick = rng.choice(pool, size=min(len(pool), m), replace=False) if len(pool) else pool
            ids[r, : len(pick)] = pick
        return ids, np.full((n, m), np.nan)

    # ------------------------------------------------------------------ update
    def update(self, ids: Any, deltas: Any, decay: float) -> np.ndarray:
        """Credit entries with outcome deltas: ``u <- decay * u + (1 - decay) * delta``.

        With ``config.utility_warmup`` the step is ``max(1 - decay, 1 / (n_credited + 2))``:
        ``u <- u + step * (delta - u)``, a running mean over the first credits.

        Ids that are no longer in the bank are skipped. An id given twice is credited twice,
        in order. Returns a mask of the ids that were found.

        Deltas must be finite and within ``+-MAX_UTILITY`` (1e12), as initial utilities are;
        each new utility lies between the old one and the delta, so utilities stay finite.
        """
        ids_arr = np.asarray(ids)
        if ids_arr.ndim == 0:
            ids_arr = ids_arr[None]
        ids_arr = as_int_vector("ids", ids_arr, len(ids_arr))
        d = as_float_vector("deltas", deltas, len(ids_arr))
        check_bounded("deltas", d, MAX_UTILITY)
        decay = check_unit("decay", decay)
        with interrupts_deferred(), self._lock.write(), transaction(self):
            if self._store is None:
                return np.zeros(len(ids_arr), dtype=bool)
            slots = self._store.find(ids_arr)
            found = slots >= 0
            self._store.touch(slots[found])
            u, n = self._store.cols["utility"], self._store.cols["n_credited"]
            warmup = self.config.utility_warmup
            for s, delta in zip(slots[found].tolist(), d[found].tolist(), strict=True):
                step = max(1.0 - decay, 1.0 / (int(n[s]) + 2)) if warmup else 1.0 - decay
                u[s] += step * (delta - u[s])
                n[s] += 1
            return found

    def mark_trained(self, ids: Any, step: int) -> np.ndarray:
        """Count a training pass on these entries at ``step``; returns the found mask."""
        ids_arr = np.atleast_1d(np.asarray(ids))
        ids_arr = as_int_vector("ids", ids_arr, len(ids_arr))
        step = check_int64("step", step)
        with interrupts_deferred(), self._lock.write(), transaction(self):
            if self._store is None:
                return np.zeros(len(ids_arr), dtype=bool)
            slots = self._store.find(ids_arr)
            found = slots >= 0
            self._store.touch(slots[found])
            np.add.at(self._store.cols["n_trained"], slots[found], 1)
            self._store.cols["last_trained"][slots[found]] = step
            return found

    # ---------------------------------------------------------------- removals
    def _evict_locked(self, n: int) -> np.ndarray:
        store = self._store
        assert store is not None
        n = min(n, store.size)
        if n <= 0:
            return np.zeros(0, dtype=np.int64)
        # curated entries (demonstrations) go last: only when nothing else is left
        curated = np.isin(store.view("provenance"), CURATED)
        order = np.lexsort((store.view("id"), store.view("utility"), curated))[:n]
        victims = store.view("id")[order].copy()
        self._remove_locked(victims)
        return victims

    def _remove_locked(self, ids: np.ndarray) -> None:
        store, index = self._store, self._index
        assert store is not None and index is not None
        self._task_counts.subtract(store.view("task_id")[store.slots_of(ids)].tolist())
        self._task_counts = +self._task_counts
        self._task_sets.clear()
        store.remove_ids(ids)
        if self._txn is not None:
            self._txn.index_touched = True
        index.remove(ids)

    def evict(self, n: int) -> np.ndarray:
        """Evict ``n`` entries, lowest utility first, then oldest; curated entries (demonstrations)
        only once no other entry is left. Returns their ids."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be an int >= 0, got {n!r}")
        with interrupts_deferred(), self._lock.write(), transaction(self):
            if self._store is None:
                return np.zeros(0, dtype=np.int64)
            return self._evict_locked(int(n))

    def remove(self, ids: Any) -> int:
        """Remove entries by id (absent ids are ignored). Returns how many were removed."""
        ids_arr = np.atleast_1d(np.asarray(ids))
        ids_arr = as_int_vector("ids", ids_arr, len(ids_arr))
        with interrupts_deferred(), self._lock.write(), transaction(self):
            if self._store is None:
                return 0
            present = np.unique(ids_arr[self._store.find(ids_arr) >= 0])
            self._remove_locked(present)
            return len(present)

    # ------------------------------------------------------------------- merge
    def merge(self, threshold: float | None = None) -> MergeResult:
        """Fold clusters of near-duplicate entries of the same task into one entry each.

        Entries are visited by utility (highest first), then age (oldest first); each
        unvisited entry takes its unvisited neighbours (among its ``merge_k`` nearest)
        closer than ``threshold`` (default ``merge_threshold``), never mixing curated entries
        (demonstrations) with the agent's. The survivor keeps its id,
        key and context; its sample log-prob becomes NaN (its value is no longer the
        sampled one, so a trainer must recompute it); its value and prior become the cluster's
        average weighted by :func:`~experience_wrappers.bank.merge.merge_weights`; its
        utility the credit-weighted mean; counters are summed; provenance becomes
        ``MERGED`` (demonstrations stay ``DEMO``); creation step the earliest; extractor version
        the latest.
        """
        thr = self.config.merge_threshold if threshold is None else as_real("threshold", threshold)
        if not (np.isfinite(thr) and thr >= 0):
            raise ValueError(f"threshold must be finite and >= 0, got {threshold!r}")
        with interrupts_deferred(), self._lock.write(), transaction(self):
            store = self._store
            if store is None or store.size < 2 or thr == 0:
                return MergeResult(merged={})
            keys = store.view("key").copy()
            m = min(store.size, self.config.merge_k + 1)
            nb_ids, nb_d = self._nearest(keys, m, None)
            nb_slots = store.find(nb_ids)
            tasks = store.view("task_id")
            curated = np.isin(store.view("provenance"), CURATED)
            same = ((nb_slots >= 0) & (tasks[np.maximum(nb_slots, 0)] == tasks[:, None])
                    & (curated[np.maximum(nb_slots, 0)] == curated[:, None]))  # never curated with the agent's
            order = np.lexsort((store.view("id"), -store.view("utility")))
            clusters = plan_clusters(order, nb_slots, nb_d, same, thr)
            merged: dict[int, list[int]] = {}
            c = store.cols
            store.touch([members[0] for members in clusters])
            for members in clusters:
                s = np.asarray(members)
                w = merge_weights(c["utility"][s], c["n_credited"][s])
                lead = s[0]
                credit_w = 1.0 + c["n_credited"][s]
                c["value"][lead] = (w[:, None] * c["value"][s]).sum(0)
                c["prior"][lead] = (w[:, None] * c["prior"][s]).sum(0)
                c["utility"][lead] = float((credit_w * c["utility"][s]).sum() / credit_w.sum())
                for name in ("n_retrieved", "n_credited", "n_trained"):
                    c[name][lead] = c[name][s].sum()
                for name in ("last_retrieved", "last_trained", "extractor_version"):
                    c[name][lead] = c[name][s].max()
                c["created_step"][lead] = c["created_step"][s].min()
                if c["provenance"][lead] not in CURATED:  # merged demonstrations stay demonstrations
                    c["provenance"][lead] = int(Provenance.MERGED)
                c["sample_logp"][lead] = np.nan  # the value is no longer the sampled one
                merged[int(c["id"][lead])] = [int(i) for i in c["id"][s[1:]]]
            gone = np.array([i for v in merged.values() for i in v], dtype=np.int64)
            if len(gone):
                self._remove_locked(gone)
            return MergeResult(merged=merged)

    # ------------------------------------------------------------------- reads
    def get(self, ids: Any) -> dict[str, np.ndarray]:
        """Copies of every field of the given entries (KeyError names a missing id)."""
        ids_arr = np.atleast_1d(np.asarray(ids))
        ids_arr = as_int_vector("ids", ids_arr, len(ids_arr))
        with self._lock.read():
            if self._store is None:
                if len(ids_arr):
                    raise KeyError(f"no entry with id {int(ids_arr[0])}: the bank is empty")
                return {}
            slots = self._store.find(ids_arr)
            if np.any(slots < 0):
                raise KeyError(f"no entry with id {int(ids_arr[np.argmax(slots < 0)])}")
            return {name: col[slots].copy() for name, col in self._store.cols.items()}

    def entries(self) -> dict[str, np.ndarray]:
        """Copies of every column, one row per entry, in storage order."""
        with self._lock.read():
            return {} if self._store is None else self._store.snapshot()

    def stats(self) -> dict[str, float]:
        """Size, capacity, utilisation (share of entries retrieved in the last
        ``utilisation_window`` queries), mean/min/max utility and retrieval counts."""
        with self._lock.read():
            store = self._store
            size = 0 if store is None else store.size
            out = {"size": float(size), "capacity": float(self.config.capacity),
                   "queries": float(self._tick), "tasks": float(len(self._task_counts))}
            if store is None or size == 0:
                out.update(utilisation=0.0, mean_utility=0.0, min_utility=0.0, max_utility=0.0,
                           mean_retrieved=0.0, max_retrieved=0.0)
                return out
            last = store.view("last_retrieved")
            recent = (last >= 0) & (last >= self._tick - self.config.utilisation_window)
            u = store.view("utility")
            r = store.view("n_retrieved")
            out.update(utilisation=float(recent.mean()), mean_utility=float(u.mean()),
                       min_utility=float(u.min()), max_utility=float(u.max()),
                       mean_retrieved=float(r.mean()), max_retrieved=float(r.max()))
            return out

    # ----------------------------------------------------------------- storage
    def save(self, path: str | Path) -> Path:
        """Save to a folder: a new one, an empty one, or one this method wrote before.

        The save is crash-safe and writes only its own files: the data goes into new files,
        then ``meta.json`` is replaced in one atomic step, then the files of the previous
        save are removed. A crash leaves the previous save loadable; files a crashed save
        left behind are removed by the next save. Saves of one folder are serialised by a
        lock file (``.lock``), from threads and processes alike. A folder holding anything
        else is refused (:class:`~experience_wrappers.errors.BankFileError`), and so is an
        inconsistent bank (:class:`~experience_wrappers.errors.BankStateError`): the
        folder is then left as it was.

        Returns:
            The folder's path.
        """
        from .persistence import save_bank

        with self._lock.read(), self._count_lock:
            self.check_consistency()
            return save_bank(self, Path(path))

    def check_consistency(self) -> None:
        """Raise :class:`~experience_wrappers.errors.BankStateError` if entries and index disagree.

        Checked: the entry count against the index's live count and the id map, unique ids
        below the id counter, task counts, and finite utilities. Cost: one pass over the ids.
        """
        store, index = self._store, self._index
        if store is None:
            if index is not None or self._task_counts:
                raise BankStateError("the bank has an index or task counts but no entries store")
            return
        problems = []
        if index is None:
            problems.append("the index is missing (a rollback could not rebuild it)")
        elif index.live != store.size:
            problems.append(f"{store.size} entries but {index.live} live index elements")
        elif index.live + index.deleted != index.element_count:
            problems.append(f"the index holds {index.element_count} elements, its counters say "
                            f"{index.live} live + {index.deleted} deleted")
        if len(store._slot) != store.size:
            problems.append(f"{store.size} entries but {len(store._slot)} ids in the id map")
        ids = store.view("id")
        if len(np.unique(ids)) != store.size or (store.size and (ids.min() < 0 or ids.max() >= self._next_id)):
            problems.append("entry ids are duplicated or out of range")
        if sum(self._task_counts.values()) != store.size:
            problems.append(f"task counts sum to {sum(self._task_counts.values())}, not {store.size}")
        if not np.all(np.isfinite(store.view("utility"))):
            problems.append("some utilities are NaN or inf")
        if problems:
            raise BankStateError("the experience bank is inconsistent, so it is not saved (the folder is "
                                 "left as it was): " + "; ".join(problems))

    def replace_with(self, other: ExperienceBank) -> None:
        """Take ``other``'s config and entries in place, so every holder of this object sees them.

        Used to restore a saved run into the bank object the user (and the wrappers) hold.
        ``other`` (typically fresh from :meth:`load`) must not be used afterwards.
        """
        if not isinstance(other, ExperienceBank):
            raise TypeError(f"other must be an ExperienceBank, got {type(other).__name__}")
        if other is self:
            return
        with interrupts_deferred(), self._lock.write(), other._lock.read():
            self.config = other.config
            self._rng = other._rng
            self._next_id, self._tick = other._next_id, other._tick
            self._task_counts = other._task_counts.copy()
            self._task_sets = {}
            self._store, self._index = other._store, other._index

    @classmethod
    def load(cls, path: str | Path) -> ExperienceBank:
        """Load a folder written by :meth:`save`; raises :class:`BankFileError` if it can't be trusted."""
        from .persistence import load_bank

        return load_bank(cls, Path(path))


def _non_negative_int(name: str, x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
        raise ValueError(f"{name} must be an int >= 0, got {x!r}")
    return int(x)
