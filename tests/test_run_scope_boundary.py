"""Run scope on a user's own envs (a hostile user's cases): successes reported on successes only
are read one way by every wrapper and by evaluation, self-imitation keeps what the run judged a
success (not what the novelty bonus paid), an env's unenforced ``max_steps`` cannot make a trial
endless, demonstrations' actions are checked in every action space, and what run scope cannot do
is refused when it is asked."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3 import A2C, PPO

from experience_wrappers.manager import SuccessReports
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.wrapper import trial_env
from integrations.sb3 import ComplementaryRL, ExperiencePolicy, crl_policy_kwargs
from integrations.sb3.trials_evaluation import evaluate_trials

SMALL = {"n_envs": 2, "group_size": 2, "seed": 0, "algorithm_kwargs": {"n_steps": 32, "batch_size": 64}}


class Line(gym.Env):
    """A hidden target on a line, chosen by the reset seed; Box actions; success within ``tol``.

    ``report``: ``"always"`` sets ``info["success"]`` at every step, ``"only"`` on successes only,
    ``"never"`` not at all. ``shaping`` pays the distance gained, so failed trials can sum above 0.
    ``max_steps``: an attribute only (the env does not end its episodes by it)."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)
    action_space = spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, report: str = "always", shaping: bool = False, tol: float = 0.1,
                 max_steps: int | None = None) -> None:
        self.report, self.shaping, self.tol = report, shaping, tol
        if max_steps is not None:
            self.max_steps = max_steps

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.target, self.pos = float(np.random.default_rng(seed).uniform(-0.9, 0.9)), 0.0
        return np.array([self.pos], np.float32), {}

    def step(self, action):
        before = abs(self.pos - self.target)
        self.pos = float(np.clip(self.pos + 0.2 * float(np.asarray(action).reshape(-1)[0]), -1, 1))
        after = abs(self.pos - self.target)
        won = after < self.tol
        reward = 1.0 if won else (max(0.0, before - after) if self.shaping else 0.0)
        info = {"success": won} if self.report == "always" or (self.report == "only" and won) else {}
        return np.array([self.pos], np.float32), reward, won, False, info


def test_a_success_reported_on_successes_only_makes_every_wrapper_count_the_others_as_failures():
    memory = TrialMemory(Line.observation_space, Line.action_space, horizon=5)
    won = trial_env(gym.wrappers.TimeLimit(Line(report="only", tol=2.0), 5), memory, instances=[0], trials=1,
                    learn=False)
    lost = trial_env(gym.wrappers.TimeLimit(Line(report="only", shaping=True, tol=0.0), 5), memory, instances=[1],
                     trials=1, learn=False)
    won.reset(seed=0)
    assert won.step(np.array([0.0], np.float32))[4]["trial_success"]
    lost.reset(seed=0)
    infos = [lost.step(np.array([1.0], np.float32))[4] for _ in range(5)]
    assert infos[-1]["trial_success"] is False  # another wrapper's report decides: no key is a failure now
    reports = SuccessReports()
    reports({"success": True})
    res = evaluate_trials(lambda obs, deterministic=False: (np.ones((len(obs["observation"]), 1), np.float32), None),
                          lambda: gym.wrappers.TimeLimit(Line(report="only", shaping=True, tol=0.0), 5),
                          lambda: TrialMemory(Line.observation_space, Line.action_space, horizon=5), [3, 4],
                          trials=2, repeats=1, conditions=["without_experience"], success_reports=reports)
    assert res["without_experience"]["success_by_trial"] == [0.0, 0.0]  # (the shaping sums above 0 every time)


def test_self_imitation_keeps_the_trials_the_run_judged_successes_not_what_the_bonus_paid():
    run = ComplementaryRL(lambda: gym.wrappers.TimeLimit(Line(report="never", tol=0.0), 8), scope="run",
                          instances=range(4), trials=2, novelty_bonus=0.5, imitate=False, **SMALL)
    with pytest.warns(UserWarning, match="reports no success"):
        run.learn(256)
    assert run.replay is not None and run.replay.counts()["own"] == 0  # every trial failed


