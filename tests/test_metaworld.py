"""Tests for integrations.metaworld on real Meta-World (metaworld 3.1.x, MuJoCo)."""

from __future__ import annotations

import pathlib
import re
import warnings

import numpy as np
import pytest

metaworld = pytest.importorskip("metaworld", reason="needs the metaworld extra")

import gymnasium as gym  # noqa: E402
import stable_baselines3.common.env_checker as sb3_env_checker  # noqa: E402
import torch  # noqa: E402
from gymnasium.utils.env_checker import check_env as gym_check_env  # noqa: E402
from metaworld.policies import ENV_POLICY_MAP  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.logger import KVWriter, Logger  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from integrations.metaworld import (  # noqa: E402
    MT10_TASKS,
    NUM_GOALS,
    REWARD_FUNCTION_VERSION,
    PerTaskSuccessCallback,
    TaskOneHotWrapper,
    make_mt1_env,
    make_mt10_env,
    make_mt10_vec_env,
    mt10_tasks,
    task_id_from_obs,
)

SEED = 0
GOALS = 5  # goals per task in tests: builds MT10 in ~1 s instead of ~10 s
OBS_DIM = 39
N_TASKS = len(MT10_TASKS)
REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mt10_goals() -> dict[int, tuple]:
    """Builds metaworld.MT10(seed=0) once (cached) and returns each task's goals."""
    return {i: mt10_tasks(i, seed=SEED, num_goals=GOALS) for i in range(N_TASKS)}


@pytest.fixture(scope="module")
def mt10_vec_env(mt10_goals):
    """One MT10 DummyVecEnv (10-step episodes) shared by the tests below: building
    ten MuJoCo models is the slow part."""
    vec_env = make_mt10_vec_env(n_envs_per_task=1, seed=SEED, max_episode_steps=10, num_goals=GOALS)
    yield vec_env
    vec_env.close()


def _sb3_check_env(env: gym.Env) -> None:
    # Meta-World's Sawyer envs define `compute_reward(action, obs)`, so SB3's
    # checker takes them for goal-conditioned (GoalEnv) envs and demands a Dict
    # observation space. That is a false positive; every other check runs.
    original = sb3_env_checker._is_goal_env
    sb3_env_checker._is_goal_env = lambda _env: False
    try:
        sb3_env_checker.check_env(env, warn=True)
    finally:
        sb3_env_checker._is_goal_env = original


def _run_episode(env: gym.Env, policy, strip: int = 0) -> tuple[list[dict], bool]:
    obs, _ = env.reset(seed=SEED)
    infos = []
    terminated = truncated = False
    while not (terminated or truncated):
        o = obs[: len(obs) - strip] if strip else obs
        obs, reward, terminated, truncated, info = env.step(policy(o))
        assert obs in env.observation_space
        assert np.isfinite(reward)
        infos.append(info)
    return infos, terminated


def test_reward_function_version_is_pinned(mt10_goals):
    assert REWARD_FUNCTION_VERSION == "v2"
    assert NUM_GOALS == metaworld._N_GOALS == 50  # the default is Meta-World's goal count
    env = make_mt1_env("reach-v3", seed=SEED, num_goals=GOALS)
    assert len(env.get_wrapper_attr("tasks")) == GOALS
    assert env.unwrapped.reward_function_version == "v2"
    env10 = make_mt10_env(3, seed=SEED, tasks=mt10_goals[3])
    assert env10.unwrapped.reward_function_version == "v2"
    v1 = make_mt1_env("reach-v3", seed=SEED, num_goals=GOALS, reward_function_version="v1")
    assert v1.unwrapped.reward_function_version == "v1"


def test_mt10_tasks_are_canonical():
    assert MT10_TASKS == tuple(metaworld.env_dict.MT10_V3.keys())


def test_env_checkers_pass(mt10_goals):
    envs = (
        make_mt1_env("reach-v3", seed=SEED, num_goals=GOALS),
        make_mt10_env(0, seed=SEED, tasks=mt10_goals[0]),
    )
    for env in envs:
        with warnings.catch_warnings():
            # The wrapped-env note and the +-inf object-position bounds are expected.
            warnings.simplefilter("ignore", UserWarning)
            gym_check_env(env, skip_render_check=True)
        _sb3_check_env(env)


