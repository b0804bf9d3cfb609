"""Nothing lost at the run level: ``save_crl`` / ``load_crl`` all or nothing, stale bank saves
refused, a bank re-saved in place still loads (issue cases 1-4 and 6)."""

from __future__ import annotations

import errno
import json
import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.errors import BankFileError, RunFileError
from integrations.sb3 import CRLCallback, find_experience, load_crl, save_crl

from .test_sb3 import FAST, PPO_KW, wrapped_vec

F32 = np.float32


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run trained briefly and saved: (folder, model, env, bank size)."""
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW).learn(256, callback=CRLCallback())
    folder = save_crl(tmp_path_factory.mktemp("runs") / "run", model)
    return folder, model, venv, len(find_experience(venv)[0][0].bank)


def _bank(venv) -> ExperienceBank:
    return find_experience(venv)[0][0].bank


def test_save_crl_refuses_a_folder_with_an_unrelated_model_zip(trained, tmp_path) -> None:
    _, model, venv, _ = trained
    (tmp_path / "model.zip").write_bytes(b"someone else's model")
    with pytest.raises(RunFileError, match="not a saved folder of format"):
        save_crl(tmp_path, model, venv)
    assert (tmp_path / "model.zip").read_bytes() == b"someone else's model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.zip"]
    with pytest.raises(ValueError, match="is a file"):
        save_crl(tmp_path / "model.zip", model, venv)
    with pytest.warns(UserWarning, match="'.*run.zip' will be a folder named so"):  # probe 19: said, not silent
        save_crl(tmp_path / "new" / "run.zip", model, venv)
    assert (tmp_path / "new" / "run.zip" / "model.zip").is_file()


def test_a_run_is_refused_the_working_directory_and_a_path_under_a_file(trained, tmp_path, monkeypatch) -> None:
    """A run folder is swapped in whole: saved as ``"."`` it replaced the working directory, and the
    process was left in a removed folder (every relative path then failed)."""
    _, model, venv, _ = trained
    inside = tmp_path / "work"
    inside.mkdir()
    monkeypatch.chdir(inside)
    inode = inside.stat().st_ino
    for where in (".", "", str(inside)):
        with pytest.raises(ValueError, match="is the working directory"):
            save_crl(where, model, venv)
    with pytest.raises(ValueError, match="is a folder above the working directory"):
        save_crl(tmp_path, model, venv)
    assert inside.stat().st_ino == inode and Path(".").resolve() == inside.resolve()
    save_crl("run", model, venv)  # a subfolder of it: saved as ever
    assert (inside / "run" / "model.zip").is_file()
    (inside / "results.csv").write_text("a,b")
    with pytest.raises(ValueError, match="'results.csv' is a file, so no folder can be made under it"):
        save_crl("results.csv/run", model, venv)
    with pytest.raises(ValueError, match="'results.csv' is a file, so no folder can be made under it"):
        find_experience(venv)[0][0].bank.save("results.csv/bank")
    assert (inside / "results.csv").read_text() == "a,b"


class FullDiskPPO(PPO):
    """PPO whose ``save`` writes part of its file and then fails as a full disk does."""

    def save(self, path, *args, **kwargs) -> None:  # type: ignore[override]
        Path(path).write_bytes(b"PK\x03\x04 partial")
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_model_save_leaves_the_previous_run_whole(trained, tmp_path) -> None:
    _, model, venv, size = trained
    folder = save_crl(tmp_path / "run", model, venv)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != ".lock"}
    (folder / "notes.txt").write_text("mine")
    _bank(venv).add(np.ones((1, _bank(venv).dims["key_dim"]), F32) * 7, np.zeros((1, _bank(venv).dims["value_dim"]), F32))
    failing = FullDiskPPO("MultiInputPolicy", venv, **PPO_KW)
    with pytest.raises(OSError, match="No space"):
        save_crl(folder, failing, venv)
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after.pop(Path("notes.txt")) == b"mine"
    assert after == before  # the old model beside the old experience, nothing of the failed save
    assert [p.name for p in folder.parent.iterdir()] == ["run"]  # no temporary folder left
    save_crl(folder, model, venv)  # and the next save works, keeping the user's file
    assert (folder / "notes.txt").read_text() == "mine"
    assert len(ExperienceBank.load(folder / "experience" / "bank")) == size + 1


def test_a_failed_load_leaves_the_live_bank_as_it_was(trained, tmp_path) -> None:
    folder, _, _, size = trained
    assert size > 0
    other_space = make_vec_env("MountainCar-v0", n_envs=1, wrapper_class=ExperienceWrapper,
                               wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": FAST})
    with pytest.raises(ValueError, match=r"onto this env: the observation keys differ: 'observation': saved Box\(.*"
                                         r"\(4,\), float32\), the env's Box\(.*\(2,\), float32\); build the env"):
        load_crl(folder, other_space)  # (SB3's own message printed the whole Dict, cut short)
    assert len(_bank(other_space)) == 0
    fresh = wrapped_vec(2)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for p in folder.iterdir():
        if p.is_dir():
            shutil.copytree(p, damaged / p.name)
        elif p.name != ".lock":
            (damaged / p.name).write_bytes(p.read_bytes())
    (damaged / "model.zip").write_bytes((folder / "model.zip").read_bytes()[:200])
    with pytest.raises(RunFileError, match="model.zip cannot be read.*nothing was changed"):
        load_crl(damaged, fresh)
    assert len(_bank(fresh)) == 0
    with pytest.raises(TypeError, match="DummyVecEnv"):
        load_crl(folder, ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank()))
    with pytest.raises(ValueError, match="it was saved by PPO; pass its algorithm"):  # probe 19: a name was an
        load_crl(folder, fresh, "A2C")  # AttributeError ('str' object has no attribute '__name__')
    model = load_crl(folder, fresh, "PPO")  # the good folder still loads, its algorithm given by name
    assert len(_bank(fresh)) == size and model.n_envs == 2


def test_a_bank_re_saved_in_place_still_loads_with_its_run(trained, tmp_path) -> None:
    _, model, venv, _ = trained
    folder = save_crl(tmp_path / "run", model, venv)
    env2 = wrapped_vec(2)
    load_crl(folder, env2)
    bank = _bank(env2)
    bank.add(np.full((1, bank.dims["key_dim"]), 9, F32), np.zeros((1, bank.dims["value_dim"]), F32))
    bank.save(folder / "experience" / "bank")  # legitimate: the bank it was loaded from, saved again
    env3 = wrapped_vec(2)
    with pytest.warns(UserWarning, match="saved after the manager state"):
        load_crl(folder, env3)
    assert len(_bank(env3)) == len(bank)


def test_a_run_folder_of_the_earlier_layout_loads_and_is_replaced(trained, tmp_path) -> None:
    _, model, venv, _ = trained
    size = len(_bank(venv))
    folder = save_crl(tmp_path / "run", model, venv)
    (folder / "meta.json").unlink()  # what save_crl wrote before run folders had their meta.json
    env2 = wrapped_vec(2)
    load_crl(folder, env2)
    assert len(_bank(env2)) == size
    save_crl(folder, model, venv)
    assert json.loads((folder / "meta.json").read_text())["format"] == "complementary-rl-run"


def test_a_stale_bank_save_is_refused_naming_both_saves(tmp_path) -> None:
    path = tmp_path / "bank"
    seed_bank = ExperienceBank(dedup_threshold=0.0)
    seed_bank.add(np.eye(4, dtype=F32), np.zeros((4, 1), F32))
    seed_bank.save(path)
    a, b = ExperienceBank.load(path), ExperienceBank.load(path)
    first = a.save_id
    a.add(np.full((1, 4), 2, F32), np.zeros((1, 1), F32))
    a.save(path)
    held = json.loads((path / "meta.json").read_text())["save_id"]
    b.add(np.full((1, 4), 3, F32), np.zeros((1, 1), F32))
    with pytest.raises(BankFileError, match=f"holds save {held}.*latest save: {first}"):
        b.save(path)
    assert len(ExperienceBank.load(path)) == 5  # a's save is intact
    a.add(np.full((1, 4), 4, F32), np.zeros((1, 1), F32))
    a.save(path)  # a's own later save is not stale
    assert len(ExperienceBank.load(path)) == 6
    fresh = ExperienceBank(dedup_threshold=0.0)  # a bank never loaded may still replace the folder
    fresh.add(np.ones((1, 4), F32), np.zeros((1, 1), F32))
    fresh.save(path)
    assert len(ExperienceBank.load(path)) == 1


def _worker(args: tuple[str, int]) -> int:
    """Load the shared folder, add 5 entries of one's own, save; on a stale save, start again."""
    path, w = args
    for attempt in range(50):
        bank = ExperienceBank.load(path)
        bank.add(np.full((5, 4), 10 * w, F32) + np.arange(5, dtype=F32)[:, None], np.zeros((5, 1), F32))
        try:
            bank.save(path)
            return attempt
        except BankFileError as exc:
            assert "holds save" in str(exc)
    raise AssertionError("never saved")


