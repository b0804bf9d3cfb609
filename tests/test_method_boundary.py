"""``ComplementaryRL`` at its boundary (issue 36, items 1, 2, 5, 6, 7 and 14): saves never replace
what is not theirs, settings save so that they load, and what a user gives is applied or refused
by name. Tiny runs on CartPole and a 5x5 image grid."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.utils import LinearSchedule

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.errors import RunFileError
from integrations.sb3 import ComplementaryRL, save_crl
from integrations.sb3.method import METHOD_FILE

SMALL = {"n_steps": 32, "batch_size": 32, "n_epochs": 1}
TINY = {"net_arch": [8]}


def _run(experience: bool = True, **kw: Any) -> ComplementaryRL:
    kw = {"n_envs": 1, "seed": 0, "algorithm_kwargs": SMALL, "policy_kwargs": TINY, "self_imitation": False, **kw}
    return ComplementaryRL("CartPole-v1", experience=experience, **kw)


class Grid(gym.Env):
    """A 5x5 one-channel image: SB3's default CNN cannot read it (its first kernel is 8x8)."""

    observation_space = gym.spaces.Box(0, 255, (5, 5, 1), np.uint8)
    action_space = gym.spaces.Discrete(4)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros((5, 5, 1), np.uint8), {}

    def step(self, action):
        self.t += 1
        return np.full((5, 5, 1), self.t, np.uint8), float(action == 0), self.t >= 4, False, {}


class FlatExtractor(BaseFeaturesExtractor):
    """Every key flattened and concatenated: what the grid run needs instead of the CNN."""

    def __init__(self, observation_space: gym.spaces.Dict) -> None:
        dims = [int(np.prod(space.shape or ())) for space in observation_space.spaces.values()]
        super().__init__(observation_space, sum(dims))

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        return th.cat([th.flatten(v.float(), 1) for v in observations.values()], dim=1)


# ------------------------------------------------------------------ item 1
@pytest.mark.parametrize("experience", [True, False])
def test_item1_a_save_refuses_a_folder_that_is_not_a_saved_run_in_every_configuration(tmp_path, experience) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "model.zip").write_bytes(b"my own model")
    (folder / METHOD_FILE).write_text("my notes")
    run = _run(experience)
    with pytest.raises(RunFileError, match="not empty and is not a saved folder"):
        run.save(folder)
    assert (folder / "model.zip").read_bytes() == b"my own model" and (folder / METHOD_FILE).read_text() == "my notes"
    run.close()


def test_item1_a_save_without_experience_is_atomic_and_keeps_the_users_files(tmp_path) -> None:
    run = _run(False)
    run.save(tmp_path / "r")
    (tmp_path / "r" / "notes.txt").write_text("mine")
    assert json.loads((tmp_path / "r" / "meta.json").read_text())["format"] == "complementary-rl-run"
    run.learn(32)
    run.save(tmp_path / "r")  # its own earlier save: replaced whole, the user's file kept
    assert (tmp_path / "r" / "notes.txt").read_text() == "mine"
    assert not list(tmp_path.glob(".r.*"))  # no temporary folder left
    back = ComplementaryRL.load(tmp_path / "r")
    assert back.model.num_timesteps == run.model.num_timesteps
    run.close()
    back.close()


def test_item1_save_crl_refuses_a_complementary_rl_folder_which_it_would_leave_unloadable(tmp_path) -> None:
    run, other = _run(), _run(seed=1)
    run.save(tmp_path / "r")
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "r").iterdir()}
    with pytest.raises(RunFileError, match=r"holds a ComplementaryRL run \(its method.json\)"):
        save_crl(tmp_path / "r", other.model)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "r").iterdir()} == before
    ComplementaryRL.load(tmp_path / "r").close()  # still loads (it did not: method.json of one save, files of another)
    run.close()
    other.close()


