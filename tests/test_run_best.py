"""RunBest: where the run's best trial got to, shown as an offset from the agent's state."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from experience_wrappers import ExperienceWrapper
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.checks import RUN_BEST_KEY
from experience_wrappers.trials.run_best import RunBest, best_step
from experience_wrappers.trials.trial_index import TrialIndex
from experience_wrappers.trials.wrapper import trial_env
from integrations.minihack.hidden_goal import MOVES, HiddenGoalRoom, goal_demonstration
from integrations.sb3.trials_features import TrialsFeaturesExtractor

POS = spaces.Box(0.0, 9.0, (2,), np.float32)
ACT = spaces.Discrete(8)


def key(mem: TrialMemory, pos) -> np.ndarray:
    return mem.keys(np.asarray([pos], np.float32))[0]


def test_the_best_step_is_the_newest_successes_end_else_the_highest_reward_with_dense_rewards() -> None:
    mem = TrialMemory(POS, ACT, horizon=25, k=4, exp_dim=0, write_failures=True, dense_rewards=True,
                      run_best="taken")  # each step marked by the state its action was taken from
    s = mem.new_scope()
    assert best_step(mem, s) is None
    mem.write(s, np.array([[0, 0], [4, 4], [2, 2]]), [0, 0, 0], [0.1, 0.7, 0.3], success=False)
    got = best_step(mem, s)
    assert got is not None and np.allclose(got[:2], key(mem, [4, 4])) and got[2:].tolist() == [0.0, pytest.approx(0.7)]
    mem.write(s, np.array([[1, 1], [5, 5]]), [0, 0], [0.2, 0.9], success=False)  # closer: it replaces the first
    assert np.allclose(best_step(mem, s)[:2], key(mem, [5, 5]))
    mem.write(s, np.array([[0, 0], [6, 6], [7, 8]]), [0, 0, 0], [0.1, 0.2, 0.4], success=True)  # a success wins
    assert np.allclose(best_step(mem, s)[:3], [*key(mem, [7, 8]), 1.0])
    mem.write(s, np.array([[3, 3], [9, 9]]), [0, 0], [0.95, 0.99], success=False)  # a failure never beats a success
    assert np.allclose(best_step(mem, s)[:2], key(mem, [7, 8]))
    mem.write(s, np.array([[0, 1], [2, 3]]), [0, 0], [0.1, 0.2], success=True)  # the newest success wins
    assert np.allclose(best_step(mem, s)[:2], key(mem, [2, 3]))
    mem.newest_success = False  # the suite's ablation: the run's first success stays its best step
    assert np.allclose(best_step(mem, s)[:2], key(mem, [7, 8]))
    mem.forget(s)
    assert best_step(mem, s) is None


def test_reached_marks_the_best_step_by_the_state_its_reward_came_in_and_a_trials_end_by_its_end() -> None:
    mem = TrialMemory(POS, ACT, horizon=25, k=4, exp_dim=0, write_failures=True, dense_rewards=True,
                      run_best="reached")
    assert mem.run_best == "reached" and TrialMemory(POS, ACT, horizon=25, run_best=True).run_best == "taken"
    s = mem.new_scope()
    mem.write(s, np.array([[0, 0], [4, 4], [2, 2]]), [0, 0, 0], [0.1, 0.7, 0.3], success=False)
    got = best_step(mem, s)  # the 0.7 came on stepping from (4, 4): in the state the next step starts from
    assert np.allclose(got[:2], key(mem, [2, 2])) and got[2:].tolist() == [0.0, pytest.approx(0.7)]
    mem.write(s, np.array([[1, 1], [5, 5]]), [0, 0], [0.2, 0.9], success=False, end_observation=np.array([6, 5]))
    assert np.allclose(best_step(mem, s)[:2], key(mem, [6, 5]))  # the last step's reward: the trial's end
    mem.write(s, np.array([[0, 0], [6, 6]]), [0, 0], [0.1, 0.2], success=True)  # no end given: its last step
    assert np.allclose(best_step(mem, s)[:3], [*key(mem, [6, 6]), 1.0])
    mem.write(s, np.array([[0, 0], [6, 6]]), [0, 0], [0.1, 0.2], success=True, end_observation=np.array([7, 8]))
    assert np.allclose(best_step(mem, s)[:3], [*key(mem, [7, 8]), 1.0])
    assert [e is None for e in mem.ends_of(s)] == [True, False, True, False]
    with pytest.raises(ValueError, match=r"run_best must be one of .*got 'end'"):
        TrialMemory(POS, ACT, horizon=25, run_best="end")


def test_success_ahead_moves_a_runs_own_success_on_along_its_approach_and_leaves_a_demonstration_where_it_ended() -> None:
    mem = TrialMemory(POS, ACT, horizon=25, k=4, exp_dim=0, write_failures=True, dense_rewards=True,
                      run_best="reached", success_ahead=3)
    s = mem.new_scope()
    mem.write(s, np.array([[0, 0], [6, 6]]), [0, 0], [0.1, 0.2], success=True)  # no end (a demonstration's)
    assert np.allclose(best_step(mem, s)[:2], key(mem, [6, 6]))
    # reached keys 1,1 / 2,1 / ... / 7,1 then the end (8,1): the last 5 steps moved 1 a step along x
    path = np.array([[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [5, 1], [6, 1], [7, 1]])
    mem.write(s, path, [0] * 8, [0.1] * 8, success=True, end_observation=np.array([8, 1]))
    end, before = key(mem, [8, 1]), key(mem, [3, 1])
    assert np.allclose(best_step(mem, s)[:2], end + 3 * (end - before) / 5)
    failed = TrialMemory(POS, ACT, horizon=25, k=4, exp_dim=0, write_failures=True, dense_rewards=True,
                         run_best="reached", success_ahead=3)
    f = failed.new_scope()
    failed.write(f, path, [0] * 8, np.linspace(0.1, 0.8, 8), success=False, end_observation=np.array([8, 1]))
    assert np.allclose(best_step(failed, f)[:2], key(failed, [8, 1]))  # a failure's best step is not moved
    with pytest.raises(ValueError, match=r"success_ahead=2 moves the run_best mark: it needs run_best"):
        TrialMemory(POS, ACT, horizon=25, success_ahead=2)
    for bad in (-1, 26, 1.5, True):  # (past the horizon: no trial moves that far; 10**40 made an inf mark)
        with pytest.raises(ValueError, match=r"success_ahead"):
            TrialMemory(POS, ACT, horizon=25, run_best="reached", success_ahead=bad)
    # a one-step success's approach is from its start under "reached" (nothing moved it before)
    one = TrialMemory(POS, ACT, horizon=25, k=4, exp_dim=0, run_best="reached", success_ahead=2)
    o = one.new_scope()
    one.write(o, np.array([[0, 1]]), [0], [1.0], success=True, end_observation=np.array([1, 1]))
    start, end = key(one, [0, 1]), key(one, [1, 1])
    assert np.allclose(best_step(one, o)[:2], end + 2 * (end - start))
    with pytest.warns(UserWarning, match=r"one-hot parts, which change by jumps"):
        TrialMemory(spaces.Discrete(25), ACT, horizon=25, run_best="reached", success_ahead=2)


def test_a_trials_success_is_its_written_outcome_not_the_sign_of_its_rewards_sum() -> None:
    """Without dense rewards the return column holds the rewards' sum: a failed trial of positive rewards was
    marked a success (and moved on), a success of step penalties (-1 a step, MountainCar's) was never marked."""
    mem = TrialMemory(POS, ACT, horizon=25, k=4, exp_dim=0, write_failures=True, run_best="reached", success_ahead=2)
    s = mem.new_scope()
    path = np.array([[0, 1], [1, 1], [2, 1]])
    mem.write(s, path, [0] * 3, [0.1, 0.1, 0.1], success=False, end_observation=np.array([3, 1]))
    assert best_step(mem, s) is None and mem.outcomes_of(s) == [False]  # sparse failures say nothing
    mem.write(s, path, [0] * 3, [-1.0, -1.0, 0.5], success=True, end_observation=np.array([3, 1]))
    end, before = key(mem, [3, 1]), key(mem, [0, 1])
    got = best_step(mem, s)
    assert got is not None and got[2] == 1.0 and np.allclose(got[:2], end + 2 * (end - before) / 3)
    mem.add_demonstration(s, path, [0] * 3, [-1.0, -1.0, -1.0])  # a demonstration is a success, whatever it paid
    assert mem.outcomes_of(s) == [False, True, True]


class Cells(gym.Env):
    """A line of 5 cells given as a Python int (FrozenLake's way); the last cell is the goal."""

    observation_space = spaces.Discrete(5)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell = 0
        return 0, {}

    def step(self, action):
        self.cell = min(4, self.cell + int(action))
        won = self.cell == 4
        return self.cell, float(won), won, False, {"is_success": won}


def test_run_best_reads_an_observation_given_as_a_python_int_and_the_wrapper_alone_says_what_it_lacks() -> None:
    mem = TrialMemory(Cells.observation_space, Cells.action_space, horizon=8, k=2, exp_dim=0, run_best="reached")
    env = trial_env(Cells(), mem, instances=[3], trials=2, guided=True)
    env.reset()
    for _ in range(4):
        env.step(1)
    obs, _ = env.reset()  # raised TypeError: 'int' object is not subscriptable
    assert obs[RUN_BEST_KEY][-1] == 1.0 and np.allclose(obs[RUN_BEST_KEY][:5], key(mem, 4) - key(mem, 0))
    alone = ExperienceWrapper(Cells(), mem, scope="run", instances=[3], trials=2)
    with pytest.warns(UserWarning, match=r"shows \['run_best'\], which trial_env\(env, memory, ...\) puts above"):
        assert RUN_BEST_KEY not in alone.reset()[0]
    by_hand = RunBest(ExperienceWrapper(Cells(), mem, scope="run", instances=[3], trials=2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_hand.reset()  # RunBest put on by hand: nothing lacks
    both = TrialMemory(Cells.observation_space, Cells.action_space, horizon=8, k=2, exp_dim=0, run_best="reached",
                       trial_index=True)
    half = RunBest(ExperienceWrapper(Cells(), both, scope="run", instances=[3], trials=2))
    with pytest.warns(UserWarning, match=r"shows \['trial_index'\], which trial_env"):
        half.reset()  # RunBest on, TrialIndex not: trial_index lacks (any one wrapper silenced it before)
    whole = TrialIndex(RunBest(ExperienceWrapper(Cells(), both, scope="run", instances=[3], trials=2)), trials=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        whole.reset()


def test_sparse_failures_say_nothing_of_where_they_got_to() -> None:
    mem = TrialMemory(POS, ACT, horizon=25, k=4, exp_dim=0, write_failures=True)
    s = mem.new_scope()
    mem.write(s, np.array([[0, 0], [4, 4]]), [0, 0], [0.0, 0.0])
    assert best_step(mem, s) is None
    mem.write(s, np.array([[0, 0], [3, 4]]), [0, 0], [0.0, 1.0])
    assert np.allclose(best_step(mem, s)[:3], [*key(mem, [3, 4]), 1.0])


def test_a_guided_run_sees_the_demonstrations_end_relative_to_where_it_stands_and_a_free_run_sees_nothing() -> None:
    goal = 57
    demo = goal_demonstration(goal)
    proto = HiddenGoalRoom()
    mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25, run_best=True, exp_dim=0)
    for guided in (True, False):
        env = trial_env(HiddenGoalRoom(), mem, instances=[goal], trials=2, guided=guided,
                        demonstrations=lambda i: demo)
        assert isinstance(env, RunBest) and env.observation_space[RUN_BEST_KEY].shape == (mem.key_dim + 3,)
        obs, _ = env.reset()
        assert env.observation_space.contains(obs)
        for action in (3, 3):  # wherever the agent goes, the offset points at the demonstration's last step
            pos = obs["observation"]
            shown = obs[RUN_BEST_KEY]
            if guided:
                assert np.allclose(shown[:2], key(mem, demo[0][-1]) - key(mem, pos))
                assert shown[2:].tolist() == [1.0, 0.0, 1.0]  # a success, its reward (sparse: 0), present
            else:
                assert not shown.any()
            obs, *_ = env.step(action)
    extractor = TrialsFeaturesExtractor(env.observation_space)  # the reader takes it with the env's own keys
    assert RUN_BEST_KEY in extractor.base_keys


def test_a_successful_trial_of_a_run_is_marked_by_the_state_it_ended_in() -> None:
    goal = 57
    _, moves = goal_demonstration(goal)
    proto = HiddenGoalRoom()
    for mode in ("reached", "taken"):
        mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25, run_best=mode, exp_dim=0)
        env = trial_env(HiddenGoalRoom(), mem, instances=[goal], trials=2, guided=True)
        obs, _ = env.reset()
        for action in moves:  # the shortest path: the trial succeeds on its last move
            obs, _, terminated, _, info = env.step(action)
        assert terminated and info["trial_success"]
        end = obs["observation"]  # the goal's cell
        obs, _ = env.reset()  # trial 2 sees where trial 1 got to
        mark = end if mode == "reached" else end - np.asarray(MOVES[moves[-1]], np.float32)  # or the cell before
        assert np.allclose(obs[RUN_BEST_KEY][:2], key(mem, mark) - key(mem, obs["observation"]))


def test_run_best_follows_the_memorys_scope_setting_and_refuses_an_env_that_is_not_run_scope() -> None:
    proto = HiddenGoalRoom()
    mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25, run_best=True, exp_dim=0, scope="none")
    env = trial_env(HiddenGoalRoom(), mem, instances=[57], trials=2, guided=True,
                    demonstrations=lambda i: goal_demonstration(i))
    obs, _ = env.reset()
    assert not obs[RUN_BEST_KEY].any()  # the no-retrieval ablation: nothing of the instance shown
    plain = TrialMemory(proto.observation_space, proto.action_space, horizon=25)
    assert RUN_BEST_KEY not in trial_env(HiddenGoalRoom(), plain, instances=[57]).observation_space.spaces
    with pytest.raises(ValueError, match="run scope"):
        RunBest(HiddenGoalRoom())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="run scope"):
        RunBest(env)  # type: ignore[arg-type]  (already shown: env is a RunBest)
    with pytest.raises(ValueError, match="run scope"):
        RunBest(ExperienceWrapper(HiddenGoalRoom(), plain, scope="run", instances=[57]).env)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="this memory has run_best off"):  # probe 18: a key of zeros at every step
        RunBest(ExperienceWrapper(HiddenGoalRoom(), plain, scope="run", instances=[57]))


