"""Groups of envs that replay one task instance per episode index (paired credit), under SB3 auto-reset."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.wrappers import (
    ReplayInstances,
    guided_members,
    instance_seed,
    paired_env_fns,
)
from integrations.sb3 import ExperienceVecEnv


def _minihack_groups(n_envs: int, group_size: int, seed: int, lengths=(3, 5, 4, 7)) -> DummyVecEnv:
    """KeyRoom-S5 envs in groups; members get different step limits, so they auto-reset at different times."""
    pytest.importorskip("minihack")
    from integrations.minihack import make_minihack_env

    limits = itertools.cycle(lengths)

    def make() -> gym.Env:
        return make_minihack_env("MiniHack-KeyRoom-S5-v0", observation_keys=("glyphs", "blstats"),
                                 max_episode_steps=next(limits))
    return DummyVecEnv(paired_env_fns(make, n_envs, group_size, seed))


def _first_observations(env: ExperienceVecEnv, steps: int, rng: np.random.Generator):
    """Each episode's first glyphs, by (env, episode index), and each begin's (group, index, guided)."""
    n = env.num_envs
    firsts: dict[tuple[int, int], np.ndarray] = {}
    roles: list[tuple[int, int, int, bool]] = []
    count = [0] * n

    def begun(rows, obs):
        for r in rows:
            inst = env.injector.instances[r]
            firsts[(r, count[r])] = obs["glyphs"][r].copy()
            roles.append((inst.group, inst.index, r, bool(env.injector.guided[r])))
            assert inst.index == count[r]
            count[r] += 1

    obs = env.reset()
    assert all({k: v[r] for k, v in obs.items()} in env.observation_space for r in range(n))
    begun(range(n), obs)
    for _ in range(steps):
        obs, _, dones, infos = env.step(rng.integers(0, env.action_space.n, n))
        begun(np.flatnonzero(dones).tolist(), obs)
    return firsts, roles


def test_members_of_a_group_start_their_nth_episodes_on_the_same_minihack_layout():
    env = ExperienceVecEnv(_minihack_groups(4, 2, seed=3), ExperienceBank(seed=0), paired=True,
                           manager_kwargs={"mode": "sync"})
    firsts, roles = _first_observations(env, 30, np.random.default_rng(0))
    # the members of group 0 (envs 0, 1) and of group 1 (envs 2, 3) end at different steps
    # (step limits 3, 5 and 4, 7), so they reset at different times: pairs are by episode index
    for group, (a, b) in enumerate(((0, 1), (2, 3))):
        shared = sorted({n for (r, n) in firsts if r == a} & {n for (r, n) in firsts if r == b})
        assert len(shared) >= 4
        for n in shared:
            np.testing.assert_array_equal(firsts[(a, n)], firsts[(b, n)], err_msg=f"group {group}, episode {n}")
    # different groups, and different episodes of one group, start on different layouts (KeyRoom-S5 has
    # few enough layouts that two seeds may share one: most, not all, differ)
    assert sum(not np.array_equal(firsts[(0, n)], firsts[(2, n)]) for n in range(4)) >= 3
    assert len({firsts[(0, n)].tobytes() for n in range(5)}) >= 3
    # each (group, index) holds one guided and one free member (ratio 0.5 in groups of 2), roles rotating
    by_instance: dict[tuple[int, int], list[bool]] = {}
    for group, index, _, guided in roles:
        by_instance.setdefault((group, index), []).append(guided)
    complete = [v for v in by_instance.values() if len(v) == 2]
    assert complete and all(sorted(v) == [False, True] for v in complete)
    # finished episodes reached the manager's pending table; instances with both members in are credited
    st = env.manager.stats()
    assert st["paired_dropped"] == 0.0
    env.close()


def test_paired_off_leaves_replayed_envs_as_before():
    """paired=False (the default) ignores the instance info: the guided draw is the seeded random one,
    and finished episodes carry no instance and no shown-step counts."""
    a = ExperienceVecEnv(_minihack_groups(2, 2, seed=3), ExperienceBank(seed=0), seed=5,
                         manager_kwargs={"mode": "sync"})
    assert a.injector.paired is False
    a.reset()
    episodes = []
    a.manager.submit = episodes.append  # type: ignore[method-assign]
    rng = np.random.default_rng(0)
    for _ in range(8):
        a.step(rng.integers(0, a.action_space.n, 2))
    assert episodes and all(ep.instance is None and ep.shown_steps is None for ep in episodes)
    # the same draws as an injector on envs that do not replay instances
    draws = np.random.default_rng(5).random(2) < a.manager.guided_ratio
    b = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), ExperienceBank(seed=0), seed=5,
                         manager_kwargs={"mode": "sync"})
    b.reset()
    assert b.injector.guided.tolist() == draws.tolist()
    a.close()
    b.close()


def _cartpole_fns(n: int, size: int, wrapper=None):
    return paired_env_fns(lambda: gym.make("CartPole-v1"), n, size, seed=11, wrapper=wrapper)


def test_single_env_wrappers_and_the_vec_wrapper_agree_on_instances_and_roles():
    bank_a, bank_b = ExperienceBank(seed=0), ExperienceBank(seed=0)
    vec = ExperienceVecEnv(DummyVecEnv(_cartpole_fns(4, 2)), bank_a, paired=True, manager_kwargs={"mode": "sync"})
    per_env = DummyVecEnv(_cartpole_fns(4, 2, wrapper=lambda e: ExperienceWrapper(
        e, bank_b, paired=True, manager_kwargs={"mode": "sync"})))
    oa, ob = vec.reset(), per_env.reset()
    np.testing.assert_array_equal(oa["observation"], ob["observation"])
    rng = np.random.default_rng(1)
    for _ in range(60):
        act = rng.integers(0, 2, 4)
        oa, _, da, ia = vec.step(act)
        ob, _, db, ib = per_env.step(act)
        np.testing.assert_array_equal(oa["observation"], ob["observation"])
        assert [i["experience_guided"] for i in ia] == [i["experience_guided"] for i in ib]
        assert da.tolist() == db.tolist()
    # the paired table of each manager saw the same instances
    assert vec.manager.paired.credited == per_env.envs[0].manager.paired.credited > 0


def test_shown_steps_count_the_steps_each_entry_was_shown():
    bank = ExperienceBank(seed=0)
    env = ExperienceVecEnv(DummyVecEnv(_cartpole_fns(2, 2)), bank, paired=True, retrieve_every=2,
                           manager_kwargs={"mode": "sync"})
    episodes = []
    submit = env.manager.submit

    def keep(ep):
        episodes.append(ep)
        submit(ep)
    env.manager.submit = keep  # type: ignore[method-assign]
    env.reset()
    for _ in range(300):
        env.step(np.zeros(2, dtype=np.int64))
    guided = [ep for ep in episodes if ep.guided and len(ep.injected_ids)]
    assert guided
    for ep in guided:
        assert ep.shown_steps.shape == ep.injected_ids.shape
        assert (ep.shown_steps >= 1).all() and (ep.shown_steps <= ep.length).all()
        # k = 4 slots, retrieval every 2 steps: at most 4 entries shown per step
        assert ep.shown_steps.sum() <= 4 * ep.length
    env.close()


def test_paired_on_envs_that_cannot_replay_falls_back_to_the_unpaired_rule_and_says_so():
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    wrapped = ExperienceVecEnv(env, ExperienceBank(seed=0), paired=True, seed=0, manager_kwargs={"mode": "sync"})
    with pytest.warns(UserWarning, match="credited against the task's recent free episodes.*paired_env_fns"):
        wrapped.reset()
    assert wrapped.injector.instances == [None, None]
    done = np.zeros(2, bool)
    while not done.all():  # every episode ends without an instance to pair with
        _, _, dones, _ = wrapped.step(np.zeros(2, dtype=np.int64))
        done |= dones
    mgr = wrapped.manager
    assert mgr.episodes_processed >= 2 and not mgr.paired.credited and not mgr.paired.open_instances
    assert mgr.outcomes.means()["free"] == mgr.baseline.mean(0)  # the free episodes are the task's baseline
    wrapped.close()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"group": 0, "member": 2, "size": 2, "seed": 0}, "member"),
    ({"group": 0, "member": 0, "size": 1, "seed": 0}, "size"),
    ({"group": -1, "member": 0, "size": 2, "seed": 0}, "group"),
    ({"group": 0, "member": 0, "size": 1, "seed": 0, "instances": [1], "repeats": 0}, "repeats"),
    ({"group": 0, "member": 0, "size": 1, "seed": 0, "instances": []}, "instances"),
])
def test_replay_instances_checks_its_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ReplayInstances(gym.make("CartPole-v1"), **kwargs)


def test_replay_instances_seeds_each_reset_and_ignores_a_given_seed():
    env = ReplayInstances(gym.make("CartPole-v1"), group=1, member=0, size=2, seed=4)
    o0, i0 = env.reset(seed=123)
    o1, i1 = env.reset()
    ref = gym.make("CartPole-v1")
    np.testing.assert_array_equal(o0, ref.reset(seed=instance_seed(4, 1, 0))[0])
    np.testing.assert_array_equal(o1, ref.reset(seed=instance_seed(4, 1, 1))[0])
    assert (i0["experience_instance"]["index"], i1["experience_instance"]["index"]) == (0, 1)


def test_replay_instances_draw_one_instance_per_run_the_same_for_every_member_of_a_group():
    """The run scope's groups: a run of ``repeats`` episodes on one drawn instance, the members in step."""
    instances = [11, 12, 13, 14, 15]

    def specs(member: int, group: int = 0, seed: int = 2) -> list[dict]:
        env = ReplayInstances(gym.make("CartPole-v1"), group=group, member=member, size=3, seed=seed,
                              instances=instances, repeats=3)
        return [env.reset(seed=999)[1]["experience_instance"] for _ in range(12)]

    a, b = specs(0), specs(2)
    assert [s["instance"] for s in a] == [s["instance"] for s in b]  # members of a group: same instances
    assert [(s["run"], s["repeat"]) for s in a] == [(i // 3, i % 3) for i in range(12)]
    for run in range(4):  # one instance per run, from the list
        drawn = {s["instance"] for s in a[3 * run: 3 * run + 3]}
        assert len(drawn) == 1 and drawn <= set(instances)
    assert len({s["instance"] for s in a}) > 1
    assert [s["instance"] for s in specs(0, group=1)] != [s["instance"] for s in a]  # another group draws its own
    env = ReplayInstances(gym.make("CartPole-v1"), group=0, member=0, size=1, seed=0, instances=[7], repeats=2)
    obs, info = env.reset()
    np.testing.assert_array_equal(obs, gym.make("CartPole-v1").reset(seed=7)[0])  # the instance is the reset seed
    assert info["experience_instance"]["instance"] == 7


def test_guided_members_round_the_ratio_per_group():
    assert [guided_members(r, 4) for r in (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 1.0)] == [1, 1, 2, 2, 3, 3, 3]
    assert [guided_members(r, 8) for r in (0.5, 0.8)] == [4, 6]
