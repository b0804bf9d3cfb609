"""Tests of experience_wrappers.extractor: segments, config, network, losses, trainer."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from experience_wrappers.errors import ExtractorFileError
from experience_wrappers.extractor import (
    ActionCoder,
    ExperienceExtractor,
    ExtractorConfig,
    ExtractorTrainer,
    batch_advantages,
    cispo_loss,
    context_size,
    count_aware_weights,
    decode_contexts,
    diversity_loss,
    encode_segment,
    inverse_dynamics_loss,
    segment_dim,
    steps_to_go_loss,
    steps_to_go_targets,
    utility_loss,
)
from experience_wrappers.extractor.segments import CONTEXT_MAX

STATE_DIM, ACTION_DIM, MAX_LEN = 2, 2, 4


def tiny_config(**overrides) -> ExtractorConfig:
    kw = dict(state_dim=STATE_DIM, action_dim=ACTION_DIM, exp_dim=3, hidden=8, max_len=MAX_LEN)
    kw.update(overrides)
    return ExtractorConfig(**kw)


def random_contexts(n: int, seed: int = 0) -> np.ndarray:
    """Random contexts of lengths 1, 2, .., 2*MAX_LEN, 1, .. (so some are subsampled)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        t = 1 + i % (2 * MAX_LEN)
        acts = np.eye(ACTION_DIM)[rng.integers(0, ACTION_DIM, t)]
        out.append(
            encode_segment(rng.standard_normal((t, STATE_DIM)), acts, rng.random(t), MAX_LEN)
        )
    return np.stack(out)


# ----------------------------------------------------------------------------- ActionCoder


def test_action_coder_discrete_one_hot_with_start_and_sb3_layout():
    coder = ActionCoder(spaces.Discrete(3, start=1))
    assert (coder.dim, coder.discrete) == (3, True)
    expected = np.array([[0, 0, 1], [1, 0, 0]], dtype=np.float32)
    np.testing.assert_array_equal(coder.encode(np.array([3, 1])), expected)
    np.testing.assert_array_equal(coder.encode(np.array([[3], [1]])), expected)
    assert coder.encode(np.array([2])).dtype == np.float32


@pytest.mark.parametrize("bad", [np.array([0]), np.array([4]), np.array([1.5]), np.array([np.nan])])
def test_action_coder_discrete_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match="actions"):
        ActionCoder(spaces.Discrete(3, start=1)).encode(bad)


def test_action_coder_multidiscrete_concatenates_one_hots():
    coder = ActionCoder(spaces.MultiDiscrete([2, 3]))
    assert (coder.dim, coder.discrete) == (5, False)
    out = coder.encode(np.array([[1, 2], [0, 0]]))
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 1], [1, 0, 1, 0, 0]])
    with pytest.raises(ValueError, match="inside"):
        coder.encode(np.array([[0, 3]]))


def test_action_coder_multibinary():
    coder = ActionCoder(spaces.MultiBinary(3))
    np.testing.assert_array_equal(coder.encode(np.array([[1, 0, 1]])), [[1, 0, 1]])
    with pytest.raises(ValueError, match="0 or 1"):
        coder.encode(np.array([[2, 0, 1]]))