def test_an_env_whose_max_steps_is_only_an_attribute_still_has_its_trials_end():
    run = ComplementaryRL(lambda: Line(tol=0.0, max_steps=10), scope="run", instances=range(4), trials=2,
                          imitate=False, **SMALL)
    run.learn(128)
    ended = sum(len(run.log_callback.recent[kind]) for kind in ("guided", "free"))
    assert ended >= 128 // 10 - 2  # trials of 10 steps ended all along the 128 steps
    res = run.evaluate([9], repeats=1, conditions=["without_experience"])
    assert res["without_experience"]["runs"] == 1


def test_evaluating_experience_conditions_of_a_run_without_experience_is_refused():
    run = ComplementaryRL(lambda: gym.wrappers.TimeLimit(Line(), 8), scope="run", instances=range(4), trials=2,
                          experience=False, **SMALL)
    with pytest.raises(ValueError, match="experience=False.*only without_experience"):
        run.evaluate([9], repeats=1, conditions=["with_experience", "without_experience"])


@pytest.mark.parametrize("actions, err, match", [
    (np.zeros(3, np.float32), ValueError, r"actions of shape \(\) per step .* takes \(1,\)"),
    (np.array([[0.0], [np.nan], [0.0]], np.float32), ValueError, "NaN or infinite action at step 1"),
    (np.array([["a"], ["b"], ["c"]]), ValueError, "not numbers"),
])
def test_box_actions_of_a_demonstration_are_checked_naming_its_source(actions, err, match):
    memory = TrialMemory(Line.observation_space, Line.action_space, horizon=5)
    with pytest.raises(err, match=match):
        memory.check_demonstration(np.zeros((3, 1), np.float32), actions, "demonstrations(7)")


def test_box_actions_outside_the_bounds_warn_and_multidiscrete_ones_out_of_range_are_refused():
    memory = TrialMemory(Line.observation_space, Line.action_space, horizon=5)
    with pytest.warns(UserWarning, match=r"demonstrations\(7\) gave action \[50.0\] at step 2, outside"):
        memory.check_demonstration(np.zeros((3, 1), np.float32), np.array([[0.0], [0.5], [50.0]]), "demonstrations(7)")
    grid = TrialMemory(Line.observation_space, spaces.MultiDiscrete([3, 3]), horizon=5)
    with pytest.raises(ValueError, match=r"action \[1, 3\] at step 1, not one of the env's MultiDiscrete"):
        grid.check_demonstration(np.zeros((2, 1), np.float32), np.array([[0, 0], [1, 3]]), "demonstrations(7)")
    with pytest.raises(ValueError, match=r"gave rewards \[1.0, 1.0\] \(shape \(2,\), dtype float64\) for 3 steps"):
        memory.add_demonstration(1, np.zeros((3, 1), np.float32), np.zeros((3, 1), np.float32), np.ones(2),
                                 source="demonstrations(7)")


def test_a_held_out_instance_without_a_demonstration_is_refused_before_any_condition_runs():
    steps = []

    def predict(obs, deterministic=False):
        steps.append(1)
        return np.zeros((len(obs["observation"]), 1), np.float32), None

    demos = {3: (np.zeros((2, 1), np.float32), np.zeros((2, 1), np.float32))}
    with pytest.raises(ValueError, match=r"demonstrations\(4\) gave None"):
        evaluate_trials(predict, lambda: gym.wrappers.TimeLimit(Line(), 5),
                        lambda: TrialMemory(Line.observation_space, Line.action_space, horizon=5), [3, 4],
                        trials=1, repeats=1, demonstrations=demos.get)
    assert steps == []


class Mixed(Line):
    """A Dict observation with a Discrete part (VecNormalize takes Box keys only)."""

    observation_space = spaces.Dict({"pos": spaces.Box(-1, 1, (1,), np.float32), "phase": spaces.Discrete(3)})

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        return {"pos": obs, "phase": 0}, info

    def step(self, action):
        obs, *rest = super().step(action)
        return ({"pos": obs, "phase": 1}, *rest)


def test_vec_normalize_in_run_scope_normalises_the_float_box_keys_only():
    run = ComplementaryRL(lambda: gym.wrappers.TimeLimit(Mixed(), 8), scope="run", instances=range(4), trials=2,
                          vec_normalize={}, imitate=False, **SMALL)
    assert run.model.get_env().norm_obs_keys == ["pos"]