@pytest.mark.parametrize("mode", [True, "located"])
def test_a_run_with_run_best_trains_saves_loads_and_evaluates_with_it(tmp_path, mode) -> None:
    from integrations.sb3 import ComplementaryRL

    def room() -> HiddenGoalRoom:
        return HiddenGoalRoom(10, 25)

    small = {"instances": [5, 6, 7, 8], "n_envs": 4, "trials": 2, "demonstrations": goal_demonstration,
             "algorithm_kwargs": {"n_steps": 32, "batch_size": 64, "n_epochs": 1}}
    mem = {"horizon": 25, "k": 4, "exp_dim": 4, "write_failures": True}
    run = ComplementaryRL(room, scope="run", memory_kwargs={**mem, "run_best": mode, "dense_rewards": mode == "located"},
                          **small)
    try:
        assert RUN_BEST_KEY in run.model.observation_space.spaces
        run.learn(256)
        run.save(tmp_path / "run")
    finally:
        run.close()
    assert (tmp_path / "run" / "experience" / "locator.pt").exists() == (mode == "located")
    back = ComplementaryRL.load(tmp_path / "run", env=room, demonstrations=goal_demonstration)
    try:
        assert back.memory.run_best == ("taken" if mode is True else mode)
        if mode == "located":  # the run's learned locator, not a fresh one
            rows = np.zeros((3, back.memory.key_dim), np.float32), np.array([0.0, 1.0, 0.0], np.float32)
            assert np.allclose(back.memory.locator.locate(*rows), run.memory.locator.locate(*rows))
        out = back.evaluate([40], repeats=1, conditions=["with_demonstration"])
        assert out["with_demonstration"]["runs"] == 1
    finally:
        back.close()
    saved = {**mem, "run_best": mode, "dense_rewards": mode == "located"}  # (no success_ahead: a save from before it)
    again = {"env": room, "demonstrations": goal_demonstration}
    ComplementaryRL.load(tmp_path / "run", memory_kwargs={**saved, "success_ahead": 0}, **again).close()  # its default
    with pytest.raises(ValueError, match=r"cannot apply memory_kwargs"):
        ComplementaryRL.load(tmp_path / "run", memory_kwargs={**saved, "success_ahead": 2}, **again)


