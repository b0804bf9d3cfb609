"""ML1 in the trials protocol (issue 37): the env, the demonstrations, and the Box-action peers, on real Meta-World."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

pytest.importorskip("metaworld")

from benchmarks.peers.meta_episode import MetaEpisode  # noqa: E402
from benchmarks.peers.retrieve_and_play import RetrieveAndPlay  # noqa: E402
from experience_wrappers import ExperienceWrapper  # noqa: E402
from experience_wrappers.extractor import ActionCoder  # noqa: E402
from experience_wrappers.manager.entry_layout import EntryLayout  # noqa: E402
from experience_wrappers.trials import TrialMemory  # noqa: E402
from integrations.metaworld.ml1_demos import ml1_demonstrations, scripted_demonstration  # noqa: E402
from integrations.metaworld.ml1_trials import (  # noqa: E402
    ML1Trials,
    goal_position,
    ml1_goal_tasks,
    ml1_instances,
)

pytestmark = pytest.mark.filterwarnings("ignore:Constant\\(s\\) may be too high")


@pytest.fixture(scope="module")
def env() -> ML1Trials:
    return ML1Trials("reach-v3")


def test_same_seed_same_goal_other_seed_other_goal(env: ML1Trials) -> None:
    obs_a, info = env.reset(seed=7)
    goal_a = env.goal()
    env.step(env.action_space.sample())
    obs_b, _ = env.reset(seed=60)
    goal_b = env.goal()
    obs_c, _ = env.reset(seed=7)
    assert info["instance"] == 7
    np.testing.assert_array_equal(obs_a, obs_c)
    np.testing.assert_array_equal(goal_a, env.goal())
    assert np.linalg.norm(goal_a - goal_b) > 1e-3
    goals = {tuple(np.round(goal_position(t), 6)) for t in ml1_goal_tasks()}
    assert len(goals) == 100  # every instance its own goal


def test_train_and_heldout_instances_disjoint() -> None:
    train, held_out = ml1_instances()
    assert len(train) == len(held_out) == 50 and not set(train) & set(held_out)
    tasks = ml1_goal_tasks()
    train_goals = {tuple(goal_position(tasks[i])) for i in train}
    held_goals = {tuple(goal_position(tasks[i])) for i in held_out}
    assert not train_goals & held_goals


def test_goal_not_in_observation(env: ML1Trials) -> None:
    first, _ = env.reset(seed=55)
    assert np.all(first[36:39] == 0)
    for _ in range(5):
        obs, *_ = env.step(env.action_space.sample())
        assert np.all(obs[36:39] == 0)
    visible = ML1Trials("reach-v3", goal_visible=True)
    seen, _ = visible.reset(seed=55)
    np.testing.assert_allclose(seen[36:39], visible.goal())
    np.testing.assert_array_equal(seen[:36], first[:36])  # the goal is all that differs
    visible.close()


def test_demonstration_succeeds_with_hidden_goal_observations(env: ML1Trials) -> None:
    obs, actions, rewards = ml1_demonstrations()(52)
    assert len(obs) == len(actions) == len(rewards) < env.cap
    assert np.all(obs[:, 36:39] == 0)
    first, _ = env.reset(seed=52)
    np.testing.assert_array_equal(obs[0], first)
    for a in actions:  # Meta-World is deterministic once the goal is set: the actions replay to success
        _, _, terminated, truncated, info = env.step(a)
    assert terminated and info["success"] and not truncated


@pytest.mark.parametrize("task", ["push-v3", "pick-place-v3"])
def test_the_push_and_pick_place_families_hide_the_goal_and_their_demonstrations_succeed(task: str) -> None:
    from benchmarks.suites.trials_ml1 import ml1_moves_family

    fam = ml1_moves_family(task)
    obs, actions, _ = fam["demonstration"](fam["held_out"][0])
    assert len(actions) < fam["horizon"] and np.all(obs[:, 36:39] == 0)
    env = fam["make"]()
    try:
        first, _ = env.reset(seed=fam["held_out"][0])
        assert env.cap == fam["horizon"] and np.all(first[36:39] == 0) and np.any(env.goal() != 0)
        assert not np.array_equal(first[:3], obs[0, :3])  # the hand was moved before the trial: follow, not replay
    finally:
        env.close()


def test_trial_cap_truncates_and_success_terminates() -> None:
    env = ML1Trials("reach-v3", cap=12)
    env.reset(seed=3)
    ends = [env.step(np.zeros(4, np.float32))[2:4] for _ in range(12)]
    assert ends[:-1] == [(False, False)] * 11 and ends[-1] == (False, True)
    obs, actions, rewards, success = scripted_demonstration(ML1Trials("reach-v3"), 3)
    assert success and rewards[-1] > 10 * rewards[-2]  # the success step pays for the steps it saves
    env.close()


@pytest.mark.parametrize("bonus", [True, "cap", "infinite", False])
def test_success_bonus_pays_to_the_cap_or_for_ever_or_not(bonus: bool | str) -> None:
    env = ML1Trials("reach-v3", goal_visible=True, success_bonus=bonus)
    obs, _ = env.reset(seed=3)
    assert env.last_reward == 0.0
    goal = env.goal()
    t, terminated, truncated = 0, False, False
    while not (terminated or truncated):  # a proportional controller to the (visible) goal
        action = np.zeros(4, np.float32)
        action[:3] = np.clip((goal - obs[:3]) * 10, -1, 1) * 0.3
        obs, reward, terminated, truncated, _ = env.step(action)
        t += 1
        if not terminated:  # before the success, the step's reward is the env's alone
            assert env.last_reward == pytest.approx(float(reward))
    assert terminated
    assert env.last_reward == pytest.approx(1.0)  # the success step's own reward, without the bonus
    base = 1.0  # reach pays 10 x 0.1 inside the success radius
    expected = {True: base * sum(0.99 ** j for j in range(env.cap - t + 1)),
                "cap": base * sum(0.99 ** j for j in range(env.cap - t + 1)),
                "infinite": base / (1 - 0.99), False: base}[bonus]
    assert reward == pytest.approx(expected)
    env.close()


def test_success_bonus_refuses_unknown_values_and_reads_one_and_zero_as_the_bools() -> None:
    with pytest.raises(ValueError, match="success_bonus"):
        ML1Trials("reach-v3", success_bonus="forever")
    assert ML1Trials("reach-v3", success_bonus=1).success_bonus == "cap"  # as bool(1) was read before
    assert ML1Trials("reach-v3", success_bonus=0).success_bonus is None


def test_start_moves_change_the_start_not_the_goal() -> None:
    env = ML1Trials("reach-v3", start_moves=5, start_seed=1)
    first, _ = env.reset(seed=60)
    goal = env.goal()
    second, _ = env.reset(seed=60)
    assert np.abs(first[:3] - second[:3]).max() > 1e-3  # the hand starts elsewhere
    np.testing.assert_array_equal(goal, env.goal())
    assert np.all(second[36:39] == 0)
    env.close()


def test_observed_rewards_are_the_last_two_steps_and_the_rest_is_metaworlds_observation() -> None:
    seen, plain = ML1Trials("reach-v3", reward_observed=True), ML1Trials("reach-v3")
    assert seen.observation_space.shape == (41,) and plain.observation_space.shape == (39,)
    a, _ = seen.reset(seed=7)
    b, _ = plain.reset(seed=7)
    assert seen.observation_space.contains(a) and a[39:].tolist() == [0.0, 0.0]
    np.testing.assert_array_equal(a[:39], b)
    rewards = []
    for t in range(3):
        action = np.full(4, 0.3 * (t + 1), np.float32)
        a, r, *_ = seen.step(action)
        b, r_plain, *_ = plain.step(action)
        rewards.append(r)
        np.testing.assert_array_equal(a[:39], b)
        assert r == r_plain
    np.testing.assert_allclose(a[39:], [rewards[-1], rewards[-2]], rtol=1e-6)
    seen.reset(seed=7)
    assert seen.reset(seed=7)[0][39:].tolist() == [0.0, 0.0]  # a new trial observes no reward yet
    with pytest.raises(TypeError, match="reward_observed"):
        ML1Trials("reach-v3", reward_observed=1)  # type: ignore[arg-type]
    demo, plain_demo = ml1_demonstrations(reward_observed=True)(50), ml1_demonstrations()(50)
    assert demo is not None and plain_demo is not None and demo[0].shape[1] == 41
    np.testing.assert_array_equal(demo[0][:, :39], plain_demo[0])  # the scripted policy reads the 39 alone
    np.testing.assert_allclose(demo[0][1:, 39], demo[2][:-1], rtol=1e-6)
    seen.close()
    plain.close()


def test_dense_reward_column_round_trips() -> None:
    lay = EntryLayout(key_dim=3, action_dim=4, exp_dim=2, horizon=10, step_reward=True)
    values = lay.values(np.zeros((3, 3)), np.zeros((3, 4)), 1.0, np.ones((3, 2)), rewards=[0.1, 0.2, 0.3])
    np.testing.assert_allclose(values[:, lay.reward_col], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(values[:, -2:], 1.0)  # z still last
    rows = lay.rows(values[None], np.zeros((1, 3)), np.zeros((1, 3)), np.ones(1), np.ones((1, 3), bool))
    np.testing.assert_allclose(rows[0, :, lay.row_reward_col], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="one reward per step"):
        lay.values(np.zeros((3, 3)), np.zeros((3, 4)), 1.0, np.ones((3, 2)))
    mem = TrialMemory(spaces.Box(-1, 1, (3,)), spaces.Box(-1, 1, (4,)), horizon=10, k=2, exp_dim=0,
                      dense_rewards=True, write_failures=True)
    scope = mem.new_scope()
    mem.write_trial(scope, np.zeros((2, 3)), np.zeros((2, 4)), [0.5, 0.7], success=False)
    rows, mask, _ = mem.read(np.array([scope]), np.zeros((1, 3)), np.ones(1))
    assert mask[0].all() and np.all(rows[0, :, mem.layout.row_return_col] == 0)  # a failure, however rewarded
    np.testing.assert_allclose(sorted(rows[0, :, mem.layout.row_reward_col]), [0.5, 0.7], rtol=1e-6)


def test_box_action_codes_decode_back() -> None:
    coder = ActionCoder(spaces.Box(np.array([-1, 0, -2, -1]), np.array([1, 2, 2, 1]), dtype=np.float32))
    a = np.array([[0.3, 1.5, -2.0, 1.0]], np.float32)
    np.testing.assert_allclose(coder.decode(coder.encode(a)), a, atol=1e-6)


def test_retrieve_and_play_replays_a_demonstration_on_a_heldout_goal(env: ML1Trials) -> None:
    held = ml1_instances()[1][4]
    mem = TrialMemory(env.observation_space, env.action_space, horizon=env.cap, k=8, exp_dim=0,
                      dense_rewards=True)
    wrapped = ExperienceWrapper(env, mem, scope="run", instances=[held], trials=1, guided=True, learn=False,
                            demonstrations=ml1_demonstrations(), group_size=1, free_members=0)
    player = RetrieveAndPlay(mem.layout, env.action_space)
    obs, _ = wrapped.reset()
    for _ in range(env.cap):
        batch = {k: v[None] for k, v in obs.items()}
        action, _ = player.predict(batch)
        assert action.shape == (1, 4)
        obs, _, terminated, truncated, info = wrapped.step(action[0])
        if terminated or truncated:
            break
    assert info["trial_success"]


def test_meta_episode_feeds_back_box_actions(env: ML1Trials) -> None:
    meta = MetaEpisode(env, instances=[51], trials=2)
    obs, _ = meta.reset()
    assert obs["last_action"].shape == (4,) and not obs["last_action"].any()
    action = np.array([0.5, -0.25, 1.0, 0.0], np.float32)
    obs, *_ = meta.step(action)
    np.testing.assert_allclose(obs["last_action"], action)
    space = meta.observation_space
    assert isinstance(space, spaces.Dict) and space["last_action"].contains(obs["last_action"])


def test_entry_imitation_raises_the_likelihood_of_the_shown_continuous_action() -> None:
    """Box actions: two PPO models from one seed, one with the imitation callback (nearest shown
    success, any distance); on the states of held-out demonstrations, the demonstration shown,
    the callback's model gives the demonstrated actions a higher Gaussian log-likelihood."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import obs_as_tensor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from experience_wrappers.trials.wrapper import trials_env_fns
    from integrations.sb3.trials_features import TrialsFeaturesExtractor
    from integrations.sb3.trials_imitation import EntryImitationCallback

    demos = ml1_demonstrations()
    loglik = {}
    for imitate in (False, True):
        proto = ML1Trials("reach-v3")
        mem = TrialMemory(proto.observation_space, proto.action_space, horizon=proto.cap, k=4, exp_dim=0,
                          dense_rewards=True)
        venv = DummyVecEnv(trials_env_fns(lambda: ML1Trials("reach-v3"), mem, 2, instances=list(range(10)),
                                          trials=1, group_size=2, free_members=0, seed=0, demonstrations=demos,
                                          demo_ratio=1.0))
        model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, learning_rate=1e-3, seed=0,
                    policy_kwargs={"features_extractor_class": TrialsFeaturesExtractor, "net_arch": [32]})
        cb = EntryImitationCallback(mem.layout, max_distance=None, n_batches=40, batch_size=64, seed=0) \
            if imitate else None
        model.learn(4 * 128, callback=cb)
        venv.close()
        if cb is not None:
            assert cb.stats["states"] > 0
        env = ExperienceWrapper(ML1Trials("reach-v3"), mem, scope="run",
                                instances=[50, 51, 52], trials=1, guided=True, learn=False,
                            demonstrations=demos, group_size=1, free_members=0)
        states, wanted = [], []
        for _ in range(3):
            o, info = env.reset()
            _, actions, _ = demos(info["trial"]["instance"])
            for a in actions[:20]:
                states.append(o)
                wanted.append(a)
                o, *_ = env.step(a)
        env.close()
        proto.close()
        obs = {k: np.stack([s[k] for s in states]) for k in states[0]}
        with torch.no_grad():
            _, logp, _ = model.policy.evaluate_actions(obs_as_tensor(obs, "cpu"), torch.as_tensor(np.stack(wanted)))
        loglik[imitate] = float(logp.mean())
    assert loglik[True] > loglik[False] + 0.5, loglik