# ------------------------------------------------------------------ item 2
@pytest.mark.parametrize("experience", [True, False])
def test_item2_a_stale_save_is_refused_naming_both_saves(tmp_path, experience) -> None:
    f = tmp_path / "f"
    a, b = _run(experience), _run(experience, seed=1)
    a.save(f)
    a_id = json.loads((f / "meta.json").read_text())["save_id"]
    with pytest.raises(RunFileError, match=r"holds run save [0-9a-f]+, which this run neither loaded nor wrote.*"
                                           r"overwrite=True"):
        b.save(f)  # b was never loaded nor saved: it does not replace another run's save unasked
    assert json.loads((f / "meta.json").read_text())["save_id"] == a_id and (f / "model.zip").is_file()  # a's intact
    b.save(f, overwrite=True)  # the user names the folder to replace
    b_id = json.loads((f / "meta.json").read_text())["save_id"]
    a.learn(32)
    with pytest.raises(RunFileError, match=f"holds run save {b_id}.*latest save: {a_id}"):
        a.save(f)
    assert json.loads((f / "meta.json").read_text())["save_id"] == b_id  # B's run is intact
    assert json.loads((f / METHOD_FILE).read_text())["seed"] == 1
    a.save(tmp_path / "elsewhere")  # a new folder is fine
    c = tmp_path / "c"
    b.save(c)
    with pytest.raises(RunFileError, match=r"neither loaded nor wrote \(this run's latest save"):
        a.save(c)  # a folder a never touched: refused, its own lineage named
    a.save(c, overwrite=True)  # asked to: replaced, a loaded or saved run as a fresh one
    assert json.loads((c / METHOD_FILE).read_text())["seed"] == 0
    b.learn(32)
    b.save(f)  # b wrote what f holds: not stale
    back = ComplementaryRL.load(f)
    back.save(f)  # a loaded run descends from what it loaded
    a.close()
    b.close()
    back.close()


def test_item2_a_loaded_run_is_stale_once_another_run_saved_over_its_folder(tmp_path) -> None:
    f = tmp_path / "f"
    first = _run()
    first.save(f)
    loaded = ComplementaryRL.load(f)
    first.learn(32)
    first.save(f)
    with pytest.raises(RunFileError, match="refusing to save"):
        loaded.save(f)
    first.close()
    loaded.close()


# ------------------------------------------------------------------ item 5
def test_item5_an_empty_bank_given_is_the_one_the_run_fills(tmp_path) -> None:
    bank = ExperienceBank(capacity=50, seed=0)
    assert len(bank) == 0 and not bank  # falsy when empty: the run must not build its own
    run = _run(bank=bank)
    assert run.bank is bank and run.manager is not None and run.manager.bank is bank
    run.learn(128)
    assert len(bank) > 0
    with pytest.raises(TypeError, match="bank must be an ExperienceBank"):
        _run(bank={"capacity": 50})
    # a second run on it would stop this one's manager at its close(): refused, this run untouched
    with pytest.raises(ValueError, match="already served by a manager"):
        _run(bank=bank)
    # probe 19: bank_kwargs beside a bank were saved as the run's settings and never applied
    with pytest.raises(ValueError, match=r"bank_kwargs \{'capacity': 7\} build the run's own bank, and a bank was given"):
        _run(bank=ExperienceBank(), bank_kwargs={"capacity": 7})
    run.learn(64, reset_num_timesteps=False)
    run.close()
    again = _run(bank=bank)  # a closed run lets its bank go
    again.close()


# ------------------------------------------------------------------ item 6
def _schedule(progress: float) -> float:
    return 3e-4 * progress


@pytest.mark.parametrize("experience", [True, False])
def test_item6_a_setting_that_cannot_be_saved_is_refused_by_name_and_nothing_is_written(tmp_path, experience) -> None:
    # said at construction, before any training (as run scope does), refused at the save: the run trains
    # (a user who never saves may take a closure schedule, as SB3's get_linear_fn makes)
    with pytest.warns(UserWarning, match=r"algorithm_kwargs\['learning_rate'\].*cannot be saved.*save\(\) will"):
        run = _run(experience, algorithm_kwargs={**SMALL, "learning_rate": lambda p: 3e-4 * p})
    run.learn(32)
    with pytest.raises(TypeError, match=r"algorithm_kwargs\['learning_rate'\].*cannot be saved"):
        run.save(tmp_path / "r")
    run.close()

    class LocalTanh(th.nn.Tanh):  # defined inside a function: no importable name
        pass

    with pytest.warns(UserWarning, match=r"policy_kwargs\['activation_fn'\] = .*LocalTanh.* cannot be saved"):
        run = _run(experience, policy_kwargs={"net_arch": [8], "activation_fn": LocalTanh})
    with pytest.raises(TypeError, match=r"policy_kwargs\['activation_fn'\] = .*LocalTanh.* cannot be saved"):
        run.save(tmp_path / "r")
    run.close()
    assert not (tmp_path / "r").exists()


