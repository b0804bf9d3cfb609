"""Saving and loading banks: exact round trips, refusal of damaged or foreign folders, no pickle."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from experience_wrappers.bank import ExperienceBank
from experience_wrappers.bank.index import INDEX_SLACK
from experience_wrappers.bank.swap import exchange_paths
from experience_wrappers.errors import BankFileError

F32 = np.float32


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_entries_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def assert_results_equal(a, b) -> None:
    for field in ("ids", "values", "utility", "distances", "mask"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def data(folder: Path, stem: str) -> Path:
    """The current data file of a saved folder: ``"entries"`` or ``"index"`` (its name changes per save)."""
    meta = json.loads((folder / "meta.json").read_text())
    names = [n for n in meta["files"] if n.startswith(stem)]
    assert len(names) == 1, names
    return folder / names[0]


def edit_meta(folder: Path, **changes) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(changes)
    (folder / "meta.json").write_text(json.dumps(meta))


def rechecksum(folder: Path) -> None:
    """Make meta.json's checksums match the data files again (a deliberate, valid-looking forgery)."""
    meta = json.loads((folder / "meta.json").read_text())
    meta["files"] = {name: sha256(folder / name) for name in meta["files"]}
    (folder / "meta.json").write_text(json.dumps(meta))


@pytest.fixture
def bank() -> ExperienceBank:
    """A used bank: two tasks, contexts, retrievals, credits, a merge, evictions."""
    rng = np.random.default_rng(5)
    b = ExperienceBank(capacity=60, dedup_threshold=0.01, merge_threshold=0.05, seed=3)
    for step in range(4):
        keys = rng.normal(size=(25, 8)).astype(F32)
        keys[:3] = keys[3:6] + 0.1  # near-duplicates for the merge
        tasks = rng.integers(0, 2, 25)
        tasks[:3] = tasks[3:6]
        b.add(keys, rng.normal(size=(25, 4)), task_ids=tasks,
              utility=rng.normal(size=25), context=rng.normal(size=(25, 5)), sample_logp=rng.normal(size=25), step=step)
    ids = b.entries()["id"]
    b.update(ids[:10], rng.normal(size=10), 0.9)
    b.query(rng.normal(size=(6, 8)).astype(F32), k=4)
    near = b.entries()["key"][:2] + 0.001
    b.add(near, np.ones((2, 4)), task_ids=b.entries()["task_id"][:2])
    assert b.merge(0.5).n_removed > 0
    b.remove(b.entries()["id"][-2:])
    assert len(b) < 60 and b.core.index.deleted > 0  # deleted elements in the index
    assert np.isnan(b.entries()["sample_logp"]).any()  # merged entries: NaN survives the trip
    return b


def test_round_trip_is_exact(bank, tmp_path):
    path = bank.save(tmp_path / "bank")
    loaded = ExperienceBank.load(path)
    assert_entries_equal(bank.entries(), loaded.entries())
    assert loaded.config == bank.config and loaded.dims == bank.dims
    assert loaded.stats() == bank.stats()
    q = np.random.default_rng(9).normal(size=(16, 8)).astype(F32)
    assert_results_equal(bank.query(q, k=5, mode="knn"), loaded.query(q, k=5, mode="knn"))
    for task in (0, 1):
        assert_results_equal(bank.query(q, k=5, mode="knn", task_ids=task),
                             loaded.query(q, k=5, mode="knn", task_ids=task))
    # the sampler state travels: the bank's own rng draws the same picks on both
    for _ in range(3):
        assert_results_equal(bank.query(q, k=4), loaded.query(q, k=4))
        assert_results_equal(bank.query(q, k=4, mode="random"), loaded.query(q, k=4, mode="random"))
    assert_entries_equal(bank.entries(), loaded.entries())  # counters moved alike
    # and life goes on identically: same new ids, same evictions, bounded index
    rng = np.random.default_rng(1)
    for _ in range(3):
        keys, vals = rng.normal(size=(30, 8)).astype(F32), rng.normal(size=(30, 4))
        a, b = bank.add(keys, vals), loaded.add(keys, vals)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.evicted, b.evicted)
    assert loaded.core.index.max_elements <= INDEX_SLACK * loaded.config.capacity
    assert_entries_equal(bank.entries(), loaded.entries())


