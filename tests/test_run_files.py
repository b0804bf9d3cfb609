"""What a saved run holds beside its model and bank, and how a loaded run goes on (a hostile user's
probes): a checkpoint's replay, the ``VecNormalize`` statistics, the algorithm's name, the roll-in
curriculum, the step count and schedules; damaged and missing files named; a save through a symbolic
link; a setting that cannot be saved refused before training; a degenerate bank warned at the end."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.vec_env import VecNormalize

from experience_wrappers.errors import RunFileError
from experience_wrappers.replay import SOURCE_DEMO, SuccessReplay
from integrations.sb3 import CRLCallback, find_experience, load_crl, save_crl
from integrations.sb3.checkpoint_files import experience_dir_of, replay_file_of, save_checkpoint
from integrations.sb3.run_persistence import REPLAY_FILE, VEC_NORMALIZE_FILE
from integrations.sb3.vec_env import norm_obs_keys

from .test_sb3 import PPO_KW, wrapped_vec


def _replay(n: int) -> SuccessReplay:
    replay = SuccessReplay(64)
    obs = np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(n, 4)
    replay.add_episode({"observation": obs}, np.ones(n, dtype=np.int64), np.ones(n), gamma=0.5, source=SOURCE_DEMO)
    return replay


def _normalised(seed: int = 0) -> VecNormalize:
    venv = wrapped_vec(2, seed=seed)
    return VecNormalize(venv, norm_obs_keys=norm_obs_keys(venv), norm_reward=False)


def test_a_checkpoint_keeps_the_replay_and_load_crl_restores_it(tmp_path) -> None:
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    manager = find_experience(venv)[0][0]
    manager.replay = _replay(6)
    model_zip = tmp_path / "rl_model_64_steps.zip"
    save_checkpoint(model_zip, model)
    model.save(model_zip)
    assert replay_file_of(model_zip).is_file() and experience_dir_of(model_zip).is_dir()
    venv2 = wrapped_vec(2, seed=1)
    load_crl(model_zip, venv2)
    assert find_experience(venv2)[0][0].replay.counts() == {"demo": 6, "own": 0}  # before: no replay at all
    # a checkpoint of a run with no replay leaves no replay file of an earlier run of that name behind
    manager.replay = None
    save_checkpoint(model_zip, model)
    assert not replay_file_of(model_zip).exists()


def test_the_checkpoint_callback_writes_the_replay_beside_its_zip(tmp_path) -> None:
    from integrations.sb3 import CRLCheckpointCallback

    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    cb = CRLCallback(self_imitation={"only_with_success": False})
    model.learn(128, callback=[cb, CRLCheckpointCallback(save_freq=64, save_path=str(tmp_path))])
    assert cb.manager.replay is not None
    assert replay_file_of(tmp_path / "rl_model_128_steps.zip").is_file()


def test_save_crl_keeps_the_vec_normalize_statistics(tmp_path) -> None:
    venv = _normalised()
    model = PPO("MultiInputPolicy", venv, **PPO_KW).learn(256, callback=CRLCallback())
    folder = save_crl(tmp_path / "run", model)
    assert (folder / VEC_NORMALIZE_FILE).is_file() and json.loads((folder / "meta.json").read_text())["vec_normalize"]
    venv2 = _normalised(seed=1)
    load_crl(folder, venv2)
    np.testing.assert_array_equal(venv2.obs_rms["observation"].mean, venv.obs_rms["observation"].mean)
    assert venv2.obs_rms["observation"].count == venv.obs_rms["observation"].count  # before: a fresh 1e-4
    raw = {k: np.ones((1, *s.shape), np.float32) for k, s in venv.observation_space.spaces.items()}
    np.testing.assert_array_equal(venv2.normalize_obs(raw)["observation"], venv.normalize_obs(raw)["observation"])
    # onto an env without VecNormalize: loaded, with a warning that says the observations are not normalised
    with pytest.warns(UserWarning, match="trained under VecNormalize"):
        load_crl(folder, wrapped_vec(2, seed=2))
    (folder / VEC_NORMALIZE_FILE).unlink()
    with pytest.raises(RunFileError, match="vecnormalize.pkl is missing"):
        load_crl(folder, _normalised(seed=3))


def test_load_crl_onto_a_bank_that_holds_entries_is_refused_unless_told_to_replace_them(tmp_path) -> None:
    """A user's run B, its bank filled by its own training, lost its entries to a load of run A without a word."""
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    model.learn(256, callback=CRLCallback())
    save_crl(tmp_path / "a", model)
    saved = len(find_experience(venv)[0][0].bank)
    other = wrapped_vec(2, seed=1)
    PPO("MultiInputPolicy", other, **PPO_KW).learn(256, callback=CRLCallback())
    bank = find_experience(other)[0][0].bank
    held = len(bank)
    assert held > 0
    with pytest.raises(ValueError, match=f"the env's bank holds {held} entries, which load_crl would replace"):
        load_crl(tmp_path / "a", other)
    assert len(bank) == held  # nothing replaced
    with pytest.raises(TypeError, match="replace_experience must be a bool"):
        load_crl(tmp_path / "a", other, replace_experience="yes")
    load_crl(tmp_path / "a", other, replace_experience=True)
    assert len(bank) == saved


