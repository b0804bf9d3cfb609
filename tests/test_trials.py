"""Trials of one instance: the memory's scopes, the wrapper's runs, the peers and the evaluation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3.common.vec_env import DummyVecEnv

from benchmarks.peers.meta_episode import MetaEpisode
from benchmarks.peers.retrieve_and_play import RetrieveAndPlay
from experience_wrappers import ExperienceWrapper
from experience_wrappers.experimental import PathTrialMemory
from experience_wrappers.manager.entry_layout import EntryLayout
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.trial_index import TrialIndex
from experience_wrappers.trials.wrapper import (
    ENTRIES_KEY,
    MASK_KEY,
    RunScopeWrapper,
    trial_env,
    trials_env_fns,
)
from integrations.minihack.hidden_goal import (
    MOVES,
    HiddenGoalRoom,
    goal_demonstration,
    shortest_path_actions,
    split_goals,
)
from integrations.sb3.trials_evaluation import run_trials, trial_metrics
from integrations.sb3.trials_features import TrialsFeaturesExtractor

POS = spaces.Box(0.0, 9.0, (2,), np.float32)
ACT = spaces.Discrete(8)


def memory(**kw) -> TrialMemory:
    return TrialMemory(POS, ACT, horizon=25, **{"k": 4, "exp_dim": 4, "write_failures": True, **kw})


demo = goal_demonstration


# ------------------------------------------------------------------------- layout
def test_rows_decode_what_was_written() -> None:
    lay = EntryLayout(key_dim=2, action_dim=8, exp_dim=3, horizon=10)
    keys = np.array([[0.1, 0.2], [0.3, 0.4]], np.float32)
    values = lay.values(keys, np.eye(8)[[5, 2]], 1.0, np.ones((2, 3)))
    q = np.array([[0.3, 0.0]], np.float32)
    rows = lay.rows(values[None], q, np.array([[0.5, 0.25]]), np.array([1.0]), np.array([[True, False]]))
    assert np.allclose(rows[0, 0, :2], keys[0] - q[0])
    assert rows[0, 0, lay.row_distance_col] == pytest.approx(0.5)
    assert int(np.argmax(rows[0, 0, lay.row_action_slice()])) == 5
    assert rows[0, 0, lay.row_return_col] == 1.0
    assert rows[0, 0, lay.steps_to_go_col + 2] == pytest.approx(0.2)  # 2 steps of a 2-step trial, / 10
    assert not rows[0, 1].any()  # a masked slot is zeros


def test_a_manager_with_a_layout_writes_one_entry_per_step_holding_its_content() -> None:
    from experience_wrappers.bank import ExperienceBank
    from experience_wrappers.manager import Episode, ExperienceManager, ManagerConfig

    config = ManagerConfig(mode="sync", segment_every=1, layout={"horizon": 10, "step_reward": True},
                           extractor={"exp_dim": 3})
    mgr = ExperienceManager(ExperienceBank(dedup_threshold=0.0), POS, spaces.Discrete(8), config=config)
    dense = mgr.layout
    assert dense == EntryLayout(key_dim=mgr.key_encoder.key_dim, action_dim=8, exp_dim=3, horizon=10, step_reward=True)
    ep = Episode(observations=np.array([[0, 0], [1, 1], [2, 2]]), actions=np.array([1, 2, 3]),
                 rewards=[0.5, 0.25, 0.75], success=False, guided=False, task_id=7)
    ids = mgr.write_entries(ep)
    got = mgr.bank.get(ids)
    assert len(ids) == 3 and (got["task_id"] == 7).all() and got["value"].shape == (3, dense.value_dim)
    assert got["value"][:, dense.reward_col].tolist() == [0.5, 0.25, 0.75]
    assert (got["value"][:, dense.return_col] == 0.0).all()  # dense rewards: the outcome, not their positive sum
    assert np.argmax(got["value"][:, dense.action_slice()], axis=1).tolist() == [1, 2, 3]
    assert dense.vectors(got["value"]).shape == (3, 3)
    with pytest.raises(ValueError, match="segment_every must be 1"):
        ManagerConfig(layout={"horizon": 10})
    with pytest.raises(TypeError, match="horizon"):
        ManagerConfig(segment_every=1, layout={"horizon": 2.5})
    with pytest.raises(RuntimeError, match="mode='sync'"):
        ExperienceManager(ExperienceBank(), POS, spaces.Discrete(8),
                          config=ManagerConfig(mode="async", segment_every=1, layout={"horizon": 10})).write_entries(ep)


# ------------------------------------------------------------------------- memory
@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1,
                                                      max_size=4)), min_size=1, max_size=12),
       st.integers(0, 2), st.integers(0, 9), st.integers(0, 9))
def test_a_scope_reads_the_nearest_steps_of_its_newest_trials_only(trials, scope_pick, qx, qy) -> None:
    mem = memory(exp_dim=0, k=4, per_trial=2)
    scopes = [mem.new_scope() for _ in range(3)]
    model: dict[int, list[np.ndarray]] = {s: [] for s in scopes}  # brute force: each scope's trials
    for s_idx, steps in trials:
        s = scopes[s_idx]
        pos = np.array(steps, np.float32)
        mem.write(s, pos, np.zeros(len(pos), int), np.zeros(len(pos)))
        model[s].append(pos)
    s = scopes[scope_pick]
    q = np.array([[qx, qy]], np.float32)
    rows, mask, ids = mem.read(np.array([s]), q, np.array([1.0]))
    want = []
    for pos in model[s][::-1][:2]:  # the two newest trials, two nearest steps of each
        d = ((mem.keys(pos) - mem.keys(q)) ** 2).sum(1)
        want += np.sort(d)[:2].tolist()
    got = rows[0, mask[0], mem.layout.row_distance_col]
    assert mask.sum() == len(want)
    assert np.allclose(np.sort(got), np.sort(want), atol=1e-5)
    own = {int(i) for chunk in mem.trials_of(s) for i in chunk}
    assert set(ids[0][mask[0]].tolist()) <= own


def test_a_successful_trial_is_read_however_many_failed_visits_lie_nearer() -> None:
    mem = memory(exp_dim=0, k=4, per_trial=2)
    s = mem.new_scope()
    mem.write(s, np.zeros((3, 2), np.float32), np.array([1, 2, 3]), [0, 0, 1])  # a success through (0, 0)
    for _ in range(3):  # then three failed trials that stay on (0, 0)
        mem.write(s, np.zeros((20, 2), np.float32), np.zeros(20, int), np.zeros(20))
    rows, mask, _ = mem.read(np.array([s]), np.zeros((1, 2), np.float32), np.array([1.0]))
    assert not (rows[0, mask[0], mem.layout.row_return_col] > 0).any()  # k // per_trial = 2 newest trials only
    mem2 = memory(exp_dim=0, k=8, per_trial=2)
    s2 = mem2.new_scope()
    mem2.write(s2, np.zeros((3, 2), np.float32), np.array([1, 2, 3]), [0, 0, 1])
    for _ in range(3):
        mem2.write(s2, np.zeros((20, 2), np.float32), np.zeros(20, int), np.zeros(20))
    rows, mask, _ = mem2.read(np.array([s2]), np.zeros((1, 2), np.float32), np.array([1.0]))
    won = rows[0, mask[0] & (rows[0, :, mem2.layout.row_return_col] > 0)]
    assert len(won) == 2
    # among the success's equally near steps, those fewest steps from its end come first: the last action
    assert int(np.argmax(won[0, mem2.layout.row_action_slice()])) == 3


def test_path_slots_of_the_experimental_memory_show_where_a_failed_trial_went_however_far_from_the_agent() -> None:
    """A failed trial that walked away along row 0: its nearest steps to the start say only that
    it passed there; ``path`` steps, spread along it, show its far end too."""
    walk = np.array([[x, 0] for x in range(9)], np.float32)  # (0, 0) .. (8, 0)
    start = np.zeros((1, 2), np.float32)
    near = memory(exp_dim=0, k=4, per_trial=2)
    both = PathTrialMemory(POS, ACT, horizon=25, exp_dim=0, k=4, per_trial=2, path=2, write_failures=True)
    for mem in (near, both):
        s = mem.new_scope()
        mem.write(s, walk, np.zeros(9, int), np.zeros(9))
        rows, mask, ids = mem.read(np.array([s]), start, np.array([1.0]))
        offsets = rows[0, mask[0], 0]  # x offsets of the steps read (keys scaled to [-1, 1] over 0..9)
        if mem is near:
            assert mask[0].sum() == 2 and offsets.max() < 0.25  # (0, 0) and (1, 0) only
        else:
            assert mask[0].sum() == 4 and ids[0, 3] == ids[0, 0] + 8  # the first and the last step
            assert offsets.max() == pytest.approx(8 * 2 / 9)  # the far end, 8 cells away
    with pytest.raises(ValueError, match="path"):
        PathTrialMemory(POS, ACT, horizon=25, k=4, per_trial=2, path=3)  # more slots than k
    with pytest.raises(TypeError, match="path"):
        memory(path=2)  # run scope's memory reads nearest steps only; reading paths is experimental


def test_forget_removes_a_runs_entries() -> None:
    mem = memory()
    a, b = mem.new_scope(), mem.new_scope()
    mem.write(a, np.zeros((3, 2), np.float32), np.zeros(3, int), [0, 0, 1])
    mem.write(b, np.zeros((2, 2), np.float32), np.zeros(2, int), [0, 0])
    assert len(mem.bank) == 5
    assert mem.forget(a) == 3
    assert len(mem.bank) == 2
    _, mask, _ = mem.read(np.array([a]), np.zeros((1, 2), np.float32), np.array([1.0]))
    assert not mask.any()
    with pytest.raises(KeyError, match="not open"):
        mem.write(a, np.zeros((1, 2), np.float32), np.zeros(1, int), [0])


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="scope"):
        memory(scope="everything")
    mem = memory()
    s = mem.new_scope()
    with pytest.raises(ValueError, match="one observation, action and reward per step"):
        mem.write(s, np.zeros((3, 2), np.float32), np.zeros(2, int), [0, 0, 0])


def test_successes_only_writes_no_failed_trial() -> None:
    for mem in (memory(write_failures=False), TrialMemory(POS, ACT, horizon=25)):  # the default, as measured
        s = mem.new_scope()
        assert len(mem.write_trial(s, np.zeros((2, 2), np.float32), np.zeros(2, int), [0, 0], False)) == 0
        assert len(mem.write_trial(s, np.zeros((2, 2), np.float32), np.zeros(2, int), [0, 1], True)) == 2
    failures = memory(write_failures=True)  # the failures-written arms
    assert len(failures.write_trial(failures.new_scope(), np.zeros((2, 2), np.float32), np.zeros(2, int), [0, 0],
                                    False)) == 2


def test_paired_credit_trains_the_extractor_unless_frozen() -> None:
    for train in (True, False):
        mem = memory(batch_size=8, train_extractor=train)
        before = [p.detach().clone() for p in mem.trainer.extractor.parameters()]
        for run in range(4):
            s = mem.new_scope()
            ids = mem.write(s, np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 2, 3]), [0, 0, 1])
            # a guided trial shown the entries succeeds where the free trial of its instance failed
            mem.finish_trial((0, run, 1), 1.0, guided=True, members=2, free=1, shown=set(ids.tolist()))
            mem.finish_trial((0, run, 1), 0.0, guided=False, members=2, free=1)
        assert mem.stats["credited_entries"] == 12
        assert mem.stats["mean_delta"] > 0
        changed = any(not torch.equal(a, b) for a, b in zip(before, mem.trainer.extractor.parameters(), strict=True))
        assert changed == train
        assert (mem.stats["extractor_updates"] > 0) == train


# ------------------------------------------------------------------------- the env
def test_the_goal_is_hidden_and_reset_replays_the_instance() -> None:
    env = HiddenGoalRoom()
    seen = []
    for goal in (55, 99, 55):
        obs, _ = env.reset(seed=goal)
        path = [obs.tolist()]
        for a in (1, 1, 5):  # the same moves from the start: the same observations, whatever the goal
            obs, r, term, trunc, info = env.step(a)
            path.append(obs.tolist())
        seen.append(path)
        assert r == 0.0 and not info["success"]
    assert seen[0] == seen[1] == seen[2]
    for goal in (1, 10, 99):
        env.reset(seed=goal)
        for a in shortest_path_actions(goal):
            obs, r, term, trunc, info = env.step(a)
        assert (r, term, info["success"]) == (1.0, True, True)
        assert obs.tolist() == [goal % 10, goal // 10]
    env.reset(seed=99)
    for _t in range(25):
        obs, r, term, trunc, _ = env.step(3)  # west into the wall: never the goal
    assert trunc and not term
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=0)  # the start is not a goal
    env.close()


def test_split_goals_is_fixed_and_disjoint() -> None:
    train, test = split_goals()
    assert split_goals() == (train, test)
    assert len(train) == 79 and len(test) == 20 and not set(train) & set(test) and 0 not in train + test


# ------------------------------------------------------------------------- the wrapper
def test_a_run_replays_one_instance_and_guided_trials_read_the_earlier_ones() -> None:
    mem = memory()
    venv = DummyVecEnv(trials_env_fns(HiddenGoalRoom, mem, 2, instances=[23, 57, 88], trials=3, group_size=2,
                                      free_members=1, seed=1))
    obs = venv.reset()
    trial_infos = [[], []]
    masks = [[], []]
    for _ in range(200):
        shown = obs[MASK_KEY].sum(axis=1)  # what the acting observation showed
        obs, _, dones, infos = venv.step(np.array([4, 4]))  # north-east: never reaches these goals
        for i, info in enumerate(infos):
            masks[i].append((info["trial"]["run"], info["trial"]["index"], float(shown[i])))
            if "trial_success" in info:
                trial_infos[i].append(dict(info["trial"]))
    # both members of the group run the same instances in the same order, K trials each
    assert [t["instance"] for t in trial_infos[0]] == [t["instance"] for t in trial_infos[1]]
    assert [t["index"] for t in trial_infos[0][:6]] == [0, 1, 2, 0, 1, 2]
    assert len({t["instance"] for t in trial_infos[0][:3]}) == 1
    assert {t["instance"] for t in trial_infos[0]} <= {23, 57, 88}
    assert trial_infos[0][0]["guided"] and not trial_infos[1][0]["guided"]
    # the guided member reads its run's earlier trials (none on trial 0), the free member nothing
    g: dict[tuple[int, int], float] = {}
    for run, idx, m in masks[0]:  # the most shown over a trial's steps
        g[(run, idx)] = max(g.get((run, idx), 0.0), m)
    assert g[(0, 0)] == 0 and g[(0, 1)] > 0 and g[(0, 2)] > 0
    assert all(m == 0 for run, idx, m in masks[1])
    assert len(mem.bank) <= 3 * 25  # finished runs leave the bank
    venv.close()


def test_a_demonstration_is_read_from_the_first_trial_and_retrieve_and_play_follows_it() -> None:
    mem = memory()
    env = ExperienceWrapper(HiddenGoalRoom(), mem, scope="run", instances=[77], trials=2, guided=True, learn=False,
                        demonstrations=demo, group_size=1, free_members=0)
    player = RetrieveAndPlay(mem.layout, env.action_space)
    for trial in range(2):
        obs, info = env.reset()
        assert info["trial"]["index"] == trial
        assert obs[MASK_KEY].sum() > 0  # the demonstration is there from the first trial
        while True:
            batch = {k: v[None] for k, v in obs.items()}
            obs, r, term, trunc, info = env.step(int(player.predict(batch)[0][0]))
            if term or trunc:
                break
        assert info["trial_success"]
    env.close()


def test_random_retrieval_reads_another_instance() -> None:
    mem = memory(scope="other")
    envs = [ExperienceWrapper(HiddenGoalRoom(max_steps=3), mem, scope="run",
                              instances=[g], trials=2, guided=True, learn=False,
                          group_size=1, free_members=0) for g in (40, 60)]
    for env in envs:  # one finished run of each instance
        for _ in range(2):
            env.reset()
            while not any(env.step(0)[2:4]):
                pass
    obs, _ = envs[0].reset()  # a new run of 40 reads the run of 60
    assert obs[MASK_KEY].sum() > 0
    assert envs[0]._donor and envs[0].memory._donors
    same_col = mem.layout.key_dim + 1
    assert (obs[ENTRIES_KEY][obs[MASK_KEY] > 0, same_col] == 0).all()
    for env in envs:
        env.close()


# ------------------------------------------------------------------------- peers and evaluation
def test_meta_episode_runs_k_trials_as_one_episode() -> None:
    env = MetaEpisode(HiddenGoalRoom(), instances=[9], trials=3)
    obs, info = env.reset()
    trial_ends, done, steps = [], False, 0
    while not done:
        obs, r, term, trunc, info = env.step(1)  # east: reaches cell 9 in 9 steps
        steps += 1
        if "trial_success" in info:
            trial_ends.append((info["trial"]["index"], info["trial_success"], float(obs["trial_start"][0])))
        done = term or trunc
    assert trial_ends == [(0, True, 1.0), (1, True, 1.0), (2, True, 0.0)]
    assert steps == 27 and obs["last_reward"][0] == 1.0
    bad = HiddenGoalRoom()
    bad.action_space = spaces.MultiBinary(2)  # Discrete and Box actions are fed back, nothing else
    with pytest.raises(ValueError, match="Discrete or Box"):
        MetaEpisode(bad, instances=[0])


def test_evaluation_reports_success_by_trial() -> None:
    mem = memory()
    venv = DummyVecEnv([lambda g=g: ExperienceWrapper(HiddenGoalRoom(), mem, scope="run",
                                                      instances=[g], trials=2, guided=True,
                                                  learn=False, demonstrations=demo, group_size=1, free_members=0)
                        for g in (15, 91)])
    player = RetrieveAndPlay(mem.layout, ACT)
    s = run_trials(venv, player.predict, runs_per_env=2, trials=2)
    assert s.shape == (4, 2) and (s == 1).all()
    m = trial_metrics(s)
    assert m["success_by_trial"] == [1.0, 1.0] and m["after_first_success"] == 1.0
    with pytest.raises(ValueError, match="runs, trials"):
        trial_metrics(np.zeros(3))
    venv.close()


def test_the_policy_can_read_the_demonstrated_action_from_the_entries() -> None:
    """A probe: demonstrations whose moves come in a random order (so that the position does
    not say the action), the features extractor and a linear head trained for 300 steps to
    output the demonstrated action: on held-out goals it is right far more often with the
    entries than with them hidden."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    paths: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def shuffled_demo(goal: int) -> tuple[np.ndarray, np.ndarray]:
        actions = rng.permutation(shortest_path_actions(goal))
        pos, obs = np.zeros(2, np.float32), []
        for a in actions:
            obs.append(pos.copy())
            pos = pos + np.asarray(MOVES[a], np.float32)
        paths[goal] = (np.stack(obs), actions)
        return paths[goal]

    train, test = split_goals()
    mem = memory(exp_dim=0, k=4)

    def samples(goals: list[int], runs: int) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        env = ExperienceWrapper(HiddenGoalRoom(), mem, scope="run", instances=goals, trials=1, guided=True, learn=False,
                            demonstrations=shuffled_demo, group_size=1, free_members=0)
        obs_list, labels = [], []
        for _ in range(runs):
            obs, info = env.reset()
            for a in paths[info["trial"]["instance"]][1].tolist():
                obs_list.append(obs)
                labels.append(a)
                obs, *_ = env.step(a)
        env.close()
        self_space.append(env.observation_space)
        return ({k: torch.as_tensor(np.stack([o[k] for o in obs_list])) for k in obs_list[0]},
                torch.as_tensor(labels))

    self_space: list = []
    (x_train, y_train), (x_test, y_test) = samples(train, 150), samples(test, 40)
    accuracy = {}
    for hidden in (False, True):
        feats = TrialsFeaturesExtractor(self_space[0], hidden=32)
        head = torch.nn.Linear(feats.features_dim, 8)
        opt = torch.optim.Adam([*feats.parameters(), *head.parameters()], lr=3e-3)
        xs = []
        for x in (x_train, x_test):
            x = dict(x)
            if hidden:
                x[MASK_KEY] = torch.zeros_like(x[MASK_KEY])
                x[ENTRIES_KEY] = torch.zeros_like(x[ENTRIES_KEY])
            xs.append(x)
        for _ in range(300):
            loss = torch.nn.functional.cross_entropy(head(feats(xs[0])), y_train)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            accuracy[hidden] = float((head(feats(xs[1])).argmax(1) == y_test).float().mean())
    assert accuracy[False] > 0.9, accuracy
    assert accuracy[False] > accuracy[True] + 0.3, accuracy


