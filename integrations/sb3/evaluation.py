"""Evaluate an agent with experience and without it (the paper reports both); evaluation never learns."""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.vec_env import (
    VecEnv,
    VecNormalize,
    VecTransposeImage,
    unwrap_vec_wrapper,
)

from experience_wrappers.manager import SuccessReports, outcome_of
from experience_wrappers.manager.sharing import same_layout
from experience_wrappers.validators import check_bool, check_int
from experience_wrappers.wrappers.injector import LONG_EPISODE
from experience_wrappers.wrappers.instances import ReplayInstances

from .discovery import empty_bank, find_experience, never_fed
from .guards import check_vec_env
from .rollin_env import GuidedRollInVecEnv
from .success_record import known_reports

__all__ = ["evaluate_with_and_without_experience", "run_episodes", "no_learning", "evaluate_frozen"]


@contextlib.contextmanager
def no_learning(env: VecEnv, guided: bool | None = None) -> Iterator[VecEnv]:
    """Within the block, ``env``'s experience wrappers hand no episode to the manager and
    count no retrieval; ``guided`` True / False forces every episode guided / free. A
    :class:`~integrations.sb3.GuidedRollInVecEnv` in ``env`` is switched off (the policy acts
    from the first step, and no episode reaches the roll-in curriculum), and a ``VecNormalize``
    stops updating its statistics (``training=False``), as do gymnasium's normalisers that have any
    (:func:`statistics_kept`); all are restored after the block.
    Envs that replay one task instance per episode for paired credit
    (:class:`~experience_wrappers.wrappers.ReplayInstances`, ``group_size``) stop replaying in the
    block: an evaluation's resets take the seeds it gives and do not move the training's instances
    (envs of an in-process VecEnv such as ``DummyVecEnv``; a ``SubprocVecEnv``'s are out of reach).

    Use it around anything that runs the policy for evaluation (SB3's ``evaluate_policy``,
    a video recorder, a hand-written loop). An evaluation env built with the default
    ``learn=None`` already learns nothing while another env trains the bank with
    :class:`~integrations.sb3.CRLCallback`; this makes it explicit and works on any env.

    >>> import gymnasium as gym
    >>> from stable_baselines3.common.env_util import make_vec_env
    >>> from experience_wrappers import ExperienceBank, ExperienceWrapper
    >>> venv = make_vec_env("CartPole-v1", n_envs=1, wrapper_class=ExperienceWrapper,
    ...                     wrapper_kwargs={"bank": ExperienceBank()})
    >>> with no_learning(venv):
    ...     _ = venv.reset()
    """
    if guided is not None:
        guided = check_bool("guided", guided, hint=" or None", numpy=True)
    _, injectors = find_experience(env)
    rollin = unwrap_vec_wrapper(env, GuidedRollInVecEnv)
    saved = [(inj.force_guided, inj.learn) for inj in injectors]
    rollin_on = rollin is not None and rollin.enabled  # type: ignore[attr-defined]  # (unwrap_vec_wrapper's annotation is VecEnvWrapper)
    for inj in injectors:
        inj.learn = False
        if guided is not None:
            inj.force_guided = guided
    if rollin_on:
        rollin.enabled = False  # type: ignore[union-attr]
    replays = [r for r in _instance_replays(env) if r.replaying]
    for r in replays:
        r.replaying = False
    try:
        with statistics_kept(env):
            yield env
    finally:
        for r in replays:
            r.replaying = True
        for inj, (force, learn) in zip(injectors, saved, strict=True):
            inj.force_guided, inj.learn = force, learn
        if rollin_on:
            rollin.enabled = True  # type: ignore[union-attr]


def _managers_of(model: BaseAlgorithm) -> list[Any]:
    """The managers of the model's own env (none where it has no env or no experience)."""
    env = model.get_env()
    try:
        return [] if env is None else list(find_experience(env)[0])
    except ValueError:
        return []


def _instance_replays(env: VecEnv) -> list[ReplayInstances]:
    """The task-scope instance replays (``instances`` None) below the envs of an in-process VecEnv."""
    out = []
    for e in getattr(env.unwrapped, "envs", []):
        while isinstance(e, gym.Wrapper):
            if isinstance(e, ReplayInstances) and e.instances is None:
                out.append(e)
            e = e.env
    return out