def test_item6_an_importable_schedule_and_classes_are_saved_by_name_and_load(tmp_path) -> None:
    run = _run(False, algorithm_kwargs={**SMALL, "learning_rate": _schedule},
               policy_kwargs={"net_arch": [8], "activation_fn": th.nn.ReLU})
    run.save(tmp_path / "r")
    settings = json.loads((tmp_path / "r" / METHOD_FILE).read_text())
    assert settings["algorithm_kwargs"]["learning_rate"] == {"__object__": f"{__name__}:_schedule"}
    back = ComplementaryRL.load(tmp_path / "r")
    assert back.model.lr_schedule(1.0) == pytest.approx(3e-4)
    policy: Any = back.model.policy
    assert isinstance(policy.mlp_extractor.policy_net[1], th.nn.ReLU)
    back.learn(32, reset_num_timesteps=False)
    run.close()
    back.close()
    # SB3's own schedule objects are saved with their arguments, checked to rebuild as they are
    run = _run(algorithm_kwargs={**SMALL, "learning_rate": LinearSchedule(1e-3, 0.0, 1.0)})
    run.save(tmp_path / "s")
    back = ComplementaryRL.load(tmp_path / "s")
    assert back.model.lr_schedule(0.5) == pytest.approx(5e-4)
    run.close()
    back.close()
    # and the benchmarks' rl-zoo "lin_<x>" values (once lambdas, refused at save after training)
    from benchmarks.harness.zoo import schedule

    run = _run(algorithm_kwargs={**SMALL, "learning_rate": schedule("lin_0.002")})
    run.save(tmp_path / "z")
    back = ComplementaryRL.load(tmp_path / "z")
    assert back.model.lr_schedule(0.25) == 0.25 * 0.002
    run.close()
    back.close()


# ------------------------------------------------------------------ item 7
def test_item7_load_overrides_are_applied_or_refused_by_name(tmp_path) -> None:
    run = _run(bank_kwargs={"capacity": 500})
    run.save(tmp_path / "r")
    with pytest.raises(ValueError, match="cannot apply bank_kwargs=.*bank's config is restored"):
        ComplementaryRL.load(tmp_path / "r", bank_kwargs={"capacity": 7})
    with pytest.raises(ValueError, match="cannot apply policy_kwargs"):
        ComplementaryRL.load(tmp_path / "r", policy_kwargs={"net_arch": [16]})
    with pytest.raises(ValueError, match="cannot apply experience"):
        ComplementaryRL.load(tmp_path / "r", experience=False)
    with pytest.raises(ValueError, match="cannot apply demonstrations"):
        ComplementaryRL.load(tmp_path / "r", demonstrations=[])
    with pytest.raises(TypeError, match=r"got \['banks'\], which are not settings"):
        ComplementaryRL.load(tmp_path / "r", banks=3)
    same = ComplementaryRL.load(tmp_path / "r", bank_kwargs={"capacity": 500})  # the saved value: fine
    assert same.bank is not None and same.bank.config.capacity == 500
    same.close()
    # applied: the model's hyperparameters, the envs, the seed
    back = ComplementaryRL.load(tmp_path / "r", algorithm_kwargs={"ent_coef": 0.25, "verbose": 1}, n_envs=2, seed=5,
                                tensorboard_log=str(tmp_path / "tb"))
    model: Any = back.model
    assert model.ent_coef == 0.25 and model.n_steps == SMALL["n_steps"] and model.n_envs == 2
    assert model.verbose == 1 and model.tensorboard_log == str(tmp_path / "tb")
    assert back.seed == 5 and back.model.seed == 5
    assert back._settings["algorithm_kwargs"] == {**SMALL, "ent_coef": 0.25, "verbose": 1}
    back.learn(64, reset_num_timesteps=False)
    run.close()
    back.close()


# ------------------------------------------------------------------ item 14
def test_item14_seed_none_draws_one_and_saves_it(tmp_path) -> None:
    run = _run(seed=None)
    assert isinstance(run.seed, int) and 0 <= run.seed < 2**31
    run.save(tmp_path / "r")
    assert ComplementaryRL.load(tmp_path / "r").seed == run.seed
    for bad, err in (("1", TypeError), (1.5, TypeError), (True, TypeError), (-1, ValueError)):
        with pytest.raises(err, match="seed must be an int"):
            _run(seed=bad)
    run.close()