# ------------------------------------------------------------------------- the key-and-door room
def test_the_key_door_room_needs_the_key_before_the_door() -> None:
    from integrations.minihack.hidden_key_door import (
        HiddenKeyDoorRoom,
        key_door_actions,
        pair_seed,
        split_pairs,
    )

    env = HiddenKeyDoorRoom()
    key, door = 20, 3   # key (6, 2), door (3, 0)
    s = pair_seed(key, door, 7)
    env.reset(seed=s)
    for a in (1, 1, 1):  # east along the top row: over the door without the key
        obs, r, term, trunc, info = env.step(a)
    assert obs.tolist() == [3.0, 0.0, 0.0] and not term and r == 0.0
    env.reset(seed=s)
    for a in key_door_actions(s):
        obs, r, term, trunc, info = env.step(a)
    assert (r, term, info["success"], obs[2]) == (1.0, True, True, 1.0)
    with pytest.raises(ValueError, match="pair"):
        env.reset(seed=5 * 49 + 5)  # key and door on one cell
    with pytest.raises(ValueError, match="distinct cells"):
        pair_seed(5, 5, 7)
    train, test = split_pairs()
    assert len(train) == 80 and len(test) == 20 and not set(train) & set(test)
    env.close()


def test_a_fixed_sweep_of_the_key_door_room_stays_low() -> None:
    from integrations.minihack.hidden_key_door import sweep_success

    assert sweep_success(7, 30)["best"] <= 0.35
    assert sweep_success(6, 40)["best"] > 0.35  # a smaller room or a longer cap would not hide the pair