#: gymnasium's wrappers that keep running statistics (``update_running_mean``), which an evaluation freezes
_GYM_NORMALIZERS = (gym.wrappers.NormalizeObservation, gym.wrappers.NormalizeReward)


def _gym_normalizers(env: VecEnv) -> list[list[gym.Wrapper]]:
    """Per env of an in-process VecEnv, gymnasium's normalising wrappers in its chain (outermost first)."""
    out: list[list[gym.Wrapper]] = []
    for e in getattr(env.unwrapped, "envs", []):
        found: list[gym.Wrapper] = []
        while isinstance(e, gym.Wrapper):
            if isinstance(e, _GYM_NORMALIZERS):
                found.append(e)
            e = e.env
        out.append(found)
    return out


@contextlib.contextmanager
def statistics_kept(env: VecEnv) -> Iterator[None]:
    """Within the block, a ``VecNormalize`` in ``env`` does not update its statistics (``training=False``),
    nor do gymnasium's ``NormalizeObservation`` and ``NormalizeReward`` in its envs (``update_running_mean``)
    once they have statistics: one that has seen nothing (an evaluation env built apart from training, into
    which gymnasium has no way to copy them) adapts as gymnasium's do. Envs in worker processes
    (``SubprocVecEnv``) cannot be reached: theirs are left as they are."""
    normalize = unwrap_vec_wrapper(env, VecNormalize)
    normalizing = normalize is not None and normalize.training  # type: ignore[attr-defined]
    frozen = [w for ws in _gym_normalizers(env) for w in ws if w.update_running_mean and _has_statistics(w)]  # type: ignore[attr-defined]
    if normalizing:
        normalize.training = False  # type: ignore[union-attr]
    for w in frozen:
        w.update_running_mean = False  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if normalizing:
            normalize.training = True  # type: ignore[union-attr]
        for w in frozen:
            w.update_running_mean = True  # type: ignore[attr-defined]


def _has_statistics(w: gym.Wrapper) -> bool:
    """Whether a gymnasium normaliser has seen data (its running statistics start at a count of 1e-4)."""
    rms = w.obs_rms if isinstance(w, gym.wrappers.NormalizeObservation) else w.return_rms  # type: ignore[attr-defined]
    return float(rms.count) > 1.0


def reward_scales(env: VecEnv) -> np.ndarray:
    """Per env, what turns the reward a gymnasium ``NormalizeReward`` in its chain returns back into the env's own:
    the product of their ``sqrt(var + epsilon)`` (1 where there is none), read after the step they scaled."""
    scales = [float(np.prod([np.sqrt(float(np.asarray(w.return_rms.var).ravel()[0]) + w.epsilon)  # type: ignore[attr-defined]
                             for w in ws if isinstance(w, gym.wrappers.NormalizeReward)])) for ws in _gym_normalizers(env)]
    return np.asarray(scales, dtype=np.float64) if scales else np.ones(env.num_envs)


def check_deterministic(deterministic: object) -> bool:
    """An evaluation's ``deterministic`` flag: a bool (a numpy bool passes), never a str (``"no"`` is truthy).

    >>> check_deterministic("no")
    Traceback (most recent call last):
    ...
    TypeError: deterministic must be a bool, got 'no'
    """
    return check_bool("deterministic", deterministic, numpy=True)


def as_model_sees(space: spaces.Space) -> spaces.Space:
    """``space`` as an SB3 model sees it: a channel-last image (alone or in a Dict) channel-first,
    as SB3 wraps such an env in ``VecTransposeImage`` (and ``predict`` transposes such observations).

    >>> as_model_sees(spaces.Box(0, 255, (8, 8, 3), np.uint8)).shape
    (3, 8, 8)
    """
    if isinstance(space, spaces.Dict):
        return spaces.Dict({key: as_model_sees(sub) for key, sub in space.spaces.items()})
    if is_image_space(space) and not is_image_space_channels_first(space):  # type: ignore[arg-type]
        return VecTransposeImage.transpose_space(space)  # type: ignore[arg-type]
    return space


