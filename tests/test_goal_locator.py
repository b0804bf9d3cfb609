"""GoalLocator: where a run succeeds, learned by hindsight from its failed trials' keys and rewards."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.goal_locator import KEY_SCALE, GoalLocator
from experience_wrappers.trials.run_best import best_step, teach_locator, trial_rows

POS = spaces.Box(-1.0, 1.0, (2,), np.float32)
ACT = spaces.Discrete(4)


def _trial(goal: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A failed trial heading for a wrong place: its states and a reward falling with the distance to ``goal``."""
    start = rng.uniform(-0.9, -0.6, 2)
    aim = rng.uniform(-0.8, 0.8, 2)
    steps = np.linspace(0, 1, 30)[:, None]
    keys = (start + steps * (aim - start) + rng.normal(0, 0.01, (30, 2))).astype(np.float32)
    rewards = (1 / (1 + (np.linalg.norm(keys - goal, axis=1) / 0.4) ** 2)).astype(np.float32)
    return keys, rewards


def test_the_locator_places_held_out_goals_closer_than_the_best_reward_state() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    train_goals, held_goals = rng.uniform(-0.6, 0.6, (40, 2)), rng.uniform(-0.6, 0.6, (15, 2))
    loc = GoalLocator(2, hidden=32, updates_per_pair=4, seed=0)
    for _ in range(10):
        for g in train_goals:
            loc.add(*_trial(g, rng), g)
    assert loc.stats["locator_updates"] > 1000
    mine, best = [], []
    for g in held_goals:  # never trained on
        for _ in range(4):
            keys, rewards = _trial(g, rng)
            mine.append(np.linalg.norm(loc.locate(keys, rewards) - g))
            best.append(np.linalg.norm(keys[np.argmax(rewards)] - g))
    assert np.median(mine) < 0.5 * np.median(best), (np.median(mine), np.median(best))  # measured 0.16 against 0.64


def test_building_a_locator_leaves_the_callers_torch_generator_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a, b = GoalLocator(2, seed=7), GoalLocator(2, seed=7)
    assert torch.equal(torch.rand(3), expected)
    rows = np.zeros((2, 2), np.float32), np.array([0.0, 1.0], np.float32)
    assert np.allclose(a.locate(*rows), b.locate(*rows))  # seeded: the same weights


class _Line(gym.Env):
    """Two steps along a line; every second trial succeeds (terminated, ``info["success"]``)."""

    observation_space, action_space = POS, ACT

    def __init__(self) -> None:
        self.resets, self.x = 0, 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.resets, self.x = self.resets + 1, 0.0
        return np.array([self.x, 0.0], np.float32), {}

    def step(self, action):
        self.x += 0.1
        done = self.x > 0.15
        won = done and self.resets % 2 == 0
        return np.array([self.x, 0.0], np.float32), self.x, won, done and not won, {"success": won}


def _memory(**kw) -> TrialMemory:
    return TrialMemory(POS, ACT, horizon=30, exp_dim=0, write_failures=True,
                       **{"run_best": "located", "dense_rewards": True, **kw})


def test_located_shows_the_locators_guess_until_the_run_succeeds() -> None:
    mem = _memory()
    assert mem.locator is not None and _memory(run_best=True).locator is None
    s = mem.new_scope()
    obs = np.array([[0.0, 0.0], [0.2, 0.1], [0.4, 0.1]], np.float32)
    mem.write(s, obs, [0, 1, 1], [0.1, 0.3, 0.2], success=False, end_observation=np.array([0.5, 0.0]))
    keys, rewards, won = trial_rows(mem, mem.trials_of(s)[0], mem.ends_of(s)[0])
    assert not won and np.allclose(keys[-1], mem.keys(np.array([[0.5, 0.0]]))[0])
    got = best_step(mem, s)
    assert np.allclose(got[:2], mem.locator.locate(keys, rewards)) and got[2:].tolist() == [0.0, pytest.approx(0.3)]
    mem.write(s, obs[:2], [0, 1], [0.2, 5.0], success=True, end_observation=np.array([0.6, 0.6]))
    assert np.allclose(best_step(mem, s)[:3], [*mem.keys(np.array([[0.6, 0.6]]))[0], 1.0])  # a success: its end
    with pytest.raises(ValueError, match=r"run_best must be one of"):
        _memory(run_best="guessed")
    with pytest.raises(ValueError, match=r"run_best must be one of"):
        _memory(run_best=1)  # (1 == True, but not a mode)
    with pytest.raises(ValueError, match=r"needs dense_rewards=True"):
        _memory(dense_rewards=False)