def test_observations_lie_in_space_and_reset_seed_is_reproducible():
    env = make_mt1_env("push-v3", seed=SEED, max_episode_steps=30, num_goals=GOALS)
    assert env.observation_space.shape == (OBS_DIM,)
    assert env.observation_space.dtype == np.float64
    assert env.action_space.shape == (4,)
    obs_a, info_a = env.reset(seed=7)
    obs_b, info_b = env.reset(seed=7)
    np.testing.assert_array_equal(obs_a, obs_b)
    assert info_a["goal_index"] == info_b["goal_index"]
    assert obs_a in env.observation_space
    assert np.any(obs_a[-3:] != 0), "the goal must be observed (MT setting)"
    goals = {env.reset(seed=s)[1]["goal_index"] for s in range(8)}
    assert len(goals) > 1, "different seeds should pick different goals"
    env.action_space.seed(0)
    for _ in range(30):
        obs, _, _, _, _ = env.step(env.action_space.sample())
        assert obs in env.observation_space


def test_one_hot_task_id_for_every_task(mt10_goals, mt10_vec_env):
    eye = np.eye(N_TASKS)
    for i, name in enumerate(MT10_TASKS):
        env = mt10_vec_env.envs[i].env  # make_mt10_env(i, ...) under the Monitor
        assert isinstance(env, TaskOneHotWrapper)
        assert env.task_id == i and env.get_wrapper_attr("task_id") == i
        assert env.get_wrapper_attr("tasks") == mt10_goals[i]
        assert isinstance(env.unwrapped, metaworld.env_dict.MT10_V3[name])
        assert env.observation_space.shape == (OBS_DIM + N_TASKS,)
        obs, info = env.reset(seed=SEED)
        assert obs in env.observation_space
        np.testing.assert_array_equal(obs[-N_TASKS:], eye[i])
        assert task_id_from_obs(obs) == i
        assert info["task_id"] == i and info["task_name"] == name
        obs, _, _, _, info = env.step(env.action_space.sample())
        np.testing.assert_array_equal(obs[-N_TASKS:], eye[i])
        assert info["task_id"] == i
    plain = make_mt10_env(1, seed=SEED, one_hot=False, tasks=mt10_goals[1])
    assert plain.observation_space.shape == (OBS_DIM,)
    assert plain.task_id == 1


def test_mt10_goals_come_from_the_benchmark(mt10_goals):
    env = make_mt10_env(2, seed=SEED, num_goals=GOALS)  # the cached metaworld.MT10(seed=0)
    assert env.get_wrapper_attr("tasks") == mt10_goals[2]
    assert len(mt10_goals[2]) == GOALS
    assert all(t.env_name == "pick-place-v3" for t in mt10_goals[2])
    starts = {tuple(env.reset(seed=s)[0][36:39]) for s in range(6)}
    assert len(starts) > 1, "goals are resampled at reset"


def test_task_id_from_obs_rejects_bad_input():
    good = np.concatenate([np.zeros(OBS_DIM), np.eye(N_TASKS)[4]])
    assert task_id_from_obs(good) == 4
    with pytest.raises(ValueError, match="one-hot"):
        task_id_from_obs(np.zeros(OBS_DIM + N_TASKS))
    with pytest.raises(ValueError, match="one-hot"):
        task_id_from_obs(np.concatenate([np.zeros(OBS_DIM), np.ones(N_TASKS)]))
    with pytest.raises(ValueError, match="1-D"):
        task_id_from_obs(np.stack([good, good]))
    with pytest.raises(ValueError, match="fewer"):
        task_id_from_obs(np.zeros(3))


def test_success_follows_scripted_policy_not_zero_actions():
    policy = ENV_POLICY_MAP["reach-v3"]()
    env = make_mt1_env("reach-v3", seed=SEED, max_episode_steps=150, num_goals=GOALS)
    infos, terminated = _run_episode(env, policy.get_action)
    assert not terminated
    assert infos[-1]["success"] is True and infos[-1]["is_success"] is True
    assert any(i["step_success"] for i in infos)
    flags = [i["success"] for i in infos]
    first = flags.index(True)
    assert all(flags[first:]), "the episode flag stays True once reached"
    assert not any(flags[:first])

    zero = lambda _obs: np.zeros(4, dtype=np.float32)  # noqa: E731
    infos, _ = _run_episode(env, zero)
    assert len(infos) == 150
    assert not any(i["success"] or i["is_success"] or i["step_success"] for i in infos)


