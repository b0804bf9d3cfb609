"""The trials path's boundary (issue 36, items 3, 8-13 and 15): every case a hostile user tried is
refused at once, in one line that names what was given, or is warned about as the main path does.

Real SB3 and real trial envs: a 5x5 hidden-goal grid in pure Python (``reset(seed=s)`` puts the
goal on cell ``s``), tiny nets, no training beyond what a case needs.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv

from benchmarks.peers.meta_episode import MetaEpisode
from benchmarks.peers.retrieve_and_play import RetrieveAndPlay
from experience_wrappers import ExperienceWrapper
from experience_wrappers.manager.entry_layout import EntryLayout
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.wrapper import RunScopeWrapper, trials_env_fns
from integrations.sb3.trials_evaluation import evaluate_trials, run_trials
from integrations.sb3.trials_method import TrialsRun, build_trials_method

SIZE = 5
MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))


class Grid(gym.Env):
    """A 5x5 room, the goal on cell ``seed`` (hidden: the observation is the position); ``nan_at``: the
    step whose observation is NaN."""

    def __init__(self, max_steps: int = 6, nan_at: int | None = None) -> None:
        self.observation_space = spaces.Box(0.0, SIZE - 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(4)
        self.max_steps, self.nan_at = max_steps, nan_at
        self.goal, self.pos, self.t = (1, 0), np.zeros(2), 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.goal = (seed % SIZE, seed // SIZE)
        self.pos, self.t = np.zeros(2), 0
        return self.pos.astype(np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.pos = np.clip(self.pos + MOVES[int(action)], 0, SIZE - 1)
        self.t += 1
        won = tuple(int(v) for v in self.pos) == self.goal
        obs = self.pos.astype(np.float32)
        if self.t == self.nan_at:
            obs[0] = np.nan
        return obs, float(won), won, self.t >= self.max_steps and not won, {"success": won}


def demo(goal: int) -> tuple[np.ndarray, np.ndarray]:
    """A shortest path to ``goal``: east, then south; the positions its steps start from and its moves."""
    actions = [1] * (goal % SIZE) + [2] * (goal // SIZE)
    pos, obs = np.zeros(2, np.float32), []
    for a in actions:
        obs.append(pos.copy())
        pos = pos + np.asarray(MOVES[a], np.float32)
    return np.stack(obs), np.asarray(actions)


SPACE = Grid().observation_space
ACT = Grid().action_space


def memory(space: spaces.Space = SPACE, **kw: Any) -> TrialMemory:
    return TrialMemory(space, ACT, horizon=6, **{"k": 4, "exp_dim": 2, "hidden": 8, "write_failures": True, **kw})


def tiny_run(mem: TrialMemory, trials: int = 2) -> TrialsRun:
    return build_trials_method(Grid, [3, 7, 12], memory=mem, n_envs=2, group_size=2, trials=trials, sil=False,
                               imitate=False, ppo_kwargs={"n_steps": 16, "batch_size": 32, "n_epochs": 1},
                               features_kwargs={"hidden": 8})


def wrapper(mem: TrialMemory, **kw: Any) -> RunScopeWrapper:
    return ExperienceWrapper(Grid(), mem, scope="run", **{"instances": [7], "trials": 2, "guided": True,
                                                          "learn": False, "group_size": 1, "free_members": 0, **kw})


# ------------------------------------------------------------------ items 8 and 15: instances
BAD_INSTANCES = [("123", TypeError), ([1.7], ValueError), ([-1], ValueError), ([float("nan")], ValueError),
                 (5, TypeError), (["a"], TypeError), ([], ValueError), ([True], TypeError),
                 (np.zeros((2, 2), int), ValueError)]


@pytest.mark.parametrize(("bad", "error"), BAD_INSTANCES, ids=[" ".join(repr(b).split())[:24] for b, _ in BAD_INSTANCES])
def test_instances_must_be_a_sequence_of_reset_seeds_wherever_they_enter(bad: Any, error: type) -> None:
    mem = memory()
    said = "instances must be a non-empty sequence of reset seeds"
    entries = [lambda: wrapper(mem, instances=bad),
               lambda: trials_env_fns(Grid, mem, 2, instances=bad, group_size=2),
               lambda: MetaEpisode(Grid(), instances=bad),
               lambda: build_trials_method(Grid, bad, memory=mem, n_envs=2, group_size=2),
               lambda: evaluate_trials(lambda o, **_: (np.zeros(1, int), None), Grid, memory, bad)]
    for enter in entries:
        with pytest.raises(error, match=said) as info:
            enter()
        assert "\n" not in str(info.value)
    assert wrapper(mem, instances=np.array([3, 5])).instances == [3, 5]
    assert wrapper(mem, instances=(2.0, 4)).instances == [2, 4]
    assert wrapper(mem, instances=range(1, 3)).instances == [1, 2]


# ------------------------------------------------------------------ items 9 and 15: loading into another memory
def test_an_extractor_is_refused_by_a_memory_of_other_widths_which_stays_as_it_was(tmp_path: Path) -> None:
    folder = memory().save(tmp_path / "memory")
    wide = spaces.Box(0.0, SIZE - 1.0, (3,), np.float32)
    cases = [(memory(wide), "key_dim 2 there, 3 here"),
             (memory(exp_dim=4), "exp_dim 2 there, 4 here"),
             (memory(max_len=8), "max_len 16 there, 8 here"),
             (memory(exp_dim=0), "it has exp_dim=0")]
    for mem, said in cases:
        trainer = mem.trainer
        with pytest.raises(ValueError, match=said) as info:
            mem.load(folder)
        assert "\n" not in str(info.value)
        assert mem.trainer is trainer  # nothing loaded


# ------------------------------------------------------------------ item 15: evaluating with other settings
def test_evaluation_refuses_a_policy_trained_on_other_observations_before_any_step() -> None:
    indexed = tiny_run(memory(trial_index=True)).model
    plain = tiny_run(memory()).model
    cases = [(indexed, lambda: memory(trial_index=True, k=2), 2, r"k=4.*k=2"),
             (indexed, lambda: memory(trial_index=True, exp_dim=4), 2, r"rows 12 wide.*rows 14 wide"),
             (indexed, lambda: memory(trial_index=True), 3, "trained with trials=2, the envs run trials=3"),
             (indexed, memory, 2, "trial_index: the policy was trained with it"),
             (plain, lambda: memory(trial_index=True), 2, "trial_index: the envs show it"),
             (plain, lambda: memory(run_best=True), 2, r"run_best: the envs show it \(their memories have run_best=True\), the policy was trained without it")]
    for model, factory, trials, said in cases:
        with pytest.raises(ValueError, match=f"trained on other observations than these envs show: .*{said}"):
            evaluate_trials(model.predict, Grid, factory, [7], trials=trials, repeats=1,
                            conditions=["with_experience"])
    res = evaluate_trials(plain.predict, Grid, memory, [7], trials=2, repeats=1, conditions=["with_experience"])
    assert res["with_experience"]["runs"] == 1


def test_evaluation_refuses_a_memory_object_and_a_str_of_conditions() -> None:
    play = RetrieveAndPlay(memory().layout, ACT).predict
    with pytest.raises(TypeError, match="memory must be a function that makes a fresh TrialMemory.*got a TrialMemory"):
        evaluate_trials(play, Grid, memory(), [7])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="conditions must be a sequence of condition names"):
        evaluate_trials(play, Grid, memory, [7], conditions="with_experience")


# ------------------------------------------------------------------ item 10: a demonstration condition shown nothing
@pytest.mark.parametrize(("demos", "said"), [
    (lambda g: None, r"demonstrations\(7\) gave None"),
    (lambda g: (np.zeros((0, 2), np.float32), np.zeros(0, int)), r"demonstrations\(7\) gave a demonstration without "
                                                                  "actions")])
def test_with_demonstration_is_never_reported_for_runs_shown_nothing(demos: Any, said: str) -> None:
    play = RetrieveAndPlay(memory().layout, ACT).predict
    with pytest.raises(ValueError, match=said):
        evaluate_trials(play, Grid, memory, [7], trials=2, repeats=1, conditions=["with_demonstration"],
                        demonstrations=demos)


# ------------------------------------------------------------------ items 11 and 15: demonstrations outside the space
def test_demonstrations_get_the_checks_of_the_envs_observations() -> None:
    wide = lambda g: (np.zeros((2, 3), np.float32), np.array([1, 1]))  # noqa: E731
    with pytest.raises(ValueError, match=r"demonstrations\(7\) gave an observation outside its space .*shape \(3,\)"):
        wrapper(memory(), demonstrations=wide).reset()
    nan = lambda g: (np.array([[0.0, np.nan]], np.float32), np.array([1]))  # noqa: E731
    with pytest.raises(ValueError, match=r"demonstrations\(7\) gave an observation with NaN"):
        wrapper(memory(), demonstrations=nan).reset()
    short = lambda g: (np.zeros((1, 2), np.float32), np.array([1, 1]))  # noqa: E731
    with pytest.raises(ValueError, match=r"demonstrations\(7\) gave 1 observations for 2 actions"):
        wrapper(memory(), demonstrations=short).reset()
    outside = lambda g: (np.array([[9.0, 9.0]], np.float32), np.array([1]))  # noqa: E731
    env = wrapper(memory(), demonstrations=outside, trials=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # three runs of one trial, three demonstrations: one warning
            env.reset()
    said = [str(w.message) for w in caught if "outside its Box bounds" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("demonstrations(7) gave an observation"), said


# ------------------------------------------------------------------ item 12: retrieve-and-play of another layout
def test_retrieve_and_play_refuses_rows_of_another_layout() -> None:
    mem = memory(exp_dim=1)  # rows 2 + 1 + 1 + 4 + 2 + 1 = 11 wide
    venv = DummyVecEnv([lambda: wrapper(mem, demonstrations=demo)])
    narrow = RetrieveAndPlay(EntryLayout(key_dim=2, action_dim=4, exp_dim=0, horizon=6), ACT)
    with pytest.raises(ValueError, match="the entry rows are 11 wide .* reads rows 10 wide"):
        narrow.predict(venv.reset())  # type: ignore[arg-type]
    same_width = RetrieveAndPlay(EntryLayout(key_dim=3, action_dim=4, exp_dim=0, horizon=6), ACT)
    assert same_width.layout.row_dim == mem.layout.row_dim
    with pytest.raises(ValueError, match="RetrieveAndPlay reads the layout .* the envs' memory writes"):
        run_trials(venv, same_width.predict, runs_per_env=1, trials=2, max_steps=200)
    with pytest.raises(ValueError, match="actions are 4 wide, the action space Discrete\\(8\\) has 8"):
        RetrieveAndPlay(mem.layout, spaces.Discrete(8))
    venv.close()


def test_entry_imitation_of_another_layout_is_refused_at_its_first_rollout() -> None:
    """The same kind as item 12: the imitation callback reads the rows with the layout it was given."""
    from integrations.sb3.trials_imitation import EntryImitationCallback

    run = tiny_run(memory(exp_dim=2))
    with pytest.raises(ValueError, match="the entry rows are 12 wide .* reads rows 14 wide"):
        run.model.learn(32, callback=EntryImitationCallback(memory(exp_dim=4).layout))


# ------------------------------------------------------------------ item 13: another trial count
def test_run_trials_refuses_another_trial_count_before_any_step() -> None:
    venv = DummyVecEnv([lambda: wrapper(memory(), trials=2)])
    calls = []

    def predict(obs: Any, **_: Any) -> tuple[np.ndarray, None]:
        calls.append(1)
        return np.zeros(1, int), None

    with pytest.raises(ValueError, match=r"run_trials\(trials=4\): the envs run \[2\] trials per run"):
        run_trials(venv, predict, runs_per_env=1, trials=4, max_steps=500)
    assert not calls
    assert run_trials(venv, predict, runs_per_env=1, trials=2).shape == (1, 2)
    venv.close()


# ------------------------------------------------------------------ item 15: the env's observations, the memory's space
def test_a_nan_observation_names_the_env_the_trial_and_the_step() -> None:
    env = ExperienceWrapper(Grid(nan_at=3), memory(), scope="run",
                            instances=[24], trials=2, guided=True, learn=False, group_size=1, free_members=0)
    env.reset()
    env.step(1)
    env.step(1)
    with pytest.raises(ValueError, match=r"NaN or inf at step 3 of trial 0 \(run 0, instance 24\) of Grid"):
        env.step(1)


def test_a_memory_for_another_observation_space_is_refused_at_the_wrapper() -> None:
    other = memory(spaces.Box(0.0, 9.0, (2,), np.float32))
    with pytest.raises(ValueError, match=r"the memory was built for the observation space Box\(0.0, 9.0"):
        wrapper(other)
    with pytest.raises(ValueError, match="the memory was built for the action space Discrete\\(8\\)"):
        ExperienceWrapper(Grid(), TrialMemory(SPACE, spaces.Discrete(8), horizon=6), scope="run", instances=[7])


@pytest.mark.parametrize("bad", [2.5, None, "6", 0])
def test_a_trial_horizon_that_is_not_a_whole_number_of_steps_is_refused_not_truncated(bad: Any) -> None:
    with pytest.raises(ValueError, match=f"horizon must be a positive int, got {bad!r}"):
        TrialMemory(SPACE, ACT, horizon=bad)
    assert TrialMemory(SPACE, ACT, horizon=np.int64(6)).layout.horizon == 6  # numpy's ints are ints


def test_a_demonstration_longer_than_the_horizon_warns_and_is_placed():
    mem = memory()  # horizon 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obs, actions = demo(2 * SIZE + 2)  # 4 steps: within the horizon, no warning
        assert len(mem.add_demonstration(mem.new_scope(), obs, actions)) == len(actions)
    long_obs = np.zeros((9, 2), np.float32)
    with pytest.warns(UserWarning, match=r"longer than the trials' horizon \(6 steps\), e.g. demonstrations\(3\)'s"):
        ids = mem.add_demonstration(mem.new_scope(), long_obs, np.ones(9, np.int64), source="demonstrations(3)")
    assert len(ids) == 9  # placed all the same


class _Unreported(gym.Wrapper):
    """The grid with a reward at every step and no success key: every trial's rewards sum above 0."""

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, _ = self.env.step(action)
        return obs, reward + 0.1, terminated, truncated, {}


