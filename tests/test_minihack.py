"""Tests of the MiniHack integration on real MiniHack envs (fast: seconds)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

pytest.importorskip("minihack")

import integrations.minihack.hidden_goal as hg  # noqa: E402
from integrations.minihack import (  # noqa: E402
    END_STATUS_ABORTED,
    END_STATUS_DEATH,
    END_STATUS_SUCCESS,
    GlyphCNNExtractor,
    MiniHackKeyEncoder,
    make_minihack_env,
    make_minihack_vec_env,
    max_episode_steps,
    minihack_policy_kwargs,
)

ROOM = "MiniHack-Room-5x5-v0"  # start top-left, stairs bottom-right
RANDOM_ROOM = "MiniHack-Room-Random-5x5-v0"
MONSTER_ROOM = "MiniHack-Room-Monster-5x5-v0"
NAV_KEYS = ("glyphs_crop", "blstats", "chars_crop")
# MiniHack navigation actions: N, E, S, W, NE, SE, SW, NW as (dy, dx).
MOVES = [(-1, 0), (0, 1), (1, 0), (0, -1), (-1, 1), (1, 1), (1, -1), (-1, -1)]
NORTH = 0


def greedy_to_stairs(obs: dict) -> int:
    """Step straight toward the '>' visible in the agent-centred chars crop."""
    chars = obs["chars_crop"]
    centre = np.array(chars.shape) // 2
    found = np.argwhere(chars == ord(">"))
    assert len(found), "stairs not visible"
    dy, dx = np.sign(found[0] - centre)
    return MOVES.index((int(dy), int(dx)))


def run_episode(env: gym.Env, policy, seed: int | None = None):
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        total += reward
        steps += 1
        if terminated or truncated:
            return obs, total, terminated, truncated, info, steps


# -- envs ---------------------------------------------------------------------------------


def test_env_checkers_pass():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = make_minihack_env(
        ROOM, seed=0, observation_keys=("glyphs_crop", "blstats", "chars_crop", "message", "inv_glyphs")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "check the unwrapped env", "unconventional shape"
        check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=False)
    env.close()


def test_observations_lie_in_space_and_last_action_is_tracked():
    env = make_minihack_env(MONSTER_ROOM, seed=3)
    space = env.observation_space
    assert isinstance(space, spaces.Dict)
    assert sorted(space.spaces) == ["blstats", "glyphs_crop", "inv_glyphs", "last_action"]
    assert space["last_action"] == spaces.Discrete(env.action_space.n + 1)
    obs, _ = env.reset()
    assert obs in space and int(obs["last_action"]) == env.action_space.n
    rng = np.random.default_rng(0)
    for _ in range(40):
        a = int(rng.integers(env.action_space.n))
        obs, _, terminated, truncated, _ = env.step(a)
        assert obs in space and int(obs["last_action"]) == a
        if terminated or truncated:
            obs, _ = env.reset()
            assert int(obs["last_action"]) == env.action_space.n
    env.close()


def test_seed_fixes_the_sequence_of_episodes():
    def first_views(seed):
        env = make_minihack_env(MONSTER_ROOM, seed=seed, add_last_action=False)
        views = [env.reset()[0]["glyphs_crop"]]
        views += [env.reset()[0]["glyphs_crop"] for _ in range(3)]
        env.close()
        return np.stack(views)

    a, b, c = first_views(7), first_views(7), first_views(8)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len({v.tobytes() for v in a}) > 1  # successive episodes differ
    env = make_minihack_env(MONSTER_ROOM)
    x = env.reset(seed=11)[0]["glyphs_crop"]
    env.reset()
    assert np.array_equal(x, env.reset(seed=11)[0]["glyphs_crop"])
    assert env.reset(options={})[0] in env.observation_space  # NLE's KeyError is fixed
    env.close()


def test_observations_are_not_overwritten_by_later_steps():
    env = make_minihack_env(ROOM, seed=0, observation_keys=("glyphs_crop", "blstats", "message"))
    obs0, _ = env.reset()
    saved = {k: np.copy(v) for k, v in obs0.items()}
    for a in (1, 2, 5, 5):
        env.step(a)
    for k in saved:
        assert np.array_equal(obs0[k], saved[k]), k
    env.close()


def test_reaching_the_stairs_is_a_success():
    for env_id, seed in ((ROOM, 0), (RANDOM_ROOM, 1), (RANDOM_ROOM, 2)):
        env = make_minihack_env(env_id, seed=seed, observation_keys=NAV_KEYS)
        _, ret, terminated, truncated, info, steps = run_episode(env, greedy_to_stairs)
        assert int(info["end_status"]) == END_STATUS_SUCCESS
        assert info["success"] is True and info["is_success"] is True
        assert terminated and not truncated
        assert ret == pytest.approx(1.0) and steps <= 8
        env.close()


def test_step_limit_is_a_truncation_and_not_a_success():
    env = make_minihack_env(ROOM, seed=0, observation_keys=NAV_KEYS, max_episode_steps=5)
    assert max_episode_steps(env) == 5
    obs, _ = env.reset()
    rewards = []
    for t in range(5):
        obs, reward, terminated, truncated, info = env.step(NORTH)  # into the top wall
        rewards.append(reward)
        if t < 4:
            assert not (terminated or truncated) and "success" not in info
    assert int(info["end_status"]) == END_STATUS_ABORTED
    assert truncated and not terminated
    assert info["success"] is False and info["is_success"] is False
    # Walking into a wall does not advance game time: -0.01 per step (MiniHack's penalty).
    assert rewards[:4] == pytest.approx([-0.01] * 4)
    env.close()

    raw = make_minihack_env(ROOM, observation_keys=NAV_KEYS, max_episode_steps=5, fix_time_limit=False)
    *_, terminated, truncated, info, steps = run_episode(raw, lambda obs: NORTH, seed=0)
    assert steps == 5 and terminated and not truncated  # MiniHack's own convention
    assert info["success"] is False
    raw.close()


def test_death_is_not_a_success():
    env = make_minihack_env(MONSTER_ROOM, seed=0, add_last_action=False)
    rng = np.random.default_rng(0)
    for _ in range(300):
        _, _, terminated, truncated, info, _ = run_episode(
            env, lambda obs: int(rng.integers(8))
        )
        if int(info["end_status"]) == END_STATUS_DEATH:
            assert terminated and not truncated
            assert info["success"] is False and info["is_success"] is False
            break
    else:
        pytest.fail("no death in 300 random episodes")
    env.close()


def test_make_env_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown MiniHack env id"):
        make_minihack_env("MiniHack-Room-5x5-v9")
    with pytest.raises(ValueError, match="'CartPole-v1' is not a MiniHack or NLE env .*gymnasium.make"):
        make_minihack_env("CartPole-v1")
    with pytest.raises(ValueError, match=r"NLE's own envs, which have no cropped views \['glyphs_crop'\]"):
        make_minihack_env("NetHackScore-v0")
    env = make_minihack_env("NetHackScore-v0", observation_keys=("glyphs", "blstats"))  # NLE's own, uncropped
    assert "glyphs" in env.observation_space.spaces
    env.close()
    with pytest.raises(ValueError, match="unknown observation keys"):
        make_minihack_env(ROOM, observation_keys=("glyphs_crop", "nope"))
    with pytest.raises(ValueError, match="sequence of str"):
        make_minihack_env(ROOM, observation_keys="glyphs_crop")
    with pytest.raises(ValueError, match="seed"):
        make_minihack_env(ROOM, seed=-1)
    with pytest.raises(ValueError, match="max_episode_steps"):
        make_minihack_env(ROOM, max_episode_steps=0)
    with pytest.raises(ValueError, match="added by add_last_action"):
        make_minihack_env(ROOM, observation_keys=("glyphs_crop", "last_action"))


def test_spec_rebuilds_the_same_stack():
    env = make_minihack_env(ROOM, seed=0, max_episode_steps=7)
    again = gym.make(env.spec)
    assert str(again) == str(env) and max_episode_steps(again) == 7
    assert again.observation_space == env.observation_space
    env.close()
    again.close()


def test_vec_env_monitor_reports_success():
    venv = make_minihack_vec_env(ROOM, n_envs=2, seed=0, observation_keys=NAV_KEYS)
    obs = venv.reset()
    assert obs["glyphs_crop"].shape == (2, 9, 9) and obs["last_action"].shape == (2,)
    episodes = []
    for _ in range(20):
        actions = np.array([greedy_to_stairs({"chars_crop": c}) for c in obs["chars_crop"]])
        obs, _, dones, infos = venv.step(actions)
        for done, info in zip(dones, infos, strict=True):
            if done:
                episodes.append(info)
        if len(episodes) >= 2:
            break
    assert len(episodes) >= 2
    for info in episodes:
        assert info["episode"]["success"] is True and info["is_success"] is True
        assert info["terminal_observation"]["chars_crop"].shape == (9, 9)
    venv.close()
    with pytest.raises(ValueError, match="n_envs"):
        make_minihack_vec_env(ROOM, n_envs=0)


# -- features -------------------------------------------------------------------------------


def _batch(space: spaces.Dict, n: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """A batch as SB3 preprocesses it: Box -> float, Discrete -> one-hot."""
    space.seed(seed)
    samples = [space.sample() for _ in range(n)]
    out = {}
    for key, sub in space.spaces.items():
        x = np.stack([s[key] for s in samples])
        if isinstance(sub, spaces.Discrete):
            out[key] = torch.nn.functional.one_hot(torch.as_tensor(x), int(sub.n)).float()
        else:
            out[key] = torch.as_tensor(x).float()
    return out


def test_features_extractor_shape_and_ignores_extra_keys():
    env = make_minihack_env(MONSTER_ROOM, observation_keys=("glyphs_crop", "blstats", "inv_glyphs"))
    base = env.observation_space
    extra = spaces.Dict(
        {
            **base.spaces,
            "experience": spaces.Box(-1.0, 1.0, (4, 16), np.float32),
            "experience_mask": spaces.Box(0.0, 1.0, (4,), np.float32),
            "experience_utility": spaces.Box(-np.inf, np.inf, (4,), np.float32),
        }
    )
    torch.manual_seed(0)
    ext_base = GlyphCNNExtractor(base, features_dim=64)
    torch.manual_seed(0)
    ext_extra = GlyphCNNExtractor(extra, features_dim=64)
    assert ext_extra.used_keys == ("glyphs_crop", "blstats", "last_action", "inv_glyphs")
    assert ext_extra.features_dim == 64
    batch = _batch(extra, 5)
    out = ext_extra(batch)
    assert out.shape == (5, 64) and torch.isfinite(out).all()
    changed = dict(batch, experience=torch.randn(5, 4, 16) * 100)
    plain = {k: batch[k] for k in base.spaces}
    assert torch.equal(out, ext_extra(changed))
    assert torch.equal(out, ext_base(plain))
    env.close()


def test_features_extractor_on_chars_and_errors():
    space = spaces.Dict({"chars_crop": spaces.Box(0, 255, (5, 5), np.uint8)})
    ext = GlyphCNNExtractor(space, features_dim=16)
    assert ext.grids["chars_crop"].embed.num_embeddings == 256
    assert ext(_batch(space, 3)).shape == (3, 16)
    with pytest.raises(ValueError, match="no grid key"):
        GlyphCNNExtractor(spaces.Dict({"blstats": spaces.Box(0, 1, (27,), np.int64)}))
    with pytest.raises(ValueError, match="Dict observation space"):
        GlyphCNNExtractor(spaces.Box(0, 1, (9, 9), np.int16))
    with pytest.raises(ValueError, match="features_dim"):
        GlyphCNNExtractor(space, features_dim=0)


def test_tiny_ppo_learns_with_the_extractor(tmp_path):
    from stable_baselines3 import PPO

    venv = make_minihack_vec_env(MONSTER_ROOM, n_envs=2, seed=0)
    model = PPO(
        "MultiInputPolicy", venv, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu",
        policy_kwargs=minihack_policy_kwargs(features_extractor_kwargs={"features_dim": 32}),
    )
    assert isinstance(model.policy.features_extractor, GlyphCNNExtractor)
    model.learn(256)
    assert model.num_timesteps == 256
    model.save(tmp_path / "ppo")
    venv.close()


# -- keys -----------------------------------------------------------------------------------


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def _collect(env_id: str, keys: tuple[str, ...], n: int, seed: int = 0) -> list[dict]:
    env = make_minihack_env(env_id, seed=seed, observation_keys=keys)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset()
    out = [obs]
    while len(out) < n:
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(8)))
        out.append(obs)
        if terminated or truncated:
            out.append(env.reset()[0])
    env.close()
    return out[:n]


FULL_KEYS = ("glyphs_crop", "blstats", "inv_glyphs", "message")


def test_key_encoder_is_deterministic_and_unit_norm():
    env = make_minihack_env(MONSTER_ROOM, observation_keys=FULL_KEYS)
    space = env.observation_space
    env.close()
    obs = _collect(MONSTER_ROOM, FULL_KEYS, 30)
    batch = {k: np.stack([o[k] for o in obs]) for k in space.spaces}
    enc = MiniHackKeyEncoder(space, key_dim=64, seed=0)
    assert enc.used_keys == ("glyphs_crop", "inv_glyphs", "blstats", "last_action", "message")
    keys = enc.encode(batch, np.zeros(30, dtype=np.int64))
    assert keys.shape == (30, 64) and keys.dtype == np.float32
    assert np.allclose(np.linalg.norm(keys, axis=1), 1.0, atol=1e-5)
    again = MiniHackKeyEncoder(space, key_dim=64, seed=0).encode(batch, np.zeros(30, np.int64))
    assert np.array_equal(keys, again)
    assert np.allclose(enc(obs[3]), keys[3], atol=1e-6)
    other = MiniHackKeyEncoder(space, key_dim=64, seed=1).encode(batch, np.zeros(30, np.int64))
    assert not np.allclose(keys, other)
    # Extra keys from an experience wrapper are ignored.
    extra = dict(batch, experience=np.ones((30, 4, 8), np.float32))
    assert np.array_equal(enc.encode(extra, np.zeros(30, np.int64)), keys)


def test_key_encoder_cache_gives_the_encoded_keys_and_keeps_the_checks(monkeypatch):
    import pickle

    from integrations.minihack import keys as keys_module

    env = make_minihack_env(MONSTER_ROOM, observation_keys=FULL_KEYS)
    space = env.observation_space
    env.close()
    obs = _collect(MONSTER_ROOM, FULL_KEYS, 40)
    batch = {k: np.stack([o[k] for o in obs]) for k in space.spaces}
    zeros = np.zeros(40, np.int64)
    enc = MiniHackKeyEncoder(space, key_dim=64, seed=0)
    first = enc.encode({k: v[:20] for k, v in batch.items()}, zeros[:20])  # rows 0-19 now cached
    mixed = enc.encode(batch, zeros)  # 20 looked up, 20 encoded
    fresh = MiniHackKeyEncoder(space, key_dim=64, seed=0).encode(batch, zeros)
    assert np.allclose(mixed, fresh, atol=1e-6) and np.array_equal(mixed[:20], first)
    assert np.array_equal(enc.encode(batch, zeros), mixed)  # all looked up
    singles = np.stack([MiniHackKeyEncoder(space, key_dim=64, seed=0)(o) for o in obs[:5]])
    assert np.array_equal(np.stack([enc(o) for o in obs[:5]]), singles)
    # the same bytes as another dtype are not the same observation: float16 glyphs are refused
    with pytest.raises(ValueError, match="integer"):
        enc.encode(dict(batch, glyphs_crop=batch["glyphs_crop"].view(np.float16)), zeros)
    bad = batch["glyphs_crop"].copy()
    bad[0, 0, 0] = 9999
    with pytest.raises(ValueError, match="ids must lie"):
        enc.encode(dict(batch, glyphs_crop=bad), zeros)
    # a task code enters the cached key when it enters the key
    enc_t = MiniHackKeyEncoder(space, key_dim=64, task_weight=1.0)
    one = {k: v[:1] for k, v in batch.items()}
    assert _cos(enc_t.encode(one, np.zeros(1, np.int64))[0], enc_t.encode(one, np.ones(1, np.int64))[0]) < 0.8
    # not pickled, bounded
    assert 0 < len(enc._keys_cache) <= 40
    copy = pickle.loads(pickle.dumps(enc))
    assert copy._keys_cache == {} and np.array_equal(copy.encode(batch, zeros), mixed)
    monkeypatch.setattr(keys_module, "KEY_CACHE_SIZE", 30)
    small = MiniHackKeyEncoder(space, key_dim=64, seed=0)
    for i in range(0, 40, 10):
        small.encode({k: v[i:i + 10] for k, v in batch.items()}, zeros[:10])
        assert len(small._keys_cache) <= 30


def test_key_encoder_parts_seen_before_are_looked_up_and_give_the_keys_a_fresh_encoder_gives(monkeypatch):
    import pickle

    from integrations.minihack import keys as keys_module

    env = make_minihack_env(MONSTER_ROOM, observation_keys=FULL_KEYS)
    space = env.observation_space
    env.close()
    obs = _collect(MONSTER_ROOM, FULL_KEYS, 30)
    enc = MiniHackKeyEncoder(space, key_dim=64, seed=0)
    seen = [enc(o) for o in obs]
    assert {p.name for p in enc.parts} <= set(enc._parts_cache) and all(enc._parts_cache.values())
    # the same observations after another action: a miss of the keys' cache whose other parts are all
    # looked up; each key is the one an encoder that never saw them gives, to the last bit
    turned = [dict(o, last_action=(int(o["last_action"]) + 1) % space["last_action"].n) for o in obs]
    looked_up = np.stack([enc(o) for o in turned])
    assert np.array_equal(looked_up, np.stack([MiniHackKeyEncoder(space, key_dim=64, seed=0)(o) for o in turned]))
    assert not np.allclose(looked_up, np.stack(seen))
    # a row the part would refuse is refused, beside rows it has seen
    batch = {k: np.stack([o[k] for o in obs]) for k in space.spaces}
    bad = batch["glyphs_crop"].copy()
    bad[-1, 0, 0] = 9999
    with pytest.raises(ValueError, match="ids must lie"):
        enc.encode(dict(batch, last_action=(batch["last_action"] + 2) % 8, glyphs_crop=bad), np.zeros(30, np.int64))
    # not pickled, bounded
    assert pickle.loads(pickle.dumps(enc))._parts_cache == {}
    monkeypatch.setattr(keys_module, "KEY_CACHE_SIZE", 10)
    small = MiniHackKeyEncoder(space, key_dim=64, seed=0)
    for o in obs:
        small(o)
        assert all(len(c) <= 10 for c in small._parts_cache.values())


def test_key_encoder_separates_states():
    env = make_minihack_env(MONSTER_ROOM, observation_keys=FULL_KEYS)
    enc = MiniHackKeyEncoder(env.observation_space, key_dim=64, seed=0)
    env.close()
    obs = _collect(MONSTER_ROOM, FULL_KEYS, 60, seed=1)
    base = obs[0]
    k0 = enc(base)
    # Different map views give clearly different keys.
    views = {o["glyphs_crop"].tobytes(): o for o in obs}
    assert len(views) > 10
    ks = np.stack([enc(o) for o in views.values()])
    sims = ks @ ks.T
    off = sims[~np.eye(len(ks), dtype=bool)]
    assert off.max() < 0.99 and np.median(off) < 0.9
    # The same view with another last action, message or inventory is told apart.
    other_action = dict(base, last_action=np.int64(2))
    assert _cos(k0, enc(other_action)) < 0.95
    msg = np.zeros_like(base["message"])
    text = b"You see here a key."
    msg[: len(text)] = np.frombuffer(text, np.uint8)
    assert _cos(k0, enc(dict(base, message=msg))) < 0.95
    inv = base["inv_glyphs"].copy()
    free = int(np.argmax(inv == inv.max()))  # first empty slot (NO_GLYPH)
    inv[free] = 2000
    assert _cos(k0, enc(dict(base, inv_glyphs=inv))) < 0.95
    # Time (turn counter) does not enter the key.
    later = dict(base, blstats=base["blstats"].copy())
    later["blstats"][20] += 5
    assert _cos(k0, enc(later)) == pytest.approx(1.0, abs=1e-6)
    # A task code separates tasks when asked to.
    enc_t = MiniHackKeyEncoder(env.observation_space, key_dim=64, task_weight=1.0)
    assert _cos(enc_t(base, task_id=0), enc_t(base, task_id=1)) < 0.8


def test_key_encoder_rejects_bad_input():
    env = make_minihack_env(ROOM)
    space = env.observation_space
    obs, _ = env.reset(seed=0)
    env.close()
    enc = MiniHackKeyEncoder(space)
    batch = {k: np.asarray(v)[None] for k, v in obs.items()}
    with pytest.raises(ValueError, match="lacks key 'blstats'"):
        enc.encode({k: v for k, v in batch.items() if k != "blstats"},
                   np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="shape"):
        enc.encode(dict(batch, glyphs_crop=np.zeros((1, 7, 9), np.int16)), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="integer"):
        enc.encode(dict(batch, glyphs_crop=np.full((1, 9, 9), np.nan)), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="ids must lie"):
        enc.encode(dict(batch, glyphs_crop=np.full((1, 9, 9), 9999)), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="task_ids"):
        enc.encode(batch, np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="key_dim"):
        MiniHackKeyEncoder(space, key_dim=0)
    with pytest.raises(ValueError, match="unknown key parts"):
        MiniHackKeyEncoder(space, weights={"colour": 1.0})
    with pytest.raises(ValueError, match="none of the keys"):
        MiniHackKeyEncoder(spaces.Dict({"x": spaces.Box(0, 1, (3,))}))


def test_numpy_seeds_are_taken_as_ints() -> None:
    """check_seed takes numpy ints; gymnasium's seeding takes Python ints only."""
    from integrations.minihack import make_minihack_env, make_minihack_vec_env

    env = make_minihack_env("MiniHack-Room-5x5-v0", seed=np.int64(3))
    a, _ = env.reset(seed=np.int64(3))
    b, _ = env.reset(seed=3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    env.close()
    make_minihack_vec_env("MiniHack-Room-5x5-v0", n_envs=1, seed=np.int64(0)).close()


@pytest.mark.parametrize("key", ["internal", "program_state", "misc"])
def test_nle_keys_minihack_does_not_return_are_refused_up_front(key: str) -> None:
    from integrations.minihack import make_minihack_env

    with pytest.raises(ValueError, match=f"unknown observation keys \\['{key}'\\]"):
        make_minihack_env("MiniHack-Room-5x5-v0", observation_keys=("glyphs", key))


@pytest.mark.parametrize("call, match", [
    (lambda: hg.split_goals(held_out=-5), "held_out"),
    (lambda: hg.split_goals(held_out=99), "held_out"),
    (lambda: hg.split_goals(size=30), "size"),
    (lambda: hg.goal_demonstration(0), "goal"),
    (lambda: hg.goal_demonstration(25, size=5), "goal"),
])
def test_the_hidden_goal_helpers_refuse_goals_and_splits_the_room_cannot_have(call, match) -> None:
    """Not an empty training split, an off-grid path or numpy's "need at least one array to stack"."""
    with pytest.raises(ValueError, match=match):
        call()


def test_the_hidden_goal_room_refuses_an_action_it_does_not_have() -> None:
    """NLE would take -1 as its last action, and 8 as an IndexError."""
    env = hg.HiddenGoalRoom(5, 10)
    env.reset(seed=3)
    for bad in (-1, 8):
        with pytest.raises(ValueError, match=f"action {bad} is not one of"):
            env.step(bad)
    env.close()


def test_a_key_of_the_last_action_alone_is_said() -> None:
    """tty_chars (or pixel) alone: the encoder reads last_action only, and every state after an action looks alike."""
    from integrations.minihack import MiniHackKeyEncoder

    space = spaces.Dict({"tty_chars": spaces.Box(0, 255, (24, 80), np.uint8), "last_action": spaces.Discrete(9)})
    with pytest.warns(UserWarning, match="reads only last_action"):
        MiniHackKeyEncoder(space)


def test_minihack_policy_kwargs_refuses_an_argument_its_extractor_does_not_take():
    """Probe 16: a misspelt extractor argument passed through and failed as a TypeError inside SB3."""
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['embed_dims'\].*'embed_dim'"):
        minihack_policy_kwargs(features_extractor_kwargs={"embed_dims": 8})
    kw = minihack_policy_kwargs(net_arch=[32], features_extractor_kwargs={"embed_dim": 8})  # the policy's own: kept
    assert kw["net_arch"] == [32] and kw["features_extractor_kwargs"] == {"features_dim": 128, "embed_dim": 8}