def test_load_crl_refuses_another_algorithm_by_name(tmp_path) -> None:
    venv = wrapped_vec(2)
    model = A2C("MultiInputPolicy", venv, n_steps=8, seed=0, device="cpu").learn(64, callback=CRLCallback())
    folder = save_crl(tmp_path / "run", model)
    with pytest.raises(ValueError, match="saved by A2C; pass its algorithm"):
        load_crl(folder, wrapped_vec(2, seed=1))  # before: a PPO, silently
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(load_crl(folder, wrapped_vec(2, seed=1), A2C), A2C)


def test_damaged_model_and_replay_files_are_named(tmp_path) -> None:
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW).learn(128, callback=CRLCallback())
    folder = save_crl(tmp_path / "run", model, replay=_replay(4))
    zipped = (folder / "model.zip").read_bytes()
    (folder / REPLAY_FILE).write_bytes((folder / REPLAY_FILE).read_bytes()[:40])
    with pytest.raises(RunFileError, match="replay.npz cannot be read"):
        load_crl(folder, wrapped_vec(2, seed=1))  # before: zipfile's BadZipFile, naming no file
    folder = save_crl(tmp_path / "run", model, replay=_replay(4))
    (folder / "model.zip").write_bytes(zipped[: len(zipped) - 300])  # cut inside the inner archive
    with pytest.raises(RunFileError, match="model.zip cannot be read"):
        load_crl(folder, wrapped_vec(2, seed=1))  # before: SB3's bare AssertionError


def test_a_loaded_run_goes_on_from_its_steps_and_schedules(tmp_path) -> None:
    from integrations.sb3 import ComplementaryRL

    run = ComplementaryRL("CartPole-v1", n_envs=1, seed=0, algorithm_kwargs={"n_steps": 64, "batch_size": 32})
    runs = [run]  # (each closed at the end: a run left open keeps its learner process until it is collected)
    try:
        run.learn(256)
        run.save(tmp_path / "run")
        progress = run.manager.schedule.state_dict()["progress"]
        back = ComplementaryRL.load(tmp_path / "run")
        runs.append(back)
        back.learn(128)
        assert back.model.num_timesteps == 256 + 128  # before: 128, the schedules started again
        assert back.manager.schedule.state_dict()["progress"] > progress
        run.evaluate(2, seed=0)
        run.learn(64)  # after an evaluation on its envs, the run starts them again and goes on counting
        assert run.model.num_timesteps == 256 + 64
        again = ComplementaryRL.load(tmp_path / "run")
        runs.append(again)
        assert again.learn(64, reset_num_timesteps=True).model.num_timesteps == 64
    finally:
        for r in runs:
            r.close()


def test_task_scope_says_before_training_that_a_setting_cannot_be_saved() -> None:
    from integrations.sb3 import ComplementaryRL

    with pytest.warns(UserWarning, match=r"algorithm_kwargs\['learning_rate'\].*cannot be saved"):
        ComplementaryRL("CartPole-v1", n_envs=1, algorithm_kwargs={"learning_rate": lambda p: 1e-3 * p}).close()


def test_a_save_through_a_symbolic_link_goes_into_the_folder_it_points_to(tmp_path) -> None:
    model = PPO("MultiInputPolicy", wrapped_vec(2), **PPO_KW).learn(64, callback=CRLCallback())
    first = save_crl(tmp_path / "v1", model)
    (first / "notes.txt").write_text("mine")
    (tmp_path / "latest").symlink_to(first, target_is_directory=True)
    before = json.loads((first / "meta.json").read_text())["save_id"]
    save_crl(tmp_path / "latest", model)
    assert (tmp_path / "latest").is_symlink()  # before: the link replaced by a folder, notes.txt moved into it
    assert json.loads((first / "meta.json").read_text())["save_id"] != before
    assert (first / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "v1"]  # no temporary folder or link left


def test_a_loaded_run_goes_on_with_its_roll_in_curriculum(tmp_path) -> None:
    from experience_wrappers.rollin import RollInCurriculum
    from integrations.sb3 import ComplementaryRL

    run = ComplementaryRL("MiniHack-Room-5x5-v0", demonstrations=3, n_envs=1, seed=0,
                          rollin={"curriculum": {"threshold": 0.1, "window": 1, "shrink_step": 1}},
                          algorithm_kwargs={"n_steps": 64, "batch_size": 64})
    start = run.rollin_env.curriculum.h
    run.learn(192)
    state = run.rollin_env.curriculum.state_dict()
    assert state["shrinks"] > 0 and state["h"] < start
    run.save(tmp_path / "run")
    back = ComplementaryRL.load(tmp_path / "run")
    assert back.rollin_env.curriculum.state_dict() == state  # before: h and the shrinks started again
    c = RollInCurriculum(h=5, window=2)
    with pytest.raises(ValueError, match="outcomes must be a list of at most 2"):
        c.load_state_dict({"h": 3, "shrinks": 1, "outcomes": [1, 0, 1]})
    with pytest.raises(ValueError, match="h"):
        c.load_state_dict({"h": -1, "shrinks": 1, "outcomes": []})
    assert c.state_dict() == {"h": 5, "shrinks": 0, "outcomes": []}  # a refused state changes nothing


