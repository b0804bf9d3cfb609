"""The bank's boundaries (issue 24, bank part): dedup in "ip" space, hostile or damaged meta.json and
entries, input checks at add, and saves whose clean-up fails after the commit."""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

from experience_wrappers.bank import ExperienceBank
from experience_wrappers.bank.save_load import replaced_folder
from experience_wrappers.errors import BankFileError

F32 = np.float32


# ------------------------------------------------------------------ helpers
def _meta(folder: Path) -> dict:
    return json.loads((folder / "meta.json").read_text())


def _data(folder: Path, stem: str) -> Path:
    names = [n for n in _meta(folder)["files"] if n.startswith(stem)]
    assert len(names) == 1, names
    return folder / names[0]


def forge_meta(folder: Path, *, recompute: bool = True, **changes) -> None:
    """Edit meta.json; with ``recompute`` its config checksum (where the folder has one) is made to match,
    so only the loader's own checks of the values can refuse the edit."""
    meta = _meta(folder)
    for name, value in changes.items():
        if "." in name:
            outer, inner = name.split(".")
            meta[outer] = {**meta[outer], inner: value}
        else:
            meta[name] = value
    if recompute and "config_sha256" in meta:
        from experience_wrappers.bank.folder import config_checksum

        meta["config_sha256"] = config_checksum(meta)
    (folder / "meta.json").write_text(json.dumps(meta))


def forge_entries(folder: Path, **changes) -> None:
    """Rewrite columns of the entries file and recompute the data checksums (a valid-looking forgery)."""
    path = _data(folder, "entries")
    with np.load(path) as z:
        cols = {k: z[k] for k in z.files}
    for name, fn in changes.items():
        cols[name] = fn(cols[name].copy())
    path.unlink()
    np.savez(path, **cols)
    meta = _meta(folder)
    meta["files"] = {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in meta["files"]}
    (folder / "meta.json").write_text(json.dumps(meta))


@pytest.fixture
def saved(tmp_path) -> Path:
    """A saved bank of 10 entries (l2, M 16) with distinct, non-unit-norm keys."""
    rng = np.random.default_rng(0)
    bank = ExperienceBank(capacity=64, seed=0)
    bank.add(rng.normal(size=(10, 6)).astype(F32) * 3, rng.normal(size=(10, 2)), utility=rng.normal(size=10))
    bank.query(rng.normal(size=(2, 6)).astype(F32), k=3)
    return bank.save(tmp_path / "bank")


# ------------------------------------------------------- case 5: dedup in ip
def test_ip_dedup_merges_only_near_identical_keys():
    bank = ExperienceBank(space="ip")
    bank.add([[1.0, 0.0]], [[1.0]])
    bank.add([[10.0, 10.0]], [[2.0]])  # dot 10: "1 - dot" < 0.01, but not a near duplicate
    assert len(bank) == 2
    res = bank.add([[10.0, 10.0 + 1e-3]], [[3.0]])  # a true near duplicate refreshes its entry
    assert len(bank) == 2 and not res.added[0]
    keys = np.random.default_rng(1).uniform(0.5, 2.0, size=(5, 4)).astype(F32)
    fresh = ExperienceBank(space="ip")
    for key in keys:
        fresh.add(key, [1.0])
    assert len(fresh) == 5
    batch = ExperienceBank(space="ip")
    assert batch.add(keys, np.ones((5, 1))).added.all()  # inside one batch as well


def test_ip_merge_joins_only_near_identical_keys():
    keys = np.random.default_rng(2).uniform(0.5, 2.0, size=(5, 4)).astype(F32)
    bank = ExperienceBank(space="ip", dedup_threshold=0.0)
    bank.add(np.vstack([keys, keys[:1] + 1e-3]), np.ones((6, 1)))
    assert bank.merge().merged == {0: [5]}
    assert len(bank) == 5


# ------------------------------------------------ case 7: counters in range
@pytest.mark.parametrize("next_id", [10**30, 2**63 - 1, 2**62, 5, -1, True, 12.0, "12"])
def test_next_id_out_of_range_or_not_an_int_is_refused(saved, next_id):
    forge_meta(saved, next_id=next_id)
    with pytest.raises(BankFileError, match=r"next_id"):
        ExperienceBank.load(saved)