@pytest.mark.parametrize("family", ["ml1-reach", "ml1-reach-moves", "ml1-push-moves", "ml1-pick-place-moves"])
def test_every_ml1_family_builds_its_envs_with_an_arms_env_arguments(family: str) -> None:
    from benchmarks.suites.trials import FAMILIES

    fam = FAMILIES[family](success_bonus="infinite")  # what an arm's env_kwargs give (the bonus arms)
    for make in (fam["make"], fam["make_visible"]):
        env = make()
        try:
            assert env.success_bonus == "infinite"
        finally:
            env.close()


def test_the_metaworld_key_is_where_the_hand_and_object_are_and_round_trips_in_a_runs_settings(env: ML1Trials) -> None:
    from integrations.metaworld.keys import HAND_HIGH, HAND_LOW, MetaWorldKeyEncoder
    from integrations.sb3.method_settings import from_json, to_json

    enc = MetaWorldKeyEncoder()
    obs, actions, _, success = scripted_demonstration(env, 60)
    assert success
    keys = enc.encode(obs, np.zeros(len(obs), np.int64))
    assert keys.shape == (len(obs), 6) and np.abs(keys).max() <= 1.0
    goal_key = (env.goal() - HAND_LOW) / (HAND_HIGH - HAND_LOW) * 2 - 1
    near = np.linalg.norm(keys[:, :3] - goal_key, axis=1)
    assert near[-1] < 0.2 < near[0]  # the demonstration's last state is near the goal, its first is not
    assert np.allclose(keys[:, 3:], keys[0, 3:], atol=0.01)  # reach's object stays where it is (it settles)
    mem = TrialMemory(env.observation_space, env.action_space, horizon=150, key_encoder=enc, exp_dim=0)
    assert mem.key_dim == 6
    back = from_json(to_json({"key_encoder": enc}, "memory_kwargs"), "memory_kwargs")["key_encoder"]
    assert isinstance(back, MetaWorldKeyEncoder)
    with pytest.raises(ValueError, match="Meta-World observations"):
        enc.encode(np.zeros((2, 3)), np.zeros(2, np.int64))
    with pytest.raises(TypeError, match="got a dict"):
        enc.encode({"observation": obs}, np.zeros(len(obs), np.int64))
    with pytest.raises(ValueError, match="one id per observation"):
        enc.encode(obs, np.zeros(len(obs) + 1, np.int64))
    bad = obs.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        enc.encode(bad, np.zeros(len(obs), np.int64))
    # keyed by the object alone (a push success's end marks the goal by where the puck is): the same columns
    obj = MetaWorldKeyEncoder(parts=("object",))
    assert obj.key_dim == 3
    assert np.array_equal(obj.encode(obs, np.zeros(len(obs), np.int64)), keys[:, 3:])
    assert np.array_equal(MetaWorldKeyEncoder(parts=("object", "hand")).encode(obs[:2], np.zeros(2, np.int64)),
                          np.concatenate([keys[:2, 3:], keys[:2, :3]], 1))
    back = from_json(to_json({"key_encoder": obj}, "memory_kwargs"), "memory_kwargs")["key_encoder"]
    assert isinstance(back, MetaWorldKeyEncoder) and back.parts == ("object",)
    for parts in ((), ("goal",), ("hand", "hand")):
        with pytest.raises(ValueError, match="parts must name each"):
            MetaWorldKeyEncoder(parts=parts)
    with pytest.raises(TypeError, match="parts must be a tuple"):
        MetaWorldKeyEncoder(parts="object")  # type: ignore[arg-type]
    # given as its class, built as cls(observation_space): the message says to give an instance (no space dumped)
    with pytest.raises(TypeError, match=r"give an instance, key_encoder=MetaWorldKeyEncoder\(\)") as err:
        TrialMemory(env.observation_space, env.action_space, horizon=150, key_encoder=MetaWorldKeyEncoder)
    assert "Box(" not in str(err.value)
    # built on another env's space, refused when the memory is built (a 10-wide unbounded Box, MuJoCo's Reacher's,
    # was read without a word: its columns 0-6 keyed as a hand and an object)
    reacher = spaces.Box(-np.inf, np.inf, (10,), np.float64)
    with pytest.raises(ValueError, match="Meta-World's observation \\(a flat Box at least 39 wide"):
        TrialMemory(reacher, env.action_space, horizon=150, key_encoder=MetaWorldKeyEncoder())
    wide = spaces.Box(-np.inf, np.inf, (39,), np.float64)  # wide enough, not bounded by the hand's workspace
    with pytest.raises(ValueError, match="scales the hand's columns"):
        TrialMemory(wide, env.action_space, horizon=150, key_encoder=MetaWorldKeyEncoder(parts=("object",)))
    with pytest.raises(ValueError, match="got Dict"):
        TrialMemory(spaces.Dict({"observation": env.observation_space}), env.action_space, horizon=150,
                    key_encoder=MetaWorldKeyEncoder())


