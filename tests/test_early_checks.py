"""Bad input refused where it arrives (issue 12): env values outside their space, NaN rewards,
nested Dict spaces, banks in subprocesses, off-policy algorithms, two callbacks; and the
manager's saves and restores, which keep the user's files and the user's bank object."""

from __future__ import annotations

import copy
import json
import logging
import math
import multiprocessing
import os
import pickle
import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from experience_wrappers import ExperienceBank, ExperienceManager, ExperienceWrapper
from experience_wrappers.credit import FreeBaseline
from experience_wrappers.errors import BankStateError, ManagerFileError
from experience_wrappers.manager import Episode
from integrations.sb3 import CRLCallback, ExperienceVecEnv, load_crl, save_crl

FAST = {"mode": "sync", "batch_size": 16, "ssl_batch_size": 16}


class ScriptedEnv(gym.Env):
    """A real env that returns given observations and rewards, one per step (then terminates)."""

    def __init__(self, space: spaces.Space, observations: list, rewards: list | None = None) -> None:
        self.observation_space = space
        self.action_space = spaces.Discrete(2)
        self._obs, self._rewards = observations, rewards or [0.0] * len(observations)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._obs[0], {}

    def step(self, action):
        self._t += 1
        done = self._t >= len(self._obs) - 1
        return self._obs[min(self._t, len(self._obs) - 1)], self._rewards[self._t - 1], done, False, {}


def wrap(env: gym.Env, bank: ExperienceBank | None = None, **kwargs) -> ExperienceWrapper:
    return ExperienceWrapper(env, bank if bank is not None else ExperienceBank(), manager_kwargs=FAST, **kwargs)


# ------------------------------------------------------------- observations
def test_a_discrete_observation_out_of_range_is_refused_at_reset():
    env = wrap(ScriptedEnv(spaces.Discrete(3), [-1, 0, 1]))
    with pytest.raises(ValueError, match=r"outside its space at reset: value -1 is not in Discrete\(3\) \(0 to 2\)"):
        env.reset(seed=0)


def test_a_dict_observation_out_of_range_is_refused_at_the_step_it_is_used():
    space = spaces.Dict({"pos": spaces.Discrete(4), "cell": spaces.MultiDiscrete([3, 3])})
    good = {"pos": 1, "cell": np.array([0, 2])}
    bad = {"pos": 1, "cell": np.array([0, 3])}
    env = wrap(ScriptedEnv(space, [good, good, bad, good, good]), retrieve_every=0)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space
    env.step(0)
    env.step(0)  # returns the bad observation; the next step records what the agent acted on
    with pytest.raises(ValueError, match=r"under key 'cell'.*\[\[0, 3\]\] is not in MultiDiscrete"):
        env.step(0)