# -------------------------------------------------- case 8: deep meta.json
def test_deeply_nested_meta_is_a_bank_file_error(saved):
    (saved / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(BankFileError, match=r"meta\.json is damaged"):
        ExperienceBank.load(saved)
    with pytest.raises(BankFileError, match=r"meta\.json cannot be read"):
        ExperienceBank().save(saved)


# ------------------------------------------- case 10: meta and entries checked
def test_config_edit_without_checksum_is_refused(saved):
    forge_meta(saved, recompute=False, **{"config.space": "ip"})
    with pytest.raises(BankFileError, match=r"config_sha256"):
        ExperienceBank.load(saved)


def test_meta_without_config_checksum_still_loads(saved):
    meta = _meta(saved)
    assert "config_sha256" in meta
    del meta["config_sha256"]  # as written by earlier versions
    (saved / "meta.json").write_text(json.dumps(meta))
    assert len(ExperienceBank.load(saved)) == 10


@pytest.mark.parametrize(("changes", "match"), [
    ({"config.M": 4}, r"M is 4 in meta\.json but the index was built with M 16"),
    ({"config.ef_construction": 10}, r"ef_construction"),
    ({"size": "10"}, r"size must be an int.*'10'"),
    ({"size": 10.7}, r"size must be an int.*10\.7"),
    ({"size": True}, r"size must be an int"),
    ({"size": 9}, r"size"),
    ({"tick": -5}, r"tick must be an int in \[0, 2\*\*62\).*-5"),
    ({"tick": 1.5}, r"tick"),
    ({"dims.key_dim": True}, r"bad dims"),
    ({"dims.key_dim": 0}, r"bad dims"),
    ({"index.live": "10"}, r"index\.live"),
    ({"index.deleted": -1}, r"index\.deleted"),
])
def test_checksummed_but_invalid_meta_is_refused(saved, changes, match):
    forge_meta(saved, **changes)
    with pytest.raises(BankFileError, match=match):
        ExperienceBank.load(saved)


@pytest.mark.parametrize(("change", "match"), [
    (dict(key=lambda a: np.roll(a, 1, axis=0)), r"key of entry \d+ .* index"),
    (dict(provenance=lambda a: np.where(np.arange(len(a)) == 3, 77, a).astype(a.dtype)), r"provenance.*77"),
    (dict(sample_logp=lambda a: np.where(np.arange(len(a)) == 3, np.inf, a).astype(a.dtype)), r"sample_logp.*inf"),
    (dict(n_retrieved=lambda a: a - 5), r"n_retrieved.*-\d"),
    (dict(n_credited=lambda a: a - 1), r"n_credited"),
    (dict(last_retrieved=lambda a: a - 7), r"last_retrieved"),
    (dict(context=lambda a: a), None),  # an untouched rewrite still loads
])
def test_checksummed_but_invalid_entries_are_refused(saved, change, match):
    forge_entries(saved, **change)
    if match is None:
        assert len(ExperienceBank.load(saved)) == 10
        return
    with pytest.raises(BankFileError, match=match):
        ExperienceBank.load(saved)


def test_key_column_permuted_against_the_index_is_refused_in_a_large_bank(tmp_path):
    rng = np.random.default_rng(3)
    bank = ExperienceBank(capacity=500, dedup_threshold=0.0)
    bank.add(rng.normal(size=(400, 8)).astype(F32), np.zeros((400, 1)))
    path = bank.save(tmp_path / "bank")
    forge_entries(path, key=lambda a: a[rng.permutation(len(a))])
    with pytest.raises(BankFileError, match=r"index"):
        ExperienceBank.load(path)


# ---------------------------------------------- case 14: unclear errors
def test_an_empty_batch_is_a_no_op():
    bank = ExperienceBank()
    res = bank.add([], [])
    assert res.ids.shape == (0,) and not res.added.any() and len(bank) == 0 and bank.dims is None
    bank.add([[1.0, 2.0]], [[1.0]])
    res = bank.add(np.zeros((0, 2)), np.zeros((0, 1)))
    assert res.ids.shape == (0,) and len(bank) == 1
    with pytest.raises(ValueError, match="keys must have 2 columns"):
        bank.add(np.zeros((0, 3)), np.zeros((0, 1)))


def test_float16_keys_are_converted_without_warnings():
    bank = ExperienceBank()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bank.add(np.array([[1.0, 60000.0]], np.float16), np.array([[1.0]], np.float16))
        hit = bank.query(np.array([1.0, 60000.0], np.float16), k=1, mode="knn")
    assert hit.ids.tolist() == [[0]]


def test_an_entries_file_that_is_a_folder_is_a_bank_file_error(saved):
    entries = _data(saved, "entries")
    entries.unlink()
    entries.mkdir()
    with pytest.raises(BankFileError, match=r"entries-\w+\.npz cannot be read"):
        ExperienceBank.load(saved)


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(utility=np.ones(2)), r"utility must be a scalar or have shape \(1,\)"),
    (dict(utility=1e300), r"utility must be within"),
    (dict(utility="1"), r"utility must be real numbers"),
    (dict(task_ids=2**70), r"task_ids must fit in int64.*1180591620717411303424"),
    (dict(task_ids=[2**70]), r"task_ids must fit in int64"),
    (dict(task_ids=-(2**64)), r"task_ids must fit in int64"),
])
def test_bad_add_arguments_are_named(kwargs, match):
    bank = ExperienceBank()
    with pytest.raises(ValueError, match=match):
        bank.add([[1.0, 2.0]], [[1.0]], **kwargs)
    assert len(bank) == 0