def test_action_coder_box_scales_finite_bounds_and_clips_the_rest():
    space = spaces.Box(np.array([0.0, -np.inf]), np.array([4.0, np.inf]), dtype=np.float64)
    coder = ActionCoder(space)
    assert (coder.dim, coder.discrete) == (2, False)
    out = coder.encode(np.array([[0.0, 0.5], [3.0, -7.0], [9.0, 2.0]]))
    np.testing.assert_allclose(out, [[-1.0, 0.5], [0.5, -1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="finite"):
        coder.encode(np.array([[np.nan, 0.0]]))


def test_action_coder_errors():
    with pytest.raises(TypeError, match="Dict"):
        ActionCoder(spaces.Dict({"a": spaces.Discrete(2)}))
    with pytest.raises(ValueError, match=r"shape \(batch"):
        ActionCoder(spaces.Box(-1, 1, (2,))).encode(np.zeros(2))
    with pytest.raises(ValueError, match="unbounded_clip"):
        ActionCoder(spaces.Box(-1, 1, (2,)), unbounded_clip=0.0)


# ----------------------------------------------------------------------------- segments


def test_sizes():
    assert segment_dim(5, 3) == 10
    assert context_size(5, 3, 7) == 71
    with pytest.raises(ValueError, match="max_len"):
        context_size(5, 3, 0)


def test_encode_decode_round_trip_with_return_to_go_and_padding():
    states = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    actions = np.eye(2)[[0, 1, 1]]
    rewards = np.array([1.0, -2.0, 5.0])
    ctx = encode_segment(states, actions, rewards, max_len=5)
    assert ctx.shape == (context_size(2, 2, 5),) and ctx.dtype == np.float32
    inputs, lengths = decode_contexts(np.stack([ctx, ctx]), 2, 2, 5)
    assert inputs.shape == (2, 5, 6) and inputs.dtype == np.float32
    assert lengths.dtype == np.int64 and lengths.tolist() == [3, 3]
    np.testing.assert_array_equal(inputs[0, :3, :2], states)
    np.testing.assert_array_equal(inputs[0, :3, 2:4], actions)
    np.testing.assert_array_equal(inputs[0, :3, 4], rewards)
    np.testing.assert_array_equal(inputs[0, :3, 5], [4.0, 3.0, 5.0])  # 1-2+5, -2+5, 5
    assert not inputs[0, 3:].any()


def test_subsampling_keeps_first_and_last_in_order_and_full_return_to_go():
    t = 10
    states = np.arange(t, dtype=float)[:, None]
    rewards = np.arange(t, dtype=float)  # return-to-go at step i: sum(i..9)
    ctx = encode_segment(states, np.zeros((t, 1)), rewards, max_len=4)
    inputs, lengths = decode_contexts(ctx[None], 1, 1, 4)
    assert lengths.tolist() == [4]
    kept = inputs[0, :, 0]
    np.testing.assert_array_equal(kept, [0, 3, 6, 9])
    np.testing.assert_array_equal(inputs[0, :, 2], kept)
    np.testing.assert_array_equal(inputs[0, :, 3], [sum(range(int(i), t)) for i in kept])
    # one more step than max_len still keeps both ends
    ctx5 = encode_segment(np.arange(5.0)[:, None], np.zeros((5, 1)), np.zeros(5), max_len=4)
    assert decode_contexts(ctx5[None], 1, 1, 4)[0][0, [0, -1], 0].tolist() == [0.0, 4.0]


@pytest.mark.parametrize(
    ("states", "actions", "rewards", "match"),
    [
        (np.zeros((0, 2)), np.zeros((0, 1)), np.zeros(0), "at least one step"),
        (np.zeros((3, 2)), np.zeros((2, 1)), np.zeros(3), "same length"),
        (
            np.zeros((3, 2)),
            np.zeros((3, 1)),
            np.array([0.0, np.nan, 0.0]),
            "rewards must be finite",
        ),
        (np.zeros(3), np.zeros((3, 1)), np.zeros(3), "states must be 2-D"),
    ],
)
def test_encode_segment_errors(states, actions, rewards, match):
    with pytest.raises(ValueError, match=match):
        encode_segment(states, actions, rewards, max_len=4)


def test_encode_segment_saturates_at_the_banks_float16_range_and_leaves_smaller_values_alone():
    rewards = np.array([40_000.0, 40_000.0, -1.5])  # a return-to-go of 78,498.5: beyond float16's 65,504
    ctx = encode_segment(np.zeros((3, 1)), np.zeros((3, 1)), rewards, max_len=3)
    rows = ctx[:-1].reshape(3, 4)
    assert rows[:, 2].tolist() == [40_000.0, 40_000.0, -1.5]  # rewards fit: kept
    assert rows[:, 3].tolist() == [CONTEXT_MAX, 39_998.5, -1.5]  # the first return saturates
    assert np.all(np.isfinite(ctx.astype(np.float16)))


def test_decode_contexts_errors():
    ctx = encode_segment(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), max_len=4)[None]
    with pytest.raises(ValueError, match=r"shape \(batch, 25\)"):
        decode_contexts(ctx[:, :-1], 2, 2, 4)
    for count in (0.0, 5.0, 2.5):
        bad = ctx.copy()
        bad[0, -1] = count
        with pytest.raises(ValueError, match="row count"):
            decode_contexts(bad, 2, 2, 4)
    bad = ctx.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        decode_contexts(bad, 2, 2, 4)


# ----------------------------------------------------------------------------- config


def test_config_validation_and_round_trip():
    cfg = tiny_config(lr=1e-3)
    assert ExtractorConfig(**cfg.to_dict()) == cfg
    assert cfg.context_size == context_size(STATE_DIM, ACTION_DIM, MAX_LEN)
    with pytest.raises(ValueError, match="hidden must be > 0, got -1"):
        tiny_config(hidden=-1)
    with pytest.raises(ValueError, match="clip must be in"):
        tiny_config(clip=1.0)
    with pytest.raises(ValueError, match="lr must be finite"):
        tiny_config(lr=float("nan"))
    with pytest.raises(ValueError, match="init_log_std"):
        tiny_config(init_log_std=-4.0, min_log_std=-3.0)
    with pytest.raises(TypeError, match="exp_dim must be an int"):
        tiny_config(exp_dim=2.0)
    with pytest.raises(TypeError):
        ExtractorConfig(2, 2)  # keyword-only


# ----------------------------------------------------------------------------- network


def test_forward_shapes_and_padding_is_ignored():
    cfg = tiny_config()
    net = ExperienceExtractor(cfg)
    inputs, lengths = net.decode(random_contexts(5))
    out = net(inputs, lengths)
    assert out.mean.shape == (5, 3) and out.log_std.shape == (3,)
    assert out.utility.shape == (5,) and out.steps_to_go.shape == (5, MAX_LEN)
    assert out.inverse.shape == (5, MAX_LEN - 1, ACTION_DIM)
    short = int(torch.argmin(lengths))
    assert lengths[short] < MAX_LEN
    garbage = inputs.clone()
    garbage[short, lengths[short] :] = 100.0
    out2 = net(garbage, lengths)
    torch.testing.assert_close(out2.mean, out.mean)
    torch.testing.assert_close(out2.utility, out.utility)
    with pytest.raises(ValueError, match="lengths must lie in"):
        net(inputs, torch.zeros(5, dtype=torch.int64))


def test_log_std_is_clamped_and_distribution_matches_propose():
    net = ExperienceExtractor(tiny_config(min_log_std=-2.0, init_log_std=-1.0))
    with torch.no_grad():
        net.log_std_param.fill_(-10.0)
    assert torch.all(net.log_std == -2.0)
    ctx = random_contexts(4)
    z, logp, utility = net.propose(ctx, torch.Generator().manual_seed(3))
    assert z.dtype == logp.dtype == utility.dtype == np.float32
    dist = net.distribution(*net.decode(ctx))
    np.testing.assert_allclose(dist.log_prob(torch.from_numpy(z)).detach().numpy(), logp, rtol=1e-5)
    np.testing.assert_allclose(net.mean_embedding(ctx), dist.mean.detach().numpy(), rtol=1e-6)


def test_determinism_and_global_rng_untouched():
    ctx = random_contexts(4)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b = ExperienceExtractor(tiny_config(seed=7)), ExperienceExtractor(tiny_config(seed=7))
    assert torch.equal(torch.rand(1), before)  # building did not consume the global RNG
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    za = a.propose(ctx, torch.Generator().manual_seed(1))[0]
    zb = b.propose(ctx, torch.Generator().manual_seed(1))[0]
    np.testing.assert_array_equal(za, zb)
    c = ExperienceExtractor(tiny_config(seed=8))
    assert not np.allclose(c.mean_embedding(ctx), a.mean_embedding(ctx))


# ----------------------------------------------------------------------------- losses


def test_cispo_matches_hand_computation():
    logp_new = torch.tensor([-1.0, -2.0, -0.5], requires_grad=True)
    logp_old = torch.tensor([-1.0, -2.5, -0.4])  # ratios: 1 (inside), e^0.5 (clipped up), e^-0.1
    adv = torch.tensor([1.0, 2.0, -1.0])
    weights = torch.tensor([1.0, 0.5, 1.0])
    loss = cispo_loss(logp_new, logp_old, adv, weights, clip=0.1)
    w = [1.0, 1.1, float(np.exp(-0.1))]  # e^-0.1 = 0.905 > 0.9: clipping inactive
    expected = -(1.0 * w[0] * 1.0 * -1.0 + 0.5 * w[1] * 2.0 * -2.0 + 1.0 * w[2] * -1.0 * -0.5) / 2.5
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()
    grad = [-(1.0 * w[0] * 1.0), -(0.5 * w[1] * 2.0), -(1.0 * w[2] * -1.0)]
    np.testing.assert_allclose(logp_new.grad.numpy(), np.array(grad) / 2.5, rtol=1e-6)
    # the lower clip: ratio e^-0.5 -> 0.9
    lp = torch.tensor([-1.5], requires_grad=True)
    out = cispo_loss(lp, torch.tensor([-1.0]), torch.tensor([1.0]), torch.tensor([1.0]), clip=0.1)
    assert out.item() == pytest.approx(-0.9 * 1.0 * -1.5)


def test_cispo_zero_weights_give_zero_loss_with_a_graph():
    lp = torch.tensor([-1.0, -2.0], requires_grad=True)
    loss = cispo_loss(lp, torch.zeros(2), torch.ones(2), torch.zeros(2))
    assert loss.item() == 0.0
    loss.backward()
    assert torch.equal(lp.grad, torch.zeros(2))
    with pytest.raises(ValueError, match="weights must have shape"):
        cispo_loss(lp, torch.zeros(2), torch.ones(2), torch.zeros(3))


def test_batch_advantages_and_count_aware_weights():
    np.testing.assert_allclose(batch_advantages(np.array([1.0, 1.0, -1.0, 3.0])), [0, 0, -2, 2])
    t = batch_advantages(torch.tensor([2.0, 4.0]))
    assert isinstance(t, torch.Tensor) and t.tolist() == [-1.0, 1.0]
    w = count_aware_weights(
        np.array([0, 1, 3, 99, 0]), np.array([False, False, False, False, True])
    )
    np.testing.assert_allclose(w, [1.0, 2**-0.5, 0.5, 0.1, 0.0], rtol=1e-6)
    with pytest.raises(ValueError, match="n_trained must be finite and >= 0"):
        count_aware_weights(np.array([-1]), np.array([False]))
    with pytest.raises(ValueError, match="bool"):
        count_aware_weights(np.array([1]), np.array([0]))


def test_diversity_and_utility_losses():
    assert float(diversity_loss(torch.tensor([[1.0, 1.0], [2.0, 2.0]]))) == pytest.approx(1.0)
    assert float(diversity_loss(torch.eye(3))) == pytest.approx(0.0)
    assert float(diversity_loss(torch.ones(1, 3))) == 0.0
    pred = torch.tensor([1.0, 3.0])
    assert float(utility_loss(pred, torch.tensor([0.0, 0.0]))) == pytest.approx(5.0)
    assert float(utility_loss(pred, torch.zeros(2), torch.tensor([3.0, 1.0]))) == pytest.approx(3.0)


def test_ssl_losses_mask_padding():
    lengths = torch.tensor([3, 1])
    np.testing.assert_allclose(
        steps_to_go_targets(lengths, 3).numpy(), np.log1p([[2, 1, 0], [0, 0, 0]])
    )
    pred = steps_to_go_targets(lengths, 3).clone()
    pred[1, 1:] = 50.0  # padding: ignored
    assert float(steps_to_go_loss(pred, lengths)) == 0.0
    pred[0, 0] += 2.0  # one of 4 valid steps off by 2
    assert float(steps_to_go_loss(pred, lengths)) == pytest.approx(1.0)

    actions = torch.eye(3)[torch.tensor([[0, 1, 2], [2, 0, 0]])]  # (2, 3, 3)
    logits = torch.zeros(2, 2, 3)
    logits[1] = 100.0  # segment 1 has one row: no pairs, ignored
    ce = inverse_dynamics_loss(logits, actions, lengths, discrete=True)
    assert float(ce) == pytest.approx(np.log(3.0), rel=1e-6)
    mse = inverse_dynamics_loss(actions[:, :-1].clone(), actions, lengths, discrete=False)
    assert float(mse) == 0.0
    one_row = inverse_dynamics_loss(
        torch.zeros(2, 2, 3, requires_grad=True), actions, torch.tensor([1, 1])
    )
    assert one_row.item() == 0.0 and one_row.requires_grad


# ----------------------------------------------------------------------------- trainer


def _toy_contexts(kinds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Kind 0 and kind 1 segments differ in states, actions and outcome."""
    out = []
    for k in kinds:
        states = np.full((3, STATE_DIM), 1.0 if k == 0 else -1.0) + 0.1 * rng.standard_normal(
            (3, 2)
        )
        out.append(
            encode_segment(states, np.eye(2)[[0, 1, k]], np.array([0.0, 0.0, 1.0 - k]), MAX_LEN)
        )
    return np.stack(out)


TARGET = np.array([1.0, 0.0])


def _toy_reward(z: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """+1 for kind-0 experiences pointing near TARGET (cosine > 0.7); 0 otherwise."""
    cos = z @ TARGET / np.linalg.norm(z, axis=1)
    return np.where(kinds == 0, (cos > 0.7).astype(float), 0.0)


def _toy_eval(trainer: ExtractorTrainer) -> tuple[float, float, float]:
    rng = np.random.default_rng(99)
    kinds = np.repeat([0, 1], 128)
    z, _, utility = trainer.extractor.propose(
        _toy_contexts(kinds, rng), torch.Generator().manual_seed(99)
    )
    return (
        float(_toy_reward(z, kinds)[kinds == 0].mean()),
        float(utility[kinds == 0].mean()),
        float(utility[kinds == 1].mean()),
    )


@pytest.fixture(scope="module")
def toy_run():
    trainer = ExtractorTrainer(ExperienceExtractor(tiny_config(exp_dim=2, hidden=16, lr=1e-2)))
    before = _toy_eval(trainer)
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(0)
    kinds = np.repeat([0, 1], 16)
    history = []
    for _ in range(100):
        ctx = _toy_contexts(kinds, rng)
        z, logp, _ = trainer.extractor.propose(ctx, gen)
        rewards = _toy_reward(z, kinds)
        history.append(trainer.update(ctx, z, logp, rewards, np.zeros(32), np.zeros(32, bool)))
    return trainer, before, _toy_eval(trainer), history


def test_policy_gradient_raises_the_reward_of_proposals(toy_run):
    trainer, before, after, history = toy_run
    assert trainer.updates == 100
    assert before[0] < 0.45  # about 1/4 of random directions are within cos 0.7 of TARGET
    assert after[0] > 0.8
    assert all(np.isfinite(list(h.values())).all() for h in history)
    assert set(history[0]) >= {
        "loss",
        "pg_loss",
        "utility_loss",
        "diversity_loss",
        "ssl_loss",
        "n_samples",
        "mean_weight",
        "log_std_mean",
    }


def test_utility_head_regresses_toward_rewards(toy_run):
    _, before, after, history = toy_run
    assert abs(before[1]) < 0.1 and abs(before[2]) < 0.1
    assert after[1] > 0.6  # kind 0 now earns reward about 1
    assert abs(after[2]) < 0.25  # kind 1 never earns anything
    assert history[-1]["utility_loss"] < 0.1  # predictions now match the rewards earned


def test_ssl_update_reduces_steps_to_go_loss():
    trainer = ExtractorTrainer(ExperienceExtractor(tiny_config(lr=1e-2)))
    ctx = random_contexts(16, seed=1)
    first = trainer.ssl_update(ctx)
    for _ in range(40):
        last = trainer.ssl_update(ctx)
    assert last["steps_to_go_loss"] < 0.5 * first["steps_to_go_loss"]
    assert trainer.updates == 41


def test_recently_trained_samples_get_no_policy_gradient():
    trainer = ExtractorTrainer(ExperienceExtractor(tiny_config()))
    ctx = random_contexts(4)
    z, logp, _ = trainer.extractor.propose(ctx)
    stats = trainer.update(
        ctx, z, logp, np.array([1.0, 0, 0, 0]), np.array([0, 1, 2, 3]), np.ones(4, bool)
    )
    assert stats["pg_loss"] == 0.0 and stats["mean_weight"] == 0.0 and stats["n_samples"] == 4.0


def test_update_validates_inputs():
    trainer = ExtractorTrainer(ExperienceExtractor(tiny_config()))
    ctx = random_contexts(3)
    z, logp, _ = trainer.extractor.propose(ctx)
    ok = dict(
        contexts=ctx,
        z=z,
        logp_old=logp,
        rewards=np.zeros(3),
        n_trained=np.zeros(3),
        trained_recently=np.zeros(3, bool),
    )
    cases = [
        ("z", z[:, :2], r"z must have shape \(3, 3\)"),
        ("rewards", np.array([0.0, np.nan, 0.0]), "rewards must be finite"),
        ("logp_old", logp[:2], r"logp_old must have shape \(3,\)"),
        ("n_trained", np.array([0, -1, 0]), "n_trained must be finite and >= 0"),
        ("trained_recently", np.zeros(3), "bool"),
        ("contexts", ctx[:, :-1], "contexts must have shape"),
    ]
    for name, value, match in cases:
        with pytest.raises(ValueError, match=match):
            trainer.update(**{**ok, name: value})
    assert trainer.updates == 0


def test_save_load_round_trip(tmp_path):
    trainer = ExtractorTrainer(ExperienceExtractor(tiny_config(seed=3)))
    ctx = random_contexts(6)
    z, logp, _ = trainer.extractor.propose(ctx)
    trainer.update(ctx, z, logp, np.arange(6.0), np.zeros(6), np.zeros(6, bool))
    path = tmp_path / "sub" / "extractor.pt"
    trainer.save(path)
    loaded = ExtractorTrainer.load(path)
    assert loaded.config == trainer.config and loaded.updates == 1
    np.testing.assert_array_equal(
        loaded.extractor.mean_embedding(ctx), trainer.extractor.mean_embedding(ctx)
    )
    a = trainer.extractor.propose(ctx, torch.Generator().manual_seed(5))
    b = loaded.extractor.propose(ctx, torch.Generator().manual_seed(5))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    # the optimizer state came back too: one more identical step keeps them identical
    args = (ctx, a[0], a[1], np.arange(6.0), np.ones(6), np.zeros(6, bool))
    trainer.update(*args)
    loaded.update(*args)
    np.testing.assert_array_equal(
        loaded.extractor.mean_embedding(ctx), trainer.extractor.mean_embedding(ctx)
    )


def test_load_rejects_bad_files(tmp_path):
    trainer = ExtractorTrainer(ExperienceExtractor(tiny_config()))
    good = tmp_path / "good.pt"
    trainer.save(good)
    data = good.read_bytes()
    with pytest.raises(ExtractorFileError, match="no extractor file"):
        ExtractorTrainer.load(tmp_path / "missing.pt")
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ExtractorFileError, match="damaged"):
        ExtractorTrainer.load(truncated)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a torch file at all")
    with pytest.raises(ExtractorFileError, match="damaged"):
        ExtractorTrainer.load(garbage)
    foreign = tmp_path / "foreign.pt"
    torch.save({"format": "something-else", "version": 1}, foreign)
    with pytest.raises(ExtractorFileError, match="not an extractor file"):
        ExtractorTrainer.load(foreign)
    payload = torch.load(good, weights_only=True)
    newer = tmp_path / "newer.pt"
    torch.save({**payload, "version": 2}, newer)
    with pytest.raises(ExtractorFileError, match="newer"):
        ExtractorTrainer.load(newer)
    wrong = tmp_path / "wrong_shapes.pt"
    torch.save({**payload, "config": {**payload["config"], "hidden": 4}}, wrong)
    with pytest.raises(ExtractorFileError, match="unusable"):
        ExtractorTrainer.load(wrong)


def test_state_dict_round_trip():
    a = ExtractorTrainer(ExperienceExtractor(tiny_config(seed=1)))
    ctx = random_contexts(4)
    a.ssl_update(ctx)
    b = ExtractorTrainer(ExperienceExtractor(tiny_config(seed=2)))
    b.load_state_dict(a.state_dict())
    assert b.updates == 1
    np.testing.assert_array_equal(a.extractor.mean_embedding(ctx), b.extractor.mean_embedding(ctx))
    with pytest.raises(ValueError, match="updates"):
        b.load_state_dict({**a.state_dict(), "updates": -1})


def test_extractor_imports_neither_sb3_nor_integrations():
    package = Path(ExperienceExtractor.__module__.replace(".", "/")).parent
    files = sorted((Path(__file__).resolve().parents[1] / package).glob("*.py"))
    assert len(files) >= 6
    for file in files:
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert not name.startswith(("stable_baselines3", "integrations")), (file, name)
                assert not name.startswith("gymnasium") or name == "gymnasium", (file, name)