def test_entry_imitation_raises_the_probability_of_the_shown_successful_action() -> None:
    """Two PPO models from the same seed, one with the imitation callback: on states where a
    demonstration's step is shown under the agent, the callback's model takes that step's
    action far more often."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import obs_as_tensor

    from experience_wrappers.trials.nearest_success import success_actions
    from integrations.sb3.trials_imitation import EntryImitationCallback

    probs = {}
    for imitate in (False, True):
        mem = memory(exp_dim=0, k=4)
        venv = DummyVecEnv(trials_env_fns(HiddenGoalRoom, mem, 2, instances=list(range(1, 100)), trials=2,
                                          group_size=2, free_members=0, seed=0, demonstrations=demo))
        model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, learning_rate=1e-3, seed=0,
                    policy_kwargs={"features_extractor_class": TrialsFeaturesExtractor, "net_arch": [32]})
        cb = EntryImitationCallback(mem.layout, n_batches=30, batch_size=64, seed=0) if imitate else None
        model.learn(3 * 128, callback=cb)
        venv.close()
        # states along the demonstrations of 30 goals, the demonstration shown
        env = ExperienceWrapper(HiddenGoalRoom(), mem, scope="run",
                                instances=list(range(1, 100, 3)), trials=1, guided=True,
                            learn=False, demonstrations=demo, group_size=1, free_members=0)
        states, wanted = [], []
        for _ in range(30):
            o, info = env.reset()
            for a in shortest_path_actions(info["trial"]["instance"]):
                states.append(o)
                wanted.append(a)
                o, *_ = env.step(a)
        env.close()
        obs = {k: np.stack([s[k] for s in states]) for k in states[0]}
        target, found = success_actions(obs[ENTRIES_KEY], obs[MASK_KEY], mem.layout, 1e-4)
        assert found.all() and (target == np.asarray(wanted)).all()
        with torch.no_grad():
            dist = model.policy.get_distribution(obs_as_tensor(obs, "cpu"))
            probs[imitate] = float(dist.distribution.probs[np.arange(len(target)), target].mean())
    assert probs[True] > probs[False] + 0.2, probs


def test_evaluate_trials_conditions_and_errors() -> None:
    from integrations.sb3.trials_evaluation import evaluate_trials

    player = RetrieveAndPlay(memory().layout, ACT, seed=0)
    res = evaluate_trials(player.predict, HiddenGoalRoom, memory, [33, 71], trials=2, repeats=2, demonstrations=demo)
    assert res["with_demonstration"]["success_by_trial"] == [1.0, 1.0]
    assert res["with_demonstration"]["runs"] == res["without_experience"]["runs"] == 4
    # without experience retrieve-and-play has nothing to play back: random moves rarely find a hidden goal
    assert res["without_experience"]["cumulative_by_trial"][-1] < 1.0
    assert "successes" not in res["with_demonstration"]
    # keep_runs: every run's successes by trial, ordered by instance then repeat, which the figures summarise
    kept = evaluate_trials(player.predict, HiddenGoalRoom, memory, [33, 71], trials=2, repeats=2,
                           demonstrations=demo, conditions=["with_demonstration", "without_experience"],
                           keep_runs=True)
    for cond in ("with_demonstration", "without_experience"):
        runs = np.asarray(kept[cond]["successes"])
        assert runs.shape == (4, 2) and set(np.unique(runs)) <= {0, 1}
        assert kept[cond]["success_by_trial"] == runs.mean(axis=0).round(3).tolist()
        assert kept[cond]["success_by_trial"] == res[cond]["success_by_trial"]  # same seed, same runs
    # each instance's demonstration is asked once (a scripted one may cost a rollout), however many runs show it
    asked: list[int] = []
    counted = evaluate_trials(player.predict, HiddenGoalRoom, memory, [33, 71], trials=2, repeats=2,
                              demonstrations=lambda i: asked.append(i) or demo(i),
                              conditions=["with_demonstration"])
    assert sorted(asked) == [33, 71]
    assert counted["with_demonstration"] == res["with_demonstration"]
    with pytest.raises(ValueError, match="unknown conditions"):
        evaluate_trials(player.predict, HiddenGoalRoom, memory, [33], conditions=("sometimes",))
    with pytest.raises(ValueError, match="needs demonstrations"):
        evaluate_trials(player.predict, HiddenGoalRoom, memory, [33], conditions=["with_demonstration"])
    # without demonstrations the default conditions are the two that need none; a condition named twice runs once;
    # torch's global generator is left as the caller had it
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    both = evaluate_trials(player.predict, HiddenGoalRoom, memory, [33], trials=2, repeats=1,
                           conditions=["without_experience", "without_experience", "with_experience"])
    assert torch.equal(torch.rand(3), expected)
    assert set(both) - {"instances", "trials", "repeats"} == {"without_experience", "with_experience"}
    assert "with_demonstration" not in evaluate_trials(player.predict, HiddenGoalRoom, memory, [33], trials=1,
                                                       repeats=1)
    with pytest.raises(TypeError, match="deterministic"):
        evaluate_trials(player.predict, HiddenGoalRoom, memory, [33], deterministic="no")


def test_a_trained_memorys_extractor_saves_and_loads_into_a_memory_built_alike(tmp_path) -> None:
    from integrations.sb3.trials_method import build_trials_method

    mem = memory(batch_size=16)
    run = build_trials_method(HiddenGoalRoom, [5, 6, 7], memory=mem, n_envs=4, demonstrations=demo, seed=0)
    run.model.learn(512, callback=run.callbacks)
    assert mem.stats["extractor_updates"] > 0
    mem.save(tmp_path / "memory")
    fresh = memory(train_extractor=False)
    assert not all(torch.equal(a, b) for a, b in zip(mem.trainer.extractor.parameters(),
                                                     fresh.trainer.extractor.parameters(), strict=True))
    fresh.load(tmp_path / "memory")
    for a, b in zip(mem.trainer.extractor.parameters(), fresh.trainer.extractor.parameters(), strict=True):
        assert torch.equal(a, b)


def test_self_imitation_keeps_the_trial_entries_it_was_shown() -> None:
    """The replay of successful trials holds the entries as the policy saw them (how it learns to read them)."""
    from integrations.sb3.trials_method import build_trials_method

    mem = memory()
    run = build_trials_method(HiddenGoalRoom, [2, 11], memory=mem, n_envs=4, demonstrations=demo, demo_ratio=1.0,
                              seed=0)
    run.model.learn(1024, callback=run.callbacks)
    replay = run.callbacks[0].replay
    assert replay.counts()["own"] > 0
    obs, _, _ = replay.batch(replay.indices())
    assert ENTRIES_KEY in obs and obs[MASK_KEY].sum() > 0


def test_members_of_a_group_run_the_same_instances_whatever_they_read() -> None:
    """Random retrieval draws its donors apart from the group's instance draws: pairing holds."""
    mem = memory(scope="other")
    envs = [ExperienceWrapper(HiddenGoalRoom(max_steps=2), mem, scope="run",
                              instances=list(range(1, 100)), trials=2, group=0,
                          member=m, group_size=3, free_members=1, seed=4) for m in range(3)]
    seen: list[list[int]] = [[], [], []]
    for _ in range(12):  # 6 runs of 2 trials, each env on its own
        for m, env in enumerate(envs):
            _, info = env.reset()
            seen[m].append(info["trial"]["instance"])
            while not any(env.step(3)[2:4]):
                pass
    assert seen[0] == seen[1] == seen[2]
    assert mem._donors  # guided members drew donors along the way
    for env in envs:
        env.close()


