"""Success by trial index on held-out instances, weights frozen: with and without experience, and with a demonstration."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize, unwrap_vec_wrapper

from experience_wrappers.manager import SuccessReports
from experience_wrappers.manager.entry_layout import EntryLayout
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.checks import check_instances, demonstration_of, space_mismatch
from experience_wrappers.trials.wrapper import TRIAL_INFO_KEY, DemoSource, trial_env
from experience_wrappers.validators import check_bool, check_int

from .evaluation import statistics_kept

__all__ = ["run_trials", "trial_metrics", "evaluate_trials", "frozen_predict", "check_reader", "CONDITIONS"]

#: the conditions of :func:`evaluate_trials`
CONDITIONS = ("with_experience", "without_experience", "with_demonstration")

Predict = Callable[..., tuple[np.ndarray, Any]]


def run_trials(venv: VecEnv, predict: Predict, *, runs_per_env: int, trials: int, recurrent: bool = False,
               deterministic: bool = False, max_steps: int = 10_000_000) -> np.ndarray:
    """Step ``venv`` until each env has finished ``runs_per_env`` runs; their successes ``(runs, trials)``.

    Every env of ``venv`` must report ``info["trial"]["index"]`` and, at a trial's end,
    ``info["trial_success"]`` (:class:`~experience_wrappers.trials.wrapper.RunScopeWrapper` and
    ``benchmarks.peers.meta_episode.MetaEpisode`` do). ``predict`` is an SB3 model's
    ``predict`` (or a learning-free reader's, ``benchmarks.peers.retrieve_and_play``); with ``recurrent``
    its state is carried and reset at episode starts (a MetaEpisode's episode is a whole run).
    Nothing is learned here: pass envs built with ``learn=False``.

    Rows are ordered by env, then run.

    Raises:
        ValueError: before any step, when the envs run another number of trials per run than
            ``trials`` (their ``trials`` attribute), when ``predict`` is an SB3 model's and the
            model was trained on other observations than the envs show (another ``k``,
            ``exp_dim``, key width or ``trial_index`` setting, or another number of trials with
            ``trial_index``), or when it is a reader with a layout of its own (retrieve-and-play)
            of another layout than the envs' memory.
    """
    runs_per_env = check_int("runs_per_env", runs_per_env, minimum=1)
    trials = check_int("trials", trials, minimum=1)
    check_reader(venv, predict, trials)
    n = venv.num_envs
    done_runs: list[list[list[float]]] = [[] for _ in range(n)]
    current: list[list[float]] = [[] for _ in range(n)]
    obs = venv.reset()
    state = None
    starts = np.ones(n, dtype=bool)
    steps = 0
    while min(len(r) for r in done_runs) < runs_per_env:
        if recurrent:
            actions, state = predict(obs, state=state, episode_start=starts, deterministic=deterministic)
        else:
            actions, _ = predict(obs, deterministic=deterministic)
        obs, _, dones, infos = venv.step(actions)
        starts = np.asarray(dones, dtype=bool)
        for i, info in enumerate(infos):
            if "trial_success" not in info:
                continue
            index = int(info[TRIAL_INFO_KEY]["index"])
            if index != len(current[i]):  # a run joined midway (cannot happen after a full reset)
                current[i] = []
                if index != 0:
                    continue
            current[i].append(float(info["trial_success"]))
            if len(current[i]) == trials:
                done_runs[i].append(current[i])
                current[i] = []
        steps += 1
        if steps > max_steps:
            raise RuntimeError(f"run_trials: fewer than {runs_per_env} runs per env after {max_steps} steps")
    return np.array([run for per_env in done_runs for run in per_env[:runs_per_env]], dtype=np.float64)


def check_reader(venv: VecEnv, predict: Predict, trials: int) -> None:
    """Refuse, before any step, envs and a ``predict`` that do not fit (see :func:`run_trials`)."""
    if not callable(predict):
        raise TypeError(f"predict must be a policy's predict function (model.predict), got {type(predict).__name__}")
    counts = _env_attr(venv, "trials")
    if counts is not None and any(c != trials for c in counts):
        raise ValueError(f"run_trials(trials={trials}): the envs run {sorted(set(counts))} trials per run "
                         f"(their wrappers' trials); pass the envs' count, or build the envs with trials={trials}")
    reader = getattr(predict, "__self__", None)
    layout = getattr(reader, "layout", None)
    if isinstance(layout, EntryLayout):  # a reader of the rows by a layout of its own (retrieve-and-play)
        for mem in _env_attr(venv, "memory") or []:
            if isinstance(mem, TrialMemory) and mem.layout != layout:
                raise ValueError(f"{type(reader).__name__} reads the layout {layout}, and the envs' memory writes "
                                 f"{mem.layout}: build it with the envs' memory.layout")
        return
    space = getattr(reader, "observation_space", None)
    if isinstance(space, gym.spaces.Space):
        why = space_mismatch(space, venv.observation_space)
        if why:
            raise ValueError(f"the policy was trained on other observations than these envs show: {why}; evaluate "
                             "with envs and memories built as in training (k, exp_dim, max_len, trial_index, trials)")


def _env_attr(venv: VecEnv, name: str) -> list[Any] | None:
    """Every env's ``name`` (through its wrappers), or None where an env has none."""
    try:
        return list(venv.get_attr(name))
    except AttributeError:
        return None


def trial_metrics(successes: np.ndarray) -> dict[str, Any]:
    """What the trials protocol reports of ``(runs, trials)`` successes.

    ``success_by_trial``: the success rate at each trial index; ``cumulative_by_trial``: the
    share of runs with a success by then; ``after_first_success``: the success rate on the
    trials after a run's first success (None when no run succeeded before its last trial);
    ``runs``.

    >>> m = trial_metrics(np.array([[0, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]]))
    >>> m["success_by_trial"], m["cumulative_by_trial"], round(m["after_first_success"], 3)
    ([0.333, 0.667, 0.333, 0.667], [0.333, 0.667, 0.667, 0.667], 0.8)
    """
    s = np.asarray(successes, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] == 0:
        raise ValueError(f"successes must be (runs, trials) with at least one run, got shape {s.shape}")
    cumulative = np.maximum.accumulate(s, axis=1)
    after: list[float] = []
    for run in s:
        won = np.flatnonzero(run > 0)
        if len(won) and won[0] < len(run) - 1:
            after.extend(run[won[0] + 1:].tolist())
    return {"success_by_trial": [round(float(x), 3) for x in s.mean(axis=0)],
            "cumulative_by_trial": [round(float(x), 3) for x in cumulative.mean(axis=0)],
            "after_first_success": float(np.mean(after)) if after else None,
            "runs": int(s.shape[0])}


def evaluate_trials(predict: Predict, make_env: Callable[[], gym.Env], memory: Callable[[], TrialMemory],
                    instances: Sequence[int], *, trials: int = 4, repeats: int = 5,
                    conditions: Sequence[str] | None = None, demonstrations: DemoSource | None = None,
                    deterministic: bool = False, seed: int = 0, keep_runs: bool = False,
                    success_reports: SuccessReports | None = None) -> dict[str, Any]:
    """Success by trial index of a frozen policy on ``instances``, in each of ``conditions`` (default: all
    three, ``"with_demonstration"`` where ``demonstrations`` are given). Torch's global generator is left
    as it was.

    ``"with_experience"``: every run guided (it reads its own earlier trials);
    ``"without_experience"``: every run free (shown nothing); ``"with_demonstration"``: guided,
    and one demonstration of the instance (``demonstrations(instance)``, asked once per instance:
    every run of it is shown that one) placed in the run's scope before its first trial. Nothing is learned: the envs are built with ``learn=False``
    and ``memory()`` (called once per condition) should not train its extractor. Each
    instance gets ``repeats`` runs of ``trials`` trials, one env per instance. Each condition
    seeds torch's global generator with ``seed`` first (an SB3 policy samples its actions from it).

    Returns ``{"instances", "trials", "repeats", condition: trial_metrics(...)}``; with
    ``keep_runs`` each condition's figures also hold ``"successes"``, every run's successes by
    trial (0 or 1), ordered by instance then repeat: two evaluations of the same weights on the same
    instances, repeats and seed pair by instance (a paired comparison of two test-time settings; an
    instance's repeats are interchangeable, not paired one by one).

    ``success_reports``: how a trial's success is read (:class:`~experience_wrappers.manager.SuccessReports`),
    shared by every memory and env of the evaluation; pass the training memory's, so that an env that
    reports success only on successes has its other trials counted as failures from the first one
    (None: a fresh one for this evaluation).

    Raises:
        TypeError: ``memory`` is a memory, not a function that makes one; ``instances`` is not
            a sequence of ints; ``conditions`` is a str.
        ValueError: an instance given twice; an unknown or no condition; ``"with_demonstration"`` without
            ``demonstrations``, or with a ``demonstrations(instance)`` that gives None or an
            empty demonstration (runs shown nothing are not reported as demonstrated); a policy
            trained on other observations than the envs show (see :func:`run_trials`).
    """
    if isinstance(memory, TrialMemory) or not callable(memory):
        raise TypeError(f"memory must be a function that makes a fresh TrialMemory (called once per condition, "
                        f"e.g. lambda: TrialMemory(...)), got a {type(memory).__name__}")
    instances = check_instances(instances)
    trials = check_int("trials", trials, minimum=1)
    repeats = check_int("repeats", repeats, minimum=1)
    twice = sorted(i for i, n in Counter(instances).items() if n > 1)
    if twice:  # (reported as instances of their own, they would inflate the count and weigh those twice)
        raise ValueError(f"instances holds {twice} more than once: each instance is evaluated in {repeats} runs "
                         "(repeats=); pass each once")
    deterministic = check_bool("deterministic", deterministic)
    if conditions is None:  # every condition the arguments allow
        conditions = [c for c in CONDITIONS if c != "with_demonstration" or demonstrations is not None]
    if isinstance(conditions, str):
        raise TypeError(f"conditions must be a sequence of condition names, got the str {conditions!r}; "
                        f"e.g. [{conditions!r}]")
    conditions = list(dict.fromkeys(conditions))  # (a condition named twice is run once)
    unknown = sorted(set(conditions) - set(CONDITIONS))
    if unknown or not conditions:
        raise ValueError(f"unknown conditions {unknown}; choose from {CONDITIONS}" if unknown else
                         f"conditions is empty; choose from {CONDITIONS}")
    if "with_demonstration" in conditions and demonstrations is None:
        raise ValueError("the with_demonstration condition needs demonstrations=fn(instance) -> (observations, actions)")
    required = None
    if "with_demonstration" in conditions and demonstrations is not None:
        required = _required(demonstrations)
        for instance in instances:  # a missing one is said before any condition runs (and each is kept)
            required(instance)
    reports = SuccessReports() if success_reports is None else success_reports
    with th.random.fork_rng(devices=[]):  # the caller's generator is as it was after (training goes on from it)
        return _evaluate(predict, make_env, memory, instances, trials, repeats, deterministic, seed, conditions,
                         required, reports, keep_runs)


def _evaluate(predict: Predict, make_env: Callable[[], gym.Env], memory: Callable[[], TrialMemory],
              instances: list[int], trials: int, repeats: int, deterministic: bool, seed: int,
              conditions: list[str], required: DemoSource | None, reports: SuccessReports,
              keep_runs: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"instances": len(instances), "trials": trials, "repeats": repeats}
    for cond in conditions:
        mem = memory()
        mem.success_reports = reports
        th.manual_seed(seed)  # each condition's sampled actions start from the same seed
        guided = cond != "without_experience"
        demos = required if cond == "with_demonstration" else None

        def env_fn(instance: int, mem: TrialMemory = mem, guided: bool = guided,
                   demos: DemoSource | None = demos) -> Callable[[], gym.Env]:
            return lambda: trial_env(make_env(), mem, instances=[instance], trials=trials, guided=guided,
                                     learn=False, demonstrations=demos, group_size=1, free_members=0, seed=seed)
        venv = DummyVecEnv([env_fn(i) for i in instances])
        try:
            successes = run_trials(venv, predict, runs_per_env=repeats, trials=trials, deterministic=deterministic)
            out[cond] = trial_metrics(successes)
            if keep_runs:
                out[cond]["successes"] = successes.astype(int).tolist()
        finally:
            venv.close()
    return out


def _required(demonstrations: DemoSource) -> DemoSource:
    """``demonstrations`` for the with_demonstration condition, asked once per instance (a scripted
    demonstration may cost a rollout; every run of the instance is shown that one): an instance
    without one is an error."""
    kept: dict[int, tuple[Any, Any]] = {}

    def demos(instance: int) -> tuple[Any, Any]:
        if instance in kept:
            return kept[instance]
        demo = demonstration_of(demonstrations, instance)
        if demo is None:
            raise ValueError(f"evaluate_trials: demonstrations({instance}) gave None, and the with_demonstration "
                             "condition reports runs shown a demonstration; give one for every instance evaluated, "
                             "or leave the condition out")
        kept[instance] = demo
        return demo
    return demos


@contextlib.contextmanager
def frozen_predict(model: Any) -> Iterator[Predict]:
    """``model.predict`` through the statistics of a ``VecNormalize`` in its VecEnv (at the top, or
    under SB3's ``VecTransposeImage`` for channel-last images), frozen while the block runs
    (``training`` restored after); a model without ``VecNormalize`` predicts as it is."""
    venv = model.get_env()
    normalize = None if venv is None else unwrap_vec_wrapper(venv, VecNormalize)
    if normalize is None:
        yield model.predict
        return

    def predict(observation: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]:
        return model.predict(normalize.normalize_obs(observation), state=state,  # type: ignore[union-attr,no-any-return]
                             episode_start=episode_start, deterministic=deterministic)
    with statistics_kept(venv):
        yield predict