def test_item14_algorithm_by_name(tmp_path) -> None:
    run = _run(algorithm="A2C", algorithm_kwargs={"n_steps": 8})
    assert isinstance(run.model, A2C)
    run.save(tmp_path / "r")
    back = ComplementaryRL.load(tmp_path / "r")  # found by its saved name, not restated
    assert isinstance(back.model, A2C)
    assert isinstance(_run(algorithm=PPO).model, PPO)
    with pytest.raises(ValueError, match="algorithm='PP0' is not an algorithm of stable_baselines3"):
        _run(algorithm="PP0")
    with pytest.raises(TypeError, match="algorithm must be an SB3 algorithm class or its name"):
        _run(algorithm=3)
    with pytest.raises(ValueError, match="this run trained A2C, not PPO"):
        ComplementaryRL.load(tmp_path / "r", algorithm="PPO")
    run.close()
    back.close()


@pytest.mark.parametrize(("demos", "err", "match"), [
    ("abc", TypeError, "demonstrations must be an int >= 0 .* got str 'abc'"),
    ([1, 2], ValueError, r"demonstrations\[0\] is 1, not a demonstration"),
    (2.5, TypeError, "demonstrations must be an int >= 0 .* got float 2.5"),
    ([{"observations": [0]}], ValueError, r"demonstrations\[0\] is not a demonstration"),
    (-1, ValueError, "demonstrations must be an int >= 0"),
])
def test_item14_demonstrations_that_are_none_are_refused_by_name(demos, err, match) -> None:
    with pytest.raises(err, match=match):
        _run(demonstrations=demos)


def test_item14_a_run_with_its_own_policy_loads_without_restating_it(tmp_path) -> None:
    kw: dict[str, Any] = {"policy": "MultiInputPolicy", "policy_kwargs": {"features_extractor_class": FlatExtractor, "net_arch": [8]}}
    run = ComplementaryRL(Grid, n_envs=1, seed=0, algorithm_kwargs=SMALL, self_imitation=False, **kw)
    run.learn(32)
    run.save(tmp_path / "r")
    back = ComplementaryRL.load(tmp_path / "r", env=Grid)  # the default CNN cannot read a 5x5 grid
    assert isinstance(back.model.policy.features_extractor, FlatExtractor)
    back.learn(32, reset_num_timesteps=False)
    assert ComplementaryRL.load(tmp_path / "r", env=Grid, **kw).model.num_timesteps == 32  # restating: the same
    run.close()
    back.close()


def test_a_save_missing_its_replay_is_refused_by_name(tmp_path) -> None:
    f = tmp_path / "f"
    run = _run(self_imitation=True)
    run.learn(64)
    run.save(f)
    assert json.loads((f / "meta.json").read_text())["replay"] is True
    ComplementaryRL.load(f).close()  # whole: loads
    (f / "replay.npz").unlink()
    with pytest.raises(RunFileError, match=r"replay.npz is missing"):
        ComplementaryRL.load(f)  # not an empty replay in its place
    (f / "meta.json").unlink()
    with pytest.raises(RunFileError, match=r"meta.json is missing"):
        ComplementaryRL.load(f)  # not "load it again"
    plain = _run()  # no self-imitation: no replay written, none needed
    plain.save(tmp_path / "g")
    assert not (tmp_path / "g" / "replay.npz").exists()
    ComplementaryRL.load(tmp_path / "g").close()
    run.close()
    plain.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, None, "3", float("nan")])
def test_evaluate_and_learn_refuse_counts_that_are_not_whole_by_name(bad) -> None:
    run = _run(experience=False)
    try:
        with pytest.raises(ValueError, match="n_episodes must be"):
            run.evaluate(bad)
        if bad != 0:  # learn(0) is SB3's no-op, allowed
            with pytest.raises(ValueError, match="total_timesteps must be"):
                run.learn(bad)
        run.learn(64.0)  # a float that holds an int (1e5, as rl-zoo's files give it) is a count
        assert run.model.num_timesteps >= 64
    finally:
        run.close()


class _FromOne(gym.ActionWrapper):
    """CartPole whose actions are Discrete(2, start=1) (an env numbered from 1)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.action_space = gym.spaces.Discrete(2, start=1)

    def action(self, action: Any) -> int:
        return int(action) - 1


class _PairActions(gym.Env):
    """Moves on a line by the sum of two MultiDiscrete([3, 3]) choices; the goal is the reset seed's parity."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.MultiDiscrete([3, 3])
    max_steps = 8  # (run scope's horizon)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.x, self.t = 0.0, 0
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.x += float(np.sum(action)) - 2.0
        self.t += 1
        won = self.x >= 3
        return np.array([self.x], np.float32), float(won), won, self.t >= self.max_steps, {"success": won}