def test_workers_that_load_add_and_save_one_folder_lose_nothing(tmp_path) -> None:
    path = tmp_path / "bank"
    ExperienceBank(dedup_threshold=0.0, key_dim=4, value_dim=1).save(path)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        retries = list(pool.map(_worker, [(str(path), w) for w in range(1, 7)]))
    assert len(ExperienceBank.load(path)) == 30, retries  # before: as few as half of them


def test_a_checkpoint_zip_is_never_there_without_its_experience(tmp_path) -> None:
    from integrations.sb3 import CRLCheckpointCallback

    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    (tmp_path / "rl_model_128_steps_experience").write_text("in the way")  # the experience save will fail
    with pytest.raises(ValueError, match="is a file; give a folder path"):
        model.learn(256, callback=[CRLCallback(), CRLCheckpointCallback(save_freq=64, save_path=str(tmp_path))])
    assert not (tmp_path / "rl_model_128_steps.zip").exists()  # before: the zip, without its experience


def test_a_checkpoint_over_another_runs_is_said_and_a_failed_one_leaves_no_zip_beside_the_new_experience(
        tmp_path) -> None:
    """Another run's checkpoints in the folder, under the same name: the one this run replaces is said once, and
    where this run's save fails after its experience is written, the earlier zip of that name is gone rather than
    left beside the new experience (it loaded as one checkpoint: one run's model with the other's bank)."""
    from integrations.sb3 import CRLCheckpointCallback

    first = PPO("MultiInputPolicy", wrapped_vec(2), **PPO_KW)
    first.learn(128, callback=[CRLCallback(), CRLCheckpointCallback(save_freq=64, save_path=str(tmp_path))])
    assert (tmp_path / "rl_model_128_steps.zip").exists()
    (tmp_path / "rl_model_256_steps_experience").write_text("in the way")  # the second run's 256-step save fails
    second = PPO("MultiInputPolicy", wrapped_vec(2), **{**PPO_KW, "seed": 1})
    (tmp_path / "rl_model_256_steps.zip").write_bytes(b"an earlier run's zip")
    with pytest.warns(UserWarning, match="replaces .*rl_model_128_steps.zip.* which it did not write"):
        with pytest.raises(ValueError, match="is a file; give a folder path"):
            second.learn(256, callback=[CRLCallback(), CRLCheckpointCallback(save_freq=64, save_path=str(tmp_path))])
    assert not (tmp_path / "rl_model_256_steps.zip").exists()
    load_crl(tmp_path / "rl_model_128_steps.zip", wrapped_vec(2))  # the second run's whole checkpoint