def test_trial_envs_in_another_process_are_refused(capfd) -> None:
    """Under a SubprocVecEnv each worker would hold a copy of the memory: the worker stops with
    a message that names the remedy (SB3's worker prints it; the parent sees the pipe close)."""
    from stable_baselines3.common.vec_env import SubprocVecEnv

    mem = memory()
    venv = SubprocVecEnv(trials_env_fns(HiddenGoalRoom, mem, 2, instances=[5], group_size=2), start_method="fork")
    with pytest.raises((EOFError, ConnectionError)):
        venv.reset()
    try:
        venv.close()
    except (EOFError, ConnectionError):
        pass
    assert "use a DummyVecEnv for the trial envs" in capfd.readouterr().err


def test_the_entry_reader_takes_a_base_extractor_for_image_observations() -> None:
    from stable_baselines3.common.torch_layers import CombinedExtractor

    lay = memory().layout
    space = spaces.Dict({"image": spaces.Box(0, 255, (3, 36, 36), np.uint8),
                         ENTRIES_KEY: spaces.Box(-np.inf, np.inf, (4, lay.row_dim), np.float32),
                         MASK_KEY: spaces.Box(0.0, 1.0, (4,), np.float32)})
    feats = TrialsFeaturesExtractor(space, hidden=16, base_extractor_class=CombinedExtractor)
    obs = {k: torch.as_tensor(np.stack([v.sample() for _ in range(2)])).float() for k, v in space.spaces.items()}
    out = feats(obs)
    assert out.shape == (2, feats.features_dim) == (2, 3 * 16 + 1)
    assert any("cnn" in name for name, _ in feats.named_modules())  # SB3's NatureCNN on the image
    with pytest.raises(ValueError, match="scope=.run."):
        TrialsFeaturesExtractor(spaces.Dict({"image": space["image"]}))