def test_a_failed_trial_is_labelled_with_where_its_instance_succeeds_in_any_run() -> None:
    mem = _memory()
    obs = np.array([[0.0, 0.0], [0.2, 0.1], [0.4, 0.1]], np.float32)
    fail = (obs, [0.1, 0.3, 0.2], False, np.array([0.5, 0.0]))
    teach_locator(mem, 3, *fail)  # instance 3 not solved yet: the trial waits
    teach_locator(mem, 4, *fail)
    assert mem.stats["locator_pairs"] == 0
    teach_locator(mem, 3, obs[:2], [0.2, 5.0], True, np.array([0.6, 0.6]))  # a later run of 3 succeeds
    assert mem.stats["locator_pairs"] == 1  # 3's waiting trial, not 4's
    label = mem.keys(np.array([[0.6, 0.6]]))[0]  # where it ended
    rows, anchor, target = mem.locator._pairs[0]
    assert np.allclose(anchor + target / KEY_SCALE, label)
    assert np.allclose(anchor, mem.keys(obs[2:])[0])  # the best reward (0.3) was received in the state after step 1
    teach_locator(mem, 3, *fail)  # a failed trial of a solved instance: a pair at once
    assert mem.stats["locator_pairs"] == 2
    teach_locator(mem, 4, obs, None, True)  # a demonstration of 4 (no end: its last step's state)
    assert mem.stats["locator_pairs"] == 3
    assert np.allclose(mem.locator._pairs[-1][1] + mem.locator._pairs[-1][2] / KEY_SCALE, mem.keys(obs[2:])[0])
    frozen = _memory(train_extractor=False)  # an evaluation memory learns nothing
    teach_locator(frozen, 3, obs[:2], [0.2, 5.0], True, np.array([0.6, 0.6]))
    teach_locator(frozen, 3, *fail)
    assert frozen.locator.stats["locator_pairs"] == 0
    few = GoalLocator(2, waiting=1)  # the oldest waiting trial gives way
    few.failed(1, obs, np.array([0.1, 0.3, 0.2]))
    few.failed(2, obs, np.array([0.1, 0.3, 0.2]))
    few.solved(1, np.zeros(2))
    assert few.stats["locator_pairs"] == 0


def test_every_trial_of_a_training_run_teaches_the_locator_free_and_last_ones_too() -> None:
    from experience_wrappers.trials.wrapper import trial_env

    mem = _memory()
    env = trial_env(_Line(), mem, instances=[0], trials=2, guided=False)  # a free run: nothing written
    for _ in range(2):
        env.reset()
        env.step(0)
        env.step(1)
    assert mem.size(1) == 0 and mem.stats["trials_written"] == 0
    assert mem.stats["locator_pairs"] == 1  # trial 1 failed, waited; trial 2 (the run's last) succeeded


def test_the_locator_saves_loads_and_is_copied_into_an_evaluation_memory(tmp_path) -> None:
    mem = _memory(seed=1)
    mem.locator.error_dims = np.array([0.25, 0.5], np.float32)  # its error per dimension goes with it
    folder = mem.save(tmp_path / "mem")
    assert (folder / "locator.pt").exists()
    back = _memory(seed=2)
    rows = np.array([[0.0, 0.0], [0.3, 0.2]], np.float32), np.array([0.1, 0.4], np.float32)
    assert not np.allclose(back.locator.locate(*rows), mem.locator.locate(*rows))
    back.load(folder)
    assert np.allclose(back.locator.locate(*rows), mem.locator.locate(*rows))
    assert back.locator.error_dims.tolist() == [0.25, 0.5]
    copy = _memory(seed=3, train_extractor=False)
    copy.load_weights_of(mem)
    assert np.allclose(copy.locator.locate(*rows), mem.locator.locate(*rows))
    assert copy.locator.error_dims.tolist() == [0.25, 0.5] and copy.locator.error_dims is not mem.locator.error_dims
    with pytest.raises(ValueError, match=r"holds goal locator .*run_best=False"):
        TrialMemory(POS, ACT, horizon=30, exp_dim=0).load(folder)
    with pytest.raises(ValueError, match=r"has no goal locator .*run_best='located'"):
        _memory().load(TrialMemory(POS, ACT, horizon=30, exp_dim=0).save(tmp_path / "plain"))
    with pytest.raises(ValueError, match=r"reads keys 2 wide, this memory's are 3"):
        GoalLocator(3).load(folder / "locator.pt")


