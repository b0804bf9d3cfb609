"""Self-imitation into the policy's own logits: the SIL rule, episode recording, the update.

This is how stored experience reaches the actor's weights (docs/concepts.md, "Three ways for
experience to reach the actor", way 2). The loss is self-imitation learning's (Oh et al., 2018)::

    L = -log pi(a | s) * w  +  value_coef * 0.5 * w^2,   w = clip(R - V(s), 0, max_weight)

on states ``s`` from a :class:`~experience_wrappers.replay.SuccessReplay` (demonstrations and
the agent's own episodes), with ``R`` the discounted return that followed ``a``. ``pi`` is
the policy's *own* distribution: every experience key of the observation is zero (the
free view), so the gradient moves the policy's own logits toward the stored action, not its
reading of the entries shown. ``weight="bc"`` uses ``w = 1`` and no value term:
behaviour cloning / kickstarting, the simple peers the benchmarks compare against.

The update runs after each PPO update (at the next rollout's start), as SIL's own
implementation runs after each A2C update.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Literal

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.preprocessing import maybe_transpose
from stable_baselines3.common.utils import obs_as_tensor

from experience_wrappers.manager import SuccessReports
from experience_wrappers.manager.episode import NO_REPORT_EPISODES
from experience_wrappers.replay import SOURCE_DEMO, SOURCE_OWN, SuccessReplay
from experience_wrappers.schedule import linear
from experience_wrappers.trials.checks import ENTRIES_KEY, MASK_KEY
from experience_wrappers.validators import check_int
from experience_wrappers.whole_numbers import inside
from experience_wrappers.wrappers import BASE_KEY, EXPERIENCE_KEYS
from experience_wrappers.wrappers.env_checks import observation_checker
from experience_wrappers.wrappers.recorder import EpisodeRecorder

from .guards import on_policy
from .schedules import training_progress

__all__ = ["SELF_IMITATION_DEFAULTS", "SelfImitationCallback", "sil_weights", "self_imitation_step", "free_view", "demonstration_replay", "add_demonstrations", "check_pinned_states"]

log = logging.getLogger(__name__)

Weight = Literal["sil", "bc"]
Keep = Literal["successful", "all", "none"]

#: Self-imitation as the benchmarks measured it in the method (``crl-sil-obs``): the SIL weight,
#: the agent's successful episodes kept, 200 behaviour-cloning steps on demonstrations (when
#: the replay holds any) before training; and off, said once in the log, on an env that
#: reports no success (``only_with_success``): on CartPole, where every episode has a positive
#: return and so counts as successful, it cost about a third of the return at 50k steps
#: (``defaults-cartpole``, 3 seeds). :class:`~integrations.sb3.CRLCallback` and
#: :class:`~integrations.sb3.ComplementaryRL` use these unless told otherwise.
SELF_IMITATION_DEFAULTS: dict[str, Any] = {"weight": "sil", "keep": "successful", "pretrain_steps": 200,
                                           "only_with_success": True}


def sil_weights(returns: th.Tensor, values: th.Tensor, max_weight: float = 1.0) -> th.Tensor:
    """The SIL rule: ``clip(R - V(s), 0, max_weight)``, with no gradient.

    Only actions whose return beat the critic's estimate are imitated, so imitation of a
    state fades once the policy does as well there by itself.

    >>> sil_weights(th.tensor([1.0, 0.2, 3.0]), th.tensor([0.5, 0.5, 0.0]), max_weight=1.0).tolist()
    [0.5, 0.0, 1.0]
    """
    return (returns - values).detach().clamp(0.0, max_weight)


def free_view(obs: dict[str, np.ndarray], observation_space: spaces.Space) -> Any:
    """A batch of base observations as the model's input with every experience key zero.

    Keys of ``observation_space`` absent from ``obs`` (the experience keys) are filled with
    zeros of their shape and dtype: mask 0, so the policy sees an experience-free state.
    A non-Dict space takes ``obs[BASE_KEY]``.
    """
    if not isinstance(observation_space, spaces.Dict):
        return obs[BASE_KEY]
    n = len(next(iter(obs.values())))
    out = {}
    for key, sub in observation_space.spaces.items():
        if key in obs:
            out[key] = obs[key]
        else:
            out[key] = np.zeros((n, *(sub.shape or ())), dtype=sub.dtype)
    return out


def _base_keys(obs: Any) -> dict[str, np.ndarray]:
    if isinstance(obs, dict):
        return {k: np.asarray(v) for k, v in obs.items() if k not in EXPERIENCE_KEYS}
    return {BASE_KEY: np.asarray(obs)}


def self_imitation_step(model: OnPolicyAlgorithm, replay: SuccessReplay, *, coef: float = 1.0,
                        weight: Weight = "sil", n_batches: int = 4, batch_size: int = 256,
                        value_coef: float = 0.01, max_weight: float = 1.0, sources: tuple[int, ...] | None = None,
                        rng: np.random.Generator | None = None) -> dict[str, float]:
    """Run ``n_batches`` gradient steps of the self-imitation loss on replayed states.

    Args:
        model: an SB3 on-policy model (its policy and optimizer are used; PPO is not changed).
        replay: where the states come from.
        coef: the loss coefficient (0: nothing is done).
        weight: ``"sil"`` (``clip(R - V, 0, max_weight)``, plus the SIL value loss) or
            ``"bc"`` (weight 1: behaviour cloning).
        n_batches: gradient steps.
        batch_size: states per step.
        value_coef: weight of the SIL value loss ``0.5 * w^2`` (``"sil"`` only).
        max_weight: upper clip of the SIL weight.
        sources: provenance codes to sample from (None: all).
        rng: sampling generator.

    Returns:
        ``loss`` (mean), ``valid`` (fraction of sampled states with a positive weight) and
        ``states`` (states available); empty dict when nothing ran.
    """
    if coef <= 0 or n_batches <= 0:
        return {}
    idx_all = replay.indices()
    if sources is not None:
        idx_all = idx_all[np.isin(replay.source[idx_all], sources)]
    if idx_all.size == 0:
        return {}
    rng = rng or np.random.default_rng()
    policy = model.policy
    policy.set_training_mode(True)
    losses, valid = [], []
    for _ in range(n_batches):
        idx = rng.choice(idx_all, size=min(batch_size, idx_all.size), replace=idx_all.size < batch_size)
        obs, actions, returns = replay.batch(idx)
        obs_t = obs_as_tensor(free_view(obs, model.observation_space), model.device)
        act_t = th.as_tensor(actions, device=model.device)
        if isinstance(model.action_space, spaces.Discrete):
            act_t = act_t.long().flatten()
        elif isinstance(model.action_space, spaces.Box):  # (batch, action_dim): a Box of shape (2, 2) as SB3 keeps it
            act_t = act_t.reshape(len(act_t), -1)
        values, log_prob, _ = policy.evaluate_actions(obs_t, act_t)
        values = values.flatten()
        if weight == "sil":
            w = sil_weights(th.as_tensor(returns, device=model.device), values, max_weight)
            n_valid = int((w > 0).sum())
            value_loss = 0.5 * ((th.as_tensor(returns, device=model.device) - values).clamp(min=0.0) ** 2)
            loss = (-(log_prob * w) + value_coef * value_loss).sum() / max(1, n_valid)
        else:
            n_valid = len(idx)
            loss = -log_prob.mean()
        valid.append(n_valid / len(idx))
        if n_valid == 0:
            continue
        policy.optimizer.zero_grad()
        (coef * loss).backward()
        th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
        policy.optimizer.step()
        losses.append(float(loss.detach()))
    return {"loss": float(np.mean(losses)) if losses else 0.0, "valid": float(np.mean(valid)),
            "states": int(idx_all.size)}


def add_demonstrations(replay: SuccessReplay, demonstrations: Any, gamma: float,
                       observation_space: spaces.Space | None = None) -> int:
    """Pin ``demonstrations`` (any form :func:`~integrations.demos.as_demonstrations` takes) in
    ``replay``; returns the states added. One that says it failed (``success`` False) is not pinned
    (logged): the replay imitates successes.

    ``observation_space``: the model's (``model.observation_space``): image observations
    recorded channel-last, as the env returns them, are stored channel-first where SB3's
    ``VecTransposeImage`` shows them so to the policy (the agent's own episodes are recorded
    as the policy sees them).
    """
    from integrations.demos import as_demonstrations

    demos = as_demonstrations(demonstrations)
    kept = [d for d in demos if d.success is not False]
    if len(kept) < len(demos):
        log.warning("self-imitation: %d of %d demonstrations say they failed (success False); they are not pinned "
                    "in the replay, which imitates successes (the bank takes them as ingest_kwargs say)",
                    len(demos) - len(kept), len(demos))
    return sum(replay.add_episode(policy_view(d.observations, observation_space), d.actions, d.rewards, gamma,
                                  SOURCE_DEMO)
               for d in kept)


def policy_view(observations: Any, observation_space: spaces.Space | None) -> Any:
    """``observations`` (a time axis first; an array or a dict of arrays) with every image
    transposed to channel-first where ``observation_space`` (the model's) holds it so.

    >>> space = spaces.Dict({BASE_KEY: spaces.Box(0, 255, (3, 8, 8), np.uint8)})
    >>> policy_view(np.zeros((5, 8, 8, 3), np.uint8), space).shape
    (5, 3, 8, 8)
    """
    if observation_space is None:
        return observations
    obs = observations if isinstance(observations, dict) else {BASE_KEY: observations}
    out = {}
    for key, x in obs.items():
        sub = observation_space.spaces.get(key) if isinstance(observation_space, spaces.Dict) else (
            observation_space if key == BASE_KEY else None)
        out[key] = np.asarray(x) if sub is None else maybe_transpose(np.asarray(x), sub)  # SB3's own rule
    return out if isinstance(observations, dict) else out[BASE_KEY]


def demonstration_replay(demonstrations: Any, gamma: float, capacity: int = 50_000,
                         observation_space: spaces.Space | None = None) -> SuccessReplay:
    """A :class:`SuccessReplay` with ``demonstrations`` pinned, ready for :class:`SelfImitationCallback`
    (``observation_space``: the model's, as :func:`add_demonstrations` takes it; the callback checks the
    pinned states against the model's spaces when training starts).

    >>> import numpy as np
    >>> r = demonstration_replay([{"obs": np.zeros((3, 2)), "acts": np.array([0, 1, 1]),
    ...                            "rews": np.array([0.0, 0.0, 1.0])}], gamma=0.9)
    >>> r.counts(), [round(float(x), 2) for x in r.returns[:3]]
    ({'demo': 3, 'own': 0}, [0.81, 0.9, 1.0])
    """
    replay = SuccessReplay(capacity)
    add_demonstrations(replay, demonstrations, gamma, observation_space)
    return replay


def check_pinned_states(replay: SuccessReplay, observation_space: spaces.Space, action_space: spaces.Space) -> None:
    """Refuse (``ValueError``) demonstrations pinned in ``replay`` that the model cannot be trained on: an
    observation key the model's space lacks or one of its own keys missing (the free view would show zeros
    there), another shape (a channel-last image where the model's is channel-first), a value outside the
    space or not finite, an action not in ``action_space``. Before this, a misnamed key trained the policy on
    zeros, and the rest failed as torch's errors in the first update.
    """
    from integrations.demos.trajectories import check_action_values

    idx = replay.indices()
    idx = idx[replay.source[idx] == SOURCE_DEMO]
    if idx.size == 0:
        return
    obs, actions, _ = replay.batch(idx)
    where = "self-imitation's demonstrations"
    if isinstance(observation_space, spaces.Dict):
        subs = {k: v for k, v in observation_space.spaces.items() if k not in EXPERIENCE_KEYS}
        optional = {ENTRIES_KEY, MASK_KEY}  # (a run's earlier trials: zero in a demonstration's view)
    else:
        subs, optional = {BASE_KEY: observation_space}, set()
    unknown, missing = sorted(set(obs) - set(subs)), sorted(set(subs) - set(obs) - optional)
    if unknown or missing:
        raise ValueError(f"{where} hold observation keys {sorted(obs)}, the model's observations {sorted(subs)}"
                         f"{f' (unknown: {unknown})' if unknown else ''}{f' (missing: {missing})' if missing else ''}; "
                         "record them with the env's own keys (a Box env's observations under "
                         f"{BASE_KEY!r})")
    for key, x in obs.items():
        sub = subs[key]
        if sub.shape is not None and x.shape[1:] != sub.shape:
            hint = (" (channel-last: give add_demonstrations / demonstration_replay observation_space="
                    "model.observation_space, which stores images as the policy reads them)"
                    if len(sub.shape) == 3 and x.shape[1:] == (*sub.shape[1:], sub.shape[0]) else "")
            raise ValueError(f"{where}: observation {key!r} has shape {x.shape[1:]} per step, the model's "
                             f"{sub.shape}{hint}")
        if x.dtype.kind == "f" and not np.isfinite(x).all():
            raise ValueError(f"{where}: observation {key!r} holds NaN or inf")
        try:
            observation_checker(sub)(x, "a demonstration")
        except ValueError as exc:
            raise ValueError(f"{where} do not fit the model's observations: {exc}") from None
    check_action_values(np.asarray(actions), action_space, where)
    a = np.asarray(actions)
    if isinstance(action_space, spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary):
        bad = ~inside(action_space, a)
    else:  # (a Box's actions: finite; SB3 clips them to the bounds when it steps)
        bad = ~np.isfinite(a.astype(np.float64))
    if bad.any():
        row = int(np.flatnonzero(bad.reshape(len(a), -1).any(axis=1))[0])
        raise ValueError(f"{where}: action {a[row].tolist()!r} is not one of {action_space}")


class SelfImitationCallback(BaseCallback):
    """Self-imitation (or behaviour cloning) from a :class:`SuccessReplay`, after each PPO update.

    It records the agent's own finished episodes into the replay (``keep``: the observations
    the policy was given, the bank's experience keys left out (the free view, above) but a
    :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`'s ``trial_entries`` and ``trial_mask``
    kept: on trials of one instance the policy imitates a successful trial as it saw it,
    reading its run's earlier trials, which is how it learns to follow them; so under ``VecNormalize`` the stored states are normalised ones while
    demonstrations are raw; add demonstrations in the same form the policy sees), optionally
    pre-trains on the demonstrations before the first rollout (``pretrain_steps``), and
    after every PPO update runs :func:`self_imitation_step`. Works on any SB3 on-policy
    model, with or without experience wrappers: the benchmarks' simple peers
    (``ppo-bc``, ``ppo-kickstart``, ``ppo-sil``) and the full method use this one class.

    Args:
        replay: the state store (demonstrations already added are pinned).
        coef: loss coefficient, a constant or ``(start, end)`` linear over training.
        weight: ``"sil"`` or ``"bc"`` (see :func:`self_imitation_step`).
        keep: which own episodes enter the replay: ``"successful"`` (the env reports success,
            or a positive return where it reports none), ``"all"`` (SIL's own choice: the
            weight filters), or ``"none"``.
        sources: provenances to train on (None: all).
        n_batches, batch_size, value_coef, max_weight: see :func:`self_imitation_step`.
        pretrain_steps: behaviour-cloning steps on the demonstrations before the model's first update
            (once: not again in a later ``learn``, with ``reset_num_timesteps`` or not, or a loaded run's).
        only_with_success: keep an episode only where the env has reported success
            (``info["is_success"]`` or ``info["success"]``; once it has, an episode that ends
            without the key is a failure: :class:`~experience_wrappers.manager.SuccessReports`),
            and stop (no more recording, no more updates; said once in the log) when
            :data:`~experience_wrappers.manager.episode.NO_REPORT_EPISODES` (100) episodes have
            ended with no key: where ``keep="successful"`` would fall back to a positive return,
            which on a dense-reward task keeps every episode. With demonstrations pinned in the
            replay only the recording stops (a warning says so): the updates go on, on them.
        seed: sampling seed.

    >>> SelfImitationCallback(SuccessReplay(100), keep="some")
    Traceback (most recent call last):
    ...
    ValueError: keep must be 'successful', 'all' or 'none', got 'some'
    """

    def __init__(self, replay: SuccessReplay, *, coef: float | tuple[float, float] = 1.0, weight: Weight = "sil",
                 keep: Keep = "successful", sources: tuple[int, ...] | None = None, n_batches: int = 4,
                 batch_size: int = 256, value_coef: float = 0.01, max_weight: float = 1.0,
                 pretrain_steps: int = 0, only_with_success: bool = False, seed: int | None = None,
                 verbose: int = 0) -> None:
        super().__init__(verbose)
        if weight not in ("sil", "bc"):
            raise ValueError(f"weight must be 'sil' or 'bc', got {weight!r}")
        if keep not in ("successful", "all", "none"):
            raise ValueError(f"keep must be 'successful', 'all' or 'none', got {keep!r}")
        for v in np.atleast_1d(np.asarray(coef, dtype=float)):
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"coef must be finite and >= 0, got {coef!r}")
        n_batches = check_int("n_batches", n_batches, minimum=0)
        batch_size = check_int("batch_size", batch_size, minimum=1)
        pretrain_steps = check_int("pretrain_steps", pretrain_steps, minimum=0)
        self.replay = replay
        self.coef = coef
        self.weight: Weight = weight
        self.keep: Keep = keep
        self.sources = sources
        self.n_batches = n_batches
        self.batch_size = batch_size
        self.value_coef = float(value_coef)
        self.max_weight = float(max_weight)
        self.pretrain_steps = pretrain_steps
        self.rng = np.random.default_rng(seed)
        self._recorder = EpisodeRecorder(0)  # each env's episode in flight (sized in _init_callback)
        if not isinstance(only_with_success, bool):
            raise ValueError(f"only_with_success must be a bool, got {only_with_success!r}")
        self.only_with_success = only_with_success
        #: False once ``only_with_success`` found an env that reports no success (with no demonstration pinned)
        self.active = True
        #: False once it found one with demonstrations pinned: the agent's episodes are no longer recorded, and
        #: the updates go on, on the demonstrations
        self.recording = True
        #: how an episode's success is read (a missing key is a failure once the env reported success); a
        #: ``CRLCallback`` starts it from its wrappers' readings at every ``learn``, a loaded run from its record
        self.reports = SuccessReports()
        self._update_due = False  # a PPO update ran since the last rollout start (SB3's after every rollout)
        self.stats: dict[str, float] = {}
        #: seconds spent so far recording episodes (each step) and in the updates (each rollout's
        #: start): what self-imitation costs on top of PPO (``sil/update_seconds`` in the log)
        self.seconds = {"record": 0.0, "update": 0.0}

    # ------------------------------------------------------------------ setup
    def _init_callback(self) -> None:
        self._recorder = EpisodeRecorder(self.training_env.num_envs)

    def _on_training_start(self) -> None:
        check_pinned_states(self.replay, self.model.observation_space, self.model.action_space)
        # a model updated before ended its last learn() with an update (SB3's count: reset_num_timesteps leaves it)
        self._update_due = updated = self.model._n_updates > 0
        if self.pretrain_steps and self.replay.counts()["demo"] and not updated:  # (once: before the first update)
            out = self.pretrain(self.pretrain_steps)
            log.info("self-imitation: %d behaviour-cloning steps on %d demonstrated states, loss %.3f",
                     self.pretrain_steps, out.get("states", 0), out.get("loss", float("nan")))

    @property
    def _on_policy(self) -> OnPolicyAlgorithm:
        """The model, an on-policy algorithm (PPO-style: an actor-critic policy)."""
        return on_policy(self.model)

    def pretrain(self, steps: int) -> dict[str, float]:
        """Behaviour cloning on the demonstrations for ``steps`` gradient steps."""
        return self_imitation_step(self._on_policy, self.replay, coef=1.0, weight="bc", n_batches=steps,
                                   batch_size=self.batch_size, sources=(SOURCE_DEMO,), rng=self.rng)

    # ---------------------------------------------------------------- record
    def _on_step(self) -> bool:
        if self.keep == "none" or not self.active or not self.recording:
            return True
        t0 = time.perf_counter()
        obs = _base_keys(self.model._last_obs)  # the observations the actions were taken from
        self._recorder.append(obs, np.asarray(self.locals["actions"]),
                              np.asarray(self.locals["rewards"], dtype=np.float64))
        infos = self.locals["infos"]
        for e in np.flatnonzero(self.locals["dones"]).tolist():
            self._finish(e, infos[e])
        self.seconds["record"] += time.perf_counter() - t0
        return True

    def _finish(self, e: int, info: dict[str, Any]) -> None:
        obs, actions, rewards = self._recorder.take(e)
        # a run-scope trial's success is its wrapper's judgement (the env's report, without the novelty bonus's rewards)
        success = bool(info["trial_success"]) if "trial_success" in info else self.reports(info)
        if success is None and self.only_with_success:  # kept only once the env has reported success
            demos = self.replay.counts()["demo"] if self.reports.reports_none and self.active else 0
            if demos:  # the user's demonstrations are still trained on
                self.recording = False
                warnings.warn(f"self-imitation stops recording the agent's episodes: this env reported no success "
                              f"(info['is_success'] or info['success']) in {NO_REPORT_EPISODES} episodes, where a "
                              "positive return would count as one (on CartPole every episode); its updates go on, on "
                              f"the {demos} demonstrated states pinned in its replay. self_imitation="
                              "{'only_with_success': False} records them too", UserWarning, stacklevel=2)
            elif self.reports.reports_none and self.active:
                self.active = False
                log.info("self-imitation is off: this env reported no success (info['is_success'] or info['success']) "
                         "in %d episodes, and on such envs it was measured to hurt (CartPole: docs/what_to_use.md); "
                         "self_imitation={'only_with_success': False} keeps it on. An env that sets the key on "
                         "successes only should set it to False on failures too", NO_REPORT_EPISODES)
            return
        if success is None:
            success = sum(rewards.tolist()) > 0  # summed in step order
        if self.keep == "successful" and not success:
            return
        self.replay.add_episode(obs, actions, rewards, self._on_policy.gamma, SOURCE_OWN)

    # ---------------------------------------------------------------- update
    def _on_rollout_start(self) -> None:
        if not self.active:
            return
        due, self._update_due = self._update_due, True  # (the next rollout start follows this rollout's update)
        if not due:  # no PPO update yet
            return
        coef = linear(self.coef, training_progress(self.model, self.num_timesteps))
        t0 = time.perf_counter()
        self.stats = self_imitation_step(self._on_policy, self.replay, coef=coef, weight=self.weight,
                                         n_batches=self.n_batches, batch_size=self.batch_size,
                                         value_coef=self.value_coef, max_weight=self.max_weight,
                                         sources=self.sources, rng=self.rng)
        self.seconds["update"] += time.perf_counter() - t0
        rec = self.logger.record
        rec("sil/update_seconds", self.seconds["update"])
        counts = self.replay.counts()
        rec("sil/demo_states", counts["demo"])
        rec("sil/own_states", counts["own"])
        rec("sil/coef", coef)
        for key in ("loss", "valid"):
            if key in self.stats:
                rec(f"sil/{key}", self.stats[key])