# ------------------------------------------------------------------------- in-context mazes
def test_in_context_mazes_start_off_the_demonstration_and_cap_by_the_shortest_path() -> None:
    from integrations.minihack.incontext_maze import (
        InContextMaze,
        maze_demonstration,
        maze_distances,
        split_mazes,
    )

    train, test = split_mazes(50, 5)
    assert not set(train) & set(test)
    env = InContextMaze(random_steps=3, seed=1)
    for seed in (0, 3):
        obs, actions = maze_demonstration(seed)
        assert set(obs) == set(env.observation_space.spaces)  # what the env shows, so a memory on its space takes it
        assert all(env.observation_space[k].contains(v[0]) for k, v in obs.items())
        x, y = obs["blstats"][0][:2]
        assert maze_distances(seed)[y, x] == len(actions)  # the demonstration is a shortest path
    starts, replayed = set(), []
    for _ in range(8):
        o, info = env.reset(seed=3)
        starts.add(tuple(o["blstats"][:2].tolist()))
        x, y = o["blstats"][:2]
        assert info["cap"] == max(1, int(np.ceil(1.5 * maze_distances(3)[y, x])))
        steps = 0
        for a in maze_demonstration(3)[1]:  # the demonstration's moves, open loop
            o, r, term, trunc, info = env.step(a)
            steps += 1
            if term or trunc:
                break
        replayed.append(bool(info.get("success")))
    assert len(starts) > 1  # the random moves start episodes in different places
    assert not all(replayed)  # so the demonstration replayed open loop does not always solve it
    with pytest.raises(ValueError, match="seed"):
        env.reset()
    env.close()