def test_a_saved_locator_goes_on_learning_as_the_one_it_was_saved_from(tmp_path) -> None:
    """The labels (where each instance last succeeded), the optimizer's state and the figures round-trip:
    the same next pair trains both to the same weights."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(4)
    loc = GoalLocator(2, hidden=16, batch_size=4, updates_per_pair=2, seed=0)
    goals = rng.uniform(-0.6, 0.6, (6, 2)).astype(np.float32)
    for i, g in enumerate(goals):
        loc.solved(i, g)
        for _ in range(2):
            loc.failed(i, *_trial(g, rng))
    loc.save(tmp_path / "locator.pt")
    back = GoalLocator(2, hidden=16, batch_size=4, updates_per_pair=2, seed=9)
    back.load(tmp_path / "locator.pt")
    assert back.stats == loc.stats and back.stats["locator_pairs"] == 12
    assert sorted(back._goals) == list(range(6))
    for i, g in enumerate(goals):
        np.testing.assert_array_equal(back._goals[i], g)
    keys, rewards = _trial(goals[2], rng)
    for m in (loc, back):  # one update each, on the same batch: the pair alone, four times over
        m._pairs.clear()
        for _ in range(4):
            m.failed(2, keys, rewards)
    for name, w in loc.net.state_dict().items():
        torch.testing.assert_close(back.net.state_dict()[name], w, rtol=0, atol=0, msg=name)
    old = {"key_dim": 2, "net": loc.state_dict()}  # a file of weights alone (earlier versions) still loads
    torch.save(old, tmp_path / "old.pt")
    fresh = GoalLocator(2, hidden=16, seed=3)
    fresh.load(tmp_path / "old.pt")
    assert fresh._goals == {} and fresh.stats["locator_pairs"] == 0
    assert back.error_dims.any()  # loaded with the full save, then trained on: an error measured
    back.load(tmp_path / "old.pt")  # an older save into it: no stale spread is kept
    assert not back.error_dims.any()


def test_the_locators_error_before_training_on_a_pair_falls_as_it_learns() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    goals = rng.uniform(-0.6, 0.6, (40, 2))
    loc = GoalLocator(2, hidden=32, updates_per_pair=4, seed=0)
    loc.add(*_trial(goals[0], rng), goals[0])
    first = loc.stats["locator_error"]
    for _ in range(10):
        for g in goals:
            loc.add(*_trial(g, rng), g)
    assert loc.stats["locator_error"] < 0.5 * first, (loc.stats["locator_error"], first)


def test_the_suites_mean_labels_locator_labels_by_the_mean_of_an_instances_success_ends() -> None:
    """The arm ``crl-trials-located-meanlabels-...``: every success of an instance moves its label to the
    mean of where they ended; another instance's label is its own."""
    from benchmarks.suites.trials import _mean_labels_memory

    mem = _mean_labels_memory(TrialMemory)(POS, ACT, horizon=30, exp_dim=0, write_failures=True,
                                            run_best="located", dense_rewards=True, seed=0)
    assert mem.locator is not None and type(mem.locator).__name__ == "MeanGoalLocator"
    mem.locator.solved(1, np.array([0.0, 1.0]))
    mem.locator.solved(1, np.array([1.0, 0.0]))
    mem.locator.solved(2, np.array([4.0, 4.0]))
    assert np.allclose(mem.locator._goals[1], [0.5, 0.5]) and np.allclose(mem.locator._goals[2], [4.0, 4.0])
    obs = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.0]], np.float32)
    mem.locator.failed(1, obs, np.array([0.1, 0.3, 0.2]))  # a pair labelled by the mean
    rows, anchor, target = mem.locator._pairs[-1]
    assert np.allclose(anchor + target / KEY_SCALE, [0.5, 0.5])


