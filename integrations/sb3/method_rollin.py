"""Guided roll-in as :class:`~integrations.sb3.ComplementaryRL` assembles it: its defaults, the
demonstrated instances' reset seeds, the guide and the curriculum."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from experience_wrappers.manager import ExperienceManager
from experience_wrappers.rollin import BankGuide, ReplayGuide, RollInCurriculum, instance_seeds

from .env_families import Family
from .rollin_env import GuidedRollInVecEnv

__all__ = ["DEMO_SEED_OFFSET", "ROLLIN_DEFAULTS", "check_rollin", "check_same_demonstrations", "demonstrations_digest",
           "rollin_env"]

#: demonstrations recorded by a run with seed ``s`` start from reset seed ``s + DEMO_SEED_OFFSET``
#: (apart from the training envs' own draws)
DEMO_SEED_OFFSET = 20_000

#: guided roll-in as measured (``crl-sil-obs-rollin``): guided episodes start on a demonstrated
#: instance, the bank's nearest demonstration entry acts for the first ``h`` steps (within
#: squared distance 0.5), ``h`` from the longest demonstration down by 1 each time 8 roll-ins at
#: ``h`` succeed >= 50 %
ROLLIN_DEFAULTS: dict[str, Any] = {"on_demonstrated": True, "rollin_ratio": 1.0, "guide": {"max_distance": 0.5},
                                   "curriculum": {"threshold": 0.5, "window": 8, "shrink_step": 1}}


def check_rollin(rollin: Mapping[str, Any], demonstrations: int, experience: bool, group_size: int | None) -> None:
    """Refuse a roll-in setting that cannot run: a guide of no known type, no demonstrations to start
    from, the bank's guide without a bank, a replay guide off the demonstrated instances, paired credit."""
    kind = rollin.get("guide_type", "bank")
    if kind not in ("bank", "replay"):
        raise ValueError(f"rollin guide_type must be 'bank' or 'replay', got {kind!r}")
    if not demonstrations:
        raise ValueError("guided roll-in starts from demonstrations: give demonstrations")
    if kind == "bank" and not experience:
        raise ValueError("roll-in with the bank's guide needs experience=True (or guide_type='replay')")
    if kind == "replay" and not rollin.get("on_demonstrated", False):
        raise ValueError("a replay guide replays demonstrations on their instances: it needs "
                         "rollin on_demonstrated=True")
    if group_size is not None:
        raise ValueError("group_size (paired credit) and roll-in do not mix: roll-in resets envs onto "
                         "instances of its own")


def demonstrations_digest(demonstrations: Any) -> str | None:
    """A digest of given demonstrations' observations and actions (None for a count of scripted
    ones, recorded again from the seed): a loaded roll-in run checks it is given the same ones."""
    if isinstance(demonstrations, int):
        return None
    h = hashlib.sha256()
    for d in demonstrations:  # values as float64 with their shapes: a dtype changed on the way (JSON) is the same
        obs = d.observations if isinstance(d.observations, dict) else {"": d.observations}
        for key, x in [*sorted(obs.items()), ("|actions", d.actions)]:
            try:
                x = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError):  # (not numbers: refused by name where they are validated)
                h.update(repr(x).encode())
                continue
            h.update(f"{key}{x.shape}".encode() + np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:16]


def check_same_demonstrations(saved: str | None, given: str | None) -> None:
    """Refuse a loaded roll-in run given other demonstrations than it was saved with (their digests)."""
    if saved is not None and given != saved:
        raise ValueError("ComplementaryRL.load: these demonstrations are not the ones this run rolled in from "
                         f"(digest {given}, saved {saved}); pass the same ones")


def rollin_env(env: VecEnv, rollin: Mapping[str, Any], demonstrations: Sequence[Any], *,
               manager: ExperienceManager | None, seed: int, family: Family, env_id: Any,
               scripted: bool) -> tuple[GuidedRollInVecEnv, list[int] | None]:
    """The training env under guided roll-in (``h`` starts at the longest demonstration) and the
    demonstrated instances' reset seeds (None: roll-in starts anywhere).

    ``rollin``: :data:`ROLLIN_DEFAULTS`-shaped (``guide_type``, ``guide``, ``curriculum``,
    ``on_demonstrated``, ``instance_seeds`` and :class:`GuidedRollInVecEnv`'s other arguments);
    ``scripted``: the demonstrations were recorded by the run (from reset seeds
    ``seed + DEMO_SEED_OFFSET`` on), so their instances can be found again.
    """
    cfg = dict(rollin)
    kind = cfg.pop("guide_type", "bank")
    guide_kwargs = cfg.pop("guide", {})
    curriculum = RollInCurriculum.for_lengths([len(d.actions) for d in demonstrations], **cfg.pop("curriculum", {}))
    seeds = _instance_seeds(cfg, demonstrations, seed=seed, family=family, env_id=env_id, scripted=scripted)
    cfg.pop("on_demonstrated", None)
    cfg.pop("instance_seeds", None)
    guide: BankGuide | ReplayGuide
    if kind == "bank":
        assert manager is not None  # ComplementaryRL._check
        guide = BankGuide(manager, **guide_kwargs)
    else:
        assert seeds is not None  # ComplementaryRL._check
        guide = ReplayGuide.from_demonstrations(demonstrations, seeds)
    if manager is None:
        cfg.setdefault("only_guided", False)  # without the wrapper no episode is drawn guided
    return GuidedRollInVecEnv(env, guide, curriculum, instance_seeds=seeds, seed=seed, **cfg), seeds


def _instance_seeds(cfg: Mapping[str, Any], demonstrations: Sequence[Any], *, seed: int, family: Family,
                    env_id: Any, scripted: bool) -> list[int] | None:
    if not cfg.get("on_demonstrated", False):
        return None
    if cfg.get("instance_seeds") is not None:
        return [int(x) for x in cfg["instance_seeds"]]
    if not scripted or not isinstance(env_id, str):
        raise ValueError("roll-in on the demonstrated instances needs their reset seeds: record the "
                         "demonstrations here (demonstrations=N) or give rollin={'instance_seeds': [...]}")
    probe = family.make_vec(env_id, 1, seed)
    try:
        assert isinstance(probe, DummyVecEnv)  # the families build DummyVecEnvs
        return instance_seeds(probe.envs[0], demonstrations, seed + DEMO_SEED_OFFSET)
    finally:
        probe.close()