def test_the_novelty_bonus_pays_a_guided_training_step_onto_a_cell_new_to_its_run():
    from experience_wrappers.trials.novelty import NoveltyBonus
    from integrations.minihack.hidden_goal import HiddenGoalRoom

    proto = HiddenGoalRoom()
    mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25)

    def bonus(instance, guided=True, **kwargs):
        return NoveltyBonus(ExperienceWrapper(HiddenGoalRoom(), mem, scope="run",
                                              instances=[instance], trials=2, guided=guided),
                            0.5, **kwargs)

    env = bonus(99, until_success=False)
    env.reset()
    right, left = 1, 3  # MOVES: (1, 0) and (-1, 0)
    assert env.step(right)[1] == 0.5      # (1, 0): new
    assert env.step(left)[1] == 0.0       # back on the start cell: seen
    for _ in range(23):
        env.step(left)                    # against the wall: nothing new
    env.reset()                           # the run's second trial
    assert env.step(right)[1] == 0.0      # (1, 0): seen in the first trial
    assert env.step(right)[1] == 0.5      # (2, 0): new to the run
    for _ in range(23):
        env.step(left)
    env.reset()                           # the next run: nothing seen yet
    assert env.step(right)[1] == 0.5
    free = bonus(99, guided=False)
    free.reset()
    assert free.step(right)[1] == 0.0     # free runs (the paired baseline): never
    for bad in (0.0, -1.0, float("nan"), "0.1", True):
        with pytest.raises(ValueError, match="novelty_bonus must be"):
            NoveltyBonus(HiddenGoalRoom(), bad)
    with pytest.raises(ValueError, match="scope=.run."):  # it reads the run from the trial's info
        NoveltyBonus(HiddenGoalRoom(), 0.5).reset(seed=1)
    # by default the bonus stops once the run has found the goal (goal 1: the cell (1, 0))
    for until, after in ((True, 0.0), (False, 0.5)):
        found = bonus(1, until_success=until)
        found.reset()
        _, reward, done, _, info = found.step(right)
        assert done and info["trial_success"]
        found.reset()
        assert found.step(2)[1] == after  # (0, 1): new to the run, after its success
    # ... or a demonstration was placed in the run
    demo = NoveltyBonus(ExperienceWrapper(HiddenGoalRoom(), mem, scope="run", instances=[99], trials=2, guided=True,
                                      demonstrations=goal_demonstration), 0.5)
    _, info = demo.reset()
    assert info["trial"]["demonstrated"] and demo.step(right)[1] == 0.0