@pytest.mark.parametrize("make", [lambda: ML1Trials("reach-v9"), lambda: ml1_goal_tasks("reach-v9"),
                                  lambda: ml1_demonstrations("reach-v9")])
def test_an_unknown_task_is_refused_with_the_names_close_to_it(make) -> None:
    with pytest.raises(ValueError, match=r"Unknown Meta-World task .*Did you mean \['reach-v3'"):
        make()


@pytest.mark.parametrize("kwargs, match", [({"start_seed": -1}, "start_seed"), ({"reward_scale": "x"}, "reward_scale"),
                                           ({"reward_scale": 0.0}, "reward_scale"), ({"gamma": "y"}, "gamma")])
def test_the_trials_env_refuses_bad_settings_by_name(kwargs, match) -> None:
    """Not numpy's "expected non-negative integer" or an isfinite TypeError."""
    with pytest.raises(ValueError, match=match):
        ML1Trials(**kwargs)


def test_bad_instances_and_caps_are_refused_by_name(env: ML1Trials) -> None:
    with pytest.raises(ValueError, match="cap"):
        ml1_demonstrations("reach-v3", cap=-1)
    demos = ml1_demonstrations("reach-v3")
    for bad, exc in ((2.7, TypeError), ("3", TypeError), (-1, ValueError)):
        with pytest.raises(exc, match="instance"):
            demos(bad)
    for bad, exc in ((-1, ValueError), (1.5, TypeError), (100, ValueError)):
        with pytest.raises(exc, match="instance"):
            env.reset(seed=bad)