def check_spaces(model: BaseAlgorithm, env: VecEnv, caller: str = "the evaluation") -> None:
    """Refuse an env whose spaces are not of the model's layout (:func:`~experience_wrappers.manager.sharing.same_layout`:
    Box bounds may differ, as between MT10's tasks), before a step is taken. A channel-last image
    is compared as the model sees it (:func:`as_model_sees`).

    Raises:
        TypeError: ``env`` is not an SB3 VecEnv (a gymnasium VectorEnv, a single env: :func:`.guards.check_vec_env`).
        ValueError: naming both spaces.
    """
    check_vec_env(env, caller)
    for what, theirs, ours in (("Observation", model.observation_space, as_model_sees(env.observation_space)),
                               ("Action", model.action_space, env.action_space)):
        if not same_layout(theirs, ours):
            raise ValueError(f"{what} spaces do not match: the model's {theirs}, the env's {ours}")


def _masked(model: BaseAlgorithm, env: VecEnv) -> bool:
    """Whether ``model`` acts on action masks (sb3-contrib's MaskablePPO) that ``env`` gives."""
    return "action_masks" in inspect.signature(model.predict).parameters and env.has_attr("action_masks")


def evaluate_frozen(model: BaseAlgorithm, env: VecEnv, n_eval_episodes: int = 10, deterministic: bool = True,
                    guided: bool | None = None, **kwargs: Any) -> Any:
    """SB3's ``evaluate_policy`` on an experience-wrapped env, inside :func:`no_learning`
    (sb3-contrib's maskable one for a model that acts on the env's action masks).

    ``guided``: True / False evaluates with every episode guided / free (None: the
    manager's current guided ratio). Other arguments and the return value are SB3's.
    """
    n_eval_episodes = check_int("n_eval_episodes", n_eval_episodes, minimum=1, numpy=True)
    deterministic = check_deterministic(deterministic)
    check_spaces(model, env, "evaluate_frozen")
    evaluate: Any
    if _masked(model, env):
        from sb3_contrib.common.maskable.evaluation import evaluate_policy as evaluate
    else:
        from stable_baselines3.common.evaluation import evaluate_policy as evaluate
    with no_learning(env, guided):
        return evaluate(model, env, n_eval_episodes=n_eval_episodes, deterministic=deterministic, **kwargs)


def run_episodes(model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool = True,
                 seed: int | None = None, reports: SuccessReports | None = None) -> dict[str, float]:
    """Run ``n_episodes`` (spread evenly over the envs, as SB3's ``evaluate_policy`` does).

    Returns mean return, mean length, success rate (NaN if the env reports no success)
    and mean outcome (success, else return). Returns are the env's own (before a
    ``VecNormalize``'s scaling). An env that sets ``info["is_success"]`` on successes only has
    its other episodes counted as failures once one reported success
    (:class:`~experience_wrappers.manager.SuccessReports`). An episode that runs
    :data:`~experience_wrappers.wrappers.injector.LONG_EPISODE` steps is said once (an env
    without a time limit would run for ever). Recurrent policies (RecurrentPPO) carry their
    state across steps; maskable ones (MaskablePPO) get the env's action masks. ``seed``
    (an int >= 0): the envs' first resets are seeded ``seed + i`` (SB3's ``VecEnv.seed``; an
    ``ExperienceWrapper`` seeds its retrieval draws with it) and the policy's sampling too,
    in a torch RNG of its own (the global one is left as it was): the same weights, bank
    and seed give the same figures. None: as the envs and torch are. ``reports``: what is known of
    how the env reports success (an env whose training episodes reported it: its wrappers'
    :attr:`ExperienceInjector.reports <experience_wrappers.wrappers.injector.ExperienceInjector>`),
    so that an evaluation whose episodes all end without the key counts them as failures
    rather than as unknown (default: :func:`~integrations.sb3.success_record.known_reports` of the model
    and ``env``).
    """
    reports = known_reports(model, env) if reports is None else reports
    return _summarize(_collect(model, env, n_episodes, deterministic, seed, reports), reports)


def _collect(model: BaseAlgorithm, env: VecEnv, n_episodes: object, deterministic: object, seed: object,
             reports: SuccessReports) -> Episodes:
    """The checked arguments' episodes (:func:`run_episodes`), seeded where ``seed`` is given."""
    n_episodes, seed = check_episodes(n_episodes, seed)
    deterministic = check_deterministic(deterministic)
    check_spaces(model, env)
    with statistics_kept(env):  # (every path: ComplementaryRL.evaluate's experience-free one and the eval callback's)
        if seed is None:
            return _run_episodes(model, env, n_episodes, deterministic, reports)
        env.seed(seed)
        with th.random.fork_rng(devices=[]):
            th.manual_seed(seed)
            return _run_episodes(model, env, n_episodes, deterministic, reports)


