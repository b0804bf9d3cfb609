"""Checks at the trials path's boundary: one home for each, used wherever the value enters.

:func:`check_instances` checks the reset seeds a run is drawn from (the wrapper, the env
constructors, the one-call method and the evaluation take them); :func:`checked_observations`
checks a batch of observations that did not come from the env (a demonstration) with the
main path's checks (:mod:`experience_wrappers.wrappers.env_checks`), worded for their source;
:func:`trials_observation_space` is the Dict observation a trial env shows and
:func:`space_mismatch` says, key by key, how a policy's observation space differs from it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces

from ..validators import check_instances
from ..wrappers.env_checks import Check, check_finite_observation, inside
from ..wrappers.spaces import base_parts

__all__ = ["check_instances", "checked_observations", "check_demonstration_length", "check_demonstration",
           "check_demonstration_actions",
           "demonstration_of", "demonstration_parts", "trials_observation_space",
           "space_mismatch",
           "ENTRIES_KEY", "MASK_KEY", "TRIAL_INDEX_KEY", "RUN_BEST_KEY", "TRIAL_INFO_KEY"]

#: the observation keys a trial env adds to the env's own
ENTRIES_KEY = "trial_entries"
MASK_KEY = "trial_mask"
#: the observation key of the trial's index in its run (a one-hot), with ``TrialMemory(trial_index=True)``
TRIAL_INDEX_KEY = "trial_index"
#: the observation key of where the run's best trial got to, with ``TrialMemory(run_best=True)``
RUN_BEST_KEY = "run_best"
#: the observation keys a TrialMemory setting of the same name adds
_SETTING_KEYS = (TRIAL_INDEX_KEY, RUN_BEST_KEY)
#: the ``info`` key of a trial: ``instance``, ``index``, ``run``, ``guided``, ``demonstrated``
TRIAL_INFO_KEY = "trial"

def demonstration_of(demonstrations: Any, instance: int) -> Any:
    """``demonstrations(instance)``: what it raises is said with the instance (a function that fails on
    a later instance does so inside ``learn()``, mid-rollout).

    Raises:
        ValueError: ``demonstrations(instance)`` raised (chained).
    """
    try:
        return demonstrations(instance)
    except Exception as exc:
        raise ValueError(f"demonstrations({instance}) raised {type(exc).__name__}: {exc}") from exc


def demonstration_parts(demo: Any, source: str) -> tuple[Any, Any, Any] | None:
    """What a run's ``demonstrations(instance)`` returned, as ``(observations, actions, rewards or None)``;
    None where it gave None (the instance has no demonstration).

    Raises:
        TypeError: anything but None or a tuple / list ``(observations, actions[, rewards])``.
    """
    if demo is None:
        return None
    if not isinstance(demo, tuple | list) or len(demo) not in (2, 3):
        raise TypeError(f"{source} must return (observations, actions) of one demonstration, or None, "
                        f"got a {type(demo).__name__}")
    return demo[0], demo[1], demo[2] if len(demo) == 3 else None


def check_demonstration(check: Check, action_space: spaces.Space, horizon: int, observations: Any, actions: Any,
                        source: str, rewards: Any | None = None, *,
                        observation_space: spaces.Space | None = None) -> int:
    """Check a demonstration placed in a run as the env's steps are checked; returns its steps.

    Its observations get :func:`checked_observations`; they must be one per action; its actions
    :func:`check_demonstration_actions`; a demonstration longer than the ``horizon`` warns
    (:func:`check_demonstration_length`).

    With the env's Dict ``observation_space``, a key it lacks is refused, and every key must hold
    as many steps as the others.

    Raises:
        ValueError: no actions (give None where there is none), observations as above, a count
            of observations other than the actions', actions as above.
    """
    n = len(actions) if np.ndim(actions) else 0
    if n == 0:
        raise ValueError(f"{source} gave a demonstration without actions ({actions!r}); give None where an "
                         "instance has no demonstration")
    if isinstance(observations, dict) and isinstance(observation_space, spaces.Dict):
        extra = sorted(map(str, set(observations) - set(observation_space.spaces)))
        if extra:
            raise ValueError(f"{source} gave observation keys the env's observations lack: {extra} (the env's: "
                             f"{sorted(observation_space.spaces)})")
    checked_observations(check, observations, "its steps", source)
    if isinstance(observations, dict):
        steps = {key: (np.shape(v) or (0,))[0] for key, v in observations.items()}
        if len(set(steps.values())) > 1:
            raise ValueError(f"{source} gave observation keys holding different numbers of steps, {steps}: every "
                             "key holds one row per step, the observation each action was taken from")
    if not isinstance(action_space, spaces.Discrete) and np.shape(actions)[1:] != getattr(action_space, "shape", ()):
        check_demonstration_actions(action_space, actions, n, source)  # (its shape said before the count)
    m = len(next(iter(observations.values()))) if isinstance(observations, dict) else len(observations)
    if m != n:
        raise ValueError(f"{source} gave {m} observations for {n} actions: a demonstration holds the observation "
                         "each action was taken from, one per action")
    check_demonstration_actions(action_space, actions, n, source)
    if rewards is not None:  # (None: a success, 1 on its last step)
        r = np.asarray(rewards)
        if r.shape != (n,) or r.dtype.kind not in "biuf" or not np.all(np.isfinite(r)):
            raise ValueError(f"{source} gave rewards {r.tolist()!r:.80} (shape {r.shape}, dtype {r.dtype}) for {n} "
                             "steps: one finite number per step")
    check_demonstration_length(n, horizon, source)
    return n


def check_demonstration_actions(action_space: spaces.Space, actions: Any, n: int, source: str) -> None:
    """A demonstration's ``n`` actions against the env's space, named by ``source``: a ``Discrete``
    action one of the space's (one per step, or one per row); ``Box``, ``MultiDiscrete`` and
    ``MultiBinary`` actions one row of the space's shape per step, numbers, finite, and values
    the space allows (``Box`` values outside the bounds warn: SB3 clips what the policy acts).

    Raises:
        ValueError: as above, naming the first bad step.
    """
    a = np.asarray(actions)
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{source} gave actions of dtype {a.dtype}, not numbers, for the env's {action_space}")
    if isinstance(action_space, spaces.Discrete):
        if a.shape not in ((n,), (n, 1)):
            raise ValueError(f"{source} gave actions of shape {a.shape} for the env's {action_space}: one action per "
                             f"step, shape ({n},) or ({n}, 1)")
        a = a.reshape(n)
    elif isinstance(action_space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        if a.shape != (n, *action_space.shape):
            raise ValueError(f"{source} gave actions of shape {a.shape[1:]} per step ({a.shape} in all); the env's "
                             f"{action_space} takes {action_space.shape}")
    else:
        return
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        step = int(np.argmax(~np.isfinite(a).reshape(n, -1).all(axis=1)))
        raise ValueError(f"{source} gave a NaN or infinite action at step {step}")
    bad = ~inside(action_space, a).reshape(n, -1).all(axis=1)
    if not bad.any():
        return
    step = int(np.argmax(bad))
    if isinstance(action_space, spaces.Box):
        warnings.warn(f"{source} gave action {a[step].tolist()} at step {step}, outside the env's {action_space}: "
                      "SB3 clips the policy's actions to the bounds, so imitating it raises the likelihood of "
                      "actions the env never receives", UserWarning, stacklevel=3)
        return
    raise ValueError(f"{source} gave action {a[step].tolist()!r} at step {step}, not one of the env's {action_space}")


def check_demonstration_length(steps: int, horizon: int, source: str) -> None:
    """Warn where a demonstration of ``steps`` is longer than the trials' ``horizon`` (their step cap).

    Nothing is refused (a scripted demonstration may take a longer way), but a trial is cut at
    the horizon, so the policy's own trials never show the demonstration's first steps with
    their steps to go (above the horizon: rows read ``steps to go / horizon`` above 1).
    """
    if steps > horizon:
        # (one message per horizon, whatever the length: Python shows it once, not once per demonstration)
        warnings.warn(f"a demonstration is longer than the trials' horizon ({horizon} steps), e.g. {source}'s: trials "
                      f"are cut at {horizon} steps, so its first steps show steps to go that no trial of the policy's "
                      "own has; raise the horizon, or give shorter demonstrations", UserWarning, stacklevel=3)


def checked_observations(check: Check, batch: Any, where: str, source: str) -> None:
    """Check a batch of observations that ``source`` gave (not the env) as the env's are checked.

    The main path's checks (:func:`~experience_wrappers.wrappers.env_checks.check_finite_observation`
    and an :func:`~experience_wrappers.wrappers.env_checks.observation_checker`): NaN or inf, a
    wrong shape, a value the space refuses raise ValueError; Box values outside the bounds warn
    once per checker. Their messages name ``source`` instead of the env.

    Args:
        check: the checker of the space (built once, so that its warning is said once).
        batch: the observations, with a leading batch axis.
        where: where in ``source`` they are (for the message).
        source: what gave them (``"demonstrations(5)"``).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_finite_observation(batch, where)
            check(batch, where)
        except ValueError as exc:
            raise ValueError(_reworded(str(exc), source)) from None
    for w in caught:
        warnings.warn(_reworded(str(w.message), source), w.category, stacklevel=3)