class SmallPicture(gym.Env):
    observation_space = spaces.Dict({"image": spaces.Box(0, 255, (24, 24, 3), np.uint8)})
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"image": np.zeros((24, 24, 3), np.uint8)}, {}

    def step(self, action):
        return {"image": np.zeros((24, 24, 3), np.uint8)}, 0.0, True, False, {}


def test_an_image_too_small_for_sb3s_default_cnn_is_named_with_the_remedy():
    from experience_wrappers import ExperienceBank, ExperienceWrapper

    env = ExperienceWrapper(SmallPicture(), ExperienceBank(), manager_kwargs={"mode": "sync"})
    with pytest.raises(ValueError, match=r"'image' is an image of shape .*at least 36; give a features extractor"):
        PPO(ExperiencePolicy, env, policy_kwargs=crl_policy_kwargs(), n_steps=32)


def test_another_algorithm_in_run_scope_is_refused_by_name():
    with pytest.raises(TypeError, match=r"takes no algorithm \(run scope trains PPO"):
        ComplementaryRL(lambda: gym.wrappers.TimeLimit(Line(), 8), scope="run", instances=range(4), algorithm=A2C)


class Grid(gym.Env):
    """A hidden goal on a 5x5 grid chosen by the reset seed (0..24 only); Discrete(4) moves; no step cap of its own."""

    observation_space = spaces.Box(0, 4, (2,), np.float32)
    action_space = spaces.Discrete(4)

    def __init__(self, start: float = 0.0) -> None:
        self.start = start  # where every trial starts (both coordinates)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None and not 0 <= seed < 25:
            raise ValueError(f"seed must be in 0..24, got {seed}")
        self.goal, self.pos = divmod(0 if seed is None else seed, 5), np.full(2, self.start)
        return self.pos.astype(np.float32), {}

    def step(self, action):
        self.pos = np.clip(self.pos + [(0, 1), (1, 0), (0, -1), (-1, 0)][int(action)], 0, 4)
        won = bool(tuple(self.pos.astype(int)) == self.goal)
        return self.pos.astype(np.float32), float(won), won, False, {"success": won}


def _grid_run(**kw):
    return ComplementaryRL(lambda: gym.wrappers.TimeLimit(Grid(), 12), scope="run", instances=range(2, 10),
                           **{**SMALL, "trials": 2, **kw})


class OtherGrid(Grid):
    """The same spaces as Grid, another env."""


def test_a_run_loaded_onto_another_env_is_refused_or_warned_of_and_an_older_save_still_loads(tmp_path):
    """A factory is not saved: a load onto an env of another step cap rebuilt the memory with another horizon
    (its entries timed by it) and one of another task trained on silently; method.json now records the env."""
    import json
    import warnings

    run = _grid_run()
    run.save(tmp_path / "r")
    run.close()
    with pytest.raises(ValueError, match="capped at 12 steps .* caps them at 8"):
        ComplementaryRL.load(tmp_path / "r", env=lambda: gym.wrappers.TimeLimit(Grid(), 8))
    with pytest.raises(ValueError, match="trained on .*:Grid and the env given makes .*:OtherGrid"):
        ComplementaryRL.load(tmp_path / "r", env=lambda: gym.wrappers.TimeLimit(OtherGrid(), 12))
    with pytest.warns(UserWarning, match="first observation differs"):
        ComplementaryRL.load(tmp_path / "r", env=lambda: gym.wrappers.TimeLimit(Grid(start=1.0), 12)).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same env: nothing said
        ComplementaryRL.load(tmp_path / "r", env=lambda: gym.wrappers.TimeLimit(Grid(), 12)).close()
    method = tmp_path / "r" / "method.json"
    saved = json.loads(method.read_text())
    assert saved["env_facts"]["horizon"] == 12 and saved["env_facts"]["first_observation"]
    del saved["env_facts"]  # a save made before the env was recorded: loads as before
    method.write_text(json.dumps(saved))
    ComplementaryRL.load(tmp_path / "r", env=lambda: gym.wrappers.TimeLimit(Grid(), 8)).close()