def check_episodes(n_episodes: object, seed: object = None) -> tuple[int, int | None]:
    """An evaluation's ``n_episodes`` (an int >= 1, else ValueError) and ``seed`` (None, or an int >= 0:
    TypeError / ValueError), checked before any env is touched (:func:`run_episodes` and its callers)."""
    return (check_int("n_episodes", n_episodes, minimum=1, numpy=True),
            None if seed is None else check_int("seed", seed, minimum=0, numpy=True, type_error=TypeError))


#: an evaluation's episodes: their returns, lengths and successes (None: unknown when it ended)
Episodes = tuple[list[float], list[int], list["bool | None"]]


def _summarize(episodes: Episodes, reports: SuccessReports) -> dict[str, float]:
    """:func:`run_episodes`' figures of ``episodes``: once ``reports`` has seen a success reported (in these
    episodes, in others evaluated beside them, or in training), an episode that ended without the key is a
    failure; else its success is unknown (the success rate NaN where none is known, the outcome its return).

    >>> reports = SuccessReports()
    >>> _summarize(([3.0], [3], [None]), reports)["success"], _summarize(([3.0], [3], [None]), reports)["outcome"]
    (nan, 3.0)
    >>> _ = reports({"is_success": True})
    >>> _summarize(([3.0], [3], [None]), reports)["success"], _summarize(([3.0], [3], [None]), reports)["outcome"]
    (0.0, 0.0)
    """
    returns, lengths, successes = episodes
    if reports.seen:  # episodes that ended without a key before the first that had one: failures too
        successes = [bool(s) for s in successes]
    outcomes = [outcome_of(s, r) for s, r in zip(successes, returns, strict=True)]
    known = [float(s) for s in successes if s is not None]
    return {"return": float(np.mean(returns)), "length": float(np.mean(lengths)),
            "success": float(np.mean(known)) if known else float("nan"),
            "outcome": float(np.mean(outcomes)), "episodes": float(len(returns))}