def test_discrete_actions_that_do_not_start_at_0_are_refused_before_training() -> None:
    from stable_baselines3.common.env_util import make_vec_env

    from experience_wrappers import ExperienceWrapper
    from integrations.sb3 import CRLCallback

    with pytest.raises(ValueError, match=r"Discrete\(2, start=1\), but SB3's policies act in 0..n-1"):
        ComplementaryRL(lambda: _FromOne(gym.make("CartPole-v1")), n_envs=1)
    venv = make_vec_env(lambda: _FromOne(gym.make("CartPole-v1")), n_envs=1, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": ExperienceBank()})
    model = PPO("MultiInputPolicy", venv, n_steps=32, batch_size=32)
    with pytest.raises(ValueError, match="shift them in a wrapper of the env"):  # before: the learner's traceback
        model.learn(64, callback=CRLCallback())
    assert model.num_timesteps == 0


def test_run_scope_refuses_entry_imitation_of_multidiscrete_actions_naming_the_remedy() -> None:
    with pytest.raises(ValueError, match="pass imitate=False"):  # before: at the first rollout's end
        ComplementaryRL(_PairActions, scope="run", instances=[0, 1], trials=2, n_envs=2, group_size=2)
    run = ComplementaryRL(_PairActions, scope="run", instances=[0, 1], trials=2, n_envs=2, group_size=2, imitate=False,
                          algorithm_kwargs={"n_steps": 16, "batch_size": 32})
    run.learn(32)
    run.close()


def _grid_demo(length: int = 4, final: bool = False) -> dict[str, Any]:
    """A demonstration of Grid as the env returns it (channel-last), with the final observation if ``final``."""
    frames = [np.full((5, 5, 1), t, np.uint8) for t in range(length + int(final))]
    return {"observations": np.stack(frames), "actions": np.zeros(length, np.int64), "success": True}


def test_image_demonstrations_are_pinned_as_the_policy_sees_them_and_self_imitation_trains_on_them() -> None:
    """SB3 shows images channel-first (VecTransposeImage): a demonstration recorded channel-last is
    pinned so, and T + 1 observations (the final one, as ``imitation`` stores it) are accepted."""
    kw = {"policy": "MultiInputPolicy", "policy_kwargs": {"features_extractor_class": FlatExtractor},
          "manager_kwargs": {"mode": "sync"}}
    run = ComplementaryRL(Grid, n_envs=1, seed=0, algorithm_kwargs=SMALL, demonstrations=[_grid_demo(final=True)],
                          **kw)
    assert run.model.observation_space["observation"].shape == (1, 5, 5)
    obs, _, _ = run.replay.batch(run.replay.indices())
    assert obs["observation"].shape == (4, 1, 5, 5)
    np.testing.assert_array_equal(obs["observation"][:, 0, 0, 0], [0, 1, 2, 3])
    run.learn(64)  # self-imitation's steps read the pinned states with the agent's own (a shape error before)
    assert run.replay.counts()["demo"] == 4
    run.close()


def test_a_constructor_that_fails_after_the_envs_are_built_leaves_no_learner_process() -> None:
    import multiprocessing

    before = set(multiprocessing.active_children())
    with pytest.raises(TypeError, match="bogus"):
        ComplementaryRL("CartPole-v1", n_envs=1, seed=0, manager_kwargs={"mode": "process"},
                        algorithm_kwargs={"bogus": 1})
    assert set(multiprocessing.active_children()) <= before


def test_learn_takes_the_callbacks_sb3_takes_and_refuses_others_by_name() -> None:
    run = _run()
    calls: list[int] = []
    run.learn(32, callback=lambda loc, glob: calls.append(1) is None)  # a function, as SB3's learn takes it
    assert len(calls) >= 32
    with pytest.raises(TypeError, match="got str 'abc'"):
        run.learn(32, callback="abc")
    with pytest.raises(TypeError, match="must hold SB3 callbacks"):
        run.learn(32, callback=[print])
    run.close()


def test_a_key_encoder_object_trains_with_a_warning_and_its_save_is_refused_by_name(tmp_path) -> None:
    """Encoders are callables: named as an object (not "a lambda ... a learning-rate schedule?")."""
    from experience_wrappers.keys import RandomProjectionKeyEncoder

    enc = RandomProjectionKeyEncoder(gym.make("CartPole-v1").observation_space, key_dim=8)
    with pytest.warns(UserWarning, match=r"wrapper_kwargs\['key_encoder'\] = .*\(RandomProjectionKeyEncoder\) cannot be "
                                         r"saved in method.json: an object"):
        run = _run(wrapper_kwargs={"key_encoder": enc})
    try:
        run.learn(64)
        assert run.manager is not None and run.manager.key_encoder is enc and run.manager.bank.dims["key_dim"] == 8
        with pytest.raises(TypeError, match="key_encoder"):
            run.save(tmp_path / "r")
    finally:
        run.close()


def test_a_class_of_main_is_saved_with_a_warning_that_it_loads_only_there(monkeypatch) -> None:
    import __main__
    from integrations.sb3.method_settings import to_json

    class Net(th.nn.Module):
        pass

    Net.__module__, Net.__qualname__ = "__main__", "Net"
    monkeypatch.setattr(__main__, "Net", Net, raising=False)
    with pytest.warns(UserWarning, match=r"saved as __main__:Net: a run loads it only where __main__ defines Net"):
        assert to_json({"features_extractor_class": Net}, "policy_kwargs") == {
            "features_extractor_class": {"__object__": "__main__:Net"}}


class TwoKeys(gym.Env):
    """A Dict observation: a position and a flag, two actions, ten steps."""

    observation_space = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,), np.float32),
                                         "flag": gym.spaces.Discrete(2)})
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(action), False, self.t >= 10, {"is_success": self.t >= 10}


