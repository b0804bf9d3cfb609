"""``ComplementaryRL(env, scope="run", ...)``: the trials method in the one object.

Built, trained, evaluated on held-out instances, saved and loaded through the same surface
as the task scope, with the task scope's promises: atomic saves, stale saves refused,
settings round-trip or are refused by name."""

from __future__ import annotations

import json
import logging
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecNormalize

from experience_wrappers.errors import RunFileError
from experience_wrappers.trials.wrapper import ENTRIES_KEY, MASK_KEY
from integrations.minihack.hidden_goal import HiddenGoalRoom, goal_demonstration
from integrations.sb3 import ComplementaryRL
from integrations.sb3.run_scope import VEC_NORMALIZE_FILE, RunScopeRL
from integrations.sb3.trials_logging import TrialsLogCallback

TRAIN = [5, 6, 7, 8]
SMALL = {"instances": TRAIN, "n_envs": 4, "trials": 2, "memory_kwargs": {"horizon": 25, "k": 4, "exp_dim": 4,
                                                                       "write_failures": True},
         "algorithm_kwargs": {"n_steps": 32, "batch_size": 64, "n_epochs": 1}}


def room() -> HiddenGoalRoom:
    return HiddenGoalRoom(10, 25)


def make(**kw) -> RunScopeRL:
    run = ComplementaryRL(room, scope="run", **{**SMALL, **kw})
    assert isinstance(run, RunScopeRL)
    return run


def params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.policy.parameters()]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


# ------------------------------------------------------------------------- construction
class UsersComplementaryRL(ComplementaryRL):
    """A user's subclass of the task-scope object: it serves the task scope only."""


def test_scope_selects_the_class_and_bad_scopes_are_refused() -> None:
    run = make()
    try:
        assert isinstance(run, ComplementaryRL) and run.trials == 2 and run.instances == TRAIN
    finally:
        run.close()
    with pytest.raises(ValueError, match="scope must be 'task' or one of"):
        ComplementaryRL(room, scope="episode")
    with pytest.raises(ValueError, match="task scope"):
        UsersComplementaryRL(room, scope="run")
    with pytest.raises(TypeError, match="demonstrations must be a function"):
        ComplementaryRL(room, scope="run", instances=TRAIN, demonstrations=3)
    with pytest.raises(ValueError, match="novelty_bonus must be a finite number >= 0, got 'x'"):
        make(novelty_bonus="x")


def _bad_demo(kind: str):
    def demo(instance: int) -> Any:
        obs, actions = goal_demonstration(instance)
        if kind == "form":
            return 5
        if kind == "width":
            return {k: np.concatenate([v, v], axis=-1) for k, v in obs.items()} if isinstance(obs, dict) else \
                np.concatenate([obs, obs], axis=-1), actions
        return obs, np.full_like(actions, 99)  # an action the env does not have
    return demo


@pytest.mark.parametrize("kind, err, match", [("form", TypeError, "must return"), ("width", ValueError, "shape"),
                                              ("action", ValueError, "action 99 at step 0")])
def test_a_demonstration_source_is_checked_when_the_run_is_built(kind, err, match) -> None:
    """Not at a guided run's first draw, steps into learn()."""
    with pytest.raises(err, match=match):
        make(demonstrations=_bad_demo(kind))


def test_a_setting_a_save_could_not_write_is_said_when_the_run_is_built_and_refused_at_save(tmp_path) -> None:
    with pytest.warns(UserWarning, match="learning_rate"):
        run = make(algorithm_kwargs={"learning_rate": lambda p: 3e-4 * p})
    try:
        with pytest.raises(TypeError, match="learning_rate"):
            run.save(tmp_path / "r")
        assert not (tmp_path / "r").exists()
    finally:
        run.close()


def test_the_horizon_is_the_envs_cap_and_without_one_a_named_error() -> None:
    run = ComplementaryRL(lambda: HiddenGoalRoom(10, 17), scope="run", instances=TRAIN, n_envs=4)
    try:
        assert run.memory.layout.horizon == 17
    finally:
        run.close()

    def capless():
        env = HiddenGoalRoom(10, 25)
        env.max_steps = None
        return env
    with pytest.raises(ValueError, match="horizon"):
        ComplementaryRL(capless, scope="run", instances=TRAIN, n_envs=4)