def test_after_the_first_steps_the_space_is_checked_at_random_steps_and_a_bad_value_still_refused():
    """Every recorded step of the first FULL_CHECKS is checked against the space, then one in
    CHECK_EVERY on average at random gaps: a value the space refuses at one step of every
    16-step episode (a length a fixed stride of 16 would lock onto, never checking that step)
    is refused within a few episodes, and not at its first appearance (the checks' cost bounded)."""
    from experience_wrappers.wrappers.injector import CHECK_EVERY, FULL_CHECKS

    class Periodic(gym.Env):
        observation_space, action_space = spaces.Discrete(3), spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return 0, {}

        def step(self, action):
            self.t += 1
            self.total = getattr(self, "total", 0) + 1
            bad = self.t == 3 and self.total > FULL_CHECKS + 100
            return (7 if bad else 0), 0.0, self.t >= CHECK_EVERY, False, {}

    env = wrap(Periodic(), retrieve_every=0, learn=False, seed=0)
    env.set_force_guided(False)  # nothing retrieved: the record's check alone
    steps = 0
    with pytest.raises(ValueError, match=r"value 7 is not in Discrete\(3\)"):
        for _ in range(FULL_CHECKS // CHECK_EVERY + 200):
            env.reset()
            done = False
            while not done:
                done = env.step(0)[2]
                steps += 1
    first_bad = FULL_CHECKS + 100 + 3  # (about: the first episode past FULL_CHECKS + 100 steps)
    assert first_bad < steps < first_bad + 100 * CHECK_EVERY
    early = wrap(ScriptedEnv(spaces.Discrete(3), [0, 0, 7, 0, 0]), retrieve_every=0, learn=False)
    early.reset(seed=0)
    early.step(0), early.step(0)
    with pytest.raises(ValueError, match="value 7"):  # within the first steps: at the step that records it
        early.step(0)


def test_box_values_outside_the_bounds_are_warned_about_once():
    space = spaces.Box(0.0, 1.0, (2,), np.float32)
    obs = [np.array([0.5, 0.5], np.float32), np.array([0.5, 7.0], np.float32),
           np.array([9.0, 0.5], np.float32), np.array([0.5, 0.5], np.float32)]
    env = wrap(ScriptedEnv(space, obs))
    env.reset(seed=0)
    with pytest.warns(UserWarning, match=r"outside its Box bounds at step.*7\.0 at index \(1,\) is outside \[0\.0, 1\.0\]"):
        env.step(0)
        env.step(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per wrapper: not again
        env.step(0)


def test_the_checks_name_the_value_the_space_refuses_by_one_rule():
    """One membership rule (``env_checks.inside``) for the wrappers' checks and demonstrations: a
    Discrete message names the value refused (a 1.5 among whole numbers, not the batch's first
    element), MultiDiscrete refuses a fraction as Discrete does, and a Box value beyond the bound
    in float64 but on it in the space's float32 is in the space (as ``contains()`` says)."""
    from experience_wrappers.wrappers.env_checks import first_row_outside, observation_checker

    with pytest.raises(ValueError, match=r"value 1\.5 is not in Discrete\(3\)"):
        observation_checker(spaces.Discrete(3))(np.array([0.0, 1.5]), "step")
    with pytest.raises(ValueError, match=r"is not in MultiDiscrete"):
        observation_checker(spaces.MultiDiscrete([3, 3]))(np.array([[0.0, 1.5]]), "step")
    box = spaces.Box(0.0, 0.1, (1,), np.float32)
    just_over = np.array([[np.float64(np.float32(0.1)) + 1e-12]])  # 0.1 in float32, above it in float64
    assert box.contains(just_over[0].astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        observation_checker(box)(just_over, "step")
    assert first_row_outside(just_over, box, 1) is None
    assert first_row_outside(np.array([[0.05], [0.2]]), box, 2) == 1


def test_a_wrong_shape_is_refused():
    space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    env = wrap(ScriptedEnv(space, [np.zeros(4, np.float32)] * 3))
    with pytest.raises(ValueError, match=r"shape \(4,\) is not the space's \(3,\)"):
        env.reset(seed=0)


def test_the_vector_wrapper_checks_the_same_way():
    venv = ExperienceVecEnv(DummyVecEnv([lambda: ScriptedEnv(spaces.Discrete(3), [0, 1, 5, 1, 1])] * 2),
                            ExperienceBank(), manager_kwargs=FAST)
    venv.reset()
    venv.step(np.zeros(2, dtype=np.int64))
    venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match=r"value 5 is not in Discrete\(3\)"):
        venv.step(np.zeros(2, dtype=np.int64))


@pytest.mark.parametrize("space, match", [
    (spaces.Graph(spaces.Box(0, 1, (3,)), spaces.Discrete(2)), "Graph observations are not supported"),
    (spaces.Text(5), "Text observations are not supported"),
    (spaces.Dict({"a": spaces.Dict({"b": spaces.Discrete(2)})}), "nested observation spaces are not supported"),
])
def test_a_space_sb3_cannot_read_is_refused_by_name_by_the_wrapper_and_the_one_object(space, match):
    """Probe 22: the wrapper's key encoder failed on a Graph inside gymnasium ("dynamic size"), and
    ComplementaryRL's probe DummyVecEnv failed on each inside SB3, before the wrapper's check."""
    from integrations.sb3 import ComplementaryRL

    with pytest.raises(ValueError, match=match):
        ExperienceWrapper(ScriptedEnv(space, [space.sample()] * 3), ExperienceBank())
    with pytest.raises(ValueError, match=match):
        ComplementaryRL(lambda: ScriptedEnv(space, [space.sample()] * 3))


def test_nested_dict_observations_are_refused_at_construction():
    space = spaces.Dict({"agent": spaces.Dict({"x": spaces.Discrete(3)}), "y": spaces.Discrete(2)})
    with pytest.raises(ValueError, match=r"nested observation spaces are not supported: the key\(s\) \['agent'\]"):
        wrap(ScriptedEnv(space, [{"agent": {"x": 0}, "y": 0}] * 3))


# ---------------------------------------------------------------- rewards
def test_a_nan_reward_is_refused_at_its_step_and_never_reaches_the_baseline():
    space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    obs = [np.zeros(2, np.float32)] * 6
    bank = ExperienceBank()
    env = wrap(ScriptedEnv(space, obs, [0.0, 1.0, math.nan, 0.0, 0.0]), bank)
    env.set_force_guided(False)  # a free episode: its return would be the baseline
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    with pytest.raises(ValueError, match=r"reward nan \(env 0, step 2 of its episode\)"):
        env.step(0)
    assert env.manager.free_baseline(0) is None


def test_the_manager_and_the_baseline_refuse_non_finite_outcomes(caplog):
    env = wrap(gym.make("CartPole-v1"))
    mgr = env.manager
    ep = Episode(observations=np.zeros((3, 4), np.float32), actions=np.zeros(3, np.int64),
                 rewards=np.array([1.0, np.inf, 1.0]), success=None, guided=False)
    with pytest.raises(ValueError, match=r"reward inf at step 1: rewards must be finite"):
        mgr.submit(ep)
    assert mgr.episodes_submitted == 0 and mgr.free_baseline(0) is None
    b = FreeBaseline(window=4)
    with pytest.raises(ValueError, match="outcome must be finite, got nan"):
        b.add(0, float("nan"))
    b.add(0, 1.0)
    with pytest.raises(ValueError, match="outcome must be finite"):
        b.delta(0, float("inf"), is_success=False)
    with caplog.at_level(logging.WARNING):
        b.load_state_dict({"0": [1.0, float("nan"), 3.0]})  # a window poisoned by an earlier version
    assert b.mean(0) == 2.0 and "dropped 1 NaN or inf" in caplog.text


def test_a_saved_poisoned_baseline_is_cleaned_at_restore(tmp_path):
    env = wrap(gym.make("CartPole-v1"))
    mgr = env.manager
    env.reset(seed=0)
    path = mgr.save(tmp_path / "run")
    state = json.loads((path / "manager.json").read_text())
    state["baseline"] = {"0": [1.0, float("nan"), 0.0]}
    (path / "manager.json").write_text(json.dumps(state))
    meta = json.loads((path / "meta.json").read_text())
    import hashlib
    meta["files"]["manager.json"] = hashlib.sha256((path / "manager.json").read_bytes()).hexdigest()
    (path / "meta.json").write_text(json.dumps(meta))
    mgr.restore(path)
    assert mgr.free_baseline(0) == 0.5
    assert mgr.baseline.delta(0, 1.0, is_success=True) == 0.5  # later guided episodes are credited


# ------------------------------------------------------ banks and processes
def test_banks_and_managers_refuse_to_be_copied_and_say_what_to_do():
    bank = ExperienceBank()
    env = wrap(gym.make("CartPole-v1"), bank)
    for obj in (bank, env.manager, env):
        with pytest.raises(TypeError, match="cannot be pickled or copied.*ExperienceVecEnv"):
            pickle.dumps(obj)
    with pytest.raises(TypeError, match="cannot be pickled"):
        copy.deepcopy(bank)


def test_per_env_wrappers_in_a_subprocess_vec_env_point_to_experience_vec_env():
    bank = ExperienceBank()
    with pytest.raises(TypeError, match=r"SubprocVecEnv.*ExperienceVecEnv\(SubprocVecEnv"):
        SubprocVecEnv([lambda: ExperienceWrapper(gym.make("CartPole-v1"), bank)] * 2, start_method="spawn")


# ------------------------------------------------------------- the callback
def _cartpole(bank: ExperienceBank | None = None) -> DummyVecEnv:
    bank = bank if bank is not None else ExperienceBank()
    return DummyVecEnv([lambda: ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs=FAST)])


def test_off_policy_algorithms_get_an_error_naming_what_is_supported():
    model = DQN("MultiInputPolicy", _cartpole(), learning_starts=0, buffer_size=100)
    with pytest.raises(TypeError, match=r"on-policy algorithm.*PPO, A2C.*got DQN, which learns from a replay buffer"):
        model.learn(8, callback=CRLCallback())
    from integrations.sb3 import ComplementaryRL

    with pytest.raises(TypeError, match=r"ComplementaryRL\(algorithm=DQN\): experience and self_imitation need an "
                                        r"on-policy .*experience=False, self_imitation=False"):
        ComplementaryRL("CartPole-v1", algorithm="DQN", n_envs=1)  # when the run is built, not at learn()
    # the advice followed halfway: self-imitation still reads a rollout buffer (it failed at learn())
    with pytest.raises(TypeError, match=r"self_imitation needs an on-policy .*pass self_imitation=False"):
        ComplementaryRL("CartPole-v1", algorithm="DQN", n_envs=1, experience=False)
    plain = ComplementaryRL("CartPole-v1", algorithm="DQN", n_envs=1, experience=False, self_imitation=False,
                            algorithm_kwargs={"learning_starts": 0, "buffer_size": 100})
    plain.learn(16)  # without experience DQN trains as it is
    plain.close()


def test_two_crl_callbacks_in_one_learn_are_refused_but_a_new_learn_takes_a_new_one():
    model = PPO("MultiInputPolicy", _cartpole(), n_steps=32, batch_size=32, n_epochs=1)
    with pytest.raises(ValueError, match="two CRLCallbacks run in one learn"):
        model.learn(32, callback=CallbackList([CRLCallback(), CRLCallback()]))
    once = CRLCallback()
    with pytest.raises(ValueError, match="the same CRLCallback is given twice in one learn"):
        model.learn(32, callback=CallbackList([once, once]))  # every hook ran twice: steps recorded twice
    model.learn(32, callback=once)  # listed once, the same object is fine in the next learn()
    model.learn(32, callback=CRLCallback())
    model.learn(32, callback=CRLCallback(), reset_num_timesteps=False)  # resuming: a fresh callback is fine
    A2C("MultiInputPolicy", _cartpole(), n_steps=8).learn(16, callback=CRLCallback())  # on-policy: accepted


# ------------------------------------------------------- manager save/restore
def _used_manager(bank: ExperienceBank | None = None) -> ExperienceManager:
    env = wrap(gym.make("CartPole-v1"), bank)
    env.reset(seed=0)
    env.action_space.seed(0)
    ended = 0
    for _ in range(500):  # at least three finished episodes (a random CartPole episode can outlast 60 steps)
        *_, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            ended += 1
            if ended == 3:
                break
            env.reset()
    assert len(env.bank) > 0
    return env.manager


def test_restore_loads_into_the_users_bank_object(tmp_path):
    path = _used_manager().save(tmp_path / "run")
    saved = ExperienceBank.load(path / "bank")
    mine = ExperienceBank()
    mgr = _used_manager(mine)
    mgr.restore(path)
    assert mgr.bank is mine and len(mine) == len(saved)
    mine.save(tmp_path / "mine")  # the user's own save holds the restored entries
    np.testing.assert_array_equal(ExperienceBank.load(tmp_path / "mine").entries()["id"], saved.entries()["id"])


def test_load_crl_keeps_the_users_bank_object(tmp_path):
    env = _cartpole()
    # seeded: unseeded, the first random CartPole episode outlasts the 64 steps now and then (no entry)
    model = PPO("MultiInputPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    model.learn(64, callback=CRLCallback())
    save_crl(tmp_path / "run", model)
    n = len(ExperienceBank.load(tmp_path / "run" / "experience" / "bank"))
    assert n > 0
    mine = ExperienceBank()
    load_crl(tmp_path / "run", _cartpole(mine))
    assert len(mine) == n
    assert len(ExperienceBank.load(mine.save(tmp_path / "mine"))) == n  # not 0 entries


def test_manager_save_refuses_a_folder_of_other_files(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "model.zip").write_bytes(b"weights")
    with pytest.raises(ManagerFileError, match=r"not empty and is not a saved folder.*'model.zip'"):
        _used_manager().save(runs)
    assert sorted(p.name for p in runs.iterdir()) == ["model.zip"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # and no temporary folder beside it


def test_manager_save_keeps_the_users_files_and_cleans_a_killed_saves_leftovers(tmp_path):
    mgr = _used_manager()
    path = mgr.save(tmp_path / "run")
    (path / "notes.txt").write_text("mine")
    leftover = tmp_path / ".run.tmp-deadbeef"  # what a save killed half-way leaves
    leftover.mkdir()
    (leftover / "extractor.pt").write_bytes(b"partial")
    mgr.save(path)
    assert (path / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    mgr.restore(path)


def test_a_failed_manager_save_leaves_the_previous_folder_and_no_temporary_one(tmp_path):
    mgr = _used_manager()
    path = mgr.save(tmp_path / "run")
    before = sorted(str(p.relative_to(path)) for p in path.rglob("*"))
    mgr.bank.core.index.remove(mgr.bank.entries()["id"][:1])  # a bank whose index lost an entry
    with pytest.raises(BankStateError):
        mgr.save(path)
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]




def _save_alternately(managers, path, stop) -> None:
    i = 0
    while not stop.is_set():
        managers[i % 2].save(path)
        i += 1


@pytest.mark.skipif(not hasattr(os, "fork") or "fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs fork")
def test_a_restore_racing_saves_gets_one_whole_save(tmp_path):
    a, b = _used_manager(), _used_manager()
    a.schedule.rollouts, b.schedule.rollouts = 111, 222  # tells the two saves apart
    b.bank.evict(len(b.bank) // 2)
    sizes = {111: len(a.bank), 222: len(b.bank)}
    assert sizes[111] != sizes[222]
    path = a.save(tmp_path / "run")
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    saver = ctx.Process(target=_save_alternately, args=((a, b), path, stop), daemon=True)
    saver.start()
    reader = _used_manager()
    seen = set()
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            reader.restore(path)  # never a false "damaged", never a bank of the other save
            assert len(reader.bank) == sizes[reader.rollouts]
            seen.add(reader.rollouts)
    finally:
        stop.set()
        saver.join(20)
    assert saver.exitcode == 0
    assert seen == {111, 222}


# ------------------------------------------------------ more values, same rule
@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    (dict(extractor={"lr": "3e-4"}), TypeError, "lr must be a number, got '3e-4'"),
    (dict(extractor={"exp_dim": 10**9}), ValueError, "exp_dim must be <= 65536"),
    (dict(extractor={"hidden": 10**7}), ValueError, "hidden must be <= 8192"),
    (dict(segment_every="8"), TypeError, "segment_every must be an int"),
    (dict(extractor={"seed": "0"}), TypeError, "seed must be an int"),
    (dict(extractor={"seed": 2**70}), ValueError, "seed must be <="),
    (dict(skip_below="x"), TypeError, "skip_below must be a number"),
    (dict(decay_end=1.5), ValueError, "decay_end must be <= 1"),
    (dict(train_extractor=1), TypeError, "train_extractor must be a bool"),
    (dict(handover_every=0), ValueError, "handover_every must be > 0"),
])
def test_manager_config_values_are_checked_at_construction(kwargs, exc, match):
    from experience_wrappers import ManagerConfig
    with pytest.raises(exc, match=match):
        ManagerConfig(**kwargs)
    with pytest.raises(exc, match=match):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={**FAST, **kwargs})


def test_strings_are_not_numbers_anywhere_in_the_bank_api():
    bank = ExperienceBank()
    bank.add(np.eye(3, dtype=np.float32), np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="decay must be a number in"):
        bank.update([0], [1.0], "0.9")
    with pytest.raises(ValueError, match="threshold must be a number, got '0.5'"):
        bank.merge("0.5")
    with pytest.raises(ValueError, match="temperature must be a number, got '1'"):
        bank.query(np.eye(3)[0], k=1, temperature="1")
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 65536\], got 1000000000"):
        wrap(gym.make("CartPole-v1"), k=10**9)
    with pytest.raises(TypeError, match=r"experimental\['value_baseline'\] was removed: the critic's V\(s0\)"):
        wrap(gym.make("CartPole-v1"), experimental={"value_baseline": "yes"})
    with pytest.raises(TypeError, match="value_baseline was removed"):
        wrap(gym.make("CartPole-v1"), value_baseline=True)
    with pytest.raises(TypeError, match=r"unexpected experimental option\(s\) \['other'\]"):
        wrap(gym.make("CartPole-v1"), experimental={"other": 1})
    old_save = wrap(gym.make("CartPole-v1"), experimental={"value_baseline": False, "action_prior": False})
    assert old_save.options == wrap(gym.make("CartPole-v1")).options  # an older save's "off" loads as nothing
    with pytest.raises(TypeError, match=r"experimental\['action_prior'\] was removed with the action prior"):
        wrap(gym.make("CartPole-v1"), experimental={"action_prior": True})
    with pytest.raises(TypeError, match="rng must be a numpy Generator or None, got int"):
        bank.query(np.eye(3)[0], k=1, rng=3)
    with pytest.raises(TypeError, match="record must be a bool"):
        bank.query(np.eye(3)[0], k=1, record="no")