@pytest.mark.parametrize("experience", [True, False])
def test_dict_observations_recorded_step_by_step_are_a_demonstration(experience: bool) -> None:
    """A list of per-step dicts (what recording a Dict env's steps gives) is stacked into one dict of
    arrays; before, it passed the checks and failed later (in the manager's ingest, or in the first
    learn() as a replay of other keys)."""
    space = TwoKeys.observation_space
    space.seed(0)
    demo = {"observations": [space.sample() for _ in range(6)], "actions": [1] * 5, "success": True}
    run = ComplementaryRL(TwoKeys, experience=experience, n_envs=1, seed=0, algorithm_kwargs=SMALL,
                          policy_kwargs=TINY, demonstrations=[demo])
    try:
        assert run.replay is not None and run.replay.counts()["demo"] == 5
        run.learn(32)
    finally:
        run.close()
    ragged = {**demo, "observations": [*demo["observations"][:5], {"pos": np.zeros(2, np.float32)}]}
    with pytest.raises(ValueError, match=r"demonstrations\[0\].*other keys at step 5"):
        ComplementaryRL(TwoKeys, experience=experience, n_envs=1, demonstrations=[ragged])


def test_a_demonstration_that_says_it_failed_is_not_pinned_for_imitation(caplog) -> None:
    """It was imitated (pinned in the self-imitation replay) like a success; the bank takes it as
    ingest_kwargs say (record_demonstrations keeps failures by default, ingest's only_successful drops them)."""
    good = {"observations": np.zeros((4, 4), np.float32), "actions": [0, 1, 0], "success": True}
    failed = {"observations": np.full((4, 4), 0.1, np.float32), "actions": [0, 1, 0], "infos": [{}, {}, {"is_success": False}]}
    with caplog.at_level("WARNING", logger="integrations.sb3.self_imitation"):
        run = _run(demonstrations=[good, failed], self_imitation=True)
    try:
        assert run.replay is not None and run.replay.counts()["demo"] == 3  # the good one's 3 states only
        assert "1 of 2 demonstrations say they failed" in caplog.text
    finally:
        run.close()


