"""Demonstrations as initial experience: ingestion, validation, recording, files."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.bank import Provenance
from experience_wrappers.errors import DemonstrationFileError
from experience_wrappers.rollin import first_actions
from integrations.demos import (
    Demonstration,
    as_demonstration,
    ingest_demonstrations,
    load_demonstrations,
    record_demonstrations,
    save_demonstrations,
)


@pytest.fixture
def cartpole():
    bank = ExperienceBank(dedup_threshold=0.0)
    env = ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs={"mode": "sync", "segment_every": 4})
    return env, bank


def _random_demos(env, n=3, seed=0):
    rng = np.random.default_rng(seed)
    return record_demonstrations(env.env, lambda obs: int(rng.integers(2)), n, seed=seed)


def test_ingestion_creates_retrievable_demo_entries(cartpole):
    env, bank = cartpole
    demos = _random_demos(env)
    n = ingest_demonstrations(env.manager, demos)
    expected = sum(int(np.ceil(len(d.actions) / 4)) for d in demos)
    assert n == expected == len(bank)
    entries = bank.entries()
    assert set(entries["provenance"].tolist()) == {int(Provenance.DEMO)}
    # the key of the first segment is the key of the first demonstrated observation
    key = env.manager.key_encoder(demos[0].observations[0])
    hit = bank.query(key, k=1, mode="knn", record=False)
    assert hit.mask[0, 0] and hit.distances[0, 0] < 1e-6
    # each entry's context starts with its segment's first action, read back exactly
    _, exact, readable = first_actions(entries["context"], env.manager.key_encoder.key_dim, 2)
    assert readable.all() and exact.all()


def test_imitation_style_trajectories_are_accepted(cartpole):
    env, bank = cartpole
    d = _random_demos(env, 1)[0]
    obs_plus_final = np.concatenate([d.observations, d.observations[-1:]])  # T + 1, as imitation stores it

    class Traj:
        obs, acts, rews, infos = obs_plus_final, d.actions, d.rewards, None

    assert ingest_demonstrations(env.manager, [Traj()]) > 0
    assert len(bank) > 0


def _with(obs: np.ndarray, t: int, value: float) -> np.ndarray:
    out = np.array(obs, copy=True)
    out[t] = value
    return out


def test_a_success_flag_that_is_a_string_is_refused() -> None:
    with pytest.raises(TypeError, match="'False' \\(a str\\)"):  # "False" is a non-empty str, true if read
        as_demonstration({"obs": np.zeros((2, 1)), "acts": np.zeros(2, np.int64), "success": "False"})
    assert as_demonstration({"obs": np.zeros((2, 1)), "acts": np.zeros(2, np.int64), "success": 0}).success is False


@pytest.mark.parametrize("breakage, message", [
    (lambda d: {"obs": d.observations[:2], "acts": d.actions, "rews": d.rewards}, "ragged"),
    (lambda d: {"obs": d.observations, "acts": d.actions, "rews": d.rewards[:-1]}, "ragged"),
    (lambda d: {"obs": d.observations, "acts": d.actions + 5, "rews": d.rewards}, "not in the action space"),
    (lambda d: {"obs": d.observations[:, :2], "acts": d.actions, "rews": d.rewards}, "not in the observation space"),
    (lambda d: {"acts": d.actions}, "needs observations and actions"),
    # every step is checked, not the first and last only
    (lambda d: {"obs": _with(d.observations, 1, np.nan), "acts": d.actions, "rews": d.rewards}, "observation 1 "),
    (lambda d: {"obs": [*d.observations[:1], d.observations[1][:2], *d.observations[2:]], "acts": d.actions,
                "rews": d.rewards}, "do not stack"),
])
def test_malformed_demonstrations_change_nothing(cartpole, breakage, message):
    env, bank = cartpole
    good = _random_demos(env, 2)
    ingest_demonstrations(env.manager, good[:1])
    before = bank.entries()
    with pytest.raises(ValueError, match=message):
        ingest_demonstrations(env.manager, [good[1], breakage(good[1])])
    after = bank.entries()
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])


def test_save_and_load_round_trip(tmp_path, cartpole):
    env, _ = cartpole
    demos = _random_demos(env, 3)
    path = save_demonstrations(tmp_path / "demos.npz", demos)
    back = load_demonstrations(path)
    assert len(back) == 3
    for a, b in zip(demos, back, strict=True):
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.observations, b.observations)
        assert a.success == b.success


def test_save_returns_the_file_it_wrote(tmp_path, cartpole):
    """numpy adds ``.npz`` to a name without it: the path returned is the file that exists."""
    env, _ = cartpole
    path = save_demonstrations(tmp_path / "mydemos", _random_demos(env, 1))
    assert path == tmp_path / "mydemos.npz" and path.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mydemos.npz"]
    assert len(load_demonstrations(path)) == 1


def test_damaged_demo_file_raises(tmp_path, cartpole):
    env, _ = cartpole
    path = save_demonstrations(tmp_path / "demos.npz", _random_demos(env, 1))
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(DemonstrationFileError):
        load_demonstrations(path)


def test_only_successful_skips_failures(cartpole):
    env, bank = cartpole
    d = _random_demos(env, 1)[0]
    failed = Demonstration(observations=d.observations, actions=d.actions, rewards=d.rewards, success=False)
    assert ingest_demonstrations(env.manager, [failed], only_successful=True) == 0
    assert len(bank) == 0


def test_scripted_minihack_demonstrations_succeed():
    pytest.importorskip("minihack")
    from integrations.minihack import StairsSeeker, make_minihack_env

    env = make_minihack_env("MiniHack-Room-5x5-v0", observation_keys=("glyphs_crop", "blstats", "chars_crop"))
    demos = record_demonstrations(env, StairsSeeker(0), 3, only_successful=True)
    assert len(demos) == 3 and all(d.success for d in demos)
    assert all(len(d.actions) < 20 for d in demos)


def test_keys_the_env_does_not_observe_are_dropped_and_missing_ones_refused():
    from gymnasium import spaces

    from integrations.demos import validate_demonstration

    space = spaces.Dict({"a": spaces.Box(-1, 1, (2,))})
    obs = {"a": np.zeros((3, 2), np.float32), "extra": np.ones((3, 5))}
    d = Demonstration(observations=obs, actions=np.zeros(3, np.int64), rewards=np.zeros(3))
    kept = validate_demonstration(d, space, spaces.Discrete(2))
    assert sorted(kept.observations) == ["a"]
    d = Demonstration(observations={"extra": obs["extra"]}, actions=np.zeros(3, np.int64), rewards=np.zeros(3))
    with pytest.raises(ValueError, match=r"lack the keys \['a'\]"):
        validate_demonstration(d, space, spaces.Discrete(2))


def test_a_policy_with_reset_is_reset_before_each_episode(cartpole):
    env, _ = cartpole

    class Counting:
        resets = 0

        def reset(self):
            self.resets += 1

        def __call__(self, obs):
            return 0

    policy = Counting()
    record_demonstrations(env.env, policy, 3)
    assert policy.resets == 3


def test_dense_segments_and_initial_utility_of_demonstrations(cartpole):
    env, bank = cartpole
    demos = _random_demos(env, 2)
    n = ingest_demonstrations(env.manager, demos, segment_every=1, utility=0.25)
    assert n == sum(len(d.actions) for d in demos) == len(bank)
    entries = bank.entries()
    assert np.allclose(entries["utility"], 0.25)
    # each entry's context starts with the action demonstrated in that state
    first = bank.get([int(entries["id"][0])])
    action, exact, _ = first_actions(first["context"], env.manager.key_encoder.key_dim, 2)
    assert exact[0] and int(action[0]) == int(demos[0].actions[0])


@pytest.mark.parametrize("kwargs, message", [({"segment_every": 0}, "segment_every"),
                                             ({"segment_every": 1.5}, "segment_every"),
                                             ({"utility": float("nan")}, "utility"),
                                             ({"utility": "high"}, "utility")])
def test_bad_ingest_arguments_change_nothing(cartpole, kwargs, message):
    env, bank = cartpole
    with pytest.raises(ValueError, match=message):
        ingest_demonstrations(env.manager, _random_demos(env, 2), **kwargs)
    assert len(bank) == 0


@pytest.mark.parametrize("kwargs, err, match", [
    ({"n_episodes": -3}, ValueError, "n_episodes"), ({"n_episodes": 2.5}, TypeError, "n_episodes"),
    ({"n_episodes": 1, "max_attempts": 0}, ValueError, "max_attempts"),
    ({"n_episodes": 1, "seed": None}, TypeError, "seed"),
])
def test_record_demonstrations_refuses_bad_counts_by_name(kwargs, err, match) -> None:
    """Not an empty list for -3, three episodes for 2.5, the default for max_attempts=0 or None + int."""
    with pytest.raises(err, match=match):
        record_demonstrations(gym.make("CartPole-v1"), lambda obs: 0, **kwargs)


@pytest.mark.parametrize("action", [None, 7, np.array([1])])
def test_record_demonstrations_names_an_action_the_env_does_not_have(action) -> None:
    with pytest.raises(ValueError, match="not an action of the env's Discrete\\(2\\)"):
        record_demonstrations(gym.make("CartPole-v1"), lambda obs: action, 1)


class _Corridor(gym.Env):
    """Three steps to a success it reports; either action moves on."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        done = self.t >= 3
        return np.full(1, self.t / 3, np.float32), float(done), done, False, {"is_success": done}


