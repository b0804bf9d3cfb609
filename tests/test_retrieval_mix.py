"""REGENT's mix (integrations.sb3.experimental.retrieval_mix): the shown success's action where it is near,
the policy's own mean where none is shown, the same pick as retrieve-and-play, and PPO's gradient scaled by 1 - w."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from experience_wrappers.manager.entry_layout import EntryLayout
from experience_wrappers.trials.checks import ENTRIES_KEY, MASK_KEY
from experience_wrappers.trials.nearest_success import success_codes
from integrations.sb3 import ExperiencePolicy
from integrations.sb3.experimental.retrieval_mix import RetrievalMixPolicy, nearest_success_action

LAYOUT = EntryLayout(key_dim=3, action_dim=2, exp_dim=2, horizon=20)
K = 4
ACTIONS = spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 4.0], np.float32))
OBS = spaces.Dict({"observation": spaces.Box(-1, 1, (3,), np.float32),
                   ENTRIES_KEY: spaces.Box(-np.inf, np.inf, (K, LAYOUT.row_dim), np.float32),
                   MASK_KEY: spaces.Box(0, 1, (K,), np.float32)})


def _policy(**kw) -> RetrievalMixPolicy:
    th.manual_seed(0)
    return RetrievalMixPolicy(OBS, ACTIONS, lambda _: 3e-4, mix_layout=LAYOUT, **kw)


def _rows(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    rows = rng.normal(size=(n, K, LAYOUT.row_dim)).astype(np.float32)
    rows[..., LAYOUT.row_distance_col] = rng.integers(0, 3, size=(n, K)) * 0.5  # ties on purpose
    rows[..., LAYOUT.steps_to_go_col + 2] = rng.integers(1, 4, size=(n, K)) / 20
    rows[..., LAYOUT.row_return_col] = rng.choice([0.0, 1.0], size=(n, K))
    rows[..., LAYOUT.row_action_slice()] = rng.uniform(-1, 1, size=(n, K, 2))
    return rows, rng.choice([0.0, 1.0], size=(n, K)).astype(np.float32)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_torch_pick_is_retrieve_and_plays_pick(seed: int) -> None:
    rows, mask = _rows(16, np.random.default_rng(seed))
    codes, found = success_codes(rows, mask, LAYOUT)
    picked, dist = nearest_success_action(th.as_tensor(rows), th.as_tensor(mask), LAYOUT)
    assert np.array_equal(np.isfinite(dist.numpy()), found)
    assert np.allclose(picked.numpy()[found], codes[found])


def _obs(action_code: list[float], distance: float, shown: bool = True) -> dict[str, th.Tensor]:
    rows = np.zeros((1, K, LAYOUT.row_dim), np.float32)
    rows[0, 1, LAYOUT.row_action_slice()] = action_code
    rows[0, 1, LAYOUT.row_distance_col] = distance
    rows[0, 1, LAYOUT.row_return_col] = 1.0
    mask = np.zeros((1, K), np.float32)
    mask[0, 1] = float(shown)
    return {"observation": th.zeros(1, 3), ENTRIES_KEY: th.as_tensor(rows), MASK_KEY: th.as_tensor(mask)}


def test_the_mean_is_the_shown_action_when_near_the_policys_own_when_none_is_shown_and_mixed_between() -> None:
    policy = _policy(mix_scale=0.1)
    own = policy.get_distribution(_obs([0.0, 0.0], 0.0, shown=False)).distribution.mean.detach()
    # code (0.5, -0.5) is the action (0.5, 1.0) in [-1, 1] x [0, 4]
    near = policy.get_distribution(_obs([0.5, -0.5], 0.0)).distribution.mean.detach()
    assert np.allclose(near.numpy(), [[0.5, 1.0]], atol=1e-6)
    between = _obs([0.5, -0.5], 0.1 * np.log(2))  # w = 1/2
    half = policy.get_distribution(between).distribution.mean.detach()
    unmixed = ExperiencePolicy.get_distribution(policy, between).distribution.mean.detach()  # the network's own
    assert np.allclose(half.numpy(), 0.5 * near.numpy() + 0.5 * unmixed.numpy(), atol=1e-5)
    far = _obs([0.5, -0.5], 50.0)
    assert np.allclose(policy.get_distribution(far).distribution.mean.detach().numpy(),
                       ExperiencePolicy.get_distribution(policy, far).distribution.mean.detach().numpy(), atol=1e-6)
    assert np.allclose(own.numpy(), ExperiencePolicy.get_distribution(
        policy, _obs([0.0, 0.0], 0.0, shown=False)).distribution.mean.detach().numpy())
    # a failed trial's entry (return 0) is not copied
    failed = _obs([0.5, -0.5], 0.0)
    failed[ENTRIES_KEY][0, 1, LAYOUT.row_return_col] = 0.0
    assert np.allclose(policy.get_distribution(failed).distribution.mean.detach().numpy(),
                       ExperiencePolicy.get_distribution(policy, failed).distribution.mean.detach().numpy())


def test_ppos_log_probability_is_the_mixed_gaussians_and_its_gradient_skips_a_copied_action() -> None:
    policy = _policy(mix_scale=0.1)
    obs = _obs([0.5, -0.5], 0.0)
    actions = th.tensor([[0.3, 1.5]])
    _, log_prob, _ = policy.evaluate_actions(obs, actions)
    std = th.exp(policy.log_std)
    expected = th.distributions.Normal(th.tensor([0.5, 1.0]), std).log_prob(actions[0]).sum()
    assert th.allclose(log_prob[0], expected, atol=1e-5)
    log_prob.sum().backward()
    assert all(p.grad is None or float(p.grad.abs().max()) == 0.0 for p in policy.action_net.parameters())
    policy.zero_grad()
    _, log_prob, _ = policy.evaluate_actions(_obs([0.5, -0.5], 0.0, shown=False), actions)
    log_prob.sum().backward()
    assert any(p.grad is not None and float(p.grad.abs().max()) > 0 for p in policy.action_net.parameters())
    # forward (the rollouts' call) samples around the mixed mean: deterministic, the copied action itself
    action, _, _ = policy(obs, deterministic=True)
    assert np.allclose(action.detach().numpy(), [[0.5, 1.0]], atol=1e-6)


def test_what_it_cannot_mix_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="needs a Box action space"):
        RetrievalMixPolicy(OBS, spaces.Discrete(3), lambda _: 3e-4, mix_layout=LAYOUT)
    with pytest.raises(ValueError, match="reads the entries a run-scope env shows"):
        RetrievalMixPolicy(spaces.Dict({"observation": OBS["observation"]}), ACTIONS, lambda _: 3e-4,
                           mix_layout=LAYOUT)
    with pytest.raises(ValueError, match="mix_layout's actions are 3 wide"):
        RetrievalMixPolicy(OBS, ACTIONS, lambda _: 3e-4, mix_layout={**attrs.asdict(LAYOUT), "action_dim": 3})
    with pytest.raises(ValueError, match="mix_scale must be > 0"):
        _policy(mix_scale=0.0)
    with pytest.raises(ValueError, match="diagonal Gaussian"):
        _policy(use_sde=True)


def test_untrained_on_a_held_out_reach_goal_it_follows_a_demonstration_it_is_shown() -> None:
    """The effect: with a demonstration of the goal in the run, the mix copies it where it is near (an untrained
    network's own mean goes nowhere); shown nothing, the same weights do not reach the hidden goal."""
    pytest.importorskip("metaworld")
    from stable_baselines3 import PPO

    from experience_wrappers.trials import TrialMemory
    from integrations.metaworld.ml1_demos import ml1_demonstrations
    from integrations.metaworld.ml1_trials import ML1Trials
    from integrations.sb3.trials_evaluation import evaluate_trials, frozen_predict
    from integrations.sb3.trials_method import build_trials_method

    proto = ML1Trials("reach-v3")

    def memory() -> TrialMemory:
        return TrialMemory(proto.observation_space, proto.action_space, horizon=150, k=8, exp_dim=0,
                           train_extractor=False, seed=0)

    mem = memory()
    run = build_trials_method(lambda: ML1Trials("reach-v3"), [0, 1], memory=mem, n_envs=4, imitate=False, sil=False,
                              novelty_bonus=0.0, policy=RetrievalMixPolicy,
                              ppo_kwargs={"n_steps": 16, "batch_size": 32,
                                          "policy_kwargs": {"mix_layout": attrs.asdict(mem.layout), "mix_scale": 0.05}})
    run.model.learn(64, callback=run.callbacks)  # PPO's update runs through the mix (a few steps: untrained)
    assert isinstance(run.model, PPO) and isinstance(run.model.policy, RetrievalMixPolicy)
    held = [50, 60, 70]
    with frozen_predict(run.model) as predict:
        out = evaluate_trials(predict, lambda: ML1Trials("reach-v3"), memory, held, trials=1, repeats=1,
                              conditions=("with_demonstration", "without_experience"),
                              demonstrations=ml1_demonstrations("reach-v3"), deterministic=True, seed=0)
    run.model.get_env().close()
    assert out["with_demonstration"]["success_by_trial"][0] >= 2 / 3
    assert out["without_experience"]["success_by_trial"][0] == 0.0


def test_the_shown_action_is_decoded_as_the_action_coder_decodes_it() -> None:
    from experience_wrappers.extractor import ActionCoder

    codes = np.array([[0.5, -0.5], [-1.0, 1.0], [0.0, 0.25]], np.float32)
    rows = np.zeros((3, K, LAYOUT.row_dim), np.float32)
    rows[:, 0, LAYOUT.row_action_slice()] = codes
    rows[:, 0, LAYOUT.row_return_col] = 1.0
    mask = np.zeros((3, K), np.float32)
    mask[:, 0] = 1.0
    action, weight = _policy().shown_action({ENTRIES_KEY: th.as_tensor(rows), MASK_KEY: th.as_tensor(mask)})
    assert np.allclose(action.numpy(), ActionCoder(ACTIONS).decode(codes), atol=1e-6)
    assert np.allclose(weight.numpy(), 1.0)
    with pytest.raises(TypeError, match="box_scale is a Box space's code rule"):
        ActionCoder(spaces.Discrete(3)).box_scale  # noqa: B018