def test_load_of_a_folder_of_model_zips_points_to_load_crl(tmp_path) -> None:
    run = _run()
    try:
        save_crl(tmp_path / "crl", run.model)
    finally:
        run.close()
    with pytest.raises(FileNotFoundError, match="holds model zips: .* loads with load_crl"):
        ComplementaryRL.load(tmp_path / "crl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"written by ComplementaryRL.save$"):
        ComplementaryRL.load(tmp_path / "empty")


def test_numpy_ints_are_taken_where_ints_are_and_kept_as_python_ints(tmp_path) -> None:
    """A sweep's values (``np.arange``, numpy arithmetic) are numpy ints: every int argument takes them, and
    what it keeps is a Python int, so that a run's settings save as JSON and load back."""
    from experience_wrappers import ExperienceWrapper
    from experience_wrappers.manager import ManagerConfig
    from integrations.sb3 import CRLCallback

    n = np.int64(2)
    bank = ExperienceBank(capacity=np.int64(64), seed=np.int64(3))
    assert (bank.config.capacity, bank.config.seed) == (64, 3) and type(bank.config.capacity) is int
    env = ExperienceWrapper(gym.make("CartPole-v1"), bank, k=n, retrieve_every=np.int32(4), task_id=np.int64(5))
    assert (env.options.k, env.options.retrieve_every, env.options.task_id) == (2, 4, 5)
    assert all(type(v) is int for v in (env.options.k, env.options.retrieve_every, env.options.task_id))
    config = ManagerConfig(batch_size=np.int64(32), extractor={"exp_dim": np.int64(8)})
    assert type(config.batch_size) is int and type(config.extractor["exp_dim"]) is int
    assert CRLCallback(merge_every=n).merge_every == 2
    run = _run(n_envs=n, seed=np.int64(7))
    assert run.env.num_envs == 2 and run.seed == 7
    run.save(tmp_path / "r")  # (a numpy int in the settings would not write as JSON)
    assert json.loads((tmp_path / "r" / METHOD_FILE).read_text())["n_envs"] == 2
    assert ComplementaryRL.load(tmp_path / "r").seed == 7
    run.close()
    for bad in (2.0, "2", np.bool_(True)):  # still refused by name
        with pytest.raises((TypeError, ValueError), match="k must be"):
            ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), k=bad)


class BoxCNN(BaseFeaturesExtractor):
    """An extractor as SB3's custom-policy guide writes one: for a Box (it reads ``observation_space.shape``)."""

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space, 8)
        self.net = th.nn.Linear(int(np.prod(observation_space.shape)), 8)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.net(th.flatten(observations.float(), 1))


def test_a_base_extractor_written_for_a_box_is_told_it_gets_the_dict_of_the_envs_own_keys() -> None:
    """The reader gives its base extractor a Dict of the env's own keys, as SB3's MultiInputPolicy gives its
    extractor; one written for the env's Box failed inside its own code ("'NoneType' object is not subscriptable")."""
    from integrations.sb3 import crl_policy_kwargs

    with pytest.raises(TypeError, match=r"BoxCNN.*raised TypeError.*a Dict of the env's own keys \(\['observation'\]"):
        ComplementaryRL(Grid, n_envs=1, seed=0, algorithm_kwargs=SMALL, policy_kwargs=crl_policy_kwargs(BoxCNN))
    with pytest.raises(ValueError, match=r"needs sides of at least 36.*given a Dict of the env's own keys"):
        ComplementaryRL(Grid, n_envs=1, seed=0, algorithm_kwargs=SMALL)
    run = ComplementaryRL(Grid, n_envs=1, seed=0, algorithm_kwargs=SMALL, self_imitation=False,
                          policy_kwargs=crl_policy_kwargs(FlatExtractor))  # the Dict form, as the message says
    run.learn(16)
    run.close()


@pytest.mark.parametrize("scope", ["task", "run"])
def test_a_factory_that_does_not_return_one_env_is_named(scope) -> None:
    kw: dict[str, Any] = {"instances": [0, 1], "n_envs": 2, "group_size": 2} if scope == "run" else {"n_envs": 1}
    for factory, what in ((lambda: None, "NoneType"), (lambda: gym.make_vec("CartPole-v1", 2), "VectorEnv")):
        with pytest.raises(TypeError, match=rf"the env factory .* returned .*{what}, not a gymnasium.Env"):
            ComplementaryRL(factory, scope=scope, **kw)


class Coin(gym.Env):
    """Three steps; a success (reported on successes only) half the time while the class allows it."""

    allowed = True
    observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        won = self.t >= 3 and type(self).allowed and self.np_random.random() < 0.5
        return np.full(2, self.t / 3, np.float32), float(won), self.t >= 3, False, ({"is_success": True} if won
                                                                                    else {})


