"""The integrations at the boundary (a hostile user's cases, issue 35): demonstrations that a refused
ingest half-wrote or a save misplaced, envs that ran actions outside their spaces (NLE's -1, a NaN for
MuJoCo), and helpers that took out-of-range or fractional arguments. Real MiniHack, Meta-World and SB3."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.errors import DemonstrationFileError
from integrations.demos import (
    Demonstration,
    ingest_demonstrations,
    load_demonstrations,
    record_demonstrations,
    save_demonstrations,
)


def cartpole_manager():
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={"mode": "sync"})
    return env, env.manager


def demo(n: int = 4, **changes) -> dict:
    d = {"observations": np.zeros((n + 1, 4), np.float32), "actions": np.array([0, 1] * (n // 2)),
         "rewards": np.ones(n)}
    return {**d, **changes}


# ------------------------------------------------------------------ demonstrations
@pytest.mark.parametrize("bad, match", [
    (demo(actions=np.array([0.0, 1.5, 1.0, 0.0])), r"demonstration 1: action 1 = 1.5 is not a whole number"),
    (demo(rewards=np.ones((4, 5))), r"demonstration 1: rewards must be 1-D \(one per action\), got shape \(4, 5\)"),
    (demo(actions=np.zeros((4, 2), np.int64)), r"demonstration 1: actions of shape \(4, 2\) for Discrete\(2\)"),
    (demo(rewards=1.0), r"demonstration 1: rewards must be 1-D"),
])
def test_a_refused_ingest_writes_nothing_and_names_the_demonstration(bad, match):
    # the good demonstration before the bad one was written before the manager refused the bad one
    env, manager = cartpole_manager()
    with pytest.raises(ValueError, match=match):
        ingest_demonstrations(manager, [demo(), bad])
    assert len(manager.bank) == 0
    assert ingest_demonstrations(manager, [demo()]) > 0
    env.close()


def test_ingest_names_a_wrong_manager_and_a_missing_demonstration():
    env, manager = cartpole_manager()
    with pytest.raises(TypeError, match=r"manager must be the ExperienceManager .* got ExperienceWrapper"):
        ingest_demonstrations(env, [demo()])
    with pytest.raises(TypeError, match="got None"):
        ingest_demonstrations(manager, None)
    with pytest.raises(ValueError, match="run scope's form"):
        ingest_demonstrations(manager, (np.zeros((5, 4)), np.zeros(4, np.int64)))
    with pytest.raises(ValueError, match="task_id must be an int"):
        ingest_demonstrations(manager, [demo(task_id=1.7)])
    env.close()


def test_save_refuses_demonstrations_the_files_offsets_would_misplace(tmp_path):
    ragged = Demonstration(observations=np.arange(2.0)[:, None], actions=np.zeros(3, np.int64), rewards=np.zeros(3))
    good = Demonstration(observations=np.arange(10.0, 14.0)[:, None], actions=np.zeros(3, np.int64),
                         rewards=np.zeros(3))
    with pytest.raises(ValueError, match=r"demonstration 0: \[2\] observations for 3 actions"):
        save_demonstrations(tmp_path / "d", [ragged, good])
    keyed = Demonstration(observations={"x": np.zeros((3, 1))}, actions=np.zeros(3, np.int64), rewards=np.zeros(3))
    with pytest.raises(ValueError, match="demonstration 1's observations are not laid out as demonstration 0's"):
        save_demonstrations(tmp_path / "d", [good, keyed])
    assert not list(tmp_path.iterdir())
    loaded = load_demonstrations(save_demonstrations(tmp_path / "d", [good, good]))
    np.testing.assert_array_equal(loaded[1].observations, good.observations[:3])
    # what ingestion refuses is refused here too, and an earlier file is left as it was
    empty = Demonstration(observations=np.zeros((1, 1)), actions=np.zeros(0, np.int64), rewards=np.zeros(0))
    nan = Demonstration(observations=good.observations, actions=good.actions, rewards=np.array([0.0, np.nan, 1.0]))
    before = (tmp_path / "d.npz").read_bytes()
    with pytest.raises(ValueError, match="demonstration 1 has no step"):
        save_demonstrations(tmp_path / "d", [good, empty])
    with pytest.raises(ValueError, match="demonstration 0: a reward is NaN or inf"):
        save_demonstrations(tmp_path / "d.npz", [nan])
    (tmp_path / "folder").mkdir()
    with pytest.raises(ValueError, match="is a folder; give a file path"):
        save_demonstrations(tmp_path / "folder", [good])  # it wrote folder.npz beside it
    assert (tmp_path / "d.npz").read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["d.npz", "folder"]


def test_a_damaged_demonstrations_file_is_refused_as_such(tmp_path):
    meta = np.frombuffer(json.dumps({"format": "complementary-rl.demonstrations", "version": 1}).encode(), np.uint8)
    np.savez(tmp_path / "empty.npz", meta=meta)
    with pytest.raises(DemonstrationFileError, match="not a whole demonstrations file"):
        load_demonstrations(tmp_path / "empty.npz")
    np.savez(tmp_path / "list.npz", meta=np.frombuffer(b"[1, 2]", np.uint8))
    with pytest.raises(DemonstrationFileError, match="not a demonstrations file"):
        load_demonstrations(tmp_path / "list.npz")


def test_recording_says_when_it_falls_short_and_refuses_fractional_actions():
    with pytest.raises(RuntimeError, match=r"1 of the 3 episodes asked after 1 attempts \(max_attempts 1\)"):
        record_demonstrations(gym.make("CartPole-v1"), lambda obs: 0, 3, max_attempts=1)
    with pytest.raises(ValueError, match=r"the policy returned 1.0 at step 0 .* not an action"):
        record_demonstrations(gym.make("CartPole-v1"), lambda obs: 1.0, 1)  # (cast to 1 and taken before)
    env, manager = cartpole_manager()
    with pytest.raises(ValueError, match="needs the env without its ExperienceWrapper"):
        record_demonstrations(gym.wrappers.TimeLimit(env, 50), lambda obs: 0, 1)  # its bank filled before
    assert len(manager.bank) == 0
    env.close()


# ------------------------------------------------------------------ MiniHack
def test_minihack_envs_refuse_actions_outside_their_space():
    from integrations.minihack import make_minihack_env
    from integrations.minihack.hidden_goal import HiddenGoalRoom
    from integrations.minihack.hidden_key_door import HiddenKeyDoorRoom, pair_seed

    env = make_minihack_env("MiniHack-Room-5x5-v0")
    env.reset(seed=0)
    for bad in (-1, 8, 2.0):  # NLE ran -1 as its last action, and reported last_action -1
        with pytest.raises(ValueError, match=r"action .* is not one of its Discrete\(8\)"):
            env.step(bad)
    assert env.step(np.int64(2))[0]["last_action"] == 2
    env.close()
    for room, seed in ((HiddenKeyDoorRoom(), pair_seed(2, 8, 7)), (HiddenGoalRoom(), 5)):
        room.reset(seed=np.int64(seed))  # a numpy seed: gymnasium's seeding refused it
        for bad in (-1, 1.7, "1"):
            with pytest.raises(ValueError, match="the room: action"):
                room.step(bad)
        room.close()


def test_key_door_helpers_refuse_what_is_no_instance():
    from integrations.minihack.hidden_key_door import key_door_actions, pair_seed, split_pairs

    with pytest.raises(ValueError, match=r"held_out must be an int in \[0, "):
        split_pairs(held_out=-1)
    with pytest.raises(ValueError, match=r"train must be an int in \[1, 2256\]"):
        split_pairs(train=5000)
    with pytest.raises(ValueError, match=r"door must be an int in \[1, 48\]"):
        pair_seed(1, 55, 7)  # decoded to another instance
    with pytest.raises(ValueError, match="key must be an int"):
        key_door_actions(0)  # returned []
    assert key_door_actions(pair_seed(2, 8, 7), 7) == [1, 1, 6]


# ------------------------------------------------------------------ Meta-World
def test_metaworld_envs_refuse_a_nan_action():
    # MuJoCo reset the unstable physics: the hand jumped to a corner and the episode went on
    from integrations.metaworld import make_mt1_env
    from integrations.metaworld.ml1_trials import ML1Trials

    for env in (make_mt1_env("reach-v3", seed=0, num_goals=2), ML1Trials()):
        env.reset(seed=0)
        with pytest.raises(ValueError, match="the arm's action must be 4 finite numbers"):
            env.step(np.array([np.nan, 0, 0, 0], np.float32))
        with pytest.raises(ValueError, match="4 finite numbers"):
            env.step(np.zeros(3, np.float32))
        env.step(np.zeros(4, np.float32))
        env.close()


def test_metaworld_helpers_refuse_fractional_and_out_of_range_ids():
    from integrations.metaworld.ml1_trials import ml1_instances
    from integrations.metaworld.ml10_trials import ml10_demonstrations, ml10_instances

    with pytest.raises(ValueError, match=r"goals must be an int in \[1, 50\]"):
        ml1_instances(60)  # listed instances up to 119, of 100
    with pytest.raises(ValueError, match="per_task must be an int"):
        ml10_instances(per_task=1.5)
    with pytest.raises(TypeError, match="instance must be an int"):
        ml10_demonstrations()(5.9)  # gave instance 5's demonstration


def test_metaworld_envs_say_a_step_before_reset_and_refuse_bad_seeds_and_step_counts():
    from integrations.metaworld import make_mt1_env
    from integrations.metaworld.ml1_demos import scripted_demonstration
    from integrations.metaworld.ml1_trials import ML1Trials

    for env in (make_mt1_env("reach-v3", seed=0, num_goals=2), ML1Trials()):
        with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\)"):  # a bare assert in Meta-World
            env.step(np.zeros(4, np.float32))
        env.close()
    env = make_mt1_env("reach-v3", seed=0, num_goals=2)
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="seed must be an int >= 0"):
            env.reset(seed=bad)
    env.close()
    with pytest.raises(ValueError, match="max_steps must be a positive int, got 0"):
        scripted_demonstration(ML1Trials(), 0, max_steps=0)


def test_the_incontext_maze_names_bad_settings_at_construction():
    from integrations.minihack.incontext_maze import InContextMaze

    with pytest.raises(ValueError, match="holding 'blstats'"):
        InContextMaze(observation_keys=("glyphs_crop",))  # a bare KeyError at the first reset
    with pytest.raises(ValueError, match="holding 'blstats'"):
        InContextMaze(observation_keys="blstats")  # split into letters
    with pytest.raises(ValueError, match="cap_factor"):
        InContextMaze(cap_factor=float("nan"))
    with pytest.raises(ValueError, match="cap_factor"):
        InContextMaze(cap_factor=-1)  # a cap of 1 step
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        InContextMaze(seed=-1)


def test_minihack_refuses_a_crop_it_would_assert_on_and_encodes_an_empty_batch():
    from integrations.minihack import MiniHackKeyEncoder, make_minihack_env

    for bad, err in ((0, ValueError), (4, ValueError), (2.0, ValueError)):
        with pytest.raises(err, match="obs_crop_h"):
            make_minihack_env("MiniHack-Room-5x5-v0", obs_crop_h=bad)
    env = make_minihack_env("MiniHack-Room-5x5-v0", obs_crop_h=5)
    assert env.observation_space["glyphs_crop"].shape == (5, 9)
    enc = MiniHackKeyEncoder(env.observation_space)
    obs, _ = env.reset(seed=0)
    assert enc.encode({k: v[None][:0] for k, v in obs.items()}, np.zeros(0, np.int64)).shape == (0, enc.key_dim)
    env.close()


def test_a_minihack_key_encoder_built_for_another_observation_is_refused_where_the_wrapper_is_built():
    """It was accepted: a free episode's keys failed in the learner process (logged, the loop went on, the bank
    stayed empty), or nothing failed at all until an episode was drawn guided."""
    from integrations.minihack import MiniHackKeyEncoder, make_minihack_env

    enc = MiniHackKeyEncoder(make_minihack_env("MiniHack-Room-5x5-v0").observation_space)
    for kwargs, match in (({"observation_keys": ("glyphs",)}, r"reads 'glyphs_crop' of shape \(9, 9\).*lacks it"),
                          ({"obs_crop_h": 5}, r"reads 'glyphs_crop' of shape \(9, 9\).*holds it with shape \(5, 9\)")):
        env = make_minihack_env("MiniHack-Room-5x5-v0", **kwargs)
        bank = ExperienceBank()
        with pytest.raises(ValueError, match=match):
            ExperienceWrapper(env, bank, key_encoder=enc, manager_kwargs={"mode": "sync"})
        assert bank.manager is None  # nothing built
        env.close()
    more = make_minihack_env("MiniHack-Room-5x5-v0", observation_keys=("glyphs_crop", "blstats", "inv_glyphs",
                                                                        "message"))
    ExperienceWrapper(more, ExperienceBank(), key_encoder=enc, manager_kwargs={"mode": "sync"}).close()  # a key more: read as ever


def test_metaworld_names_tasks_that_are_not_tasks_and_a_prefix_that_is_no_str():
    from integrations.metaworld import make_mt10_env
    from integrations.metaworld.callbacks import PerTaskSuccessCallback

    for bad in ("reach-v3", ["a"]):
        with pytest.raises(TypeError, match="Meta-World Task"):
            make_mt10_env(0, tasks=bad)
    for bad in (None, 3):
        with pytest.raises(TypeError, match="prefix must be a str"):
            PerTaskSuccessCallback(prefix=bad)


def test_ml1_helpers_keep_held_out_goals_held_out_and_name_what_they_refuse():
    """Probe 21: ml1_instances(10) gave ML1 training goals 10-19 as held out; a trial stepped past its end reached
    Meta-World's own "reset the env manually" error; goal_visible="no" showed the goal; a task given as a list
    failed in a cache; demonstrations' rewards could not follow the env's success bonus."""
    from integrations.metaworld.ml1_demos import ml1_demonstrations
    from integrations.metaworld.ml1_trials import ML1Trials, ml1_instances

    assert ml1_instances(3) == ([0, 1, 2], [50, 51, 52])
    env = ML1Trials("reach-v3", 2)
    env.reset(seed=0)
    env.step(np.zeros(4, np.float32))
    assert env.step(np.zeros(4, np.float32))[3]  # truncated at the cap
    with pytest.raises(RuntimeError, match=r"step\(\) after the trial ended"):
        env.step(np.zeros(4, np.float32))
    env.reset(seed=0)
    env.step(np.zeros(4, np.float32))  # a new trial steps again
    env.close()
    with pytest.raises(TypeError, match="goal_visible must be a bool"):
        ML1Trials("reach-v3", goal_visible="no")
    with pytest.raises(TypeError, match="task must be an ML1 task name"):
        ML1Trials(["reach-v3"])
    rewards = ml1_demonstrations("reach-v3", success_bonus="infinite")(50)[2]
    assert rewards[-1] == pytest.approx(100.0)  # a success's reward as that env pays it (0.1 x 10 / (1 - 0.99))