def test_run_scope_warns_where_success_is_guessed_from_the_rewards() -> None:
    env = ExperienceWrapper(_Unreported(Grid()), memory(), scope="run", instances=[7], trials=2, guided=True)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match=r"reports no success .* rewards sum above 0"):
        for _ in range(6):
            _, _, terminated, truncated, info = env.step(0)
            if terminated or truncated:
                break
    assert info["trial_success"] is True  # (the rule, as documented: said, not silent)


def test_envs_built_by_hand_as_one_member_of_one_group_are_warned_and_so_is_a_group_never_paired():
    """Probe 18: four run-scope wrappers built by hand with the defaults (group 0, member 0) replayed the same
    instances, all guided, and no guided trial met a free one: nothing was credited, and nothing said so."""
    memory = TrialMemory(Grid().observation_space, Grid().action_space, horizon=6, k=2, exp_dim=2, seed=0)
    first = ExperienceWrapper(Grid(), memory, scope="run", instances=range(1, 20), trials=2)
    with pytest.warns(UserWarning, match="already plays member 0 of group 0"):
        ExperienceWrapper(Grid(), memory, scope="run", instances=range(1, 20), trials=2)
    with warnings.catch_warnings():  # its own member, or one that does not learn: nothing to say
        warnings.simplefilter("error")
        ExperienceWrapper(Grid(), memory, scope="run", instances=range(1, 20), trials=2, member=1).close()
        ExperienceWrapper(Grid(), memory, scope="run", instances=range(1, 20), trials=2, learn=False)
    # the guided member alone: its trials wait for a free trial that never comes, and are dropped unpaired
    first.reset(seed=0)
    with pytest.warns(UserWarning, match="256 guided episodes and none credited: none met a free episode"):
        for _ in range(260):
            done = False
            while not done:
                *_, terminated, truncated, _ = first.step(0)
                done = terminated or truncated
            first.reset()
    assert memory.manager.stats()["paired_credited"] == 0