class Endless(gym.Env):
    """A real env that never ends a trial by itself and has no step cap of its own; it keeps the
    longest episode it ran (class-wide: DummyVecEnv runs its copies in this process)."""

    longest = 0
    observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        return np.zeros(self.observation_space.shape, self.observation_space.dtype)

    def step(self, action):
        self.t += 1
        Endless.longest = max(Endless.longest, self.t)
        return self._obs(), 0.0, False, False, {"is_success": False}


class Picture(Endless):
    """The same, seen as a 40 x 40 RGB image (4,800 values per observation)."""

    observation_space = spaces.Box(0, 255, (40, 40, 3), np.uint8)


ENDLESS = {"instances": TRAIN, "n_envs": 4, "trials": 2, "algorithm_kwargs": {"n_steps": 16, "batch_size": 64,
                                                                              "n_epochs": 1}}


def test_a_horizon_given_caps_every_trial_in_training_and_evaluation_on_an_env_without_a_cap() -> None:
    Endless.longest = 0
    run = ComplementaryRL(Endless, scope="run", memory_kwargs={"horizon": 6, "k": 4, "exp_dim": 4,
                                                               "write_failures": True}, **ENDLESS)
    try:
        run.learn(64)
        assert Endless.longest == 6 and run.memory.stats["trials_written"] >= 1
        Endless.longest = 0
        result = run.evaluate([9], repeats=1)  # returns: before, its trials never ended
        assert Endless.longest == 6 and result["with_experience"]["runs"] == 1
    finally:
        run.close()


def test_the_cap_of_a_time_limit_among_the_wrappers_is_the_horizon() -> None:
    run = ComplementaryRL(lambda: gym.wrappers.TimeLimit(Endless(), 12), scope="run", **ENDLESS)
    try:
        assert run.memory.layout.horizon == 12
    finally:
        run.close()


def test_an_image_observation_is_keyed_by_a_projection_and_its_trials_are_written() -> None:
    run = ComplementaryRL(Picture, scope="run", memory_kwargs={"horizon": 6, "k": 4, "exp_dim": 4,
                                                               "write_failures": True}, **ENDLESS)
    try:
        assert run.memory.key_dim == 32  # the flattened image would be 4,800 wide
        run.learn(64)
        assert run.memory.stats["entries_written"] >= 6  # a whole trial, one entry per step
    finally:
        run.close()


class Clashing(Endless):
    """An env whose own observation has a key run scope adds."""

    observation_space = spaces.Dict({"position": spaces.Box(0.0, 1.0, (2,), np.float32),
                                     MASK_KEY: spaces.Box(0.0, 1.0, (3,), np.float32)})

    def _obs(self):
        return {"position": np.zeros(2, np.float32), MASK_KEY: np.full(3, 0.5, np.float32)}


class Hand(Endless):
    """An env whose observation is a Tuple (as Blackjack's)."""

    observation_space = spaces.Tuple((spaces.Discrete(3), spaces.Discrete(2)))

    def _obs(self):
        return (0, 0)


@pytest.mark.parametrize(("env", "match"), [
    (Clashing, r"the observation already has the key\(s\) \['trial_mask'\]; the run scope's trial env needs them"),
    (Hand, r"Tuple observations are not supported.*FlattenObservation\(env\) inside the run scope's trial env")])
def test_observations_the_task_scope_refuses_are_refused_in_run_scope_by_name(env, match) -> None:
    with pytest.raises(ValueError, match=match):
        ComplementaryRL(env, scope="run", memory_kwargs={"horizon": 6}, **ENDLESS)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"policy_kwargs": {"features_extractor_class": object}}, ValueError,
     r"\['features_extractor_class'\]: run scope's features extractor is the entry reader .*features_kwargs"),
    ({"demo_ratio": 2.0}, ValueError, "demo_ratio"),
    ({"demo_ratio": float("nan")}, ValueError, "demo_ratio")])
def test_settings_run_scope_would_replace_or_ignore_are_refused_by_name(kwargs, exc, match) -> None:
    with pytest.raises(exc, match=match):
        ComplementaryRL(Endless, scope="run", memory_kwargs={"horizon": 6}, **{**ENDLESS, **kwargs})