def test_a_version_3_folder_with_an_action_prior_column_loads_without_it(bank, tmp_path):
    """Folders saved before the action prior was removed (format 3: a ``prior`` column, ``prior_dim``
    in the dims) still load, the column left out; the rest is exactly as saved."""
    from experience_wrappers.bank.folder import config_checksum

    path = bank.save(tmp_path / "bank")
    entries = data(path, "entries")
    with np.load(entries) as z:
        cols = {k: z[k] for k in z.files}
    cols["prior"] = np.random.default_rng(0).normal(size=(len(cols["id"]), 3)).astype(F32)
    entries.unlink()
    np.savez(entries, **cols)
    meta = json.loads((path / "meta.json").read_text())
    meta["version"] = 3
    meta["dims"] = {**meta["dims"], "prior_dim": 3}
    meta["config_sha256"] = config_checksum(meta)
    meta["files"] = {n: hashlib.sha256((path / n).read_bytes()).hexdigest() for n in meta["files"]}
    (path / "meta.json").write_text(json.dumps(meta))
    loaded = ExperienceBank.load(path)
    assert loaded.dims == bank.dims and "prior" not in loaded.entries()
    assert_entries_equal(bank.entries(), loaded.entries())
    meta["version"] = 4  # the current format has no prior_dim: refused by name
    meta["config_sha256"] = config_checksum(meta)
    (path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(BankFileError, match="dims"):
        ExperienceBank.load(path)


def test_folder_layout(bank, tmp_path):
    path = bank.save(tmp_path / "bank")
    names = sorted(p.name for p in path.iterdir())
    assert len(names) == 4 and names[0] == ".lock" and names[3] == "meta.json"
    assert re.fullmatch(r"entries-[0-9a-f]{16}\.npz", names[1]) and re.fullmatch(r"index-[0-9a-f]{16}\.bin", names[2])
    meta = json.loads((path / "meta.json").read_text())
    assert meta["format"] == ExperienceBank.FORMAT and meta["version"] == ExperienceBank.VERSION == 4
    assert meta["files"] == {names[1]: sha256(path / names[1]), names[2]: sha256(path / names[2])}


@pytest.mark.parametrize("kind", ["never_added", "dims_only", "emptied"])
def test_empty_bank_round_trips(kind, tmp_path):
    if kind == "never_added":
        bank = ExperienceBank(capacity=5)
    elif kind == "dims_only":
        bank = ExperienceBank(capacity=5, key_dim=3, value_dim=2, context_dim=1)
    else:
        bank = ExperienceBank(capacity=5, dedup_threshold=0.0)
        bank.add(np.eye(3, dtype=F32), np.ones((3, 2), F32))
        bank.evict(3)
    loaded = ExperienceBank.load(bank.save(tmp_path / kind))
    assert len(loaded) == 0 and loaded.dims == bank.dims
    assert_entries_equal(bank.entries(), loaded.entries())
    res = loaded.query(np.ones((2, 3), F32), k=2)
    assert not res.mask.any()
    added = loaded.add(np.eye(3, dtype=F32), np.ones((3, 2), F32))
    assert added.added.all() and len(loaded) == 3
    if kind == "emptied":
        assert added.ids.tolist() == [3, 4, 5]  # ids are never reused, even across a save
    hit = loaded.query(np.eye(3, dtype=F32), k=1, mode="knn")
    assert hit.ids[:, 0].tolist() == added.ids.tolist()


def test_save_over_existing_bank_replaces_its_files_and_nothing_else(bank, tmp_path):
    path = tmp_path / "bank"
    other = ExperienceBank(capacity=10, dedup_threshold=0.0)
    other.add(np.eye(2, dtype=F32), np.ones((2, 1), F32))
    other.save(path)
    before = {data(path, "entries"), data(path, "index")}
    (path / "notes.txt").write_text("left by the user")
    bank.save(path)
    loaded = ExperienceBank.load(path)
    assert_entries_equal(bank.entries(), loaded.entries())
    assert (path / "notes.txt").read_text() == "left by the user"  # not the bank's: never removed
    assert not any(f.exists() for f in before)  # the previous save's files are gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank"]  # no temporary leftovers
    assert len(list(path.iterdir())) == 5  # .lock, meta.json, two data files, notes.txt
    other.save(path)  # and back again (a bank never loaded: the last save wins)
    assert len(ExperienceBank.load(path)) == 2
    # a loaded bank does not replace a save it neither loaded nor wrote, unless asked by name
    loaded = ExperienceBank.load(path)
    other.add(np.ones((1, 2), F32) * 5, np.ones((1, 1), F32))
    other.save(path)
    with pytest.raises(BankFileError, match="refusing to save into .* it holds save"):
        loaded.save(path)
    assert len(ExperienceBank.load(path)) == 3
    loaded.save(path, overwrite=True)
    assert len(ExperienceBank.load(path)) == 2
    loaded.add(np.ones((1, 2), F32) * 7, np.ones((1, 1), F32))
    loaded.save(path)  # its own save now: no overwrite needed
    assert len(ExperienceBank.load(path)) == 3


def test_save_refuses_a_file_path_and_leaves_it_alone(bank, tmp_path):
    target = tmp_path / "not-a-folder"
    target.write_bytes(b"precious")
    with pytest.raises(ValueError, match="folder"):
        bank.save(target)
    assert target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"]


@pytest.fixture
def saved(bank, tmp_path) -> Path:
    return bank.save(tmp_path / "bank")


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["index", "entries"])
@pytest.mark.parametrize("where", [0, 100, -1])
def test_flipped_byte_is_refused(saved, name, where):
    _flip(data(saved, name), where)
    with pytest.raises(BankFileError, match=f"{name}.*(damaged|checksum)"):
        ExperienceBank.load(saved)


