"""The experience bank: entries, an HNSW index over their keys, and the rules that keep both.

The bank is the public surface; the rules live beside it: :mod:`.dedup` and :mod:`.merge`
(how entries combine), :mod:`.search` (nearest entries and a query's steps),
:mod:`.utility` (credit and eviction order), :mod:`.persistence` (save/load, through
:meth:`ExperienceBank.state` and :meth:`ExperienceBank.from_state`).
"""

from __future__ import annotations

import threading
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BankStateError
from ..validators import integral
from .config import (
    MAX_DIM,
    MAX_K,
    MAX_UTILITY,
    MIN_TEMPERATURE,
    RECALL_M,
    BankConfig,
    resolve_config,
)
from .dedup import dedup_targets, plan_new_items
from .entries import EntryStore
from .index import HnswIndex
from .lock import RWLock
from .merge import combine_cluster, plan_clusters, refresh_entry, same_kind
from .provenance import Provenance
from .results import AddResult, MergeResult, QueryResult
from .retrieval import MODES
from .search import (
    candidate_count,
    choose,
    empty_result,
    gather,
    knn_unfiltered,
    nearest,
    only_task,
    random_candidates,
    record_hits,
)
from .state import BankState
from .transaction import Transaction, interrupts_deferred, transaction
from .utility import credit, eviction_order
from .validation import (
    as_float_vector,
    as_int_vector,
    as_matrix,
    as_real,
    check_bounded,
    check_int64,
    check_int64s,
    check_non_negative_int,
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

    Dimensions are taken from the first :meth:`add` unless given here; ``prior_dim`` and
    ``context_dim`` given without ``key_dim`` fix those two widths for the first :meth:`add`.
    An ``M`` below ``RECALL_M`` (8) warns: such sparse graphs miss neighbours.

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
        #: the manager that serves this bank (one per bank; set by the manager built on it)
        self._manager: Any = None
        #: a loaded bank's saves: the one it was loaded from, then those it wrote (stale-save check)
        self._lineage: list[str] = []
        if config.M < RECALL_M:
            warnings.warn(f"ExperienceBank(M={config.M}): M is below {RECALL_M}, and an HNSW graph this sparse "
                          "misses neighbours (with M=2 and the default ef, a key finds its own entry only 20-80% of "
                          f"the time on 8- to 64-dim keys), short of the documented recall (recall@8 >= 0.95, which "
                          f"needs M >= {RECALL_M}; the default is 16). Use M >= {RECALL_M}, or raise ef_search and "
                          "ef_construction", UserWarning, stacklevel=2)
        widths = {"prior_dim": check_non_negative_int("prior_dim", prior_dim),
                  "context_dim": check_non_negative_int("context_dim", context_dim)}
        for name, width in widths.items():
            if width > MAX_DIM:
                raise ValueError(f"{name} must be <= {MAX_DIM}, got {width}")
        #: prior/context widths given without key_dim: used by the first add (0: taken from it)
        self._fixed_widths = widths
        if key_dim is not None or value_dim is not None:
            if key_dim is None or value_dim is None:
                raise ValueError(f"give both key_dim and value_dim, got {key_dim!r} and {value_dim!r}")
            self._init_dims({"key_dim": check_positive_int("key_dim", key_dim),
                             "value_dim": check_positive_int("value_dim", value_dim), **widths})

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
            provenance: Provenance | int = Provenance.EXTRACTED, step: int | np.ndarray = 0,
            extractor_version: int | np.ndarray = 0) -> AddResult:
        """Add a batch of entries, deduplicating against the bank and within the batch.

        An item closer than ``dedup_threshold`` to an entry of the same task (already in the
        bank, or added earlier in this batch) refreshes that entry instead: its value, prior,
        context, sample log-prob and extractor version are replaced by the item's, its key,
        utility and counters stay (:mod:`.merge`). A refresh never crosses between curated entries
        (demonstrations) and the agent's: such an item becomes a new entry. When the new
        entries do not fit, existing entries are evicted, lowest utility first, then oldest,
        demonstrations last; a batch larger than the capacity keeps
        only its last ``capacity`` new entries.

        ``step`` (the entries' ``created_step``) and ``extractor_version`` are one int for the
        batch or one per item (entries of several episodes written at once); a refresh takes
        the refreshing item's version with its content.

        A batch of no items (``add([], [])``, or keys of shape ``(0, key_dim)``) is a no-op: it
        returns an empty :class:`AddResult` and fixes no dimensions (a 2-D empty batch must
        still have the bank's widths).

        Returns:
            :class:`AddResult` with, per item, the id it now lives in.
        """
        if self._empty_batch(keys, values):
            empty = np.zeros(0, dtype=np.int64)
            return AddResult(ids=empty, added=np.zeros(0, dtype=bool), evicted=empty.copy())
        items = self._check_batch(keys, values, task_ids, utility, prior, context, sample_logp, provenance,
                                  step, extractor_version)
        keys_arr, tasks, prov = items["key"], items["task_id"], items["provenance"]
        n = len(keys_arr)
        with interrupts_deferred(), self._lock.write(), transaction(self) as txn:
            if self._store is None:
                self._init_dims({f"{name}_dim": items[name].shape[1] for name in ("key", "value", "prior", "context")})
            store, index = self._store, self._index
            assert store is not None and index is not None
            target, source = dedup_targets(keys_arr, tasks, self.config.dedup_threshold, self.config.space,
                                           self._nearest if len(self) > 0 else None, self._keys_of)
            crossing = np.flatnonzero(target >= 0)
            if crossing.size:  # a refresh never crosses between demonstrations and the agent's entries
                their = store.cols["provenance"][store.slots_of(target[crossing])]
                target[crossing[~same_kind(their, prov)]] = -1
            result_ids = np.full(n, -1, dtype=np.int64)

            # refresh existing entries, in item order (a later item wins)
            refreshed = np.flatnonzero(target >= 0)
            store.touch(store.slots_of(target[refreshed]))
            for i in refreshed.tolist():
                refresh_entry(store.cols, store.slots_of([target[i]])[0], _item(items, i))
                result_ids[i] = target[i]

            kept_items, kept_src = plan_new_items(target, source, self.config.capacity)
            excess = store.size + len(kept_items) - self.config.capacity
            store.reserve(store.size + len(kept_items))  # allocations first: they change nothing
            evicted = self._evict_locked(excess) if excess > 0 else np.zeros(0, dtype=np.int64)
            new_ids = self._append_locked(items, kept_items, kept_src)
            txn.index_touched = True
            index.add(keys_arr[kept_items], new_ids)

            result_ids[kept_items] = new_ids
            id_of_item = dict(zip(kept_items.tolist(), new_ids.tolist(), strict=True))
            for i in np.flatnonzero(source >= 0).tolist():
                result_ids[i] = id_of_item.get(int(source[i]), -1)
            if len(evicted):  # an entry refreshed above may have been evicted to make room
                result_ids[np.isin(result_ids, evicted)] = -1
            added = np.zeros(n, dtype=bool)
            added[kept_items] = True
            return AddResult(ids=result_ids, added=added, evicted=evicted)

    def _empty_batch(self, keys: Any, values: Any) -> bool:
        """Whether ``keys`` hold no items (then ``values`` must hold none either); widths of 2-D empties checked."""
        try:
            rows = np.shape(keys)
        except ValueError:  # ragged: not empty, and _check_batch says what is wrong
            return False
        if len(rows) not in (1, 2) or rows[0] != 0:
            return False
        dims = None if self._store is None else self._store.dims
        for name, x, width in (("keys", keys, None if dims is None else dims["key_dim"]),
                                 ("values", values, None if dims is None else dims["value_dim"])):
            try:
                shape = np.shape(x)
            except ValueError as exc:
                raise ValueError(f"{name} must be an array of numbers, got {type(x).__name__}: {exc}") from exc
            if len(shape) not in (1, 2) or shape[0] != 0:
                raise ValueError(f"{name} must have 0 rows (keys has none), got shape {shape}")
            if len(shape) == 2:
                as_matrix(name, x, width)  # the dtype and, once the bank has them, the widths
        return True

    def _check_batch(self, keys: Any, values: Any, task_ids: Any, utility: Any, prior: Any, context: Any,
                     sample_logp: Any, provenance: Provenance | int, step: Any,
                     extractor_version: Any) -> dict[str, Any]:
        """The arguments of :meth:`add`, checked, as per-item fields (``provenance`` is one value for
        the batch; ``created_step`` and ``extractor_version`` one value or one per item)."""
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
            if not integral(provenance, numpy=True):  # 1.7 or True must not become a demonstration
                raise TypeError("not an int")
            prov = Provenance(int(provenance))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"provenance must be one of {[int(p) for p in Provenance]} (an int or a Provenance, "
                             f"e.g. Provenance.DEMO), got {provenance!r}") from exc
        step, extractor_version = check_int64s("step", step, n), check_int64s("extractor_version", extractor_version, n)
        if self._store is None:
            for name, width in (("keys", keys_arr.shape[1]), ("values", vals.shape[1]),
                                ("prior", pri.shape[1]), ("context", ctx.shape[1])):
                if width > MAX_DIM:
                    raise ValueError(f"{name} must have at most {MAX_DIM} columns, got {width}")
        if self.config.space != "l2" and np.any(np.linalg.norm(keys_arr, axis=1) == 0):
            raise ValueError(f"keys must be non-zero for space {self.config.space!r}")
        return {"key": keys_arr, "value": vals, "task_id": tasks, "utility": util, "prior": pri, "context": ctx,
                "sample_logp": logp, "provenance": int(prov), "created_step": step,
                "extractor_version": extractor_version}

    def _optional(self, name: str, x: Any, n: int, dtype: type) -> np.ndarray:
        if self._store is None:
            width = self._fixed_widths.get(f"{name}_dim") or None  # given at construction, else the batch's
        else:
            width = self._store.dims[f"{name}_dim"]
        if x is None:
            return np.zeros((n, width or 0), dtype=dtype)
        if width == 0:
            raise ValueError(f"this bank stores no {name} ({name}_dim=0), but {name} was given")
        arr = as_matrix(name, x, width, dtype=dtype)
        if len(arr) != n:
            raise ValueError(f"{name} must have {n} rows (one per key), got {len(arr)}")
        return arr.astype(dtype)

    def _append_locked(self, items: dict[str, Any], kept: np.ndarray, src: np.ndarray) -> np.ndarray:
        """Write new entries: keys, tasks and utility of the ``kept`` items, content of their ``src``."""
        store = self._store
        assert store is not None
        new_ids = np.arange(self._next_id, self._next_id + len(kept), dtype=np.int64)
        self._next_id += len(kept)
        slots = store.append(len(kept))
        c = store.cols
        c["id"][slots] = new_ids
        c["key"][slots] = items["key"][kept]
        for name in ("value", "prior", "context", "sample_logp"):
            c[name][slots] = items[name][src]
        c["utility"][slots] = items["utility"][kept]
        c["last_retrieved"][slots] = -1
        c["last_trained"][slots] = -1
        c["task_id"][slots] = items["task_id"][kept]
        c["provenance"][slots] = items["provenance"]
        for name, rows in (("created_step", kept), ("extractor_version", src)):  # the version goes with the content
            c[name][slots] = items[name][rows] if isinstance(items[name], np.ndarray) else items[name]
        store.reindex(slots)
        self._task_counts.update(items["task_id"][kept].tolist())
        self._task_sets.clear()
        return new_ids

    # ------------------------------------------------------------------ search
    def _task_set(self, task: int) -> frozenset[int]:
        s = self._task_sets.get(task)
        if s is None:
            store = self._store
            assert store is not None
            s = frozenset(store.view("id")[store.view("task_id") == task].tolist())
            self._task_sets[task] = s
        return s

    def _keys_of(self, ids: np.ndarray) -> np.ndarray:
        """Stored keys of entry ids (any shape); an id not in the bank (-1) gets the first entry's key."""
        assert self._store is not None
        return self._store.cols["key"][np.maximum(self._store.find(ids), 0)]

    def _nearest(self, keys: np.ndarray, m: int, tasks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``m`` nearest ids per row (same task when ``tasks`` is given); see :func:`.search.nearest`."""
        assert self._store is not None and self._index is not None
        return nearest(self._store, self._index, keys, m, tasks, self._task_counts, self._task_set,
                       self.config.space)

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
        The steps are those of :mod:`.search`.
        """
        k, temp = self._check_query(k, mode, temperature, record, rng)
        store = self._store
        dims = None if store is None else store.dims
        q = as_matrix("keys", keys, None if dims is None else dims["key_dim"])
        n = len(q)
        tasks = None if task_ids is None else as_int_vector("task_ids", task_ids, n)
        with self._lock.read():
            store = self._store
            if dims is None or store is None or store.size == 0:
                return empty_result(n, k, 0 if dims is None else dims["value_dim"],
                                    0 if dims is None else dims["prior_dim"])
            if mode == "knn" and self.config.utility_floor is None and k <= store.size and (
                    tasks is None or only_task(self._task_counts, tasks)):
                assert self._index is not None  # set with the store
                fast = knn_unfiltered(store, self._index, q, k)  # the usual kNN query, fewer steps
                if fast is not None:
                    result, chosen = fast
                    if record:
                        with self._count_lock:
                            self._tick = record_hits(store, chosen, None, self._tick)
                    return result
            if mode != "random":
                cand_ids, cand_d = self._nearest(q, candidate_count(mode, k, store.size, self.config), tasks)
            with self._count_lock:
                generator = self._rng if rng is None else rng
                if mode == "random":
                    cand_ids, cand_d = random_candidates(store, n, k, tasks, self.config.candidate_factor,
                                                         generator)
                slots = store.find(cand_ids)
                cols, mask = choose(store, slots, mode, k, temp, self.config, generator)
                result, chosen = gather(store, slots, cand_d, cols, mask, k)
                if record:
                    self._tick = record_hits(store, chosen, mask, self._tick)
        return result

    def _check_query(self, k: Any, mode: Any, temperature: Any, record: Any, rng: Any) -> tuple[int, float]:
        """The checked ``k`` and temperature of a :meth:`query` (ValueError/TypeError otherwise)."""
        if type(k) is int and 0 < k <= MAX_K and temperature is None and rng is None and type(record) is bool \
                and mode in MODES:
            return k, self.config.temperature  # the usual call: nothing else to check
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
        return k, temp

    # ------------------------------------------------------------------ update
    def update(self, ids: Any, deltas: Any, decay: float) -> np.ndarray:
        """Credit entries with outcome deltas: ``u <- decay * u + (1 - decay) * delta``.

        With ``config.utility_warmup`` the step is ``max(1 - decay, 1 / (n_credited + 2))``:
        ``u <- u + step * (delta - u)``, a running mean over the first credits
        (:func:`.utility.credit`).

        Ids that are no longer in the bank are skipped. An id given twice is credited twice,
        in order. Returns a mask of the ids that were found.

        Deltas must be finite and within ``+-MAX_UTILITY`` (1e12), as initial utilities are;
        each new utility lies between the old one and the delta, so utilities stay finite.
        """
        ids_arr = _ids(ids)
        d = as_float_vector("deltas", deltas, len(ids_arr))
        check_bounded("deltas", d, MAX_UTILITY)
        decay = check_unit("decay", decay)

        def change(cols: dict[str, np.ndarray], slots: np.ndarray, found: np.ndarray) -> None:
            credit(cols["utility"], cols["n_credited"], slots.tolist(), d[found].tolist(), decay,
                   self.config.utility_warmup)
        return self._change_found(ids_arr, change)

    def mark_trained(self, ids: Any, step: int) -> np.ndarray:
        """Count a training pass on these entries at ``step``; returns the found mask.

        A plain counter of the entries (``n_trained``, ``last_trained``); what a pass is and
        when it happens is the learner's (:mod:`experience_wrappers.manager.learner`).
        """
        ids_arr = _ids(ids)
        step = check_int64("step", step)

        def change(cols: dict[str, np.ndarray], slots: np.ndarray, found: np.ndarray) -> None:
            np.add.at(cols["n_trained"], slots, 1)
            cols["last_trained"][slots] = step
        return self._change_found(ids_arr, change)

    def _change_found(self, ids: np.ndarray, change: Callable[[dict[str, np.ndarray], np.ndarray, np.ndarray], None],
                      ) -> np.ndarray:
        """Run ``change(columns, slots, found)`` on the entries of ``ids`` that exist, as one
        transaction; returns the found mask (absent ids are skipped)."""
        with interrupts_deferred(), self._lock.write(), transaction(self):
            if self._store is None:
                return np.zeros(len(ids), dtype=bool)
            slots = self._store.find(ids)
            found = slots >= 0
            self._store.touch(slots[found])
            change(self._store.cols, slots[found], found)
            return found

    # ---------------------------------------------------------------- removals
    def _evict_locked(self, n: int) -> np.ndarray:
        store = self._store
        assert store is not None
        n = min(n, store.size)
        if n <= 0:
            return np.zeros(0, dtype=np.int64)
        order = eviction_order(store.view("id"), store.view("utility"), store.view("provenance"))[:n]
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
        n = check_non_negative_int("n", n)
        with interrupts_deferred(), self._lock.write(), transaction(self):
            if self._store is None:
                return np.zeros(0, dtype=np.int64)
            return self._evict_locked(n)

    def remove(self, ids: Any) -> int:
        """Remove entries by id (absent ids are ignored). Returns how many were removed."""
        ids_arr = _ids(ids)
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
        the latest (:func:`~experience_wrappers.bank.merge.combine_cluster`).
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
            nb = np.maximum(nb_slots, 0)
            if self.config.space == "ip":  # near duplicates are near-identical keys (see .dedup)
                nb_d = ((keys[nb].astype(np.float64) - keys.astype(np.float64)[:, None, :]) ** 2).sum(-1)
                nb_d[nb_slots < 0] = np.inf
            tasks, prov = store.view("task_id"), store.view("provenance")
            same = (nb_slots >= 0) & (tasks[nb] == tasks[:, None]) & same_kind(prov[nb], prov[:, None])
            order = np.lexsort((store.view("id"), -store.view("utility")))
            clusters = plan_clusters(order, nb_slots, nb_d, same, thr)
            merged: dict[int, list[int]] = {}
            store.touch([members[0] for members in clusters])
            for members in clusters:
                s = np.asarray(members)
                combine_cluster(store.cols, s)
                merged[int(store.cols["id"][s[0]])] = [int(i) for i in store.cols["id"][s[1:]]]
            gone = np.array([i for v in merged.values() for i in v], dtype=np.int64)
            if len(gone):
                self._remove_locked(gone)
            return MergeResult(merged=merged)

    # ------------------------------------------------------------------- reads
    def get(self, ids: Any) -> dict[str, np.ndarray]:
        """Copies of every field of the given entries (KeyError names a missing id)."""
        ids_arr = _ids(ids)
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

        A stale save is refused too (``BankFileError`` naming both save ids): a loaded bank
        does not overwrite a folder whose save it has neither been loaded from nor written
        (another process saved there since this bank was loaded from it), which would drop that
        save's entries. A bank that was never loaded may replace any bank folder.

        Returns:
            The folder's path.
        """
        from .persistence import save_bank

        with self._lock.read(), self._count_lock:
            self.check_consistency()
            return save_bank(self.state(), Path(path), self.FORMAT, self.VERSION, lineage=self._lineage)

    def check_consistency(self) -> None:
        """Raise :class:`~experience_wrappers.errors.BankStateError` if entries and index disagree.

        Checked: the entry count against the index's live count and the id map, the id lookup
        against the entries, unique ids below the id counter, task counts, and finite utilities.
        Cost: a few passes over the ids.
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
        elif not np.array_equal(store.find(store.view("id")), np.arange(store.size)):
            problems.append("the sorted id lookup disagrees with the entries")
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
            self._adopt(other.state())

    def state(self) -> BankState:
        """The bank's whole state as a :class:`~experience_wrappers.bank.state.BankState`.

        It holds the bank's own entries and index, not copies: read it under the bank's
        lock and do not change it (:meth:`save` does both).
        """
        return BankState(config=self.config, next_id=self._next_id, tick=self._tick, rng=self._rng,
                         store=self._store, index=self._index, save_id=self._save_id)

    @classmethod
    def from_state(cls, state: BankState) -> ExperienceBank:
        """A bank around ``state`` (which it then owns), e.g. one that persistence has read and checked."""
        bank = cls(state.config)
        bank._adopt(state)
        return bank

    def _adopt(self, state: BankState) -> None:
        self.config = state.config
        self._rng = state.rng
        self._next_id, self._tick = state.next_id, state.tick
        self._store, self._index = state.store, state.index
        self._task_counts = Counter() if state.store is None else Counter(state.store.view("task_id").tolist())
        self._task_sets = {}
        self._save_id = state.save_id
        self._lineage = [] if state.save_id is None else [state.save_id]

    @property
    def manager(self) -> Any:
        """The :class:`~experience_wrappers.manager.ExperienceManager` that serves this bank (None
        before one is built on it): every wrapper given this bank shares it."""
        return self._manager

    def attach_manager(self, manager: Any) -> None:
        """Record ``manager`` as this bank's one manager (the manager calls it when built).

        Raises:
            ValueError: the bank already has another manager.
        """
        if self._manager is not None and self._manager is not manager:
            raise ValueError("this bank already has a manager; use manager_for_bank(bank, ...) to share it")
        self._manager = manager

    @property
    def save_id(self) -> str | None:
        """The id of the save this bank was loaded from (None if it was not loaded)."""
        return self._save_id

    @classmethod
    def load(cls, path: str | Path) -> ExperienceBank:
        """Load a folder written by :meth:`save`; raises :class:`BankFileError` if it can't be trusted."""
        from .persistence import load_bank

        return load_bank(cls, Path(path))


def _ids(ids: Any) -> np.ndarray:
    """Entry ids as a checked int64 vector (one id becomes a vector of one)."""
    ids_arr = np.atleast_1d(np.asarray(ids))
    return as_int_vector("ids", ids_arr, len(ids_arr))


def _item(items: dict[str, Any], i: int) -> dict[str, Any]:
    """The fields of batch item ``i`` (per-item arrays indexed, batch-wide values as they are)."""
    return {name: v[i] if isinstance(v, np.ndarray) else v for name, v in items.items()}