def test_the_policy_given_an_envs_own_observation_names_the_remedy() -> None:
    run = ComplementaryRL(Endless, scope="run", memory_kwargs={"horizon": 6}, **ENDLESS)
    try:
        with pytest.raises(ValueError, match="the env's own observation.*ComplementaryRL.load"):
            run.model.predict(np.zeros(2, np.float32))
    finally:
        run.close()


def test_experience_false_is_the_same_network_shown_nothing() -> None:
    run = make(experience=False)
    try:
        assert run.memory.scope == "none" and run.sil_callback is None and len(run.callbacks) == 1
        assert run.manager is None  # as in task scope
        masks = []

        def look(_locals, _globals) -> bool:
            masks.append(np.asarray(_locals["new_obs"][MASK_KEY]).copy())
            return True
        run.learn(256, callback=_Every(look))
        assert masks and not np.concatenate(masks).any()
    finally:
        run.close()


class _Every(TrialsLogCallback):
    """A callback calling ``fn`` at every step (on the trials log, so it also checks the log's keys)."""

    def __init__(self, fn) -> None:
        super().__init__(trials=2, every=64)
        self.fn = fn

    def _on_step(self) -> bool:
        super()._on_step()
        return self.fn(self.locals, self.globals)


# ------------------------------------------------------------------------- learning and evaluation
def test_learn_logs_success_by_trial_through_sb3s_logger() -> None:
    run = make()
    try:
        recorded: set[str] = set()
        log = TrialsLogCallback(trials=2, every=64)

        def spy(_l, _g) -> bool:
            recorded.update(run.model.logger.name_to_value)
            return True
        run.learn(512, callback=[log, _Every(spy)])
        assert run.manager is run.memory.manager and run.manager.mode == "sync"  # one manager type, both scopes
        st = run.manager.stats()
        assert st["entries_added"] == run.memory.stats["entries_written"] > 0
        # probe 18: run scope's manager reported the task scope's schedule (0.5, unused) and NaN outcomes
        assert "guided_ratio" not in st and 0.0 <= st["guided_outcome"] <= 1.0 and 0.0 <= st["free_outcome"] <= 1.0
        assert log.curve and all(len(c["guided_by_trial"]) == 2 for c in log.curve)
        assert {"trials/guided", "trials/free"} & recorded
        values = [v for c in log.curve for v in (c["guided"], c["free"]) if v is not None]
        assert values and all(0.0 <= v <= 1.0 for v in values)
        # probe 18: a callback new to a run that has stepped (a loaded run) recorded at every step until its
        # own count caught up with the run's; it records on the same grid, once per `every` steps
        late = TrialsLogCallback(trials=2, every=64)
        run.learn(256, callback=late)
        steps = [c["step"] for c in late.curve]
        assert steps and steps[0] > 512 and len({step // 64 for step in steps}) == len(steps) <= 256 // 64 + 1
    finally:
        run.close()


def test_evaluate_builds_its_memory_from_the_runs_settings_and_changes_nothing(caplog) -> None:
    run = make(demonstrations=goal_demonstration, memory_kwargs={**SMALL["memory_kwargs"], "trial_index": True})
    try:
        run.learn(256)
        before, extractor = params(run.model), {k: v.clone() for k, v in
                                                 run.memory.trainer.extractor.state_dict().items()}
        with caplog.at_level(logging.WARNING):
            out = run.evaluate([40, 41], repeats=1)
        assert not caplog.records  # held out: no warning
        assert set(out) >= {"without_experience", "with_experience", "with_demonstration"}
        for cond in ("without_experience", "with_experience", "with_demonstration"):
            m = out[cond]
            assert len(m["success_by_trial"]) == 2 and m["runs"] == 2
            assert m["cumulative_by_trial"][1] >= m["cumulative_by_trial"][0]
        assert same(before, params(run.model))
        assert all(torch.equal(v, run.memory.trainer.extractor.state_dict()[k]) for k, v in extractor.items())
        with caplog.at_level(logging.WARNING):
            run.evaluate([TRAIN[0]], repeats=1, conditions=["without_experience"])
        assert "training instances" in caplog.text
    finally:
        run.close()


def test_evaluate_can_search_at_test_time_with_the_runs_other_settings() -> None:
    located = {**SMALL["memory_kwargs"], "run_best": "located", "dense_rewards": True, "relocate_every": 2}
    run = make(memory_kwargs=located)
    try:
        with pytest.raises(TypeError, match=r"got the str 'with_experience'; e.g. \['with_experience'\]"):
            run.evaluate([40], conditions="with_experience")  # not read letter by letter
        with pytest.raises(ValueError, match="total_timesteps must be"):
            run.learn(-5)
        assert run.memory.locator is not None and not run.memory.locator.error_dims.any()
        with pytest.raises(ValueError, match=r"search=1.0 spreads the marks .* has measured none .*search=0"):
            run.evaluate([40], repeats=1, conditions=["with_experience"], search=1.0)  # would move nothing
        run.memory.locator.error_dims = np.array([0.2, 0.1], np.float32)  # as a locator that has missed
        assert run._evaluation_memory().search == 0.0 and run._evaluation_memory(1.5).search == 1.5
        assert run._evaluation_memory(1.5).relocate_every == 2  # the rest is the run's
        assert run._evaluation_memory(1.5).locator.error_dims.tolist() == pytest.approx([0.2, 0.1])  # its spread
        out = run.evaluate([40], repeats=1, conditions=["with_experience"], search=1.0)
        assert out["with_experience"]["runs"] == 1 and run.memory.search == 0.0  # the run's own memory unchanged
    finally:
        run.close()
    plain = make()
    try:
        with pytest.raises(ValueError, match=r"search=1.0 .*needs relocate_every > 0"):
            plain.evaluate([40], repeats=1, conditions=["with_experience"], search=1.0)
    finally:
        plain.close()


def test_a_demonstration_shown_at_evaluation_is_followed_by_a_policy_that_copies_entries() -> None:
    """The with-demonstration condition shows the demonstration: a policy that plays the action of
    its nearest shown entry (what the entry imitation loss trains toward) solves the held-out room
    from the first trial, and the same policy without the demonstration does not."""
    run = make(demonstrations=goal_demonstration, memory_kwargs={**SMALL["memory_kwargs"], "k": 1, "per_trial": 1})
    try:
        layout = run.memory.layout
        actions = layout.row_action_slice()

        def copy_nearest(obs, state=None, episode_start=None, deterministic=False):
            rows = np.asarray(obs[ENTRIES_KEY])
            shown = np.asarray(obs[MASK_KEY])[:, 0] > 0
            act = np.where(shown, rows[:, 0, actions].argmax(axis=1), 0)
            return act, state

        run.model.predict = copy_nearest  # type: ignore[method-assign]
        out = run.evaluate([23, 45], repeats=1, conditions=["with_demonstration", "without_experience"])
        assert out["with_demonstration"]["success_by_trial"][0] == 1.0
        assert out["without_experience"]["cumulative_by_trial"][-1] == 0.0
    finally:
        run.close()


# ------------------------------------------------------------------------- save and load
def test_save_load_round_trips_the_model_the_extractor_the_replay_and_the_settings(tmp_path) -> None:
    run = make(seed=3, policy_kwargs={"net_arch": [32]})
    try:
        run.learn(512)
        folder = run.save(tmp_path / "run")
        saved = json.loads((folder / "method.json").read_text())
        assert saved["scope"] == "run" and saved["instances"] == TRAIN and saved["policy_kwargs"] == {"net_arch": [32]}
        back = ComplementaryRL.load(folder, env=room)
        try:
            assert isinstance(back, RunScopeRL) and back.seed == 3 and back.trials == 2
            assert same(params(run.model), params(back.model))
            a, b = run.memory.trainer.extractor.state_dict(), back.memory.trainer.extractor.state_dict()
            assert all(torch.equal(a[k], b[k]) for k in a)
            assert (run.replay is None) == (back.replay is None)
            if run.replay is not None:
                assert len(back.replay) == len(run.replay)
            # probe 18: the memory's figures restarted at 0 after a load (the locator's carried on)
            assert back.memory.stats == run.memory.stats and run.memory.stats["trials_written"] > 0
            back.learn(128)
            back.save(folder)  # it loaded this save: not stale
        finally:
            back.close()
        run.learn(64)
        with pytest.raises(RunFileError, match="refusing to save"):
            run.save(folder)  # another run saved there since
    finally:
        run.close()


def test_vec_normalize_statistics_are_saved_and_frozen_in_evaluation(tmp_path) -> None:
    run = make(vec_normalize={"norm_reward": False})
    try:
        run.learn(256)
        assert isinstance(run.env, VecNormalize)
        mean = run.env.obs_rms["observation"].mean.copy() if isinstance(run.env.obs_rms, dict) else None
        run.evaluate([40], repeats=1, conditions=["with_experience"])
        assert run.env.training  # restored after evaluation
        if mean is not None:
            assert np.array_equal(mean, run.env.obs_rms["observation"].mean)  # frozen while evaluating
        folder = run.save(tmp_path / "run")
        assert (folder / VEC_NORMALIZE_FILE).is_file()
        back = ComplementaryRL.load(folder, env=room)
        try:
            assert isinstance(back.env, VecNormalize)
            for key in run.env.obs_rms:
                assert np.array_equal(run.env.obs_rms[key].mean, back.env.obs_rms[key].mean)
        finally:
            back.close()
    finally:
        run.close()


def test_load_refuses_what_it_cannot_apply_and_asks_for_what_is_not_saved(tmp_path) -> None:
    run = make(demonstrations=goal_demonstration)
    try:
        folder = run.save(tmp_path / "run")
    finally:
        run.close()
    with pytest.raises(ValueError, match="pass env="):
        ComplementaryRL.load(folder)
    with pytest.raises(ValueError, match="demonstrations"):
        ComplementaryRL.load(folder, env=room)
    with pytest.raises(ValueError, match="memory_kwargs"):
        ComplementaryRL.load(folder, env=room, demonstrations=goal_demonstration, memory_kwargs={"horizon": 30})
    with pytest.raises(TypeError, match="not settings of a run"):
        ComplementaryRL.load(folder, env=room, demonstrations=goal_demonstration, bank_kwargs={})
    with pytest.raises(ValueError, match="cannot apply trials=3: a run-scope run's memory"):
        ComplementaryRL.load(folder, env=room, demonstrations=goal_demonstration, trials=3)
    # applied to the loaded model, not only to the one built before it (the task scope's rule: one for both)
    back = ComplementaryRL.load(folder, env=room, demonstrations=goal_demonstration, seed=9,
                                algorithm_kwargs={"learning_rate": 1e-4}, verbose=1, tensorboard_log=str(tmp_path))
    try:
        assert back.seed == 9 and back.model.learning_rate == 1e-4
        assert back.model.verbose == 1 and back.model.tensorboard_log == str(tmp_path)
    finally:
        back.close()


def test_foreign_folders_and_the_other_scope_are_refused(tmp_path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "model.zip").write_bytes(b"not mine")
    run = make(experience=False)
    try:
        with pytest.raises(RunFileError):
            run.save(foreign)
        assert (foreign / "model.zip").read_bytes() == b"not mine"
        folder = run.save(tmp_path / "run")
    finally:
        run.close()
    with pytest.raises(RunFileError, match="use ComplementaryRL.load"):
        UsersComplementaryRL.load(folder, env=room)
    task = ComplementaryRL("CartPole-v1", n_envs=2, algorithm_kwargs={"n_steps": 16, "batch_size": 32})
    try:
        task_folder = task.save(tmp_path / "task")
    finally:
        task.close()
    with pytest.raises(RunFileError, match="not a run-scope run"):
        RunScopeRL.load(task_folder, env=room)


def test_the_object_trains_what_build_trials_method_trains() -> None:
    """Same settings, same seed: the run scope's object and the assembly it replaces for users
    end with identical weights and memory figures (the object adds only its logging)."""
    from experience_wrappers.trials import TrialMemory
    from integrations.sb3.trials_method import build_trials_method

    torch.set_num_threads(1)
    run = make(seed=4, demonstrations=goal_demonstration)
    try:
        run.learn(384)
        proto = room()
        memory = TrialMemory(proto.observation_space, proto.action_space, seed=4, **SMALL["memory_kwargs"])
        proto.close()
        built = build_trials_method(room, TRAIN, memory=memory, n_envs=4, trials=2, seed=4,
                                    demonstrations=goal_demonstration,
                                    ppo_kwargs={**SMALL["algorithm_kwargs"], "tensorboard_log": None})
        built.model.learn(384, callback=built.callbacks)
        assert same(params(run.model), params(built.model))
        assert run.memory.stats == memory.stats
        built.model.get_env().close()
    finally:
        run.close()