# ----------------------------------------------- case 11: silently wrong
def test_a_context_dim_without_key_dim_is_kept():
    bank = ExperienceBank(context_dim=2)
    bank.add([[1.0, 2.0]], [[1.0]])
    assert bank.dims == {"key_dim": 2, "value_dim": 1, "context_dim": 2}
    other = ExperienceBank(context_dim=3)
    with pytest.raises(ValueError, match="context must have 3 columns"):
        other.add([[1.0, 2.0]], [[1.0]], context=[[1.0, 2.0]])
    with pytest.raises(ValueError, match="context_dim"):
        ExperienceBank(context_dim=-1)


@pytest.mark.parametrize("provenance", [1.7, 1.0, True, "1", None, np.float64(1.0)])
def test_non_integer_provenance_is_refused(provenance):
    bank = ExperienceBank()
    with pytest.raises(ValueError, match=r"provenance must be one of"):
        bank.add([[1.0, 2.0]], [[1.0]], provenance=provenance)
    assert len(bank) == 0
    bank.add([[1.0, 2.0]], [[1.0]], provenance=np.int8(1))
    assert bank.entries()["provenance"].tolist() == [1]


def test_an_m_too_small_for_the_documented_recall_warns(caplog):
    with pytest.warns(UserWarning, match=r"M=2.*recall.*M >= 8"):
        ExperienceBank(M=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ExperienceBank(M=8)
        ExperienceBank()


# ------------------------------------------ case 15: clean-up after commit
def test_a_committed_save_whose_clean_up_fails_warns_instead_of_raising(saved, caplog):
    stuck = saved / "entries-0123456789abcdef.npz"  # a leftover of an older save that cannot be unlinked
    stuck.mkdir()
    (stuck / "x").write_bytes(b"x")
    bank = ExperienceBank()
    bank.add(np.ones((1, 6), F32), [[1.0, 2.0]])
    with caplog.at_level(logging.WARNING), pytest.warns(UserWarning, match=r"could not remove.*entries-0123456789abcdef"):
        assert bank.save(saved) == saved
    assert "could not remove" in caplog.text
    assert len(ExperienceBank.load(saved)) == 1


def test_a_swapped_folder_whose_old_copy_cannot_be_emptied_warns_and_keeps_the_users_files(tmp_path):
    path = tmp_path / "state"
    fmt = "test.folder"
    own = {"meta.json", "data.bin"}.__contains__
    with replaced_folder(path, fmt, own) as tmp:
        (tmp / "meta.json").write_text(json.dumps({"format": fmt}))
    (path / "notes.txt").write_text("the user's")
    with pytest.warns(UserWarning, match=r"notes\.txt"), replaced_folder(path, fmt, own) as tmp:
        (tmp / "meta.json").write_text(json.dumps({"format": fmt, "n": 2}))
        (tmp / "notes.txt").mkdir()  # the user's file cannot be moved back over this
        (tmp / "notes.txt" / "x").write_text("x")
    assert json.loads((path / "meta.json").read_text())["n"] == 2  # the new folder is in place
    kept = [p for p in tmp_path.iterdir() if p.name.startswith(".state.")]
    assert len(kept) == 1 and (kept[0] / "notes.txt").read_text() == "the user's"


def test_a_result_object_given_as_ids_says_which_field_to_pass():
    """``bank.remove(bank.add(...))`` read "ids must be integers, got array of shape (1,) and dtype object"."""
    bank = ExperienceBank(dedup_threshold=0.0)
    added = bank.add(np.eye(3, dtype=F32), np.ones((3, 1), F32))
    with pytest.raises(TypeError, match=r"got an AddResult: pass its \.ids"):
        bank.remove(added)
    with pytest.raises(TypeError, match=r"got a QueryResult: pass result\.ids\[result\.mask\]"):
        bank.update(bank.query(np.eye(3, dtype=F32), k=1), [1.0], 0.9)
    assert len(bank) == 3 and bank.remove(added.ids) == 3


# ------------------------------------------------------------------ issue 35's bank probe
def test_a_failed_index_rebuild_leaves_the_old_index_working_and_the_bank_savable(tmp_path, monkeypatch):
    # an add whose index rebuild runs out of memory: the rollback used to rebuild again, and a second
    # failure left the bank with no index (every query an AssertionError, every save refused)
    from experience_wrappers.bank import writes

    rng = np.random.default_rng(0)
    bank = ExperienceBank(capacity=400, dedup_threshold=0.0, seed=0)
    bank.add(rng.normal(size=(300, 8)).astype(F32), np.ones((300, 1), F32))
    bank.remove(np.arange(250))  # deleted elements outnumber the live ones: the next add rebuilds
    before, index = bank.entries(), bank.core.index

    def no_memory(core):
        raise MemoryError("no memory for the rebuild")

    monkeypatch.setattr(writes, "rebuild_index", no_memory)
    with pytest.raises(MemoryError):
        bank.add(rng.normal(size=(20, 8)).astype(F32), np.ones((20, 1), F32))
    assert bank.core.index is index and index.live == 50
    for name in before:
        np.testing.assert_array_equal(before[name], bank.entries()[name])
    bank.check_consistency()
    assert bank.query(before["key"][:1], k=1, mode="knn", record=False).ids[0, 0] == before["id"][0]
    monkeypatch.undo()
    bank.add(rng.normal(size=(20, 8)).astype(F32), np.ones((20, 1), F32))
    assert len(bank) == 70
    ExperienceBank.load(bank.save(tmp_path / "bank")).check_consistency()


def test_an_add_that_fails_inside_hnswlib_is_taken_back_by_flags(monkeypatch):
    # half the items reach hnswlib, then the add fails: the rollback marks those deleted, unmarks
    # what the add evicted, and allocates nothing
    from experience_wrappers.bank.index import HnswIndex

    rng = np.random.default_rng(1)
    bank = ExperienceBank(capacity=60, dedup_threshold=0.0, seed=0)
    bank.add(rng.normal(size=(60, 8)).astype(F32), np.ones((60, 1), F32), utility=np.linspace(-1, 1, 60))
    before, index = bank.entries(), bank.core.index
    real_add = HnswIndex.add

    def half_then_fail(self, keys, ids):
        real_add(self, keys[: len(ids) // 2], ids[: len(ids) // 2])
        raise MemoryError("hnswlib could not allocate")

    monkeypatch.setattr(HnswIndex, "add", half_then_fail)
    with pytest.raises(MemoryError):
        bank.add(rng.normal(size=(10, 8)).astype(F32), np.ones((10, 1), F32))  # evicts 10, adds 10
    monkeypatch.undo()
    assert bank.core.index is index
    for name in before:
        np.testing.assert_array_equal(before[name], bank.entries()[name])
    bank.check_consistency()
    hit = bank.query(before["key"], k=1, mode="knn", record=False)
    np.testing.assert_array_equal(hit.ids[:, 0], before["id"])  # the evicted entries are found again


def test_knn_with_a_utility_floor_returns_the_nearest_entries_above_it():
    bank = ExperienceBank(capacity=100, dedup_threshold=0.0, utility_floor=0.0, candidate_factor=4)
    keys = np.arange(20, dtype=F32)[:, None] * np.array([[1.0, 0.0]], F32)
    bank.add(keys, np.ones((20, 1), F32), utility=np.where(np.arange(20) < 10, -1.0, 1.0),
             task_ids=np.arange(20) % 2)
    result = bank.query([0.0, 0.0], k=2, mode="knn", record=False)  # the 10 nearest are under the floor
    assert result.ids.tolist() == [[10, 11]] and result.mask.all()
    assert bank.query([0.0, 0.0], k=2, mode="knn", task_ids=1, record=False).ids.tolist() == [[11, 13]]
    assert bank.query([0.0, 0.0], k=12, mode="knn", record=False).mask.sum() == 10  # all there are


def test_keys_beyond_hnswlibs_float32_distances_are_refused():
    bank = ExperienceBank()
    with pytest.raises(ValueError, match=r"keys must be within \+-1e\+15"):
        bank.add([[1e20, 0.0]], [[1.0]])
    bank.add([[1.0, 0.0]], [[1.0]])
    with pytest.raises(ValueError, match=r"keys must be within"):
        bank.query(np.array([3e19, 0.0], F32), k=1)
    with pytest.raises(ValueError, match=r"keys must be within"):
        bank.replica().query(np.array([3e19, 0.0], F32), k=1, mode="knn")


def test_cosine_keys_without_a_direction_are_refused_at_add_and_query_and_ip_takes_zero_keys():
    bank = ExperienceBank(space="cosine", dedup_threshold=0.0)
    with pytest.raises(ValueError, match="norm of at least 1e-12 for space 'cosine'"):
        bank.add([[1e-23, 1e-23]], [[1.0]])  # hnswlib's float32 normalisation loses it
    bank.add([[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]])
    for reader in (bank, bank.replica()):
        with pytest.raises(ValueError, match="for space 'cosine'"):
            reader.query(np.zeros(2, F32), k=1, mode="knn")
    ip = ExperienceBank(space="ip", dedup_threshold=0.0)
    ip.add([[0.0, 0.0], [1.0, 0.0]], [[1.0], [2.0]])
    assert ip.query([0.0, 0.0], k=2, mode="knn", record=False).mask.all()


def test_an_empty_banks_fixed_context_width_survives_save_and_load(tmp_path):
    loaded = ExperienceBank.load(ExperienceBank(context_dim=5).save(tmp_path / "bank"))
    with pytest.raises(ValueError, match="context must have 5 columns"):
        loaded.add([[1.0, 2.0]], [[1.0]], context=[[1.0, 2.0, 3.0]])
    loaded.add([[1.0, 2.0]], [[1.0]], context=np.ones((1, 5)))
    assert loaded.dims == {"key_dim": 2, "value_dim": 1, "context_dim": 5}


def test_an_entry_refreshed_by_an_add_is_not_evicted_by_the_same_add():
    bank = ExperienceBank(capacity=3, dedup_threshold=0.01)
    bank.add(np.eye(3, dtype=F32), np.zeros((3, 1), F32), utility=[-1.0, 5.0, 5.0])
    result = bank.add(np.array([[0.999, 0, 0], [0, 0, 0]], F32), np.array([[7.0], [8.0]], F32))
    assert result.ids[0] == 0 and result.evicted.tolist() == [1]
    assert sorted(bank.entries()["value"].ravel().tolist()) == [0.0, 7.0, 8.0]


def test_a_save_into_another_banks_folder_names_what_happened(tmp_path):
    first = ExperienceBank()
    first.add([[1.0, 0.0]], [[1.0]])
    loaded = ExperienceBank.load(first.save(tmp_path / "a"))
    other = ExperienceBank()
    other.add([[0.0, 1.0]], [[1.0]])
    other.save(tmp_path / "c")
    with pytest.raises(BankFileError, match="which this bank was not loaded from and did not write"):
        loaded.save(tmp_path / "c")