def _reworded(message: str, source: str) -> str:
    return message.replace("the env returned an observation", f"{source} gave an observation", 1)


def trials_observation_space(base: spaces.Space, k: int, row_dim: int, trials: int | None) -> spaces.Dict:
    """The Dict observation a trial env shows: the env's own keys (or ``"observation"``), the ``k``
    entry rows, their mask and, with ``trials`` (``TrialMemory(trial_index=True)``), the trial's index.

    Raises:
        ValueError: ``base`` is refused as the task scope refuses it (:func:`~experience_wrappers.wrappers.spaces.base_parts`),
            its own keys clashing with run scope's (``trial_entries``, ``trial_mask``, ``trial_index``, ``run_best``).
    """
    return spaces.Dict({
        **base_parts(base, (ENTRIES_KEY, MASK_KEY, TRIAL_INDEX_KEY, RUN_BEST_KEY), "run scope's trial env"),
        ENTRIES_KEY: spaces.Box(-np.inf, np.inf, (k, row_dim), np.float32),
        MASK_KEY: spaces.Box(0.0, 1.0, (k,), np.float32),
        **({TRIAL_INDEX_KEY: spaces.Box(0.0, 1.0, (trials,), np.float32)} if trials is not None else {}),
    })


def space_mismatch(policy: spaces.Space, env: spaces.Space) -> str | None:
    """How the observation space a policy was trained on differs from what trial envs show (None: it does not).

    The trial keys are compared by shape, each named with what it means: the entries' shape
    is ``(k, row width)`` (the row width follows the key width, the action space and
    ``exp_dim``), ``trial_index`` is ``TrialMemory(trial_index=True)`` and its width the number
    of trials. The env's own keys are compared by kind and shape (an image's channel axis may
    have moved: SB3 transposes images itself).

    >>> a = trials_observation_space(spaces.Box(0, 1, (2,)), 4, 18, None)
    >>> print(space_mismatch(a, trials_observation_space(spaces.Box(0, 1, (2,)), 8, 18, 4)))
    trial_entries: the policy reads (4, 18) (k=4, rows 18 wide), the envs show (8, 18) (k=8, rows 18 wide); trial_index: the envs show it (their memories have trial_index=True), the policy was trained without it (TrialMemory(trial_index=False))
    """
    if not isinstance(policy, spaces.Dict) or not isinstance(env, spaces.Dict):
        return None if _alike(policy, env) else f"the policy reads {policy}, the envs show {env}"
    said: list[str] = []
    for key in sorted(set(policy.spaces) | set(env.spaces)):
        p, e = policy.spaces.get(key), env.spaces.get(key)
        if key in _SETTING_KEYS and (p is None or e is None):
            said.append(f"{key}: the policy was trained with it (TrialMemory({key}=True)), the envs do not show it "
                        f"(their memories have {key}=False)" if e is None else
                        f"{key}: the envs show it (their memories have {key}=True), the policy was trained without it "
                        f"(TrialMemory({key}=False))")
        elif p is None or e is None:
            said.append(f"{key}: the policy reads it, the envs do not show it" if e is None else
                        f"{key}: the envs show it, the policy was trained without it")
        elif key == ENTRIES_KEY and p.shape != e.shape and p.shape and e.shape:
            said.append(f"{key}: the policy reads {p.shape} (k={p.shape[0]}, rows {p.shape[-1]} wide), the envs show "
                        f"{e.shape} (k={e.shape[0]}, rows {e.shape[-1]} wide)")
        elif key == MASK_KEY and any(x.startswith(ENTRIES_KEY) for x in said):
            continue  # the mask is k wide: said with the entries
        elif key == TRIAL_INDEX_KEY and p.shape != e.shape:
            said.append(f"{key}: the policy was trained with trials={_width(p)}, the envs run trials={_width(e)}")
        elif not _alike(p, e):
            said.append(f"{key}: the policy reads {p}, the envs show {e}")
    return "; ".join(said) or None


def _alike(a: spaces.Space, b: spaces.Space) -> bool:
    """The same kind of space of the same shape (up to the order of its axes)."""
    if isinstance(a, spaces.Dict) or isinstance(b, spaces.Dict):
        return space_mismatch(a, b) is None if type(a) is type(b) else False
    if type(a) is not type(b):
        return False
    if isinstance(a, spaces.Discrete) and isinstance(b, spaces.Discrete):
        return int(a.n) == int(b.n)
    return a.shape == b.shape or sorted(a.shape or ()) == sorted(b.shape or ())


def _width(space: spaces.Space) -> object:
    return space.shape[0] if space.shape else "?"