def test_a_dict_demonstration_with_keys_of_other_lengths_or_keys_the_env_lacks_and_flat_actions_are_named():
    """Probe 18: a Dict demonstration whose keys held different numbers of steps failed inside learn(); a key
    the env lacks was accepted; MultiDiscrete actions flattened to (8,) were reported as 4 observations for 8
    actions."""
    obs_space = spaces.Dict({"pos": spaces.Box(0, 4, (2,), np.float32), "t": spaces.Box(0, 10, (1,), np.float32)})
    memory = TrialMemory(obs_space, spaces.MultiDiscrete([3, 3]), horizon=6, k=2, exp_dim=2, seed=0)
    obs = {"pos": np.ones((4, 2), np.float32), "t": np.ones((4, 1), np.float32)}
    actions = np.ones((4, 2), np.int64)
    assert memory.check_demonstration(obs, actions, "demonstrations(3)") == 4
    with pytest.raises(ValueError, match=r"demonstrations\(3\) gave observation keys holding different numbers "
                                         r"of steps, \{'pos': 4, 't': 3\}"):
        memory.check_demonstration({**obs, "t": obs["t"][:-1]}, actions, "demonstrations(3)")
    with pytest.raises(ValueError, match=r"observation keys the env's observations lack: \['zz'\]"):
        memory.check_demonstration({**obs, "zz": np.ones((4, 1))}, actions, "demonstrations(3)")
    with pytest.raises(ValueError, match=r"gave actions of shape \(\) per step \(\(8,\) in all\).*takes \(2,\)"):
        memory.check_demonstration(obs, actions.reshape(-1), "demonstrations(3)")