def test_with_prefix_every_the_locator_also_learns_one_prefix_of_each_trial() -> None:
    """A failed trial of a solved instance: the whole trial and one prefix whose length is a multiple
    of ``prefix_every`` shorter than it, both labelled where the instance succeeded; a successful
    trial: one prefix labelled where that trial ended; a trial too short has no prefix."""
    rng = np.random.default_rng(0)
    keys, rewards = _trial(np.zeros(2), rng)  # 30 steps
    loc = GoalLocator(2, prefix_every=10, seed=0)
    loc.succeeded(5, keys, rewards)
    assert loc.stats["locator_pairs"] == 1
    rows, anchor, target = loc._pairs[-1]
    assert len(rows) in (10, 20) and np.allclose(anchor + target / KEY_SCALE, keys[-1])
    assert np.allclose(rows[:, :2] / KEY_SCALE + anchor, keys[:len(rows)], atol=1e-6)  # the trial's first steps
    loc.failed(5, keys, rewards)
    assert loc.stats["locator_pairs"] == 3 and sorted(len(p[0]) for p in list(loc._pairs)[-2:])[1] == 30
    assert {len(p[0]) for p in loc._pairs} <= {10, 20, 30}
    seen = {len(loc._prefix(keys, rewards)[0][0]) for _ in range(50)}
    assert seen == {10, 20}  # never the whole trial (30: 3 x 10 is not shorter)
    assert loc._prefix(keys[:10], rewards[:10]) == []  # no multiple of 10 shorter than 10 steps
    plain = GoalLocator(2, seed=0)  # prefix_every 0: whole failed trials only, as before
    plain.succeeded(5, keys, rewards)
    plain.failed(5, keys, rewards)
    assert plain.stats["locator_pairs"] == 1 and len(plain._pairs[0][0]) == 30


class _Walk(gym.Env):
    """Six steps right along a line, reward growing with x; the trial fails (truncated), unless ``win``."""

    observation_space, action_space = POS, ACT

    def __init__(self, win: bool = False) -> None:
        self.win, self.x, self.t = win, 0.0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = 0.0, 0
        return np.array([self.x, 0.0], np.float32), {}

    def step(self, action):
        self.x, self.t = self.x + 0.1, self.t + 1
        won = self.win and self.t == 6
        return np.array([self.x, 0.0], np.float32), self.x, won, self.t >= 6 and not won, {"success": won}


def test_relocate_every_guesses_again_from_the_trials_own_steps_while_the_run_has_no_success() -> None:
    from experience_wrappers.trials.checks import RUN_BEST_KEY
    from experience_wrappers.trials.wrapper import trial_env

    mem = _memory(relocate_every=2)
    assert mem.locator is not None and mem.locator.prefix_every == 2
    env = trial_env(_Walk(), mem, instances=[0], trials=2, guided=True)
    obs, _ = env.reset()
    assert not obs[RUN_BEST_KEY].any()  # the run's first trial: nothing yet
    keys, rewards = [], []
    for t in range(5):
        obs, reward, *_ = env.step(0)
        keys.append(mem.keys(obs["observation"][None])[0])
        rewards.append(reward)
        shown = obs[RUN_BEST_KEY]
        if t == 0:
            assert not shown.any()  # one step: not yet a multiple of relocate_every
        if t in (1, 3):  # a guess from the trial's own steps so far, shown as an offset from here
            guess = mem.locator.locate(np.stack(keys), np.asarray(rewards, np.float32))
            np.testing.assert_allclose(shown[:2], guess - keys[-1], rtol=1e-5, atol=1e-6)
            assert shown[2:].tolist() == [0.0, pytest.approx(max(rewards)), 1.0]
    env.step(0)  # the trial fails: written, the next reset guesses from it
    obs, _ = env.reset()
    first = obs[RUN_BEST_KEY].copy()
    assert first[4] == 1.0 and first[3] == pytest.approx(0.6)  # the failed trial's best reward
    for _ in range(4):  # this trial's own rewards stay below the failed trial's best: its guess stays
        obs, *_ = env.step(0)
    np.testing.assert_allclose(obs[RUN_BEST_KEY][:2] + mem.keys(obs["observation"][None])[0], first[:2], atol=1e-6)
    free = trial_env(_Walk(), _memory(relocate_every=2), instances=[0], trials=2, guided=False)
    free.reset()
    for _ in range(4):  # a free run (paired credit's baseline) is shown nothing, not even its own guess
        obs, *_ = free.step(0)
        assert not obs[RUN_BEST_KEY].any()
    with pytest.raises(ValueError, match=r"relocate_every=3 .*needs run_best=\"located\""):
        TrialMemory(POS, ACT, horizon=30, exp_dim=0, run_best="reached", relocate_every=3)
    with pytest.raises(ValueError, match=r"relocate_every"):
        _memory(relocate_every=-1)