def _run_episodes(model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool,
                  reports: SuccessReports) -> Episodes:
    masked = _masked(model, env)
    normalize = unwrap_vec_wrapper(env, VecNormalize)
    said_long = False
    state = None
    n = env.num_envs
    targets = np.array([(n_episodes + i) // n for i in range(n)], dtype=int)
    counts = np.zeros(n, dtype=int)
    returns: list[float] = []
    lengths: list[int] = []
    successes: list[bool | None] = []
    cur_ret, cur_len = np.zeros(n), np.zeros(n, dtype=int)
    gym_scaled = any(isinstance(w, gym.wrappers.NormalizeReward) for ws in _gym_normalizers(env) for w in ws)
    obs = env.reset()
    starts = np.ones(n, dtype=bool)
    while (counts < targets).any():
        if masked:
            masks = np.stack(env.env_method("action_masks"))
            actions, state = model.predict(obs, deterministic=deterministic, action_masks=masks)  # type: ignore[call-arg, arg-type]  # sb3-contrib's MaskablePPO; SB3's VecEnvObs includes tuples, predict's annotation does not
        else:
            actions, state = model.predict(obs, state=state, episode_start=starts, deterministic=deterministic)  # type: ignore[arg-type]  # SB3's VecEnvObs includes tuples, predict's annotation does not
        obs, rewards, dones, infos = env.step(actions)
        starts = np.asarray(dones, dtype=bool)
        own = rewards if normalize is None else normalize.get_original_reward()  # type: ignore[attr-defined]
        cur_ret += own * reward_scales(env) if gym_scaled else own  # (under gymnasium's NormalizeReward: the env's own)
        cur_len += 1
        if not said_long and cur_len.max() >= LONG_EPISODE:
            said_long = True
            warnings.warn(f"an evaluation episode has run {LONG_EPISODE:,} steps without ending: the evaluation "
                          "waits for its episodes to end; give the env a time limit (gymnasium.wrappers.TimeLimit)",
                          UserWarning, stacklevel=3)
        for i in np.flatnonzero(dones).tolist():
            if counts[i] < targets[i]:
                returns.append(cur_ret[i])
                lengths.append(cur_len[i])
                successes.append(reports(infos[i]))
                counts[i] += 1
            cur_ret[i], cur_len[i] = 0.0, 0
    return returns, lengths, successes


def evaluate_with_and_without_experience(model: BaseAlgorithm, env: VecEnv | None = None, n_episodes: int = 20,
                                         deterministic: bool = True, seed: int | None = None, *,
                                         resume: bool = True) -> dict[str, Any]:
    """Evaluate twice on ``env`` (default: the model's env): every episode guided, then every one free
    (with ``seed``, both from the same seeded starts: :func:`run_episodes`).

    During evaluation nothing is learned (:func:`no_learning`: episodes are not handed to the
    manager, retrieval counters are left alone, a roll-in env is off, a ``VecNormalize`` keeps its
    statistics). Afterwards the schedule is restored and the env is
    reset (so no evaluation episode reaches the manager): with ``resume`` (the default) it starts the
    training episodes that ``learn(..., reset_num_timesteps=False)`` goes on from, and their
    retrievals count as training's; ``resume=False`` counts none (for a caller that starts its envs
    again itself, as :meth:`ComplementaryRL.evaluate <integrations.sb3.ComplementaryRL.evaluate>` does,
    so that an evaluation leaves the bank's counters as they were); when ``env`` is the model's own,
    the model's last observation is updated, so training can continue. A separate
    evaluation env on the same bank avoids touching the training env at all.

    Returns:
        ``{"with_experience": {...}, "without_experience": {...}}`` as :func:`run_episodes` gives.
    """
    n_episodes, seed = check_episodes(n_episodes, seed)  # (before the injectors and the env are touched)
    deterministic = check_deterministic(deterministic)
    resume = check_bool("resume", resume, numpy=True)
    env = env or model.get_env()
    if env is None:
        raise ValueError("no env: pass one or give the model an env")
    managers, injectors = find_experience(env)
    if env is model.get_env() and any(inj.in_learn for inj in injectors):
        warnings.warn("evaluating on the training env inside learn() (from a callback?; or after a learn() that was "
                      "interrupted, when this does not apply): SB3 puts back the observation it held before the "
                      "evaluation after the callback returns, and the next action is taken from a state the env is "
                      "no longer in; evaluate on a separate env on the same bank (ExperienceEvalCallback)",
                      UserWarning, stacklevel=2)
    loaded = never_fed(model, managers, injectors)
    if all(empty_bank(m) for m in managers) and (loaded or not set(map(id, managers))
                                                  & set(map(id, _managers_of(model)))):
        warnings.warn("the env's bank is empty" + (f", though the model has trained {model.num_timesteps} steps"
                      if loaded else ", and it is not the training env's") + ": with_experience shows "
                      "nothing and measures what without_experience does (an eval env built on a new ExperienceBank "
                      "instead of the training one? a model loaded with PPO.load, which saves no bank: "
                      "integrations.sb3.load_crl restores it)", UserWarning, stacklevel=2)
    # one reading of success for both conditions, which knows what training saw: an env whose episodes reported
    # success has the ones that end without the key fail, in either condition (not "unknown", whose outcome is the
    # return: a condition that never succeeds would then outscore one that does)
    reports = known_reports(model, env)
    episodes: dict[str, Episodes] = {}
    out: dict[str, Any] = {}
    try:
        for name, guided in (("with_experience", True), ("without_experience", False)):
            with no_learning(env, guided):
                episodes[name] = _collect(model, env, n_episodes, deterministic, seed, reports)
        out = {name: _summarize(eps, reports) for name, eps in episodes.items()}
    finally:
        # start fresh episodes under the training settings (the evaluation episodes in flight
        # are dropped, never handed to the manager) and keep the model's view of the env current;
        # the reset's retrievals count as training's where training goes on from them (resume)
        learn = [inj.learn for inj in injectors]
        for inj in injectors:
            inj.learn = inj.learn if resume else False
        try:
            with statistics_kept(env):
                obs = env.reset()
        finally:
            for inj, was in zip(injectors, learn, strict=True):
                inj.learn = was
        if env is model.get_env():
            model._last_obs = obs  # type: ignore[assignment]  # SB3's VecEnvObs includes tuples, _last_obs's annotation does not
            model._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
    return out
