"""A Stable-Baselines3 features extractor for MiniHack's Dict observations.

The grid (``glyphs_crop`` by default) goes through a learned glyph embedding and two
3x3 convolutions; ``blstats`` are scaled with fixed per-field rules and go through a
small MLP; ``last_action`` (one-hot, as SB3 preprocesses ``Discrete``) and an optional
bag of inventory glyphs are appended. Every other key of the Dict space is ignored, so
the same extractor serves vanilla PPO and, as the base encoder, a composite extractor
for observations that also carry ``"experience"`` entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from experience_wrappers.validators import check_int, check_keywords, integral

__all__ = [
    "BLSTATS_LOG_FIELDS",
    "BLSTATS_SCALES",
    "GRID_KEYS",
    "GlyphCNNExtractor",
    "minihack_policy_kwargs",
    "normalise_blstats",
]

#: Grid observation keys the extractor understands, in the order it looks for them.
GRID_KEYS: tuple[str, ...] = ("glyphs_crop", "chars_crop", "glyphs", "chars")

# NLE 1.3.0 blstats layout (27 fields, nle.nethack.NLE_BL_*): divide by a fixed scale;
# fields without a useful bound (score, gold, experience points, time) are log-squashed.
#: Fixed divisors of the 27 NLE blstats fields.
BLSTATS_SCALES = np.array(
    [
        79.0, 21.0,  # x, y
        25.0, 125.0, 25.0, 25.0, 25.0, 25.0, 25.0,  # str25, str125, dex, con, int, wis, cha
        1.0,  # score (log)
        20.0, 20.0,  # hp, hpmax
        10.0,  # depth
        1.0,  # gold (log)
        20.0, 20.0,  # energy, energy max
        10.0,  # armour class
        10.0, 10.0,  # monster level (polymorphed), experience level
        1.0,  # experience points (log)
        1.0,  # time (log)
        6.0, 5.0,  # hunger state, carrying capacity
        10.0, 50.0,  # dungeon number, level number
        1.0,  # condition bitmask (unpacked into bits)
        1.0,  # alignment (-1, 0, 1)
    ],
    dtype=np.float32,
)
#: blstats fields squashed with ``sign(x) * log1p(|x|)`` instead of divided.
BLSTATS_LOG_FIELDS: tuple[int, ...] = (9, 13, 19, 20)
_CONDITION_FIELD = 25
_CONDITION_BITS = 16


def normalise_blstats(blstats: torch.Tensor) -> torch.Tensor:
    """Fixed, data-independent normalisation of a batch of blstats rows.

    Rows of NLE 1.3.0's 27 fields are divided by :data:`BLSTATS_SCALES` (log-squashed for
    :data:`BLSTATS_LOG_FIELDS`), the condition bitmask is unpacked into 16 bits and
    everything is clipped to [-10, 10]: ``(n, 27 + 16)``. Rows of any other length are
    log-squashed field by field.

    >>> x = torch.zeros(1, 27); x[0, 0] = 79.0; x[0, 25] = 5.0
    >>> y = normalise_blstats(x)
    >>> tuple(y.shape), float(y[0, 0]), y[0, 27:30].tolist()
    ((1, 43), 1.0, [1.0, 0.0, 1.0])
    """
    x = blstats.float()
    if x.shape[-1] != len(BLSTATS_SCALES):
        return torch.sign(x) * torch.log1p(x.abs())
    scales = torch.as_tensor(BLSTATS_SCALES, device=x.device)
    out = x / scales
    log_idx = list(BLSTATS_LOG_FIELDS)
    out[..., log_idx] = torch.sign(x[..., log_idx]) * torch.log1p(x[..., log_idx].abs())
    cond = x[..., _CONDITION_FIELD].long()
    bits = (cond.unsqueeze(-1) >> torch.arange(_CONDITION_BITS, device=x.device)) & 1
    out[..., _CONDITION_FIELD] = 0.0
    return torch.cat([out, bits.float()], dim=-1).clamp(-10.0, 10.0)


def _blstats_dim(space: spaces.Box) -> int:
    n = int(np.prod(space.shape))
    return n + _CONDITION_BITS if n == len(BLSTATS_SCALES) else n


def _vocab_size(key: str, space: spaces.Space) -> int:
    if not isinstance(space, spaces.Box) or not np.issubdtype(space.dtype, np.integer):
        raise ValueError(f"observation key {key!r} must be an integer Box of ids, got {space!r}")
    if np.any(space.low < 0):
        raise ValueError(f"observation key {key!r} has negative ids (low={space.low.min()})")
    return int(np.max(space.high)) + 1


class _GridEncoder(nn.Module):
    def __init__(
        self, vocab: int, height: int, width: int, embed_dim: int, channels: Sequence[int]
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed_dim)
        layers: list[nn.Module] = []
        c_in = embed_dim
        for c_out in channels:
            layers += [nn.Conv2d(c_in, c_out, kernel_size=3, padding=1), nn.ReLU()]
            c_in = c_out
        self.conv = nn.Sequential(*layers, nn.Flatten())
        self.out_dim = c_in * height * width

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids.long())  # (B, H, W, E)
        return self.conv(x.permute(0, 3, 1, 2))


class _BagEncoder(nn.Module):
    """Mean of embeddings of the ids that are not ``empty``."""

    def __init__(self, vocab: int, embed_dim: int, empty: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed_dim)
        self.empty = empty
        self.out_dim = embed_dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.long()
        mask = (ids != self.empty).float().unsqueeze(-1)
        total = (self.embed(ids) * mask).sum(dim=1)
        return total / mask.sum(dim=1).clamp(min=1.0)


class GlyphCNNExtractor(BaseFeaturesExtractor):
    """Glyph embedding + two 3x3 convolutions + blstats MLP + last action, for SB3 policies.

    Reads only these keys of the Dict observation space (each one if present; at least one
    grid key is required):

    * the grid keys (``grid_keys``, default: every one of :data:`GRID_KEYS` present):
      ids -> ``nn.Embedding`` (size from the space's upper bound: ``MAX_GLYPH + 1`` for
      glyphs, 256 for chars) -> ``conv_channels`` 3x3 convolutions with ReLU -> flatten;
    * ``"blstats"``: :func:`normalise_blstats` -> MLP of ``blstats_hidden`` units;
    * ``"last_action"``: the one-hot vector SB3 makes of a ``Discrete`` observation;
    * ``"inv_glyphs"`` (if ``use_inventory``): mean embedding of the carried items.

    The parts are concatenated and mapped to ``features_dim`` by a linear layer with ReLU.
    All other keys (``"experience"``, ``"experience_mask"``, ``"message"``...) are ignored,
    so the extractor also works as the base encoder of a composite extractor.

    Args:
        observation_space: a ``gymnasium.spaces.Dict``.
        features_dim: size of the output.
        grid_keys: grid keys to encode (``None``: all of :data:`GRID_KEYS` present).
        embed_dim: size of the glyph embedding.
        conv_channels: output channels of the 3x3 convolutions.
        blstats_hidden: width of the blstats MLP.
        use_inventory: encode ``"inv_glyphs"`` when the space has it.

    >>> import gymnasium as gym
    >>> space = spaces.Dict({
    ...     "glyphs_crop": spaces.Box(0, 5976, (9, 9), np.int16),
    ...     "blstats": spaces.Box(-2**31, 2**31 - 1, (27,), np.int64),
    ...     "last_action": spaces.Discrete(9),
    ...     "experience": spaces.Box(-1.0, 1.0, (4, 8), np.float32)})
    >>> ext = GlyphCNNExtractor(space, features_dim=32)
    >>> ext.used_keys
    ('glyphs_crop', 'blstats', 'last_action')
    >>> obs = {"glyphs_crop": torch.full((2, 9, 9), 2359.0), "blstats": torch.zeros(2, 27),
    ...        "last_action": torch.eye(9)[:2]}
    >>> tuple(ext(obs).shape)
    (2, 32)
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        features_dim: int = 128,
        grid_keys: Sequence[str] | None = None,
        embed_dim: int = 16,
        conv_channels: Sequence[int] = (16, 32),
        blstats_hidden: int = 64,
        use_inventory: bool = True,
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(
                f"GlyphCNNExtractor needs a Dict observation space, got {observation_space!r}"
            )
        features_dim = check_int("features_dim", features_dim, minimum=1)
        embed_dim = check_int("embed_dim", embed_dim, minimum=1)
        blstats_hidden = check_int("blstats_hidden", blstats_hidden, minimum=1)
        channels = tuple(conv_channels)
        if not channels or not all(integral(c, numpy=True) and c > 0 for c in channels):
            raise ValueError(f"conv_channels must be positive ints, got {conv_channels!r}")
        channels = tuple(int(c) for c in channels)
        super().__init__(observation_space, features_dim)
        sub = observation_space.spaces
        if grid_keys is None:
            grid = tuple(k for k in GRID_KEYS if k in sub)
        else:
            if isinstance(grid_keys, str):
                raise ValueError(f"grid_keys must be a sequence of keys, got {grid_keys!r}")
            grid = tuple(grid_keys)
            missing = [k for k in grid if k not in sub]
            if missing:
                raise ValueError(
                    f"grid_keys {missing!r} are not in the observation space ({sorted(sub)})"
                )
        if not grid:
            raise ValueError(
                f"the observation space has no grid key (one of {GRID_KEYS}); "
                f"it has {sorted(sub)}"
            )
        self.grid_keys = grid
        self.grids = nn.ModuleDict()
        total = 0
        for key in grid:
            shape = sub[key].shape
            if shape is None or len(shape) != 2:
                raise ValueError(f"grid key {key!r} must be 2-D, got shape {shape}")
            enc = _GridEncoder(_vocab_size(key, sub[key]), shape[0], shape[1], embed_dim, channels)
            self.grids[key] = enc
            total += enc.out_dim

        self.blstats_key: str | None = None
        if "blstats" in sub:
            bl = sub["blstats"]
            if not isinstance(bl, spaces.Box) or len(bl.shape) != 1:
                raise ValueError(f"'blstats' must be a 1-D Box, got {bl!r}")
            self.blstats_key = "blstats"
            self.blstats_mlp = nn.Sequential(
                nn.Linear(_blstats_dim(bl), blstats_hidden),
                nn.ReLU(),
                nn.Linear(blstats_hidden, blstats_hidden),
                nn.ReLU(),
            )
            total += blstats_hidden

        self.last_action_key: str | None = None
        if "last_action" in sub:
            la = sub["last_action"]
            if not isinstance(la, spaces.Discrete):
                raise ValueError(f"'last_action' must be Discrete, got {la!r}")
            self.last_action_key = "last_action"
            total += int(la.n)

        self.inventory_key: str | None = None
        if use_inventory and "inv_glyphs" in sub:
            vocab = _vocab_size("inv_glyphs", sub["inv_glyphs"])
            self.inventory_key = "inv_glyphs"
            self.inventory = _BagEncoder(vocab, embed_dim, empty=vocab - 1)
            total += self.inventory.out_dim

        self.head = nn.Sequential(nn.Linear(total, features_dim), nn.ReLU())

    @property
    def used_keys(self) -> tuple[str, ...]:
        """The observation keys this extractor reads (all others are ignored)."""
        keys = list(self.grid_keys)
        for k in (self.blstats_key, self.last_action_key, self.inventory_key):
            if k is not None:
                keys.append(k)
        return tuple(keys)

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        missing = [k for k in self.used_keys if k not in observations]
        if missing:
            raise KeyError(f"observation batch lacks keys {missing!r}")
        parts = [self.grids[k](observations[k]) for k in self.grid_keys]
        if self.blstats_key is not None:
            parts.append(self.blstats_mlp(normalise_blstats(observations[self.blstats_key])))
        if self.last_action_key is not None:
            parts.append(observations[self.last_action_key].float())
        if self.inventory_key is not None:
            parts.append(self.inventory(observations[self.inventory_key]))
        # SB3 stores Discrete observations with shape (1,): one-hot gives (B, 1, n).
        return self.head(torch.cat([p.reshape(p.shape[0], -1) for p in parts], dim=1))