def test_a_demonstration_recorded_on_past_its_success_ends_nearer_the_goal_than_the_radius_edge() -> None:
    """A trial ends at its first success, on the success radius's edge (benchmarks/studies/mark_offset.py); with
    ``settle`` the scripted policy goes on, on Meta-World's own env, and the demonstration ends where it settles."""
    plain = ml1_demonstrations("push-v3")(50)
    settled = ml1_demonstrations("push-v3", settle=10)(50)
    assert plain is not None and settled is not None
    assert len(settled[0]) == len(plain[0]) + 10 and len(settled[1]) == len(settled[2]) == len(settled[0])
    assert np.array_equal(settled[0][:len(plain[0])], plain[0])  # the same demonstration up to its success
    assert float(np.abs(settled[0][:, 36:39]).max()) == 0.0  # still recorded goal-hidden
    env = ML1Trials("push-v3")
    env.reset(seed=50)
    goal = env.goal()
    def to_goal(demo) -> float:
        return float(np.linalg.norm(demo[0][-1, 4:7] - goal))
    assert to_goal(settled) < 0.6 * to_goal(plain)  # (0.05 on the edge; about half as far once settled)
    with pytest.raises(ValueError, match="settle"):
        ml1_demonstrations("push-v3", settle=-1)
    with pytest.raises(RuntimeError, match="before reset"):
        ML1Trials("push-v3").step_on(np.zeros(4, np.float32))