def test_run_best_true_and_taken_are_one_setting_on_load_and_another_mark_is_refused(tmp_path):
    """``run_best=True`` is ``"taken"``: a load naming either matched only a save that named the same."""
    import json

    def grid():
        return gym.wrappers.TimeLimit(Grid(), 12)

    run = _grid_run(memory_kwargs={"run_best": True})
    run.save(tmp_path / "r")
    run.close()
    assert json.loads((tmp_path / "r" / "method.json").read_text())["memory_kwargs"] == {"run_best": "taken"}
    for name in (True, "taken"):
        ComplementaryRL.load(tmp_path / "r", env=grid, memory_kwargs={"run_best": name}).close()
    with pytest.raises(ValueError, match="memory_kwargs"):
        ComplementaryRL.load(tmp_path / "r", env=grid, memory_kwargs={"run_best": "reached"})
    method = tmp_path / "r" / "method.json"
    saved = json.loads(method.read_text())
    saved["memory_kwargs"] = {"run_best": True}  # as saves wrote it before
    method.write_text(json.dumps(saved))
    ComplementaryRL.load(tmp_path / "r", env=grid, memory_kwargs={"run_best": "taken"}).close()


def test_a_misspelt_memory_setting_and_an_instance_past_the_envs_are_named_when_built():
    with pytest.raises(TypeError, match="memory_kwargs\\['run_bst'\\] is not a TrialMemory setting \\(did you mean "
                                        "'run_best'"):
        _grid_run(memory_kwargs={"run_bst": True})
    with pytest.raises(ValueError, match="cannot reset to instance 30"):  # the highest, not only the first
        ComplementaryRL(lambda: gym.wrappers.TimeLimit(Grid(), 12), scope="run", instances=[2, 30, 3], **SMALL)
    with pytest.warns(UserWarning, match="horizon'\\] = 20 is past the env's own step cap 12"):
        _grid_run(memory_kwargs={"horizon": 20}).close()
    with pytest.warns(UserWarning, match="instances holds 2 repeats"):
        ComplementaryRL(lambda: gym.wrappers.TimeLimit(Grid(), 12), scope="run", instances=[2, 2, 3, 3], **SMALL).close()
    with pytest.warns(UserWarning, match="relocate_every=12 is not below the horizon 12"):
        _grid_run(memory_kwargs={"run_best": "located", "dense_rewards": True, "relocate_every": 12}).close()
    with pytest.warns(UserWarning, match="show_entries=False shows none: it does nothing; pass imitate=False"):
        _grid_run(memory_kwargs={"run_best": True, "show_entries": False}).close()


def test_groups_that_guide_no_one_or_learn_nothing_are_said_when_built():
    with pytest.raises(ValueError, match="no member is guided"):
        _grid_run(free_members=2)
    with pytest.warns(UserWarning, match="the extractor is\\s+never trained"):
        _grid_run(free_members=0).close()
    with pytest.warns(UserWarning, match="trials=1 without demonstrations"):
        _grid_run(trials=1).close()


def test_an_instance_the_env_cannot_reset_to_is_named_when_built():
    with pytest.raises(ValueError, match=r"cannot reset to instance 150"):
        ComplementaryRL(lambda: gym.wrappers.TimeLimit(Grid(), 12), scope="run", instances=[150, 3], **SMALL)


def test_a_closed_run_says_so_and_a_run_saved_without_demonstrations_loads_without_them(tmp_path):
    run = _grid_run()
    run.learn(64)
    run.save(tmp_path / "r")
    run.close()
    run.close()  # twice: nothing
    for call in (lambda: run.learn(64), lambda: run.evaluate([20])):
        with pytest.raises(RuntimeError, match="this run is closed"):
            call()
    # a closed run still saves (its model and memory live in this process): nothing it learned is lost
    run.save(tmp_path / "s")
    back = ComplementaryRL.load(tmp_path / "s", env=lambda: gym.wrappers.TimeLimit(Grid(), 12))
    try:
        for a, b in zip(run.model.policy.parameters(), back.model.policy.parameters(), strict=True):
            assert torch.equal(a, b)
    finally:
        back.close()
    demo = lambda i: (np.zeros((2, 2), np.float32), np.array([0, 1]))  # noqa: E731
    with pytest.raises(ValueError, match="saved without demonstrations"):
        ComplementaryRL.load(tmp_path / "r", env=lambda: gym.wrappers.TimeLimit(Grid(), 12), demonstrations=demo)


