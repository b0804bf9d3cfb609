"""The experience bank: entries, an HNSW index over their keys, and the rules that keep both.

The bank is the public surface; what it holds is one :class:`~.core.BankCore` (``bank.core``:
entries, index, counters, locks), and the rules beside it work on that, never on the bank's
private attributes: :mod:`.arguments` (checks of caller input), :mod:`.writes` (a batch's refreshes and new entries, evictions, removals, merges),
:mod:`.merge` (which entries are near duplicates, how they combine), :mod:`.search` (the
retrieval path: nearest entries, re-ranking and a query's steps), :mod:`.utility` (credit and eviction order), :mod:`.usage` (its figures),
:mod:`.consistency` (checked before a save), :mod:`.save_load` (save/load, through
:meth:`ExperienceBank.state` and :meth:`ExperienceBank.from_state`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..credit.rules import credit_utilities
from ..validators import check_bool
from .arguments import (
    as_float_vector,
    as_ids,
    as_int_vector,
    as_keys,
    as_real,
    check_batch,
    check_bounded,
    check_non_negative_int,
    check_positive_int,
    check_query,
    check_unit,
    check_widths,
    empty_batch,
)
from .config import MAX_UTILITY, BankConfig, resolve_config, warn_if_sparse
from .consistency import check_consistency
from .core import BankCore
from .provenance import Provenance
from .results import AddResult, MergeResult, QueryResult
from .search import record_hits, run_query
from .state import BankState
from .transaction import interrupts_deferred, writing
from .usage import bank_stats
from .writes import add_locked, evict_locked, merge_locked, remove_locked

if TYPE_CHECKING:
    from .replica import BankReplica

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

    An entry holds a key (where it applies), a value (the experience vector), the segment it
    was distilled from (``context``) and the log-probability
    of its sampled value, a utility score, counters (retrieved, credited), a task id and
    provenance. How often the extractor trained on an entry is the learner's own count
    (:mod:`experience_wrappers.manager.learner`), not the bank's. Ids are stable for the life of an entry.

    Dimensions are taken from the first :meth:`add` unless given here; ``context_dim`` given
    without ``key_dim`` fixes that width for the first :meth:`add`.
    An ``M`` below ``RECALL_M`` (8) warns: such sparse graphs miss neighbours.

    Changes are all-or-nothing: :meth:`add`, :meth:`update`, :meth:`merge`, :meth:`evict`,
    :meth:`remove` and :meth:`update` check every argument before they change
    anything, and a change that fails (or is interrupted) half-way is rolled back, so the
    bank is exactly as it was (Ctrl-C in the main thread is held back until the change is
    complete). :meth:`save` checks that entries and index agree before it writes.

    Args:
        config: a :class:`BankConfig`; keyword overrides build one (``ExperienceBank(capacity=64)``).
        key_dim, value_dim, context_dim: fix the dimensions up front.

    >>> bank = ExperienceBank(capacity=8)
    >>> res = bank.add(np.eye(3, dtype=np.float32), np.ones((3, 2), dtype=np.float32))
    >>> res.ids.tolist(), len(bank)
    ([0, 1, 2], 3)
    >>> hit = bank.query(np.array([1.0, 0.0, 0.0]), k=1, mode="knn")
    >>> hit.ids.tolist(), hit.mask.tolist()
    ([[0]], [[True]])
    """

    FORMAT = "complementary-rl.experience-bank"
    # 4: no action prior column (prior_dim; removed with the action prior); 3: no training counters
    # (n_trained, last_trained: the learner's); 2: data files named per save (entries-<gen>.npz);
    # 1 to 3 still load (their training counters and priors are left out)
    VERSION = 4

    def __init__(self, config: BankConfig | None = None, *, key_dim: int | None = None,
                 value_dim: int | None = None, context_dim: int = 0,
                 **overrides: Any) -> None:
        config = resolve_config(config, overrides)
        warn_if_sparse(config.M)
        widths = check_widths({"context_dim": check_non_negative_int("context_dim", context_dim)})
        #: the entries, index, counters and locks that the rule modules beside the bank work on
        self.core = core = BankCore(config, widths)
        self._save_id: str | None = None  # the save this bank was loaded from (see persistence)
        #: the manager that serves this bank (one per bank; set by the manager built on it)
        self._manager: Any = None
        #: a loaded bank's saves: the one it was loaded from, then those it wrote (stale-save check)
        self._lineage: list[str] = []
        if key_dim is not None or value_dim is not None:
            if key_dim is None or value_dim is None:
                raise ValueError(f"give both key_dim and value_dim, got {key_dim!r} and {value_dim!r}")
            core.init_dims({"key_dim": check_positive_int("key_dim", key_dim),
                            "value_dim": check_positive_int("value_dim", value_dim), **widths})

    # ------------------------------------------------------------------ basics
    @property
    def config(self) -> BankConfig:
        """The bank's :class:`BankConfig` (a loaded or restored bank takes the saved one)."""
        return self.core.config

    @property
    def dims(self) -> dict[str, int] | None:
        """``key_dim``, ``value_dim``, ``context_dim``; None before the first add (or :meth:`fix_dims`)."""
        return None if self.core.store is None else dict(self.core.store.dims)

    def fix_dims(self, key_dim: int, value_dim: int, context_dim: int = 0) -> None:
        """Fix an empty bank's widths: an add of other widths is refused from then on.

        As the constructor's ``key_dim`` / ``value_dim`` / ``context_dim`` do; a manager built on an
        empty bank fixes its own. ValueError where the bank has other widths already."""
        dims = check_widths({"key_dim": check_positive_int("key_dim", key_dim),
                             "value_dim": check_positive_int("value_dim", value_dim),
                             "context_dim": check_non_negative_int("context_dim", context_dim)})
        with writing(self.core):
            if self.dims is None:
                self.core.init_dims(dims)
            elif self.dims != dims:
                raise ValueError(f"the bank's widths are {self.dims}, not {dims}")

    def __len__(self) -> int:
        return 0 if self.core.store is None else self.core.store.size

    def __contains__(self, entry_id: object) -> bool:
        return self.core.store is not None and isinstance(entry_id, (int, np.integer)) and entry_id in self.core.store

    def __repr__(self) -> str:
        return f"ExperienceBank(size={len(self)}, capacity={self.config.capacity}, dims={self.dims})"

    def __reduce__(self) -> Any:
        raise TypeError(NOT_PICKLABLE.format(what="an ExperienceBank"))

    # --------------------------------------------------------------------- add
    def add(self, keys: Any, values: Any, *, task_ids: Any = 0, utility: Any = None,
            context: Any = None, sample_logp: Any = None,
            provenance: Provenance | int = Provenance.EXTRACTED, step: int | np.ndarray = 0,
            extractor_version: int | np.ndarray = 0) -> AddResult:
        """Add a batch of entries, deduplicating against the bank and within the batch.

        An item closer than ``dedup_threshold`` to an entry of the same task (already in the
        bank, or added earlier in this batch) refreshes that entry instead: its value,
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
        if empty_batch(self.core, keys, values):
            empty = np.zeros(0, dtype=np.int64)
            return AddResult(ids=empty, added=np.zeros(0, dtype=bool), evicted=empty.copy())
        items = check_batch(self.core, keys, values, task_ids, utility, context, sample_logp, provenance,
                                  step, extractor_version)
        with writing(self.core) as txn:
            return add_locked(self.core, items, txn)


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
        k, temp = check_query(self.core, k, mode, temperature, record, rng)
        store = self.core.store
        dims = None if store is None else store.dims
        q = as_keys(keys, None if dims is None else dims["key_dim"], self.core.config.space)
        n = len(q)
        tasks = None if task_ids is None else as_int_vector("task_ids", task_ids, n)
        return run_query(self.core, q, k, mode, temp, tasks, record, rng, dims)

    # ------------------------------------------------------------------ update
    def update(self, ids: Any, deltas: Any, decay: float) -> np.ndarray:
        """Credit entries with outcome deltas: ``u <- decay * u + (1 - decay) * delta``.

        With ``config.utility_warmup`` the step is ``max(1 - decay, 1 / (n_credited + 2))``:
        ``u <- u + step * (delta - u)``, a running mean over the first credits
        (:func:`~experience_wrappers.credit.rules.credit_utilities`, the credit rule).

        Ids that are no longer in the bank are skipped. An id given twice is credited twice,
        in order. Returns a mask of the ids that were found.

        Deltas must be finite and within ``+-MAX_UTILITY`` (1e12), as initial utilities are;
        each new utility lies between the old one and the delta, so utilities stay finite.
        """
        ids_arr = as_ids(ids)
        d = as_float_vector("deltas", deltas, len(ids_arr))
        check_bounded("deltas", d, MAX_UTILITY)
        decay = check_unit("decay", decay)

        def change(cols: dict[str, np.ndarray], slots: np.ndarray, found: np.ndarray) -> None:
            credit_utilities(cols["utility"], cols["n_credited"], slots.tolist(), d[found].tolist(), decay,
                             self.config.utility_warmup)
        return self._change_found(ids_arr, change)

    def _change_found(self, ids: np.ndarray, change: Callable[[dict[str, np.ndarray], np.ndarray, np.ndarray], None],
                      ) -> np.ndarray:
        """Run ``change(columns, slots, found)`` on the entries of ``ids`` that exist, as one
        transaction; returns the found mask (absent ids are skipped)."""
        with writing(self.core):
            if self.core.store is None:
                return np.zeros(len(ids), dtype=bool)
            slots = self.core.store.find(ids)
            found = slots >= 0
            self.core.store.touch(slots[found])
            change(self.core.store.cols, slots[found], found)
            return found

    # ---------------------------------------------------------------- removals
    def evict(self, n: int) -> np.ndarray:
        """Evict ``n`` entries, lowest utility first, then oldest; curated entries (demonstrations)
        only once no other entry is left. Returns their ids."""
        n = check_non_negative_int("n", n)
        with writing(self.core):
            if self.core.store is None:
                return np.zeros(0, dtype=np.int64)
            return evict_locked(self.core, n)

    def remove(self, ids: Any) -> int:
        """Remove entries by id (absent ids are ignored). Returns how many were removed."""
        ids_arr = as_ids(ids)
        with writing(self.core):
            if self.core.store is None:
                return 0
            present = np.unique(ids_arr[self.core.store.find(ids_arr) >= 0])
            remove_locked(self.core, present)
            return len(present)

    # ------------------------------------------------------------------- merge
    def merge(self, threshold: float | None = None) -> MergeResult:
        """Fold clusters of near-duplicate entries of the same task into one entry each.

        Entries are visited by utility (highest first), then age (oldest first); each
        unvisited entry takes its unvisited neighbours (among its ``merge_k`` nearest)
        closer than ``threshold`` (default ``merge_threshold``), never mixing curated entries
        (demonstrations) with the agent's. The survivor keeps its id,
        key and context; its sample log-prob becomes NaN (its value is no longer the
        sampled one, so a trainer must recompute it); its value becomes the cluster's
        average weighted by :func:`~experience_wrappers.bank.merge.merge_weights`; its
        utility the credit-weighted mean; counters are summed; provenance becomes
        ``MERGED`` (demonstrations stay ``DEMO``); creation step the earliest; extractor version
        the latest (:func:`~experience_wrappers.bank.merge.combine_cluster`).
        """
        thr = self.config.merge_threshold if threshold is None else as_real("threshold", threshold)
        if not (np.isfinite(thr) and thr >= 0):
            raise ValueError(f"threshold must be finite and >= 0, got {threshold!r}")
        with writing(self.core):
            return merge_locked(self.core, thr)

    # ------------------------------------------------------------------- reads
    def get(self, ids: Any) -> dict[str, np.ndarray]:
        """Copies of every field of the given entries (KeyError names a missing id)."""
        ids_arr = as_ids(ids)
        with self.core.lock.read():
            if self.core.store is None:
                if len(ids_arr):
                    raise KeyError(f"no entry with id {int(ids_arr[0])}: the bank is empty")
                return {}
            slots = self.core.store.find(ids_arr)
            if np.any(slots < 0):
                raise KeyError(f"no entry with id {int(ids_arr[np.argmax(slots < 0)])}")
            return {name: col[slots].copy() for name, col in self.core.store.cols.items()}

    def entries(self) -> dict[str, np.ndarray]:
        """Copies of every column, one row per entry, in storage order."""
        with self.core.lock.read():
            return {} if self.core.store is None else self.core.store.snapshot()

    # ---------------------------------------------------------------- replicas
    @property
    def version(self) -> int:
        """How many changes (write transactions) this bank has committed: a replica of an older
        version is stale. Retrieval counts are not changes."""
        return self.core.version

    def replica(self) -> BankReplica:
        """A read-only copy of the entries and the index, queried without locks and never
        waiting for a write (:class:`~experience_wrappers.bank.replica.BankReplica`).

        The copy costs about a millisecond per thousand entries (the HNSW graph is copied in
        memory); take it where the writes happen and hand it to the readers, who swap it in whole.
        """
        from .replica import BankReplica

        return BankReplica.of(self)

    def record_retrievals(self, ids: Any) -> int:
        """Count one retrieval of each id (a replica's queries, :meth:`BankReplica.take_hits`)
        at the next retrieval tick; ids no longer in the bank are skipped. Returns how many counted."""
        ids_arr = as_ids(ids)
        with self.core.lock.read(), self.core.count_lock:
            if self.core.store is None or len(ids_arr) == 0:
                return 0
            slots = self.core.store.find(ids_arr)
            found = slots[slots >= 0]
            if len(found):
                self.core.tick = record_hits(self.core.store, found, None, self.core.tick)
            return len(found)

    def stats(self) -> dict[str, float]:
        """Size, capacity, utilisation (share of entries retrieved in the last
        ``utilisation_window`` queries), mean/min/max utility and retrieval counts."""
        return bank_stats(self.core)

    # ----------------------------------------------------------------- storage
    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Save to a folder (a new one, an empty one, or a bank's) and return its path: crash-safe, writing
        only its own files, one save of a folder at a time (:mod:`.save_load`).

        Refused, the folder left as it was: a folder holding anything else
        (:class:`~experience_wrappers.errors.BankFileError`), an inconsistent bank
        (:class:`~experience_wrappers.errors.BankStateError`), and a stale save (``BankFileError``
        naming both save ids): a loaded bank does not replace a save it was neither loaded from nor
        wrote (another process saved there since it was loaded) unless ``overwrite=True``. A bank that
        was never loaded replaces any bank folder (the last save wins: crash-safe saves of one folder
        from several processes rely on it).
        """
        from .save_load import save_bank

        with self.core.lock.read(), self.core.count_lock:
            check_consistency(self.core)  # (under the lock held: the public method would take it again)
            return save_bank(self.state(), Path(path), self.FORMAT, self.VERSION, lineage=self._lineage,
                             overwrite=check_bool("overwrite", overwrite))

    def check_consistency(self) -> None:
        """Raise :class:`~experience_wrappers.errors.BankStateError` if entries and index disagree.

        Checked: the entry count against the index's live count and the id map, the id lookup
        against the entries, unique ids below the id counter, task counts, and finite utilities.
        Cost: a few passes over the ids, under the bank's read lock (writers wait; a bank that other
        threads write to is checked between their writes).
        """
        with self.core.lock.read():
            check_consistency(self.core)

    def replace_with(self, other: ExperienceBank) -> None:
        """Take ``other``'s config and entries in place, so every holder of this object sees them.

        Used to restore a saved run into the bank object the user (and the wrappers) hold.
        ``other`` (typically fresh from :meth:`load`) must not be used afterwards.
        """
        if not isinstance(other, ExperienceBank):
            raise TypeError(f"other must be an ExperienceBank, got {type(other).__name__}")
        if other is self:
            return
        with interrupts_deferred(), self.core.lock.write(), other.core.lock.read():
            self._adopt(other.state())

    def state(self) -> BankState:
        """The bank's whole state as a :class:`~experience_wrappers.bank.state.BankState`.

        It holds the bank's own entries and index, not copies: read it under the bank's
        lock and do not change it (:meth:`save` does both).
        """
        return self.core.state(self._save_id)

    @classmethod
    def from_state(cls, state: BankState) -> ExperienceBank:
        """A bank around ``state`` (which it then owns), e.g. one that persistence has read and checked."""
        bank = cls(state.config)
        bank._adopt(state)
        return bank

    def _adopt(self, state: BankState) -> None:
        self.core.adopt(state)
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

    def detach_manager(self, manager: Any) -> None:
        """Forget ``manager`` as this bank's manager (it calls this when closed), so that a manager built
        on the bank later serves it; another manager than the bank's is left alone."""
        if self._manager is manager:
            self._manager = None

    @property
    def save_id(self) -> str | None:
        """The id of the save this bank was loaded from (None if it was not loaded)."""
        return self._save_id

    @classmethod
    def load(cls, path: str | Path) -> ExperienceBank:
        """Load a folder written by :meth:`save`; raises :class:`BankFileError` if it can't be trusted."""
        from .save_load import load_bank

        return load_bank(cls, Path(path))