def minihack_policy_kwargs(**overrides: Any) -> dict[str, Any]:
    """``policy_kwargs`` for ``PPO("MultiInputPolicy", env, policy_kwargs=...)`` on MiniHack.

    Uses :class:`GlyphCNNExtractor` (``features_dim=128``) shared by actor and critic, and
    SB3's default heads. ``overrides`` replace entries, except
    ``features_extractor_kwargs``, which is merged into the default one; an argument
    :class:`GlyphCNNExtractor` does not take is refused here, naming the ones it does. (The policy's
    own arguments are the policy's to check: this works for SB3's ``MultiInputPolicy`` as for
    sb3-contrib's recurrent one.)

    >>> kw = minihack_policy_kwargs(features_extractor_kwargs={"embed_dim": 8})
    >>> kw["features_extractor_class"].__name__, kw["features_extractor_kwargs"]
    ('GlyphCNNExtractor', {'features_dim': 128, 'embed_dim': 8})
    """
    kwargs: dict[str, Any] = {
        "features_extractor_class": GlyphCNNExtractor,
        "features_extractor_kwargs": {"features_dim": 128},
    }
    extra = overrides.pop("features_extractor_kwargs", None)
    if extra is not None:
        if not isinstance(extra, dict):
            raise ValueError(f"features_extractor_kwargs must be a dict, got {extra!r}")
        if overrides.get("features_extractor_class", GlyphCNNExtractor) is GlyphCNNExtractor:
            check_keywords("features_extractor_kwargs", extra, GlyphCNNExtractor.__init__, ("observation_space",))
        kwargs["features_extractor_kwargs"] = {**kwargs["features_extractor_kwargs"], **extra}
    kwargs.update(overrides)
    return kwargs