@pytest.mark.parametrize("demo, match", [
    (lambda i: (np.zeros((2, 2), np.float32), np.zeros((2, 2), np.int64)), r"actions of shape \(2, 2\)"),
    (lambda i: (np.zeros((2, 2), np.float32), np.array([0, 1]), np.array([0.0, np.nan])), "one finite number per step"),
    (lambda i: (np.zeros((2, 2), np.float32), np.array([0, 1]), np.array(["a", "b"])), "one finite number per step"),
])
def test_a_demonstrations_actions_and_rewards_are_checked_when_the_run_is_built(demo, match):
    with pytest.raises(ValueError, match=match):
        _grid_run(demonstrations=demo)


def test_flags_are_bools_and_a_trial_is_cut_at_the_memorys_horizon():
    for name in ("trial_index", "write_failures", "dense_rewards", "train_extractor"):
        with pytest.raises(TypeError, match=name):
            TrialMemory(Grid.observation_space, Grid.action_space, horizon=5, **{name: "no"})
    memory = TrialMemory(Grid.observation_space, Grid.action_space, horizon=5)
    for kw, match in (({"learn": "False"}, "learn"), ({"guided": "no"}, "guided"),
                      ({"demonstrations": 5}, "demonstrations must be a function")):
        with pytest.raises(TypeError, match=match):
            trial_env(Grid(), memory, instances=[3], trials=2, **kw)
    env = trial_env(Grid(), memory, instances=[24], trials=2, learn=False)  # the env has no cap of its own
    env.reset(seed=0)
    ends = [env.step(2)[2:4] for _ in range(5)]  # moving left never reaches (4, 4)
    assert ends[-1] == (False, True) and not any(any(e) for e in ends[:-1])


