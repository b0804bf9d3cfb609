"""Random operation sequences on the bank, checked against a brute-force model.

The model below is written from the docstrings of :class:`ExperienceBank`, with exact
distances (float64 on the float32 keys), plain dicts and no hnswlib. The bank is kept
tiny (capacity 12, ``merge_k`` and ``ef`` far above it) so HNSW search is exact and the
neighbour list of a merge is the whole bank; keys are continuous random numbers from a
seeded generator, so distance ties (and threshold ties) do not happen.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from experience_wrappers.bank import ExperienceBank, Provenance
from experience_wrappers.bank.index import INDEX_SLACK

CAPACITY = 12
DIM = 2
SEEDS = st.integers(0, 2**32 - 1)


class Model:
    """The documented semantics, the slow and obvious way."""

    def __init__(self, capacity: int, dedup_threshold: float, warmup: bool = False) -> None:
        self.capacity = capacity
        self.dedup = dedup_threshold
        self.warmup = warmup
        self.entries: dict[int, dict] = {}
        self.next_id = 0
        self.tick = 0
        self.issued: set[int] = set()

    @staticmethod
    def dist(a: np.ndarray, b: np.ndarray) -> float:
        a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
        return float(((a64 - b64) ** 2).sum())

    def evict(self, n: int, keep: frozenset[int] = frozenset()) -> list[int]:
        """The ``n`` lowest utilities (the oldest first among equal ones), the ids in ``keep`` last."""
        n = max(0, min(n, len(self.entries)))
        victims = sorted(self.entries, key=lambda i: (i in keep, self.entries[i]["utility"], i))[:n]
        for i in victims:
            del self.entries[i]
        return victims

    def add(self, keys, values, tasks, utility, logp, step, version) -> tuple[list[int], list[bool], list[int]]:
        """``step`` and ``version``: one int for the batch or one per item (a new entry's step is
        its own item's; its version, like its content, the last item folded into it)."""
        n = len(keys)
        steps = [int(step)] * n if np.ndim(step) == 0 else [int(x) for x in step]
        versions = [int(version)] * n if np.ndim(version) == 0 else [int(x) for x in version]
        target = [-1] * n  # existing id refreshed
        source = [-1] * n  # earlier batch item folded into
        existing = dict(self.entries)
        for i in range(n):
            best = np.inf
            if self.dedup > 0:
                same = [(self.dist(keys[i], e["key"]), eid) for eid, e in existing.items()
                        if e["task"] == tasks[i]]
                if same:
                    d, eid = min(same)
                    if d < self.dedup:
                        target[i], best = eid, d
                leaders = [(self.dist(keys[i], keys[j]), j) for j in range(i)
                           if tasks[j] == tasks[i] and target[j] < 0 and source[j] < 0]
                leaders = [(d, j) for d, j in leaders if d < self.dedup]
                if leaders:
                    d, j = min(leaders)
                    if d < best:
                        source[i], target[i] = j, -1
        for i in range(n):  # refreshes, in item order: a later item wins
            if target[i] >= 0:
                e = self.entries[target[i]]
                e.update(value=values[i].copy(), logp=float(logp[i]), version=versions[i])
        new_items = [i for i in range(n) if target[i] < 0 and source[i] < 0]
        final = {j: j for j in new_items}
        for i in range(n):
            if source[i] >= 0:
                final[source[i]] = i
        kept = new_items[max(0, len(new_items) - self.capacity):]
        # the entries this batch refreshed are evicted last
        evicted = self.evict(len(self.entries) + len(kept) - self.capacity, frozenset(t for t in target if t >= 0))
        new_id = {}
        for j in kept:
            eid = self.next_id
            self.next_id += 1
            assert eid not in self.issued
            self.issued.add(eid)
            new_id[j] = eid
            src = final[j]
            self.entries[eid] = dict(
                key=keys[j].copy(), value=values[src].copy(), logp=float(logp[src]),
                utility=float(utility[j]), task=int(tasks[j]), prov=int(Provenance.EXTRACTED),
                created=steps[j], version=versions[src], n_retrieved=0, n_credited=0,
                last_retrieved=-1,
            )
        ids = []
        for i in range(n):
            if target[i] >= 0:
                ids.append(target[i] if target[i] in self.entries else -1)
            elif source[i] >= 0:
                ids.append(new_id.get(source[i], -1))
            else:
                ids.append(new_id.get(i, -1))
        added = [i in new_id for i in range(n)]
        return ids, added, evicted

    def update(self, ids, deltas, decay) -> list[bool]:
        found = []
        for i, d in zip(ids, deltas, strict=True):
            e = self.entries.get(int(i))
            found.append(e is not None)
            if e is not None:
                if self.warmup:  # a running mean of the initial utility and the deltas, then the EMA
                    weight = max(1.0 - decay, 1.0 / (e["n_credited"] + 2))
                    e["utility"] = (1.0 - weight) * e["utility"] + weight * float(d)
                else:
                    e["utility"] = decay * e["utility"] + (1.0 - decay) * float(d)
                e["n_credited"] += 1
        return found

    def merge(self, thr: float) -> dict[int, set[int]]:
        if len(self.entries) < 2 or thr == 0:
            return {}
        order = sorted(self.entries, key=lambda i: (-self.entries[i]["utility"], i))
        visited: set[int] = set()
        clusters = []
        for lead in order:
            if lead in visited:
                continue
            visited.add(lead)
            le = self.entries[lead]
            members = [j for j, e in self.entries.items()
                       if j not in visited and e["task"] == le["task"]
                       and self.dist(le["key"], e["key"]) < thr]
            visited.update(members)
            if members:
                clusters.append([lead, *members])
        out = {}
        for lead, *rest in clusters:
            es = [self.entries[i] for i in (lead, *rest)]
            u = np.array([e["utility"] for e in es])
            nc = np.array([e["n_credited"] for e in es], dtype=np.float64)
            w = (1.0 + nc) * np.exp(u - u.max())
            w /= w.sum()
            le = self.entries[lead]
            le["value"] = (w[:, None] * np.stack([e["value"] for e in es])).sum(0).astype(np.float32)
            le["utility"] = float(((1.0 + nc) * u).sum() / (1.0 + nc).sum())
            for name in ("n_retrieved", "n_credited"):
                le[name] = sum(e[name] for e in es)
            le["last_retrieved"] = max(e["last_retrieved"] for e in es)
            le["created"] = min(e["created"] for e in es)
            le["version"] = max(e["version"] for e in es)
            le["prov"] = int(Provenance.MERGED)
            le["logp"] = float("nan")  # the merged value was never sampled
            for i in rest:
                del self.entries[i]
            out[lead] = set(rest)
        return out

    def remove(self, ids) -> int:
        gone = {int(i) for i in ids if int(i) in self.entries}
        for i in gone:
            del self.entries[i]
        return len(gone)

    def knn(self, queries, k, tasks) -> list[list[int]]:
        """The exact k nearest of each query (ties by id: one of the equally right answers)."""
        rows = []
        for r, q in enumerate(queries):
            pool = [(self.dist(q, e["key"]), i) for i, e in self.entries.items()
                    if tasks is None or e["task"] == tasks[r]]
            rows.append([i for _, i in sorted(pool)[:k]])
        return rows

    def record(self, rows: list[list[int]]) -> None:
        """Count one retrieval of every entry of ``rows`` (one query)."""
        if self.entries:
            for row in rows:
                for i in row:
                    self.entries[i]["n_retrieved"] += 1
                    self.entries[i]["last_retrieved"] = self.tick
            self.tick += 1


class BankMachine(RuleBasedStateMachine):
    DEDUP = 0.004
    WARMUP = False

    def __init__(self) -> None:
        super().__init__()
        self.bank = ExperienceBank(capacity=CAPACITY, dedup_threshold=self.DEDUP, merge_k=16,
                                   ef_search=64, ef_construction=64, M=16, seed=0, utility_warmup=self.WARMUP)
        self.model = Model(CAPACITY, self.DEDUP, self.WARMUP)
        self.tmp = Path(tempfile.mkdtemp(prefix="bank-stateful-"))
        self.saves = 0

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _existing_keys(self, worst_first: bool) -> list[np.ndarray]:
        """Keys in the bank; with ``worst_first`` only the next eviction victim's."""
        ents = self.model.entries
        if worst_first and ents:
            return [ents[min(ents, key=lambda i: (ents[i]["utility"], i))]["key"]]
        return [e["key"] for e in ents.values()]

    @rule(seed=SEEDS, n=st.integers(1, 6), near_bank=st.booleans(), near_batch=st.booleans(),
          default_utility=st.booleans(), jitter=st.sampled_from([0.01, 0.05, 0.1]),
          step=st.integers(0, 100), near_victim=st.booleans(), per_item=st.booleans())
    def add(self, seed, n, near_bank, near_batch, default_utility, jitter, step,
            near_victim=False, per_item=False) -> None:
        rng = np.random.default_rng(seed)
        keys = rng.random((n, DIM)).astype(np.float32)
        existing = self._existing_keys(worst_first=near_victim)
        for i in range(n):  # copies with a little noise: dedup and merge candidates
            if near_bank and existing and rng.random() < 0.5:
                keys[i] = existing[rng.integers(len(existing))] + rng.uniform(-jitter, jitter, DIM)
            elif near_batch and i > 0 and rng.random() < 0.5:
                keys[i] = keys[rng.integers(i)] + rng.uniform(-jitter, jitter, DIM)
        values = rng.normal(size=(n, 3)).astype(np.float32)
        tasks = rng.integers(0, 2, n)
        utility = np.zeros(n) if default_utility else rng.normal(size=n)
        logp = rng.normal(size=n).astype(np.float32)
        version = int(rng.integers(0, 5))
        if per_item:  # one step and version per item, as the learner process's batched writes give
            step, version = step + rng.integers(0, 3, n), rng.integers(0, 5, n)
        res = self.bank.add(keys, values, task_ids=tasks, utility=None if default_utility else utility,
                            sample_logp=logp, step=step, extractor_version=version)
        ids, added, evicted = self.model.add(keys, values, tasks, utility,
                                             logp.astype(np.float64), step, version)
        assert res.ids.tolist() == ids
        assert res.added.tolist() == added
        assert sorted(res.evicted.tolist()) == sorted(evicted)
        event("add: refreshed an entry", str(bool(np.any(~res.added & (res.ids >= 0)))))
        event("add: evicted", str(len(evicted) > 0))
        event("add: lost item (-1)", str(bool(np.any(res.ids < 0))))

    @initialize(seed=SEEDS, n=st.integers(4, 10))
    def fill(self, seed, n) -> None:
        self.add(seed=seed, n=n, near_bank=False, near_batch=True, default_utility=False,
                 jitter=0.05, step=0)

    @rule(seed=SEEDS, n=st.integers(1, 6), unknown=st.booleans(),
          decay=st.sampled_from([0.0, 0.5, 0.9, 1.0]) | st.floats(0, 1))
    def update(self, seed, n, unknown, decay) -> None:
        rng = np.random.default_rng(seed)
        pool = list(self.model.entries) + ([self.model.next_id + 5, 10_000] if unknown else [])
        if not pool:
            pool = [0]
        ids = rng.choice(pool, size=n)  # repeats on purpose
        deltas = rng.normal(size=n)
        found = self.bank.update(ids, deltas, decay)
        assert found.tolist() == self.model.update(ids.tolist(), deltas.tolist(), decay)

    @rule(thr=st.sampled_from([0.0, 0.01, 0.03, 0.1, 0.3]))
    def merge(self, thr) -> None:
        res = self.bank.merge(thr)
        expected = self.model.merge(thr)
        assert {k: set(v) for k, v in res.merged.items()} == expected
        event("merge: merged", str(bool(expected)))

    @rule(n=st.integers(0, 5))
    def evict(self, n) -> None:
        assert sorted(self.bank.evict(n).tolist()) == sorted(self.model.evict(n))

    @rule(seed=SEEDS, n=st.integers(0, 4))
    def remove(self, seed, n) -> None:
        rng = np.random.default_rng(seed)
        pool = list(self.model.entries) + [self.model.next_id + 3]
        ids = rng.choice(pool, size=n).tolist()
        assert self.bank.remove(ids) == self.model.remove(ids)

    @rule(seed=SEEDS, nq=st.integers(1, 3), k=st.integers(1, 15),
          task_mode=st.sampled_from(["none", "0", "1", "rows"]), record=st.booleans())
    def query(self, seed, nq, k, task_mode, record) -> None:
        rng = np.random.default_rng(seed)
        q = rng.random((nq, DIM)).astype(np.float32)
        tasks = {"none": None, "0": np.zeros(nq, np.int64), "1": np.ones(nq, np.int64),
                 "rows": rng.integers(0, 2, nq)}[task_mode]
        res = self.bank.query(q, k=k, mode="knn", task_ids=tasks, record=record)
        expected = self.model.knn(q, k, None if tasks is None else tasks.tolist())
        assert res.ids.shape == (nq, k) and res.mask.shape == (nq, k)
        answered = []
        for r in range(nq):
            got = res.ids[r][res.mask[r]].tolist()
            if got != expected[r]:
                # entries at exactly the same distance (a duplicate key: no dedup) may come in
                # either order: the same entries of the right task, and the same distance at
                # every rank as the exact answer's
                assert len(got) == len(expected[r]) and len(set(got)) == len(got), (r, got, expected[r])
                assert all(i in self.model.entries and (tasks is None or self.model.entries[i]["task"] == tasks[r])
                           for i in got), (r, got, expected[r])
                dist = [self.model.dist(q[r], self.model.entries[i]["key"]) for i in got]
                want = [self.model.dist(q[r], self.model.entries[i]["key"]) for i in expected[r]]
                assert dist == want, (r, got, expected[r], dist, want)
            answered.append(got)
            assert np.all(res.ids[r][~res.mask[r]] == -1)
            # the mask is a prefix: real picks first, padding after
            assert res.mask[r].tolist() == [True] * len(got) + [False] * (k - len(got))
        if record:
            self.model.record(answered)

    @precondition(lambda self: self.saves < 3)
    @rule()
    def save_load(self) -> None:
        self.saves += 1
        path = self.tmp / f"bank{self.saves}"
        before = self.bank.entries()
        self.bank = ExperienceBank.load(self.bank.save(path))
        after = self.bank.entries()
        assert before.keys() == after.keys()
        for name in before:
            np.testing.assert_array_equal(before[name], after[name], err_msg=name)

    @invariant()
    def agrees_with_model(self) -> None:
        bank, model = self.bank, self.model
        assert len(bank) <= CAPACITY
        if bank.core.index is not None:
            assert bank.core.index.max_elements <= INDEX_SLACK * CAPACITY
        ent = bank.entries()
        if not ent:
            assert not model.entries
            return
        ids = ent["id"].tolist()
        assert len(ids) == len(set(ids))
        assert set(ids) == set(model.entries)
        assert set(ids) <= model.issued
        for slot, eid in enumerate(ids):
            e = model.entries[eid]
            assert ent["task_id"][slot] == e["task"]
            assert ent["provenance"][slot] == e["prov"]
            assert ent["n_retrieved"][slot] == e["n_retrieved"]
            assert ent["n_credited"][slot] == e["n_credited"]
            assert ent["last_retrieved"][slot] == e["last_retrieved"]
            assert ent["created_step"][slot] == e["created"]
            assert ent["extractor_version"][slot] == e["version"]
            np.testing.assert_allclose(ent["utility"][slot], e["utility"], rtol=1e-9, atol=1e-12)
            np.testing.assert_array_equal(ent["key"][slot], e["key"])
            np.testing.assert_allclose(ent["value"][slot], e["value"], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(ent["sample_logp"][slot], e["logp"], rtol=1e-6)
        assert bank.stats()["queries"] == model.tick


class NoDedupMachine(BankMachine):
    """Dedup off: near-identical keys pile up, so merges have much more to do."""

    DEDUP = 0.0


class WarmupMachine(BankMachine):
    """Utility warm-up on: the first credits of an entry average instead of decaying."""

    WARMUP = True


_SETTINGS = settings(max_examples=60, stateful_step_count=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])
TestBankAgainstModel = BankMachine.TestCase
TestBankAgainstModel.settings = _SETTINGS
TestBankNoDedupAgainstModel = NoDedupMachine.TestCase
TestBankNoDedupAgainstModel.settings = _SETTINGS
TestBankWarmupAgainstModel = WarmupMachine.TestCase
TestBankWarmupAgainstModel.settings = _SETTINGS