def test_self_imitation_and_the_logs_keep_knowing_the_env_reports_success_across_learn_calls_and_a_load(tmp_path) -> None:
    """Self-imitation turns itself off after 100 episodes with no success key (an env that reports none); an env
    that reported success in an earlier learn() (or before a save) and then fails for 100 episodes is not that."""
    Coin.allowed = True
    run = ComplementaryRL(Coin, n_envs=2, seed=0, algorithm_kwargs={"n_steps": 64, "batch_size": 64})
    run.learn(256)
    run.save(tmp_path / "r")
    back = ComplementaryRL.load(tmp_path / "r", env=Coin)
    try:
        Coin.allowed = False
        for r in (run, back):
            r.learn(384, reset_num_timesteps=False)  # 128 failed episodes
            assert r.sil_callback is not None and r.sil_callback.active and r.sil_callback.reports.seen
            # and the logs still call the outcomes successes (crl/guided_success: a learn's new callback, a loaded
            # run's too)
            assert r.crl_callback is not None and r.crl_callback.outcome_kind == "success"
    finally:
        Coin.allowed = True
        run.close()
        back.close()


def test_a_users_features_extractor_class_replaces_the_reader_with_a_warning_not_a_raw_error() -> None:
    """The reader's own ``features_extractor_kwargs`` (``base_extractor_class``, ...) stayed beside the user's class,
    and SB3 raised ``TypeError: CombinedExtractor.__init__() got an unexpected keyword argument`` the user never gave."""
    from stable_baselines3.common.torch_layers import CombinedExtractor

    with pytest.warns(UserWarning, match="features_extractor_class CombinedExtractor replaces the experience reader"):
        run = _run(policy_kwargs={"features_extractor_class": CombinedExtractor})
    assert type(run.model.policy.features_extractor) is CombinedExtractor
    run.learn(32)
    run.close()


def test_the_readers_own_arguments_in_policy_kwargs_keep_the_familys_base_extractor() -> None:
    """Probe 19: policy_kwargs={"features_extractor_kwargs": {"attn_dim": 32}} replaced the reader's arguments
    whole, so MiniHack's glyph CNN gave way to SB3's CombinedExtractor, with nothing said."""
    from integrations.minihack import GlyphCNNExtractor

    run = ComplementaryRL("MiniHack-Room-5x5-v0", n_envs=1, policy_kwargs={"features_extractor_kwargs": {"attn_dim": 32}})
    try:
        reader = run.model.policy.features_extractor
        assert isinstance(reader.base, GlyphCNNExtractor)
        assert run.model.policy_kwargs["features_extractor_kwargs"]["attn_dim"] == 32
    finally:
        run.close()


def test_experience_policy_refuses_a_small_image_by_name_as_the_reader_does() -> None:
    """Probe 22: PPO(ExperiencePolicy, ...) on 16x16 images failed in torch's first convolution."""
    from stable_baselines3 import PPO

    from integrations.sb3 import ExperiencePolicy

    env = ExperienceWrapper(Grid(), ExperienceBank())
    with pytest.raises(ValueError, match=r"needs sides of at least 36; give policy_kwargs=\{'features_extractor_class'"):
        PPO(ExperiencePolicy, env)
    PPO(ExperiencePolicy, env, policy_kwargs={"features_extractor_class": FlatExtractor})  # the remedy builds
    env.close()


@pytest.mark.parametrize("scope", ["task", "run"])
def test_fresh_runs_log_to_tensorboard_folders_of_their_own_and_a_run_goes_on_in_its_own(tmp_path, scope) -> None:
    """Probe 23: run.learn passed reset_num_timesteps=False on a fresh run's first call too, so two runs given one
    tensorboard_log wrote into one PPO_1 folder (plain SB3 gives each its own); a run's later calls stay in its folder."""
    tb = tmp_path / "tb"
    kw: dict[str, Any] = {"instances": [0, 1], "n_envs": 2, "group_size": 2, "trials": 1,
                          "algorithm_kwargs": {"n_steps": 16, "batch_size": 32, "n_epochs": 1}, "policy_kwargs": TINY,
                          "self_imitation": False, "imitate": False} if scope == "run" else {}
    for seed in (0, 1):
        run = (ComplementaryRL(_PairActions, scope="run", seed=seed, tensorboard_log=str(tb), **kw)
               if scope == "run" else _run(seed=seed, tensorboard_log=str(tb)))
        run.learn(32)
        run.learn(32)  # (goes on in the run's own folder)
        run.close()
    assert sorted(p.name for p in tb.iterdir()) == ["PPO_1", "PPO_2"]
    assert [len(list((tb / f).iterdir())) for f in ("PPO_1", "PPO_2")] == [2, 2]  # each run's two calls in its own