def test_success_and_terminate_on_success_on_mt10_env(mt10_goals):
    policy = ENV_POLICY_MAP["reach-v3"]()
    env = make_mt10_env(
        0, seed=SEED, tasks=mt10_goals[0], max_episode_steps=150, terminate_on_success=True
    )
    infos, terminated = _run_episode(env, policy.get_action, strip=N_TASKS)
    assert terminated and len(infos) < 150
    assert infos[-1]["success"] and infos[-1]["step_success"]


def test_horizon_above_500_does_not_hit_metaworld_limit():
    env = make_mt1_env("reach-v3", seed=SEED, max_episode_steps=503, num_goals=GOALS)
    env.reset(seed=SEED)
    action = np.zeros(4, dtype=np.float32)
    for t in range(503):
        _, _, terminated, truncated, _ = env.step(action)
        assert not terminated
        assert truncated == (t == 502)


def test_bad_arguments_raise_clear_errors(mt10_goals):
    with pytest.raises(ValueError, match="reach-v3"):
        make_mt1_env("reach-v2")
    with pytest.raises(ValueError, match="task_index"):
        make_mt10_env(10, seed=SEED)
    with pytest.raises(ValueError, match="reward_function_version"):
        make_mt1_env("reach-v3", seed=SEED, num_goals=GOALS, reward_function_version="v3")
    with pytest.raises(ValueError, match="max_episode_steps"):
        make_mt1_env("reach-v3", seed=SEED, num_goals=GOALS, max_episode_steps=0)
    with pytest.raises(ValueError, match="num_goals"):
        make_mt1_env("reach-v3", seed=SEED, num_goals=0)
    with pytest.raises(ValueError, match="does not match"):
        make_mt10_env(0, seed=SEED, tasks=mt10_goals[1])
    with pytest.raises(ValueError, match="n_envs_per_task"):
        make_mt10_vec_env(n_envs_per_task=0)


def test_vec_env_builds_all_ten_tasks_and_steps(mt10_vec_env):
    vec_env = mt10_vec_env
    assert isinstance(vec_env, DummyVecEnv)
    assert vec_env.num_envs == N_TASKS
    assert vec_env.get_attr("task_id") == list(range(N_TASKS))
    obs = vec_env.reset()
    assert obs.shape == (N_TASKS, OBS_DIM + N_TASKS)
    assert [task_id_from_obs(o) for o in obs] == list(range(N_TASKS))
    ended = []
    for _ in range(10):
        actions = np.stack([vec_env.action_space.sample() for _ in range(N_TASKS)])
        obs, rewards, dones, infos = vec_env.step(actions)
        assert rewards.shape == (N_TASKS,)
        ended.extend(info for info, done in zip(infos, dones, strict=True) if done)
    assert len(ended) == N_TASKS
    assert sorted(info["episode"]["task_id"] for info in ended) == list(range(N_TASKS))
    assert all(isinstance(info["episode"]["success"], bool) for info in ended)
    assert all(info["episode"]["l"] == 10 for info in ended)


class _CaptureWriter(KVWriter):
    def __init__(self) -> None:
        self.dumps: list[dict] = []

    def write(self, key_values, key_excluded, step=0) -> None:
        self.dumps.append(dict(key_values))


def test_callback_logs_per_task_success_during_ppo(mt10_vec_env):
    vec_env = mt10_vec_env
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny MLP: extra threads only contend for the CPU
    try:
        n_steps = 20
        model = PPO("MlpPolicy", vec_env, n_steps=n_steps, batch_size=100, n_epochs=1, seed=SEED)
        writer = _CaptureWriter()
        model.set_logger(Logger(folder=None, output_formats=[writer]))
        callback = PerTaskSuccessCallback(window=10, log_counts=True)
        model.learn(total_timesteps=2 * n_steps * N_TASKS, callback=callback)
    finally:
        torch.set_num_threads(threads)
    logged = {k: v for dump in writer.dumps for k, v in dump.items()}
    for name in MT10_TASKS:
        assert 0.0 <= logged[f"metaworld/success/{name}"] <= 1.0
        assert logged[f"metaworld/episodes/{name}"] == 4  # 2 rollouts x 20 steps / 10 per episode
    assert 0.0 <= logged["metaworld/success_mean"] <= 1.0
    assert set(callback.success_rates) == set(MT10_TASKS)
    assert callback.success_mean == pytest.approx(np.mean(list(callback.success_rates.values())))