def test_self_imitation_takes_box_actions_of_any_shape():
    class Square(gym.Env):
        observation_space = spaces.Box(-1, 1, (2,), np.float32)
        action_space = spaces.Box(-1, 1, (2, 2), np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.target = np.random.default_rng(seed).uniform(-1, 1)
            return np.zeros(2, np.float32), {}

        def step(self, action):
            won = bool(abs(float(np.asarray(action).mean()) - self.target) < 0.5)
            return np.zeros(2, np.float32), float(won), won, False, {"success": won}

    run = ComplementaryRL(lambda: gym.wrappers.TimeLimit(Square(), 4), scope="run", instances=range(8), trials=2,
                          imitate=False, **SMALL)
    try:
        run.learn(256)
        assert run.sil_callback is not None and run.sil_callback.replay.indices().size > 0
    finally:
        run.close()


@pytest.mark.parametrize("key", ["seed", "policy_kwargs", "tensorboard_log", "verbose"])
def test_algorithm_kwargs_naming_the_runs_own_arguments_are_refused_by_name(key):
    """Not SB3's "got multiple values", nor one silently replaced (tensorboard_log, policy_kwargs)."""
    with pytest.raises(ValueError, match=f"algorithm_kwargs names {key}, which ComplementaryRL sets"):
        _grid_run(algorithm_kwargs={"n_steps": 32, key: {} if key == "policy_kwargs" else 1})
    if key != "verbose":  # (the task scope takes verbose in algorithm_kwargs: it has no verbose of its own)
        with pytest.raises(ValueError, match=f"algorithm_kwargs names {key}"):
            ComplementaryRL("CartPole-v1", n_envs=1, algorithm_kwargs={key: {} if key == "policy_kwargs" else 1})


@pytest.mark.parametrize("kw, err, match", [
    ({"verbose": "loud"}, ValueError, "verbose must be an int"), ({"tensorboard_log": 5}, TypeError, "tensorboard_log must be"),
    ({"features_kwargs": {"hidden": 0}}, ValueError, "hidden"),
])
def test_the_runs_own_settings_are_named_when_built(kw, err, match):
    with pytest.raises(err, match=match):
        _grid_run(**kw)


def test_a_horizon_past_the_envs_own_cap_is_said() -> None:
    """Trials end at the env's TimeLimit; a longer horizon times each step as a share of steps no trial
    has (the probe's memory_kwargs={'horizon': 100} on a cap of 8 was taken unsaid). Warned, not
    refused: a save made with one still loads."""
    from integrations.minihack.hidden_goal import HiddenGoalRoom

    def capped() -> gym.Env:
        return gym.wrappers.TimeLimit(HiddenGoalRoom(5, 25), 8)

    with pytest.warns(UserWarning, match=r"horizon'\] = 100 is past the env's own step cap 8"):
        ComplementaryRL(capped, scope="run", instances=[1, 2], memory_kwargs={"horizon": 100}, **SMALL).close()
    run = ComplementaryRL(capped, scope="run", instances=[1, 2], memory_kwargs={"horizon": 6}, **SMALL)
    assert run.memory.layout.horizon == 6
    run.close()


def test_a_demonstrations_function_that_fails_on_a_later_instance_is_named_with_it() -> None:
    """The first instance's demonstration is checked when the run is built; one that fails on another
    instance does so in learn(), and the error names the instance (it escaped raw, mid-rollout)."""
    from integrations.minihack.hidden_goal import HiddenGoalRoom, goal_demonstration

    def demos(instance: int):
        if instance != 1:
            raise KeyError(f"no recording of {instance}")
        return goal_demonstration(instance)

    run = ComplementaryRL(lambda: HiddenGoalRoom(5, 8), scope="run", instances=[1, 2], demonstrations=demos,
                          demo_ratio=1.0, **SMALL)
    try:
        with pytest.raises(ValueError, match=r"demonstrations\(2\) raised KeyError: 'no recording of 2'"):
            run.learn(512)
    finally:
        run.close()


def test_an_instance_given_twice_to_an_evaluation_is_refused() -> None:
    """Each was reported as an instance of its own (evaluate([100, 100, 100]) said 3 instances)."""
    from integrations.minihack.hidden_goal import HiddenGoalRoom

    run = ComplementaryRL(lambda: HiddenGoalRoom(5, 8), scope="run", instances=[1, 2], **SMALL)
    try:
        with pytest.raises(ValueError, match=r"instances holds \[40\] more than once"):
            run.evaluate([40, 41, 40], repeats=1)
    finally:
        run.close()


class Closing(Line):
    """A :class:`Line` that reports success on successes only, with a success radius set for the whole class: wide
    in training (every trial succeeds), nil in evaluation (none can; the shaping sums above 0 every time)."""

    tol_now = 2.0

    def __init__(self) -> None:
        super().__init__(report="only", shaping=True, max_steps=4)

    def reset(self, *, seed=None, options=None):
        self.tol = type(self).tol_now
        return super().reset(seed=seed, options=options)


def test_a_loaded_run_reads_a_trial_without_the_success_key_as_a_failure_as_its_training_did(tmp_path) -> None:
    """Whether the env reports success is saved with the run: a loaded run's trials that end without the key are
    failures (they were read as successes where their shaped rewards summed above 0), as before the save."""
    Closing.tol_now = 2.0
    run = ComplementaryRL(Closing, scope="run", instances=range(4), trials=2, n_envs=4, group_size=4, seed=0,
                          self_imitation=False, imitate=False, algorithm_kwargs={"n_steps": 16, "batch_size": 64})
    run.learn(64)
    assert run.memory.success_reports.seen
    run.save(tmp_path / "r")
    back = ComplementaryRL.load(tmp_path / "r", env=Closing)
    try:
        Closing.tol_now = 0.0  # no trial can succeed now
        for r in (run, back):
            res = r.evaluate([10, 11], repeats=1)
            assert res["with_experience"]["success_by_trial"] == [0.0, 0.0]
            assert res["without_experience"]["success_by_trial"] == [0.0, 0.0]
    finally:
        Closing.tol_now = 2.0
        run.close()
        back.close()


class Unseeded(Line):
    """A :class:`Line` whose target ignores the reset seed and shows in the observation."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.target = self.pos = float(np.random.default_rng().uniform(-0.9, 0.9))
        return np.array([self.pos], np.float32), {}


def test_resets_of_one_instance_that_differ_are_said_in_the_log(caplog) -> None:
    """A run's trials are one instance only where ``reset(seed)`` fixes it; two resets that differ are logged (a start
    varied on purpose differs too, so it is not refused), and resets that agree are not."""
    from integrations.sb3.run_env import env_facts

    with caplog.at_level("INFO", logger="integrations.sb3.run_env"):
        assert env_facts(Unseeded(), [0, 1], 5)["first_observation"] is None
        assert "two reset(seed=0) gave different observations" in caplog.text
        caplog.clear()
        assert env_facts(Line(), [0, 1], 5)["first_observation"] is not None
        assert "different observations" not in caplog.text


def test_the_baseline_says_which_parts_of_the_method_it_was_asked_for_and_does_not_use(tmp_path):
    """Probe 18: experience=False with self_imitation=True and novelty_bonus=0.5 gave plain PPO, and its save
    recorded both off, with nothing said."""
    make = lambda: gym.wrappers.TimeLimit(Line(), 8)  # noqa: E731
    with pytest.warns(UserWarning, match=r"experience=False is the baseline.*self_imitation=True, "
                                         r"novelty_bonus=0.5 not used"):
        run = ComplementaryRL(make, scope="run", instances=range(4), trials=2, experience=False,
                              self_imitation=True, novelty_bonus=0.5, **SMALL)
    assert run.replay is None and run._settings["novelty_bonus"] == 0.0
    run.save(tmp_path / "run")
    run.close()
    with warnings.catch_warnings():  # the defaults, and the saved baseline loaded again: nothing to say
        warnings.simplefilter("error", UserWarning)
        ComplementaryRL(make, scope="run", instances=range(4), trials=2, experience=False, **SMALL).close()
        ComplementaryRL.load(tmp_path / "run", env=make).close()
    on = ComplementaryRL(make, scope="run", instances=range(4), trials=2, **SMALL)  # None: the parts on
    assert on._settings["self_imitation"] is True and on._settings["novelty_bonus"] == 0.02
    on.close()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"features_kwargs": {"max_pool": False}}, ValueError, r"features_kwargs: unknown argument\(s\) \['max_pool'\]"),
    ({"imitate": {"max_dist": 1.0}}, ValueError, r"imitate: unknown argument\(s\) \['max_dist'\].*'max_distance'"),
    ({"vec_normalize": True}, TypeError, r"vec_normalize must be VecNormalize's keyword arguments"),
    ({"vec_normalize": {"fo": 1}}, ValueError, r"vec_normalize: unknown argument\(s\) \['fo'\]"),
    ({"vec_normalize": {"norm_obs_keys": ["trial_entries"]}}, ValueError,
     r"norm_obs_keys \['trial_entries'\]: not a float Box key of the env's own, or one the method keeps raw"),
])
def test_the_readers_imitations_and_normalisations_arguments_are_checked_where_the_run_is_built(kwargs, error, match):
    """Probe 18: these failed as a TypeError or KeyError inside SB3, after the envs were built, or (the entries
    named in norm_obs_keys) were taken, though the entries are never to be rescaled."""
    with pytest.raises(error, match=match):
        ComplementaryRL(lambda: gym.wrappers.TimeLimit(Line(), 8), scope="run", instances=range(4), trials=2,
                        **SMALL, **kwargs)


def test_run_scopes_arguments_given_to_the_task_scope_name_their_scope():
    with pytest.raises(TypeError, match=r"instances, trials: argument\(s\) of scope='run'; pass scope='run'"):
        ComplementaryRL("CartPole-v1", instances=[1, 2], trials=2)
    # probe 24: one that is the algorithm's own is also said where the task scope takes it
    with pytest.raises(TypeError, match=r"verbose: .* algorithm_kwargs here: algorithm_kwargs=\{'verbose': ...\}"):
        ComplementaryRL("CartPole-v1", verbose=1)


def test_a_load_onto_another_env_says_so_before_its_demonstrations_and_the_baseline_needs_none(tmp_path):
    """Probe 18: a run with demonstrations loaded onto an env of another class was refused for its demonstrations'
    observations, not for the env; a baseline built with demonstrations (which it never reads) could not be loaded
    without them."""
    make = lambda: gym.wrappers.TimeLimit(Line(), 8)  # noqa: E731
    demo = lambda i: (np.zeros((2, 1), np.float32), np.zeros((2, 1), np.float32))  # noqa: E731
    run = ComplementaryRL(make, scope="run", instances=range(4), trials=2, demonstrations=demo, **SMALL)
    run.save(tmp_path / "r")
    run.close()
    with pytest.raises(ValueError, match="trained on .*:Line and the env given makes .*:Mixed"):
        ComplementaryRL.load(tmp_path / "r", env=lambda: gym.wrappers.TimeLimit(Mixed(), 8), demonstrations=demo)
    base = ComplementaryRL(make, scope="run", instances=range(4), trials=2, demonstrations=demo, experience=False,
                           **SMALL)
    base.save(tmp_path / "b")
    base.close()
    ComplementaryRL.load(tmp_path / "b", env=make).close()
