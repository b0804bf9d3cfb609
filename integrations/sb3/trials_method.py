"""The trials method assembled in one call: memory, trial envs, PPO with the entry reader, and its callbacks."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from experience_wrappers.bank.folder import META
from experience_wrappers.bank.save_load import replaced_folder
from experience_wrappers.errors import RunFileError
from experience_wrappers.replay import SuccessReplay
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.checks import (
    check_instances,
    space_mismatch,
    trials_observation_space,
)
from experience_wrappers.trials.wrapper import (
    ENTRIES_KEY,
    MASK_KEY,
    TRIAL_INDEX_KEY,
    DemoSource,
    trials_env_fns,
)

from .self_imitation import SelfImitationCallback
from .trials_features import TrialsFeaturesExtractor
from .trials_imitation import EntryImitationCallback

__all__ = ["TrialsRun", "build_trials_method", "TRIALS_PPO_KWARGS", "TRIALS_RUN_FORMAT"]

#: PPO's settings of the trials benchmarks (every arm, the recurrent peer included)
TRIALS_PPO_KWARGS: dict[str, Any] = {"n_steps": 128, "batch_size": 256, "n_epochs": 10, "learning_rate": 3e-4,
                                     "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.01, "clip_range": 0.2}

#: a :meth:`TrialsRun.save` folder's format (its ``meta.json``) and the names a save writes there
TRIALS_RUN_FORMAT, TRIALS_RUN_VERSION = "complementary-rl-trials-run", 1
TRIALS_RUN_NAMES = frozenset({"model.zip", "memory", META})


@attrs.define
class TrialsRun:
    """What :func:`build_trials_method` made: train with ``model.learn(steps, callback=run.callbacks)``.

    Attributes:
        model: the PPO model (its policy reads the entries with :class:`TrialsFeaturesExtractor`).
        memory: the :class:`~experience_wrappers.trials.TrialMemory` every env shares.
        callbacks: self-imitation and entry imitation, as asked for (in this order).
    """

    model: PPO
    memory: TrialMemory
    callbacks: list[BaseCallback]

    def save(self, folder: str | Path) -> Path:
        """Save the policy (``model.zip``), the extractor (``memory/``) and ``meta.json``; :meth:`load_policy` reads them.

        All or nothing, as :func:`~integrations.sb3.save_crl`: the run is written into a new folder
        beside ``folder`` that then takes its place in one step
        (:func:`~experience_wrappers.bank.save_load.replaced_folder`), so a failed save leaves the
        previous one as it was. Files of yours in the folder are kept; a folder that holds
        anything but a run saved here is refused, so an unrelated ``model.zip`` is never replaced.

        Raises:
            ValueError: ``folder`` is a file.
            RunFileError: the folder is not empty and holds no run saved by this method.
        """
        path = Path(folder)
        if path.exists() and not path.is_dir():
            raise ValueError(f"TrialsRun.save writes a folder, and {str(path)!r} is a file; give a folder path")
        _adopt_earlier_folder(path)
        with replaced_folder(path, TRIALS_RUN_FORMAT, TRIALS_RUN_NAMES.__contains__, RunFileError) as tmp:
            self.model.save(tmp / "model.zip")
            self.memory.save(tmp / "memory")
            (tmp / META).write_text(json.dumps({"format": TRIALS_RUN_FORMAT, "version": TRIALS_RUN_VERSION}))
        return path

    @staticmethod
    def load_policy(folder: str | Path, memory: TrialMemory) -> PPO:
        """The saved PPO model; the saved extractor goes into ``memory`` (a memory built with the same settings).

        Raises:
            RunFileError: ``folder`` is not a folder saved by :meth:`save`.
            ValueError: the policy reads other observations or actions than ``memory``'s envs
                would show (another observation or action space, ``k``, ``exp_dim`` or
                ``trial_index``), or the extractor other widths (another key width, ``exp_dim``
                or ``max_len``): ``memory`` is left as it was.
        """
        if not isinstance(memory, TrialMemory):
            raise TypeError(f"memory must be a TrialMemory built as in training, got {type(memory).__name__}")
        path = Path(folder)
        _check_saved_folder(path)
        model = PPO.load(path / "model.zip", device="cpu")
        policy_space = model.observation_space
        index = policy_space.spaces.get(TRIAL_INDEX_KEY) if isinstance(policy_space, gym.spaces.Dict) else None
        trials = (index.shape[0] if index is not None and index.shape else 1) if memory.trial_index else None
        shown = trials_observation_space(memory.observation_space, memory.k, memory.layout.row_dim, trials)
        why = space_mismatch(policy_space, shown)
        if why is None and model.action_space != memory.action_space:
            why = f"the policy acts in {model.action_space}, the memory was built for {memory.action_space}"
        if why:
            raise ValueError(f"TrialsRun.load_policy: the policy saved in {str(path)!r} does not fit this memory: "
                             f"{why}; build the memory with the settings of training")
        memory.load(path / "memory")  # checks the extractor's widths before it changes the memory
        return model


def _check_saved_folder(path: Path) -> None:
    """Refuse a folder that :meth:`TrialsRun.save` did not write (one of an earlier version, without
    ``meta.json``, passes)."""
    if not (path / "model.zip").is_file():
        raise RunFileError(f"cannot load run from {str(path)!r}: no model.zip there; give a folder written by "
                           "TrialsRun.save")
    try:
        meta = json.loads((path / META).read_bytes())
    except FileNotFoundError:
        return
    except (OSError, ValueError, RecursionError) as exc:
        raise RunFileError(f"cannot load run from {str(path)!r}: {META} cannot be read ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != TRIALS_RUN_FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise RunFileError(f"cannot load run from {str(path)!r}: a folder of format {got!r}, not a TrialsRun.save "
                           f"folder ({TRIALS_RUN_FORMAT!r})")
    if not isinstance(meta.get("version"), int) or meta["version"] > TRIALS_RUN_VERSION:
        raise RunFileError(f"cannot load run from {str(path)!r}: format version {meta.get('version')!r}, this "
                           f"library reads up to {TRIALS_RUN_VERSION}; upgrade the library")


def _adopt_earlier_folder(path: Path) -> None:
    """Give a folder of an earlier :meth:`TrialsRun.save` (``model.zip`` and ``memory/`` holding at
    most ``extractor.pt``, no ``meta.json``) its ``meta.json``, so that a new save may replace it; any
    other folder is left for :func:`replaced_folder` to refuse."""
    memory = path / "memory"
    if not path.is_dir() or (path / META).exists() or not (path / "model.zip").is_file() or not memory.is_dir():
        return
    if {p.name for p in memory.iterdir()} <= {"extractor.pt"}:
        (path / META).write_text(json.dumps({"format": TRIALS_RUN_FORMAT, "version": TRIALS_RUN_VERSION}))


def build_trials_method(make_env: Callable[[], gym.Env], instances: Sequence[int], *, memory: TrialMemory,
                        n_envs: int = 8, group_size: int = 4, free_members: int = 1, trials: int = 4,
                        sil: bool = True, demonstrations: DemoSource | None = None, demo_ratio: float = 0.25,
                        imitate: bool | Mapping[str, Any] = True, novelty_bonus: float = 0.02,
                        novelty_until_success: bool = True,
                        ppo_kwargs: dict[str, Any] | None = None,
                        features_kwargs: dict[str, Any] | None = None,
                        vec_normalize: dict[str, Any] | None = None, seed: int = 0,
                        verbose: int = 0) -> TrialsRun:
    """The method measured on the trials suites, on ``instances`` of ``make_env``.

    ``n_envs`` envs in groups of ``group_size`` (``free_members`` of each free) run ``trials``
    trials per instance, sharing ``memory``; PPO (:data:`TRIALS_PPO_KWARGS`, overridden by
    ``ppo_kwargs``) with :class:`TrialsFeaturesExtractor`; self-imitation of successful trials
    as they were seen (``sil``: their entries in the input, so the policy learns to read
    them); ``demonstrations(instance)`` placed in ``demo_ratio`` of the guided runs;
    ``imitate``: :class:`EntryImitationCallback` (on by default, as measured: see below; a mapping:
    its arguments, e.g. ``{"max_distance": None}`` for continuous states); ``novelty_bonus``: the guided training steps
    exploration bonus for an observation new to their run, while the run has no success
    or demonstration unless ``novelty_until_success`` is False (:class:`~experience_wrappers.trials.novelty.NoveltyBonus`); its
    default, 0.02, is the measured one (``crl-trials-novelty`` on the hidden-goal room, 5 seeds:
    cumulative success by trial 4 0.53 against 0.35 without it; 0 gives the ``crl-trials`` arm).
    With a ``TrialMemory`` of its defaults (failed trials not written) this is the
    ``crl-trials-default-imitate`` arm, the best measured (5 seeds each): on the hidden key and
    door, following a run's success 0.91 and one demonstration 0.99 from the first trial,
    against 0.68 and 0.83 without the imitation loss (``imitate=False``: the
    ``crl-trials-novelty-successes`` arm), cumulative success by trial 4 0.45 against 0.51
    (the difference's CI spans zero); on the hidden-goal room following 0.94 and one
    demonstration 0.99-1.00 either way. ``features_kwargs`` go to the
    :class:`TrialsFeaturesExtractor` (``base_extractor_class`` for image observations).
    ``ppo_kwargs`` may hold ``policy_kwargs`` (``net_arch``, ``activation_fn``, ``log_std_init``):
    they override the method's ([64, 64]) but the features extractor stays the entry reader.
    ``vec_normalize``: ``VecNormalize``'s keyword arguments, the VecEnv wrapped in it (None, the
    default: not wrapped); ``norm_obs_keys`` defaults to the env's own observation keys, so
    that the entries, the mask and the trial index are never rescaled (the memory keys its
    entries on the raw observations below it). Evaluate such a model through its statistics
    (``model.get_env().normalize_obs``; frozen: ``training = False``).

    >>> from integrations.minihack.hidden_goal import HiddenGoalRoom
    >>> proto = HiddenGoalRoom()
    >>> mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25, write_failures=True)
    >>> run = build_trials_method(HiddenGoalRoom, [5, 6], memory=mem, n_envs=4)
    >>> _ = run.model.learn(512, callback=run.callbacks)
    >>> run.memory.stats["trials_written"] > 0
    True
    """
    if not isinstance(memory, TrialMemory):
        raise TypeError(f"memory must be a TrialMemory, got {type(memory).__name__}")
    instances = check_instances(instances)
    fns = trials_env_fns(make_env, memory, n_envs, instances=instances, trials=trials, group_size=group_size,
                         free_members=free_members, seed=seed, wrapper=Monitor,
                         demonstrations=demonstrations if demo_ratio else None, demo_ratio=demo_ratio,
                         novelty_bonus=novelty_bonus, novelty_until_success=novelty_until_success)
    venv: VecEnv = DummyVecEnv(fns)
    if vec_normalize is not None:
        own = [key for key in venv.observation_space.spaces  # type: ignore[attr-defined]
               if key not in (ENTRIES_KEY, MASK_KEY, TRIAL_INDEX_KEY)]
        venv = VecNormalize(venv, **{"norm_obs_keys": own, **vec_normalize})
    kwargs = {**TRIALS_PPO_KWARGS, **(ppo_kwargs or {})}
    model = PPO("MultiInputPolicy", venv, seed=seed, verbose=verbose,
                policy_kwargs={"net_arch": [64, 64], **kwargs.pop("policy_kwargs", {}),
                               "features_extractor_class": TrialsFeaturesExtractor,
                               **({"features_extractor_kwargs": features_kwargs} if features_kwargs else {})},
                **kwargs)
    callbacks: list[BaseCallback] = []
    if sil:
        callbacks.append(SelfImitationCallback(SuccessReplay(50_000), keep="successful", seed=seed))
    if imitate:
        callbacks.append(EntryImitationCallback(memory.layout, **{"seed": seed, **(
            dict(imitate) if isinstance(imitate, Mapping) else {})}))
    return TrialsRun(model, memory, callbacks)