def test_callback_rolling_window_and_task_resolution():
    callback = PerTaskSuccessCallback(window=2, task_names=("a", "b"))
    steps = [
        ([True, False], [{"is_success": True, "task_id": 0}, {}]),
        (
            [True, True],
            [{"episode": {"success": False, "task_id": 0}}, {"success": 1.0, "task_id": 1}],
        ),
        ([True, False], [{"success": False, "task_name": "a"}, {}]),
    ]
    for dones, infos in steps:
        callback.locals = {"dones": np.array(dones), "infos": infos}
        callback._on_step()
    assert callback.episode_counts == {"a": 3, "b": 1}
    assert callback.success_rates == {"a": 0.0, "b": 1.0}  # window 2 forgot a's first success
    assert callback.success_mean == 0.5
    with pytest.raises(ValueError, match="window"):
        PerTaskSuccessCallback(window=0)


def test_core_never_imports_integrations():
    pattern = re.compile(r"^\s*(from|import)\s+integrations\b", re.MULTILINE)
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "experience_wrappers").rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_one_bank_serves_all_ten_tasks_despite_their_different_goal_bounds():
    from experience_wrappers import ExperienceBank, ExperienceWrapper

    bank = ExperienceBank()
    venv = make_mt10_vec_env(n_envs_per_task=1, seed=SEED, max_episode_steps=10, num_goals=GOALS,
                             wrapper_class=ExperienceWrapper,
                             wrapper_kwargs={"bank": bank, "task_id": lambda obs, info: task_id_from_obs(obs),
                                             "manager_kwargs": {"mode": "sync"}})
    inner = [venv.envs[i].env.observation_space for i in range(N_TASKS)]
    assert any(not np.array_equal(inner[0].high, s.high) for s in inner[1:])  # the bounds do differ
    managers = {id(venv.envs[i].manager) for i in range(N_TASKS)}
    assert len(managers) == 1
    venv.reset()
    for _ in range(10):
        venv.step(np.zeros((N_TASKS, 4), dtype=np.float32))
    assert len(bank) > 0 and bank.stats()["tasks"] == N_TASKS
    venv.close()


def test_the_ten_tasks_are_filed_apart_without_a_task_id_and_one_env_wrapped_alone_says_it_pools_them():
    """A user's two lines on MT10 without task_id filed every task under task 0: entries and free baselines pooled."""
    from experience_wrappers import ExperienceBank, ExperienceWrapper
    from integrations.metaworld import make_mt10_env

    bank = ExperienceBank()
    venv = make_mt10_vec_env(n_envs_per_task=1, seed=SEED, max_episode_steps=10, num_goals=GOALS,
                             wrapper_class=ExperienceWrapper,
                             wrapper_kwargs={"bank": bank, "manager_kwargs": {"mode": "sync"}})
    venv.reset()
    for _ in range(10):
        venv.step(np.zeros((N_TASKS, 4), dtype=np.float32))
    assert bank.stats()["tasks"] == N_TASKS  # each env its task index
    venv.close()
    # one task's env wrapped by hand with the default task 0: said once; task_id_from_obs reads it, as the wrapper calls it
    env = ExperienceWrapper(make_mt10_env(4, seed=SEED, max_episode_steps=10), ExperienceBank(),
                            manager_kwargs={"mode": "sync"})
    with pytest.warns(UserWarning, match=r"reports info\['task_id'\] = 4, and the experience wrapper files every "
                                         r"episode under task 0"):
        env.reset(seed=0)
    env.close()
    env = ExperienceWrapper(make_mt10_env(4, seed=SEED, max_episode_steps=10), ExperienceBank(),
                            task_id=task_id_from_obs, manager_kwargs={"mode": "sync"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _, info = env.reset(seed=0)
    assert info["experience_task_id"] == 4
    env.close()


def test_meta_world_ids_other_than_mt10_and_mt10_envs_not_a_multiple_of_ten_are_refused():
    from integrations.sb3 import ComplementaryRL
    from integrations.sb3.env_families import family_of

    for env_id in ("Meta-World/MT1", "Meta-World/reach-v3", "Meta-World/MT50"):
        with pytest.raises(ValueError, match="the Meta-World id this library builds is 'Meta-World/MT10'"):
            family_of(env_id)
    with pytest.raises(ValueError, match="give n_envs a multiple of 10, got 8"):
        ComplementaryRL("Meta-World/MT10", n_envs=8)