def test_discrete_actions_given_one_per_row_are_taken_as_the_env_takes_them_and_the_agents_own_success_follows() -> None:
    """``(T, 1)`` Discrete actions (SB3's buffers hold them so) are one value per step: pinned as ``(T,)``, so the
    agent's own successes (actions of shape ``()``) join them in the replay (they raised there mid-training)."""
    from integrations.demos import validate_demonstration
    from integrations.sb3 import ComplementaryRL

    demo = {"obs": np.array([[0.0], [1 / 3], [2 / 3]], np.float32), "acts": np.array([[1], [1], [1]]), "success": True}
    checked = validate_demonstration(as_demonstration(demo), _Corridor.observation_space, _Corridor.action_space)
    assert checked.actions.shape == (3,)
    run = ComplementaryRL(_Corridor, demonstrations=[demo], n_envs=1, seed=0,
                          algorithm_kwargs={"n_steps": 32, "batch_size": 32})
    run.learn(64)
    assert run.replay.counts()["own"] > 0  # the own successes were added beside the demonstration
    run.close()


def test_a_demonstration_recorded_as_per_step_dicts_saves_and_loads(tmp_path) -> None:
    """Probe 22: the list of per-step dicts was saved as object arrays, which the load refuses (no pickle)."""
    steps = [{"a": np.full(2, t, np.float32), "b": t} for t in range(4)]
    demo = Demonstration(observations=steps, actions=np.ones(4, np.int64), rewards=np.zeros(4))
    assert demo.observations["a"].shape == (4, 2)  # stacked when made
    back = load_demonstrations(save_demonstrations(tmp_path / "d", [demo]))[0]
    np.testing.assert_array_equal(back.observations["a"], np.repeat(np.arange(4.0)[:, None], 2, axis=1))
    assert back.observations["b"].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="dicts of other keys at step 1"):
        Demonstration(observations=[{"a": 1}, {"c": 2}], actions=np.ones(2, np.int64), rewards=np.zeros(2))
