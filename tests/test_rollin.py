"""Guided roll-in: the curriculum rule, the bank guide on real MiniHack demonstrations, and the
callback that takes the policy gradient off guide-acted steps of a real PPO rollout."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.bank import Provenance
from experience_wrappers.rollin import (
    BankGuide,
    ReplayGuide,
    RollInCurriculum,
    first_actions,
    instance_seeds,
)
from integrations.demos import ingest_demonstrations
from integrations.sb3 import find_experience
from integrations.sb3.lifecycle import advantage_normalisation_as_configured
from integrations.sb3.rollin_callbacks import RollInCallback, RollInView
from integrations.sb3.rollin_env import GuidedRollInVecEnv

pytest.importorskip("minihack")

from integrations.minihack import MiniHackKeyEncoder, make_minihack_env, make_minihack_vec_env  # noqa: E402
from integrations.minihack.demonstrations import scripted_demonstrations  # noqa: E402

ENV_ID = "MiniHack-KeyRoom-S5-v0"
DEMO_SEED = 20_000


# ------------------------------------------------------------------ curriculum arithmetic
def test_h_does_not_shrink_before_the_window_is_full():
    c = RollInCurriculum(h=10, threshold=0.5, window=4)
    for _ in range(3):
        assert not c.record(True)  # 3 of 3 succeeded, but the window wants 4
    assert c.h == 10 and c.pending == 3 and c.success_rate == 1.0
    assert c.record(False) and c.h == 9  # 3 / 4 >= 0.5


def test_h_shrink_rule_step_by_step():
    c = RollInCurriculum(h=10, threshold=0.75, window=4, shrink_step=2)
    for ok in (True, False, False, True):
        assert not c.record(ok)  # 0.5 over a full window
    assert not c.record(True)  # window F F T T: 0.5
    assert c.h == 10
    assert c.record(True)  # window F T T T: 0.75 >= 0.75
    assert c.h == 8 and c.shrinks == 1 and c.pending == 0  # the window starts afresh
    assert not c.record(True, h=10)  # an episode begun at the old h says nothing about h = 8
    assert c.pending == 0
    for _ in range(3):
        assert not c.record(True)
    assert c.record(True) and c.h == 6


def test_h_never_goes_below_min_h_and_factor_applies_before_step():
    c = RollInCurriculum(h=10, threshold=1.0, window=1, shrink_factor=0.5, shrink_step=1, min_h=2)
    assert c.next_h() == 4  # floor(10 * 0.5) - 1
    assert c.record(True) and c.h == 4
    assert c.record(True) and c.h == 2  # floor(4 * 0.5) - 1 = 1, clamped to min_h
    assert c.finished
    assert not c.record(True) and c.h == 2
    assert RollInCurriculum(h=5, threshold=0.5, window=1).record(False) is False


def test_curriculum_starts_at_the_longest_demonstration():
    assert RollInCurriculum.for_lengths([7, 12, 9], threshold=0.6).h == 12


@pytest.mark.parametrize("kwargs, error, match", [
    ({"h": -1}, ValueError, "h must be >= 0"),
    ({"h": 2.0}, TypeError, "h must be an int"),
    ({"h": 5, "threshold": 0.0}, ValueError, "threshold must be > 0"),
    ({"h": 5, "threshold": 1.5}, ValueError, "threshold must be <= 1"),
    ({"h": 5, "threshold": "high"}, TypeError, "threshold must be a number"),
    ({"h": 5, "window": 0}, ValueError, "window must be >= 1"),
    ({"h": 5, "shrink_step": 0}, ValueError, "never shrinks"),
    ({"h": 5, "shrink_factor": 0.0}, ValueError, "shrink_factor must be > 0"),
    ({"h": 5, "shrink_factor": 1.2}, ValueError, "shrink_factor must be <= 1"),
    ({"h": 3, "min_h": 4}, ValueError, r"h must be >= min_h \(4\), got 3"),
])
def test_curriculum_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        RollInCurriculum(**kwargs)


def test_for_lengths_refuses_no_lengths():
    with pytest.raises(ValueError, match="at least one demonstration length"):
        RollInCurriculum.for_lengths([])


# ------------------------------------------------------------------ reading an entry's action
def test_first_action_is_read_from_the_contexts_first_row():
    key_dim, n_act = 3, 4
    row = key_dim + n_act + 2
    ctx = np.zeros((4, 2 * row + 1), np.float16)
    ctx[:, -1] = 2
    ctx[0, key_dim + 1] = 1  # first action 1
    ctx[0, row + key_dim + 2] = 1  # a later action 2 does not count
    ctx[1, key_dim: key_dim + n_act] = [0.2, 0.0, 0.0, 0.8]  # not a one-hot (a mix of actions): mostly action 3
    ctx[3, -1] = 0  # no rows
    actions, exact, readable = first_actions(ctx, key_dim, n_act)
    assert actions[:2].tolist() == [1, 3] and exact.tolist() == [True, False, False, False]
    assert readable.tolist() == [True, True, False, False]  # row 2: no action in its first row
    assert not first_actions(np.zeros((1, 5), np.float16), key_dim, n_act)[2].any()  # another layout


# ------------------------------------------------------------------ MiniHack: the guide acts
@pytest.fixture(scope="module")
def keyroom():
    demos = scripted_demonstrations(ENV_ID, 20, seed=DEMO_SEED)
    env = make_minihack_env(ENV_ID)
    try:
        seeds = instance_seeds(env, demos, DEMO_SEED)
    finally:
        env.close()
    return demos, seeds


def _bank_env(demos, n_envs=4, seed=0):
    """A MiniHack VecEnv under ExperienceWrappers whose bank holds the demonstrations."""
    bank = ExperienceBank(seed=0)
    probe = make_minihack_env(ENV_ID)
    encoder = MiniHackKeyEncoder(probe.observation_space)
    probe.close()
    venv = make_minihack_vec_env(ENV_ID, n_envs=n_envs, seed=seed, wrapper_class=ExperienceWrapper,
                                 wrapper_kwargs={"bank": bank, "key_encoder": encoder, "learn": False,
                                                 "manager_kwargs": {"mode": "sync", "extractor": {"seed": 0}}, "seed": seed})
    manager = find_experience(venv)[0][0]
    ingest_demonstrations(manager, demos, segment_every=1)
    return venv, manager


def _episodes(venv, n, rng):
    outcomes, marked = [], 0
    venv.reset()
    while len(outcomes) < n:
        _, _, dones, infos = venv.step(rng.integers(0, venv.action_space.n, venv.num_envs))
        for i, info in enumerate(infos):
            marked += bool(info.get("rollin", False))
            if dones[i]:
                outcomes.append(bool(info.get("success", False)))
    return np.array(outcomes[:n]), marked


def test_instance_seeds_recover_the_demonstrations_instances(keyroom):
    demos, seeds = keyroom
    assert len(seeds) == len(demos) and seeds == sorted(set(seeds)) and seeds[0] >= DEMO_SEED


def test_a_guided_run_beats_a_free_one_from_the_same_instances(keyroom):
    """With h = the longest demonstration, roll-in episodes on the demonstrated instances mostly
    succeed; a random policy from the same instances (the same wrapper, a guide that follows no
    provenance the bank holds, so it hands over at once) mostly fails."""
    demos, seeds = keyroom
    results = {}
    for name, provenances in (("guided", None), ("free", (int(Provenance.EXTRACTED),))):
        venv, manager = _bank_env(demos)
        env = GuidedRollInVecEnv(venv, BankGuide(manager, provenances=provenances),
                                 RollInCurriculum.for_lengths([len(d.actions) for d in demos]),
                                 only_guided=False, instance_seeds=seeds, seed=1)
        assert env.observation_space == venv.observation_space
        results[name] = _episodes(env, 12, np.random.default_rng(0))
        finished = env.pop_finished()
        venv.close()
        if name == "guided":
            assert len(finished) >= 12 and all(ep.guided_steps > 0 for ep in finished)
    (guided, marked), (free, free_marked) = results["guided"], results["free"]
    assert marked > 0 and free_marked == 0
    assert guided.mean() >= 0.9, guided
    assert guided.mean() - free.mean() >= 0.5, (guided.mean(), free.mean())


def test_the_guide_hands_over_where_no_successful_entry_is_near(keyroom):
    demos, _ = keyroom
    venv, manager = _bank_env(demos, n_envs=2)
    obs = venv.reset()
    base = {k: v for k, v in obs.items() if not k.startswith("experience")}
    near = BankGuide(manager, max_distance=4.0).act(base, 0)
    assert near.found.all() and near.exact.all() and (near.ids >= 0).all()
    assert near.actions.min() >= 0 and near.actions.max() < venv.action_space.n
    none = BankGuide(manager, provenances=(int(Provenance.MERGED),)).act(base, 0)
    assert not none.found.any() and (none.ids == -1).all() and np.isinf(none.distances).all()
    venv.close()


# ------------------------------------------------------------------ MiniHack: the replay guide (no bank)
def _replay_env(demos, seeds, guide, h, n_envs=2, seed=0):
    """A plain MiniHack VecEnv (no experience wrapper) rolled in on the demonstrated instances."""
    venv = make_minihack_vec_env(ENV_ID, n_envs=n_envs, seed=seed)
    return venv, GuidedRollInVecEnv(venv, guide, RollInCurriculum(h=h), only_guided=False,
                                    instance_seeds=seeds, seed=1)


def test_the_replay_guide_reproduces_each_demonstration_on_its_instance(keyroom):
    """Open-loop replay on the demonstrated instance is the demonstration (MiniHack from the
    project's factory is deterministic for a reset seed): success 1.0 at h = its length, every
    step guide-acted, the episode as long as the demonstration, with no bank anywhere."""
    demos, seeds = keyroom
    guide = ReplayGuide.from_demonstrations(demos, seeds)
    for i in (0, 7):
        n = len(demos[i].actions)
        venv, env = _replay_env(demos, [seeds[i]], guide, h=n)
        outcomes, marked = _episodes(env, 4, np.random.default_rng(i))
        finished = env.pop_finished()
        venv.close()
        assert outcomes.all(), (i, outcomes)
        assert len(finished) >= 4 and all(ep.success and ep.length == n and ep.guided_steps == n
                                          and not ep.handed_over_early for ep in finished)
        assert marked >= 4 * n
    # all demonstrated instances at once, h = the longest demonstration
    venv, env = _replay_env(demos, seeds, guide, h=int(guide.lengths.max()), n_envs=4)
    outcomes, _ = _episodes(env, 12, np.random.default_rng(0))
    venv.close()
    assert outcomes.all(), outcomes


def test_the_replay_guide_hands_over_when_the_demonstration_ends(keyroom):
    demos, seeds = keyroom
    n = len(demos[0].actions)
    cut = ReplayGuide([seeds[0]], [np.asarray(demos[0].actions)[: n - 3]])  # its last 3 actions missing
    venv, env = _replay_env(demos, [seeds[0]], cut, h=n)
    obs = env.reset()
    rng = np.random.default_rng(0)
    marks = []
    for _ in range(n - 1):  # the guide's n - 3 actions, then 2 of the policy's (3 are short of the goal)
        obs, _, dones, infos = env.step(rng.integers(0, env.action_space.n, env.num_envs))
        assert not dones.any()
        marks.append([bool(info.get("rollin", False)) for info in infos])
    assert marks == [[True, True]] * (n - 3) + [[False, False]] * 2
    assert env.handed_over.all() and not env.rolling.any() and (env.guided_steps == n - 3).all()
    venv.close()
    # an episode on an instance no demonstration was recorded on: nothing to say
    r = cut.act(None, 0, seeds=[seeds[0], -1, seeds[0]], steps=[0, 0, n - 3])
    assert r.found.tolist() == [True, False, False]
    with pytest.raises(ValueError, match="instance_seeds .* have no demonstration"):
        GuidedRollInVecEnv(venv, cut, RollInCurriculum(h=n), instance_seeds=[seeds[1]])
    with pytest.raises(ValueError, match="give instance_seeds"):
        GuidedRollInVecEnv(venv, cut, RollInCurriculum(h=n))
    with pytest.raises(ValueError, match="needs seeds= and steps="):
        cut.act(None, 0)


@pytest.mark.parametrize("arm_name", ["crl-sil-obs-rollin-replay", "crl-sil-plain-rollin"])
def test_the_replay_rollin_arms_build_and_train(arm_name):
    """Both ablation arms train a few rollouts on KeyRoom-S5 from 3 demonstrations: the plain
    one without any bank or experience wrapper, its roll-in drawn from all episodes."""
    import attrs

    from benchmarks.harness.run import train_run
    from benchmarks.suites.arms import ARMS
    from benchmarks.suites.suites import SUITES

    assert arm_name in SUITES["keyroom-5"].arms
    arm = attrs.evolve(ARMS[arm_name], demonstrations=3,
                       imitation={**ARMS[arm_name].imitation, "pretrain_steps": 2})
    res = train_run(ENV_ID, arm, 0, {"n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1},
                    total_steps=256)
    assert res["arm_config"]["rollin"]["guide_type"] == "replay"
    assert len(res["rollin"]["instance_seeds"]) == 3 and res["rollin"]["history"]
    assert any(row["guided_steps_fraction"] > 0 for row in res["rollin"]["history"])
    assert ("crl" in res) is (arm_name == "crl-sil-obs-rollin-replay")


# ------------------------------------------------------------------ the callback on a real PPO buffer
class _Snapshot(BaseCallback):
    """Records guide-acted positions and copies the rollout buffer at each rollout's end."""

    def __init__(self):
        super().__init__()
        self.advantages, self.returns, self.masks, self.actions_seen = [], [], [], []
        self._mask = None

    def _on_rollout_start(self):
        buf = self.model.rollout_buffer
        self._mask = np.zeros((buf.buffer_size, buf.n_envs), bool)

    def _on_step(self):
        pos = self.model.rollout_buffer.pos
        for e, info in enumerate(self.locals["infos"]):
            self._mask[pos, e] = bool(info.get("rollin", False))
            if "rollin_action" in info:
                self.actions_seen.append((int(np.asarray(self.locals["actions"]).reshape(-1)[e]),
                                          info["rollin_action"]))
        return True

    def _on_rollout_end(self):
        buf = self.model.rollout_buffer
        self.advantages.append(buf.advantages.copy())
        self.returns.append(buf.returns.copy())
        self.masks.append(self._mask.copy())


@pytest.mark.parametrize("normalize", [False, True])
def test_callback_zeroes_advantages_exactly_at_guide_acted_steps(keyroom, normalize):
    demos, seeds = keyroom
    venv, manager = _bank_env(demos, n_envs=2)
    curriculum = RollInCurriculum(h=4, threshold=0.5, window=2)  # the policy acts after 4 guided steps
    env = GuidedRollInVecEnv(venv, BankGuide(manager), curriculum, only_guided=False, instance_seeds=seeds,
                             seed=0)
    model = PPO("MultiInputPolicy", env, n_steps=48, batch_size=48, n_epochs=1, seed=0,
                normalize_advantage=normalize, policy_kwargs={"net_arch": [16]})
    before, after, view = _Snapshot(), _Snapshot(), RollInView(_Snapshot())
    rollin_cb = RollInCallback()
    saved: list[bool] = []

    class _SavedSetting(BaseCallback):  # what save_crl would write mid-run: the user's setting
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            with advantage_normalisation_as_configured(self.model):
                saved.append(self.model.normalize_advantage)

    model.learn(96, callback=CallbackList([before, view, rollin_cb, after, _SavedSetting()]))
    assert model.normalize_advantage is normalize  # switched off for the run, restored after
    assert saved and all(s is normalize for s in saved)
    for adv0, adv1, ret0, ret1, mask in zip(before.advantages, after.advantages, before.returns, after.returns,
                                            before.masks, strict=True):
        assert mask.any() and (~mask).any()
        assert np.all(adv1[mask] == 0)
        np.testing.assert_array_equal(ret1, ret0)  # the values still learn from every step
        free = adv0[~mask]
        want = (free - free.mean()) / (free.std() + 1e-8) if normalize else free
        np.testing.assert_allclose(adv1[~mask], want, rtol=1e-5, atol=1e-6)
    # SB3 hands callbacks the policy's actions; the view shows the executed (guide's) ones
    assert view.callback.actions_seen and all(a == b for a, b in view.callback.actions_seen)
    assert before.actions_seen and any(a != b for a, b in before.actions_seen)
    assert rollin_cb.history and all(0 < row["guided_steps_fraction"] < 1 for row in rollin_cb.history)
    assert all(row["h"] == curriculum.h for row in rollin_cb.history[-1:])
    venv.close()


# ------------------------------------------------------------------ bad arguments
def test_guide_and_wrapper_refuse_bad_arguments(keyroom):
    demos, _ = keyroom
    venv, manager = _bank_env(demos[:2], n_envs=1)
    cur = RollInCurriculum(h=5)
    with pytest.raises(ValueError, match="max_distance must be a finite number >= 0, got -1"):
        BankGuide(manager, max_distance=-1)
    with pytest.raises(ValueError, match="candidates must be"):
        BankGuide(manager, candidates=0)
    with pytest.raises(ValueError, match="provenances must name at least one"):
        BankGuide(manager, provenances=())
    guide = BankGuide(manager)
    with pytest.raises(ValueError, match=r"rollin_ratio must be a finite number in \[0, 1\], got 1.5"):
        GuidedRollInVecEnv(venv, guide, cur, rollin_ratio=1.5)
    with pytest.raises(TypeError, match="guide must be a BankGuide or a ReplayGuide"):
        GuidedRollInVecEnv(venv, object(), cur)
    with pytest.raises(TypeError, match="curriculum must be a RollInCurriculum"):
        GuidedRollInVecEnv(venv, guide, 5)
    with pytest.raises(ValueError, match="instance_seeds must hold at least one seed"):
        GuidedRollInVecEnv(venv, guide, cur, instance_seeds=[])
    with pytest.raises(ValueError, match="enabled must be a bool"):
        GuidedRollInVecEnv(venv, guide, cur, enabled=1)
    with pytest.raises(TypeError, match="env must be a GuidedRollInVecEnv"):
        RollInCallback(venv)
    env = GuidedRollInVecEnv(venv, guide, cur)
    with env.disabled():
        assert not env.enabled
    assert env.enabled
    venv.close()


def test_guide_needs_a_discrete_action_space():
    env = ExperienceWrapper(gym.make("Pendulum-v1"), ExperienceBank(), manager_kwargs={"mode": "sync"})
    assert isinstance(env.action_space, spaces.Box)
    with pytest.raises(TypeError, match="BankGuide needs a Discrete action space"):
        BankGuide(env.manager if isinstance(env, ExperienceWrapper) else env.injector.manager)
    env.close()