def test_a_tuple_observation_is_refused_with_what_sb3_takes_and_the_fix_works_on_the_same_bank():
    """Probe 19: the refused wrapper had bound the bank to a manager for the Tuple space (its learner process
    left running), so the message's own fix was then refused on the same bank."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from integrations.sb3 import ExperienceVecEnv

    bank = ExperienceBank()
    with pytest.raises(ValueError, match=r"Tuple observations are not supported.*SB3 itself.*FlattenObservation"):
        ExperienceWrapper(gym.make("Blackjack-v1"), bank, manager_kwargs={"mode": "process"})
    assert bank.manager is None
    with pytest.raises(ValueError, match=r"Tuple observations are not supported"):
        ExperienceVecEnv(DummyVecEnv([lambda: gym.make("Blackjack-v1")]), bank)
    assert bank.manager is None
    flat = ExperienceWrapper(gym.wrappers.FlattenObservation(gym.make("Blackjack-v1")), bank, manager_kwargs=FAST)
    assert flat.observation_space["observation"].shape == (45,)
    flat.close()


def test_a_task_id_function_that_cannot_take_obs_and_info_is_refused_where_the_wrapper_is_built():
    """Probe 19: task_id=lambda obs: 0 failed as a raw TypeError at the first reset."""
    with pytest.raises(TypeError, match=r"task_id's function is called as fn\(obs, info\).*cannot take two arguments"):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), task_id=lambda obs: 0)
    ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), task_id=lambda obs, info: 0, manager_kwargs=FAST).close()


def test_evaluate_frozen_on_a_gymnasium_vector_env_says_so():
    """Probe 22: it said "Observation spaces do not match" (the VectorEnv's batched space)."""
    from stable_baselines3 import PPO

    from integrations.sb3.evaluation import evaluate_frozen

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32)
    with pytest.raises(TypeError, match="evaluate_frozen takes a stable_baselines3 VecEnv, got SyncVectorEnv, a gymnasium"):
        evaluate_frozen(model, gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")]))