def test_trials_env_fns_install_the_bonus_on_training_envs_only():
    from experience_wrappers.trials.novelty import NoveltyBonus
    from integrations.minihack.hidden_goal import HiddenGoalRoom

    proto = HiddenGoalRoom()
    mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25)
    for learn, expected in ((True, NoveltyBonus), (False, RunScopeWrapper)):
        env = trials_env_fns(HiddenGoalRoom, mem, 2, instances=[3], group_size=2, novelty_bonus=0.5, learn=learn)[0]()
        assert type(env) is expected and isinstance(env.unwrapped, HiddenGoalRoom)
    assert type(trials_env_fns(HiddenGoalRoom, mem, 2, instances=[3], group_size=2)[0]()) is RunScopeWrapper
    with pytest.raises(ValueError, match="novelty_bonus must be"):
        trials_env_fns(HiddenGoalRoom, mem, 2, instances=[3], group_size=2, novelty_bonus=-1.0)


def test_the_trial_index_is_shown_as_a_one_hot_when_asked_and_the_features_read_it() -> None:
    from experience_wrappers.trials.wrapper import TRIAL_INDEX_KEY

    proto = HiddenGoalRoom()
    plain = ExperienceWrapper(HiddenGoalRoom(), TrialMemory(proto.observation_space, proto.action_space, horizon=25),
                          scope="run", instances=[99], trials=3)
    assert TRIAL_INDEX_KEY not in plain.observation_space.spaces
    assert TRIAL_INDEX_KEY not in plain.reset()[0]
    mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25, trial_index=True)
    seen = []
    for guided in (True, False):  # guided or free: the index is not experience, both see it
        env = trial_env(HiddenGoalRoom(), mem, instances=[99], trials=3, guided=guided)
        assert isinstance(env, TrialIndex)
        assert env.observation_space[TRIAL_INDEX_KEY].shape == (3,)
        for _ in range(4):  # three trials of a run, then the next run's first
            obs, _ = env.reset()
            assert env.observation_space.contains(obs)
            seen.append(obs[TRIAL_INDEX_KEY].tolist())
            done = False
            while not done:
                obs, _, term, trunc, info = env.step(0)
                done = term or trunc
                assert obs[TRIAL_INDEX_KEY].argmax() == info["trial"]["index"]
    assert seen == [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]] * 2
    # the features extractor takes it among the observation's own keys
    extractor = TrialsFeaturesExtractor(env.observation_space)
    assert TRIAL_INDEX_KEY in extractor.base_keys
    # the wrapper on its own: a Dict below it, the trial's info, an index inside its width
    with pytest.raises(ValueError, match="Dict observation"):
        TrialIndex(HiddenGoalRoom(), 3)
    with pytest.raises(ValueError, match="Dict observation"):
        TrialIndex(env, 3)  # already shown
    short = TrialIndex(ExperienceWrapper(HiddenGoalRoom(), TrialMemory(proto.observation_space, proto.action_space,
                                                                   horizon=25), scope="run", instances=[99], trials=3), 2)
    for _ in range(2):
        short.reset()
        while not any(short.step(0)[2:4]):
            pass
    with pytest.raises(ValueError, match="more trials per run"):
        short.reset()