def test_relocate_every_stops_once_the_run_has_a_success() -> None:
    from experience_wrappers.trials.checks import RUN_BEST_KEY
    from experience_wrappers.trials.wrapper import trial_env

    mem = _memory(relocate_every=2)
    env = trial_env(_Walk(win=True), mem, instances=[0], trials=2, guided=True)
    env.reset()
    for _ in range(6):
        env.step(0)  # the first trial succeeds at its end
    obs, _ = env.reset()
    end = mem.keys(np.array([[0.6, 0.0]], np.float32))[0]
    for _ in range(4):
        obs, *_ = env.step(0)
        shown = obs[RUN_BEST_KEY]
        np.testing.assert_allclose(shown[:2] + mem.keys(obs["observation"][None])[0], end, atol=1e-6)
        assert shown[2] == 1.0  # the success's end, never a guess


def _line(goal: np.ndarray, axis: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A failed trial straight along one axis through the origin: its rewards place the goal along that
    axis and its distance from it, not on which side."""
    keys = np.zeros((17, 2), np.float32)
    keys[:, axis] = np.linspace(-0.8, 0.8, 17)
    keys += rng.normal(0, 0.01, keys.shape).astype(np.float32)
    return keys, (1 / (1 + (np.linalg.norm(keys - goal, axis=1) / 0.4) ** 2)).astype(np.float32)


def test_with_history_a_failed_trial_is_also_learnt_joined_with_earlier_failed_trials_of_its_instance() -> None:
    rng = np.random.default_rng(0)
    a, b, c = (_line(np.zeros(2), axis, rng) for axis in (0, 1, 0))
    loc = GoalLocator(2, history=2, seed=0)
    loc.failed(7, *a)  # nothing earlier: waits alone
    loc.failed(8, *b)  # another instance's: never joined with 7's
    loc.failed(7, *b)
    loc.solved(7, np.ones(2))
    assert sorted(len(p[0]) for p in loc._pairs) in ([17, 17], [17, 34])  # b alone or after a
    lengths = set()
    for _ in range(40):  # with two earlier trials kept, joined with none, the newest or both (oldest first)
        loc.failed(7, *c)
        rows, anchor, _ = loc._pairs[-1]
        lengths.add(len(rows))
        if len(rows) == 51:
            np.testing.assert_allclose(rows[:17, :2] / KEY_SCALE + anchor, loc._earlier[7][0][0], atol=1e-6)
    assert lengths == {17, 34, 51} and len(loc._earlier[7]) == 2
    plain = GoalLocator(2, seed=0)  # history 0: one trial at a time, nothing kept, the sampling stream as before
    plain.solved(7, np.ones(2))
    for t in (a, b, c):
        plain.failed(7, *t)
    assert [len(p[0]) for p in plain._pairs] == [17, 17, 17] and not plain._earlier
    assert plain._rng.bit_generator.state == np.random.default_rng(0).bit_generator.state


def test_a_locator_reading_two_failed_trials_together_places_what_neither_places_alone() -> None:
    """Trials along x and along y: each leaves the goal's side of it open, the two together place it."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    train_goals, held_goals = rng.uniform(-0.6, 0.6, (40, 2)), rng.uniform(-0.6, 0.6, (15, 2))
    loc = GoalLocator(2, hidden=32, updates_per_pair=4, history=1, seed=0)
    for i, g in enumerate(train_goals):
        loc.solved(i, g)
    for _ in range(10):
        for i, g in enumerate(train_goals):
            loc.failed(i, *_line(g, 0, rng))
            loc.failed(i, *_line(g, 1, rng))
    one, joined = [], []
    for g in held_goals:  # never trained on
        (ka, ra), (kb, rb) = _line(g, 0, rng), _line(g, 1, rng)
        one.append(np.linalg.norm(loc.locate(ka, ra) - g))
        joined.append(np.linalg.norm(loc.locate(np.concatenate([ka, kb]), np.concatenate([ra, rb])) - g))
    assert np.median(joined) < 0.5 * np.median(one), (np.median(joined), np.median(one))  # measured 0.07 against 0.31


def test_locate_from_all_guesses_from_the_runs_failed_trials_together() -> None:
    from experience_wrappers.trials.checks import RUN_BEST_KEY
    from experience_wrappers.trials.run_best import LOCATE_HISTORY
    from experience_wrappers.trials.wrapper import trial_env

    mem = _memory(locate_from="all")
    assert mem.locator is not None and mem.locator.history == LOCATE_HISTORY and _memory().locator.history == 0
    s = mem.new_scope()
    obs = np.array([[0.0, 0.0], [0.2, 0.1], [0.4, 0.1]], np.float32)
    mem.write(s, obs, [0, 1, 1], [0.1, 0.3, 0.2], success=False, end_observation=np.array([0.5, 0.0]))
    mem.write(s, obs[:2], [0, 1], [0.05, 0.1], success=False, end_observation=np.array([0.3, 0.3]))
    rows = [trial_rows(mem, ids, end)[:2] for ids, end in zip(mem.trials_of(s), mem.ends_of(s), strict=True)]
    together = np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])
    got = best_step(mem, s)  # both failed trials read (the best alone would be the first)
    np.testing.assert_allclose(got[:2], mem.locator.locate(*together), rtol=1e-5, atol=1e-6)
    assert got[2:].tolist() == [0.0, pytest.approx(0.3)]
    # relocating: the run's failed trial joined with this trial's own steps so far, every 2 steps
    mem = _memory(locate_from="all", relocate_every=2)
    env = trial_env(_Walk(), mem, instances=[0], trials=2, guided=True)
    env.reset()
    for _ in range(6):
        env.step(0)  # the first trial fails
    obs, _ = env.reset()
    (ids,), (end,) = mem.trials_of(1), mem.ends_of(1)  # the run's (the memory's first scope)
    earlier = trial_rows(mem, ids, end)[:2]
    keys, rewards = [], []
    for _ in range(2):
        obs, reward, *_ = env.step(0)
        keys.append(mem.keys(obs["observation"][None])[0])
        rewards.append(reward)
    guess = mem.locator.locate(np.concatenate([earlier[0], keys]), np.concatenate([earlier[1], rewards]))
    np.testing.assert_allclose(obs[RUN_BEST_KEY][:2], guess - keys[-1], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"locate_from must be one of"):
        _memory(locate_from="newest")
    with pytest.raises(ValueError, match=r"locate_from='all' .*needs run_best=\"located\""):
        TrialMemory(POS, ACT, horizon=30, exp_dim=0, run_best="reached", locate_from="all")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"history": -1}, r"GoalLocator\(history=\.\.\.\) must be an int >= 0 \(0: one trial at a time\), got -1"),
    ({"prefix_every": 2.5}, r"GoalLocator\(prefix_every=\.\.\.\) must be an int >= 0"),
    ({"batch_size": 0}, r"GoalLocator\(batch_size=\.\.\.\) must be .*got 0"),
    ({"waiting": 0}, r"GoalLocator\(waiting=\.\.\.\) must be .*got 0"),
    ({"capacity": 0}, r"GoalLocator\(capacity=\.\.\.\) must be .*got 0"),
    ({"hidden": "128"}, r"GoalLocator\(hidden=\.\.\.\) must be .*got '128'"),
    ({"lr": float("nan")}, r"GoalLocator\(lr=\.\.\.\) must be a finite number >= 0, got nan"),
    ({"seed": -3}, r"GoalLocator\(seed=\.\.\.\) must be an int >= 0, got -3"),
])
def test_the_locator_refuses_bad_arguments_by_name(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GoalLocator(2, **kwargs)
    with pytest.raises(ValueError, match=r"GoalLocator\(key_dim=\.\.\.\) must be .*got 0"):
        GoalLocator(0)
    assert GoalLocator(np.int64(2), history=np.int64(3)).history == 3  # numpy ints pass, as Python ints


class _Stand(_Walk):
    """Two steps right, then standing still until step 10: the trial's best reward stops rising from step 2 on."""

    def step(self, action):
        self.x, self.t = min(self.x + 0.1, 0.2), self.t + 1
        return np.array([self.x, 0.0], np.float32), self.x, False, self.t >= 10, {"success": False}


def test_the_locator_keeps_its_error_in_each_key_dimension_and_saves_it(tmp_path) -> None:
    loc = GoalLocator(2, batch_size=4, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(40):  # goals spread along x only: the guesses miss along x, never along y
        goal = np.array([rng.uniform(-0.8, 0.8), 0.0], np.float32)
        keys, rewards = _trial(goal, rng)
        loc.add(keys, rewards, goal)
    assert loc.error_dims[0] > 0.05 and loc.error_dims[1] < loc.error_dims[0] / 2
    assert loc.error_dims.dtype == np.float32 and loc.error_dims.shape == (2,)
    loc.save(tmp_path / "locator.pt")
    again = GoalLocator(2, seed=1)
    again.load(tmp_path / "locator.pt")
    np.testing.assert_array_equal(again.error_dims, loc.error_dims)


def test_search_moves_the_guess_where_the_trial_stalls_by_the_locators_error() -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv

    from experience_wrappers.trials.checks import RUN_BEST_KEY
    from experience_wrappers.trials.wrapper import trial_env

    def shown_marks(search: float, reset_seed: int = 3) -> tuple[list[np.ndarray], list[np.ndarray]]:
        mem = _memory(relocate_every=2, search=search)
        assert mem.locator is not None
        mem.locator.error_dims = np.array([0.3, 0.0], np.float32)  # as if it missed along x alone
        env = trial_env(_Stand(), mem, instances=[0], trials=2, guided=True)
        env.reset(seed=reset_seed)
        marks, guesses, keys, rewards = [], [], [], []
        for _ in range(9):  # guesses at steps 2, 4, 6 and 8 (the trial's last step, 10, guesses nothing)
            obs, reward, *_ = env.step(0)
            keys.append(mem.keys(obs["observation"][None])[0])
            rewards.append(reward)
            if len(keys) % 2 == 0:
                marks.append(obs[RUN_BEST_KEY][:2] + keys[-1])
                guesses.append(mem.locator.locate(np.stack(keys), np.asarray(rewards, np.float32)))
        return marks, guesses

    marks, guesses = shown_marks(0.0)  # no search: every mark is the guess
    assert len(marks) == 4
    for mark, guess in zip(marks, guesses, strict=True):
        np.testing.assert_allclose(mark, guess, atol=1e-6)
    marks, guesses = shown_marks(2.0)
    np.testing.assert_allclose(marks[0], guesses[0], atol=1e-6)  # the first guess: nothing to stall against
    for mark, guess in zip(marks[1:], guesses[1:], strict=True):  # stalled (best reward 0.2 since step 2)
        assert mark[1] == pytest.approx(guess[1], abs=1e-6)  # no error along y: no move along y
        assert abs(mark[0] - guess[0]) > 1e-4  # moved along x, around the guess
    assert shown_marks(2.0)[0][1][0] == pytest.approx(marks[1][0], abs=1e-6)  # a seeded reset: the same draws
    assert shown_marks(2.0, reset_seed=4)[0][1][0] != pytest.approx(marks[1][0], abs=1e-6)  # another: others

    # through SB3's vector env (whose reset passes no seed), the draws come from the env's own seed
    def vec_marks(seed: int) -> np.ndarray:
        mem = _memory(relocate_every=2, search=2.0)
        assert mem.locator is not None
        mem.locator.error_dims = np.array([0.3, 0.0], np.float32)
        venv = DummyVecEnv([lambda: trial_env(_Stand(), mem, instances=[0], trials=2, guided=True, seed=seed)])
        venv.reset()
        return np.stack([venv.step(np.zeros(1, int))[0][RUN_BEST_KEY][0, 0] for _ in range(9)])
    np.testing.assert_array_equal(vec_marks(0), vec_marks(0))
    assert not np.array_equal(vec_marks(0), vec_marks(1))
    with pytest.raises(ValueError, match=r"search=0.5 .*needs relocate_every > 0"):
        _memory(search=0.5)
    with pytest.raises(ValueError, match=r"search must be a finite number >= 0, got -1"):
        _memory(relocate_every=2, search=-1)