@pytest.mark.parametrize("name", ["index", "entries"])
def test_truncated_file_is_refused(saved, name):
    raw = data(saved, name).read_bytes()
    data(saved, name).write_bytes(raw[: len(raw) // 2])
    with pytest.raises(BankFileError, match=f"{name}.*truncated"):
        ExperienceBank.load(saved)


@pytest.mark.parametrize("name", ["index", "entries"])
def test_missing_data_file_is_refused(saved, name):
    data(saved, name).unlink()
    with pytest.raises(BankFileError, match=f"{name}-.* is missing"):
        ExperienceBank.load(saved)


def test_missing_meta_is_refused(saved):
    (saved / "meta.json").unlink()
    with pytest.raises(BankFileError, match="no meta.json"):
        ExperienceBank.load(saved)


@pytest.mark.parametrize("text", ["{not json", "", "[1, 2]", "\udcff"])
def test_garbled_meta_is_refused(saved, text):
    (saved / "meta.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(BankFileError, match="meta.json|format"):
        ExperienceBank.load(saved)


def test_foreign_format_is_refused(saved):
    edit_meta(saved, format="someone-elses-index")
    with pytest.raises(BankFileError, match="format is 'someone-elses-index'"):
        ExperienceBank.load(saved)


def test_newer_version_is_refused_with_the_version_error(saved):
    edit_meta(saved, version=99)  # and nothing else: checksums cover only the data files
    with pytest.raises(BankFileError, match=r"newer version.*99 > 4.*upgrade"):
        ExperienceBank.load(saved)


@pytest.mark.parametrize("version", [0, -1, "1", None, 1.5])
def test_bad_version_is_refused(saved, version):
    edit_meta(saved, version=version)
    with pytest.raises(BankFileError, match="version"):
        ExperienceBank.load(saved)


def test_non_folder_paths_are_refused(tmp_path):
    a_file = tmp_path / "file.bin"
    a_file.write_bytes(b"\x00" * 10)
    for path in (a_file, tmp_path / "nowhere", tmp_path):
        with pytest.raises(BankFileError, match="cannot load experience bank"):
            ExperienceBank.load(path)


def test_loading_never_unpickles(saved, tmp_path):
    """An npz with an object array (a pickle inside) is refused before anything runs."""
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))  # unpickling would create the marker file

    with np.load(data(saved, "entries")) as z:
        cols = {k: z[k] for k in z.files}
    boom = np.empty(len(cols["id"]), dtype=object)
    boom[:] = [Payload() for _ in range(len(boom))]
    cols["id"] = boom
    np.savez(data(saved, "entries"), **cols)  # np.savez pickles object arrays
    rechecksum(saved)
    with pytest.raises(BankFileError, match="entries-"):
        ExperienceBank.load(saved)
    assert not marker.exists()


def _rewrite_entries(folder: Path, **changes) -> None:
    with np.load(data(folder, "entries")) as z:
        cols = {k: z[k] for k in z.files}
    for name, fn in changes.items():
        cols[name] = fn(cols[name])
    np.savez(data(folder, "entries"), **cols)
    rechecksum(folder)


@pytest.mark.parametrize(("change", "match"), [
    (dict(key=lambda a: a[:, :-1]), "column 'key'"),
    (dict(utility=lambda a: a.astype(np.float32)), "column 'utility'"),
    (dict(id=lambda a: np.concatenate([a[:1], a[:-1]])), "ids are duplicated"),
    (dict(id=lambda a: a + 10_000), "out of range"),
    (dict(id=lambda a: a[:-1]), "column 'id'"),
])
def test_forged_but_checksummed_entries_are_refused(saved, change, match):
    _rewrite_entries(saved, **change)
    with pytest.raises(BankFileError, match=match):
        ExperienceBank.load(saved)


def test_missing_column_is_refused(saved):
    with np.load(data(saved, "entries")) as z:
        cols = {k: z[k] for k in z.files if k != "utility"}
    np.savez(data(saved, "entries"), **cols)
    rechecksum(saved)
    with pytest.raises(BankFileError, match=r"entries-\w+\.npz cannot be read"):
        ExperienceBank.load(saved)


def test_index_of_another_bank_is_refused(saved, tmp_path):
    other = ExperienceBank(capacity=60, dedup_threshold=0.0)
    other.add(np.random.default_rng(0).normal(size=(5, 8)).astype(F32), np.ones((5, 4)))
    other_path = other.save(tmp_path / "other")
    os.replace(data(other_path, "index"), data(saved, "index"))
    rechecksum(saved)
    with pytest.raises(BankFileError, match=r"index-\w+\.bin does not match"):
        ExperienceBank.load(saved)


@pytest.mark.parametrize(("changes", "match"), [
    (dict(config={"capacity": 0}), "metadata is invalid"),
    (dict(config={"capacity": 5}), "exceed the capacity"),
    (dict(dims={"key_dim": 8}), "bad dims"),
    (dict(size="many"), "metadata is invalid"),
    (dict(rng_state={"bit_generator": "nope"}), "sampler state"),
    (dict(files={}), "lists no"),
    (dict(files=None), "lists no files"),
])
def test_bad_metadata_is_refused(saved, changes, match):
    meta = json.loads((saved / "meta.json").read_text())
    if "config" in changes:
        changes["config"] = {**meta["config"], **changes["config"]}
    edit_meta(saved, **changes)
    with pytest.raises(BankFileError, match=match):
        ExperienceBank.load(saved)


def test_an_interrupted_save_is_named_in_the_error(tmp_path):
    bank = ExperienceBank()
    bank.add(np.eye(3, dtype=np.float32), np.ones((3, 2), dtype=np.float32))
    bank.save(tmp_path / "bank")
    # the moment between the two renames of a save: only the old folder exists
    os.replace(tmp_path / "bank", tmp_path / ".bank.old-0000abcd")
    with pytest.raises(BankFileError, match=r"\.bank\.old-0000abcd"):
        ExperienceBank.load(tmp_path / "bank")
    os.replace(tmp_path / ".bank.old-0000abcd", tmp_path / "bank")
    assert len(ExperienceBank.load(tmp_path / "bank")) == 3


def test_exchange_paths_swaps_two_folders_in_one_step(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x").write_text(name)
    if not exchange_paths(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this system cannot swap in one step (the save falls back to two renames)")
    assert (tmp_path / "a" / "x").read_text() == "b" and (tmp_path / "b" / "x").read_text() == "a"
    with pytest.raises(FileNotFoundError):
        exchange_paths(tmp_path / "missing", tmp_path / "a")