@pytest.mark.parametrize("train", [True, False])
def test_a_guided_trials_shown_entries_earn_its_delta_through_the_managers_learner(train: bool) -> None:
    mem = TrialMemory(spaces.Box(0, 9, (2,)), spaces.Discrete(4), horizon=10, k=2, exp_dim=4, batch_size=3,
                      train_extractor=train)
    extractor = mem.trainer.extractor  # type: ignore[union-attr]
    before = {n: p.detach().clone() for n, p in extractor.named_parameters()}

    def trial(key: tuple[int, int, int], delta_run: tuple[float, float]) -> np.ndarray:
        s = mem.new_scope()
        mem.write(s, np.array([[0, 0], [1, 1]]), np.array([1, 2]), [0.0, 1.0])
        _, mask, ids = mem.read(np.array([s]), np.array([[1, 1]]), np.array([1.0]))
        shown = ids[0][mask[0]]
        mem.finish_trial(key, delta_run[0], guided=True, members=2, free=1, shown=set(shown.tolist()))
        mem.forget(s)  # the run retires before the group's free trial ends: the credit still reaches its entries
        mem.finish_trial(key, delta_run[1], guided=False, members=2, free=1)
        return shown

    shown = trial((0, 0, 1), (1.0, 0.0))  # delta +1 for the two entries shown
    assert len(shown) == 2 and mem.stats["credited_entries"] == 2
    assert mem.stats["mean_delta"] == pytest.approx(0.05)
    if train:  # one short of a batch: waiting in the learner, the reward the delta
        assert sorted(mem.learner.samples) == sorted(shown.tolist())  # type: ignore[union-attr]
        assert [s.rewards for s in mem.learner.samples.values()] == [[1.0], [1.0]]  # type: ignore[union-attr]
    assert mem.stats["extractor_updates"] == 0
    trial((0, 1, 1), (0.0, 1.0))  # two more (delta -1): a batch of 3, one update
    assert mem.stats["credited_entries"] == 4
    changed = any(not torch.equal(before[n], p) for n, p in extractor.named_parameters())
    assert mem.stats["extractor_updates"] == (1 if train else 0) and changed == train