class _Line(gym.Env):
    """A position on a line, all of it on one side of the bounds' centre, two steps an episode: the default
    keys (unit rows of the observation scaled to its bounds) see one direction, so every state gets one key."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([self.np_random.uniform(0.5, 10)], np.float32), {}

    def step(self, action):
        self.t += 1
        return (np.array([self.np_random.uniform(0.5, 10)], np.float32), float(action), False, self.t >= 2,
                {"is_success": bool(action)})


def test_a_degenerate_bank_is_warned_at_the_end_of_training_in_process_mode() -> None:
    from stable_baselines3.common.env_util import make_vec_env

    from experience_wrappers import ExperienceBank, ExperienceWrapper

    bank = ExperienceBank()
    venv = make_vec_env(_Line, n_envs=2, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank, "manager_kwargs": {"mode": "process"}})
    model = PPO("MultiInputPolicy", venv, n_steps=512, batch_size=64, n_epochs=1, policy_kwargs={"net_arch": [8]},
                seed=0)
    with pytest.warns(UserWarning, match="the bank holds .* entries after .* episodes"):  # one rollout: said at the end
        model.learn(1024, callback=CRLCallback())
    assert len(bank) < 8
    venv.close()  # (its learner process stops now, not when it is collected)


class _Rung(gym.Env):
    """Two steps; the action at the second decides it, and only a success carries the key (SB3's Monitor style)."""

    observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        won = self.t == 2 and int(action) == 1
        return np.full(2, self.t / 2, np.float32), float(won) - 1.0, self.t == 2, False, ({"is_success": True} if won
                                                                                         else {})


def _rung_vec(bank=None):
    from stable_baselines3.common.env_util import make_vec_env

    from experience_wrappers import ExperienceBank, ExperienceWrapper

    return make_vec_env(_Rung, n_envs=2, seed=0, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank or ExperienceBank(), "manager_kwargs": {"mode": "sync"}})


def _outcome_of_a_failure(venv, env: int) -> float:
    """The outcome the wrapper of ``env`` gives an episode that ends without the success key."""
    wrapper = venv.envs[env]
    wrapper.reset(seed=3)
    wrapper.step(0)
    return wrapper.step(0)[4]["experience_outcome"]


def test_one_envs_success_report_tells_the_other_wrappers_and_a_loaded_run_that_a_missing_key_is_a_failure(tmp_path):
    """Probe 23: success was read per wrapper, and a loaded run's wrappers started knowing nothing. An episode
    that ended without the key on a wrapper that had not itself seen one (another env of the VecEnv, or any env
    after ``load_crl``) was credited by its return (-2 here), beside the 0/1 successes in the free baseline."""
    venv = _rung_vec()
    assert _outcome_of_a_failure(venv, 1) == -2.0  # nothing reported yet: the outcome is the return
    win = venv.envs[0]
    win.reset(seed=1)
    win.step(0)
    assert win.step(1)[4]["experience_outcome"] == 1.0  # env 0 reports a success
    assert _outcome_of_a_failure(venv, 1) == 0.0  # env 1's failure is a failure now (it was -2: its own reading)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    save_crl(tmp_path / "run", model)
    model_zip = tmp_path / "rl_model_4_steps.zip"
    save_checkpoint(model_zip, model)
    model.save(model_zip)
    for saved in (tmp_path / "run", model_zip):
        fresh = _rung_vec()
        load_crl(saved, fresh)
        assert _outcome_of_a_failure(fresh, 0) == 0.0, saved  # it was -2: the loaded run had forgotten
        fresh.close()
    venv.close()


def test_a_folder_name_too_long_for_the_saves_new_folder_beside_it_is_refused_by_name(tmp_path) -> None:
    """Probe 23: a legal 250-byte folder name failed as OSError 'File name too long' on '.NAME.tmp-...', a name the
    user never gave; the longest name that leaves room for it still saves."""
    model = PPO("MultiInputPolicy", wrapped_vec(2), **PPO_KW)
    with pytest.raises(ValueError, match=r"its name is 250 bytes, .* give the folder a name of at most 241 bytes"):
        save_crl(tmp_path / ("r" * 250), model)
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert (save_crl(tmp_path / ("r" * 241), model) / "model.zip").is_file()
    (tmp_path / ("t" * 250)).mkdir()  # a short link to a long name: the folder swapped is the one it points to
    (tmp_path / "short").symlink_to(tmp_path / ("t" * 250), target_is_directory=True)
    with pytest.raises(ValueError, match=r"its name is 250 bytes"):
        save_crl(tmp_path / "short", model)