def test_a_memory_save_keeps_the_folder_rules_of_the_other_saves(tmp_path, monkeypatch):
    """Probe 18: TrialMemory.save replaced a user's extractor.pt in a folder of their own, wrote into the working
    directory, and gave a raw FileExistsError on a file path."""
    from experience_wrappers.errors import ExperienceFileError

    memory = TrialMemory(Grid().observation_space, Grid().action_space, horizon=6, k=2, exp_dim=2, seed=0)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "extractor.pt").write_text("my own file")
    with pytest.raises(ExperienceFileError, match="is not a saved folder of format 'complementary-rl.trial-memory'"):
        memory.save(tmp_path / "mine")
    assert (tmp_path / "mine" / "extractor.pt").read_text() == "my own file"
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="is a file; give a folder path"):
        memory.save(tmp_path / "afile")
    monkeypatch.chdir(tmp_path / "mine")
    with pytest.raises(ValueError, match="it is the working directory"):
        memory.save(".")
    saved = memory.save(tmp_path / "m")
    memory.save(saved)  # its own save is replaced
    memory.load(saved)
    assert sorted(p.name for p in saved.iterdir()) == ["extractor.pt", "meta.json"]


def test_a_run_scope_wrappers_demo_ratio_is_checked_as_a_number():
    memory = TrialMemory(Grid().observation_space, Grid().action_space, horizon=6, k=2, exp_dim=2, seed=0)
    with pytest.raises(ValueError, match="demo_ratio must be a finite number in \\[0, 1\\], got 'x'"):
        ExperienceWrapper(Grid(), memory, scope="run", instances=[1, 2], trials=2, demo_ratio="x")


def test_the_novelty_bonus_says_when_it_pays_nearly_every_step():
    """Probe 18: on observations that never repeat exactly (continuous values), the bonus, on by default in run
    scope, paid 94 % of the steps: a reward for steps, not for new places, with nothing said."""
    from experience_wrappers.trials.novelty import NOVEL_SAID, NoveltyBonus

    class Drifting(Grid):  # the room's cells with a small jitter (not reseeded by the run's resets): none repeats
        jitter = np.random.default_rng(1)

        def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
            obs, *rest = super().step(action)
            return obs + self.jitter.uniform(0, 0.01, 2).astype(np.float32), *rest

    def paid(env_cls: type[Grid]) -> list[warnings.WarningMessage]:
        mem = memory(seed=0)
        env = NoveltyBonus(ExperienceWrapper(env_cls(max_steps=40), mem, scope="run", instances=[24], trials=4,
                                             guided=True), 0.02)
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(NOVEL_SAID + 200):
                *_, terminated, truncated, _ = env.step(int(rng.integers(4)))
                if terminated or truncated:
                    env.reset()
        return [w for w in caught if "novelty bonus paid" in str(w.message)]

    assert len(paid(Drifting)) == 1
    assert not paid(Grid)  # a room's cells repeat: it pays for new ones