def test_without_its_entries_shown_a_run_shows_only_its_best_step() -> None:
    """``show_entries=False``: the rows stay blank (no entry shown, so none can be credited), while ``run_best``
    still shows the demonstration's end; it needs ``run_best`` (else nothing is shown) and a bool."""
    from experience_wrappers.trials.checks import ENTRIES_KEY, MASK_KEY

    goal = 57
    demo = goal_demonstration(goal)
    proto = HiddenGoalRoom()
    shown_too, blank = (TrialMemory(proto.observation_space, proto.action_space, horizon=25, run_best=True, exp_dim=4,
                                    show_entries=show) for show in (True, False))
    for mem in (shown_too, blank):
        env = trial_env(HiddenGoalRoom(), mem, instances=[goal], trials=2, guided=True, demonstrations=lambda i: demo)
        obs, _ = env.reset()
        assert env.observation_space.contains(obs)
        assert np.allclose(obs[RUN_BEST_KEY][:2], key(mem, demo[0][-1]) - key(mem, obs["observation"]))
        assert obs[MASK_KEY].any() == mem.show_entries and obs[ENTRIES_KEY].any() == mem.show_entries
        rows, mask, ids = mem.read(np.array([1]), obs["observation"][None], np.ones(1))  # the run's scope: the first
        assert rows.shape == (1, mem.k, mem.layout.row_dim) and rows.dtype == np.float32 and ids.dtype == np.int64
        assert mask.any() == mem.show_entries and (ids >= 0).any() == mem.show_entries
    with pytest.raises(ValueError, match="shows the policy nothing without run_best.*scope='none'"):
        TrialMemory(POS, ACT, horizon=25, show_entries=False)
    with pytest.raises(TypeError, match="show_entries must be a bool"):
        TrialMemory(POS, ACT, horizon=25, run_best=True, show_entries=0)  # type: ignore[arg-type]
