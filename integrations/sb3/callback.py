"""``CRLCallback``: Complementary RL on any SB3 on-policy agent, through public hooks only."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback

from experience_wrappers.advantages import regroup_advantages
from experience_wrappers.credit import OutcomeTracker, outcome_delta
from experience_wrappers.health import degeneracy
from experience_wrappers.manager import ExperienceSource, SuccessReports
from experience_wrappers.replay import SuccessReplay
from experience_wrappers.schedule import Schedule
from experience_wrappers.validators import check_bool, check_int
from experience_wrappers.wrappers import ExperienceInjector

from .bank_logging import log_bank_distributions
from .discovery import find_experience, never_fed
from .guards import check_callback, check_rollin_order, on_policy
from .lifecycle import (
    after_learn,
    restore_advantage_normalisation,
    start_training,
    turn_off_advantage_normalisation,
)
from .schedules import training_progress
from .self_imitation import SELF_IMITATION_DEFAULTS, SelfImitationCallback

__all__ = ["CRLCallback"]

log = logging.getLogger(__name__)


def _warn(msg: str) -> None:
    """A once-only warning of the callback, to Python's warnings and to the log."""
    warnings.warn(msg, UserWarning, stacklevel=3)
    log.warning(msg)


class CRLCallback(BaseCallback):
    """Drive the co-evolution loop from inside ``model.learn``; works with no arguments.

    It finds the experience wrappers (and their manager) in the training env, then:

    * configures and advances each manager's :class:`~experience_wrappers.schedule.Schedule`:
      the guided ratio (default 0.5 -> 0.8 over training), the training progress (which sets
      the utility decay) and the rollout count;
    * regroups advantages at each rollout's end: guided and free samples are normalised
      separately (PPO's own minibatch normalisation is turned off, said once in the log);
    * asks the manager to merge near duplicates every ``merge_every`` rollouts;
    * runs self-imitation after each PPO update (on by default, the measured method's part
      that carries its gains: :data:`~integrations.sb3.self_imitation.SELF_IMITATION_DEFAULTS`;
      off, said once in the log, on an env that reports no success, where it was measured to hurt):
      the agent's successful episodes, and demonstrations pinned there, are kept in the
      manager's :class:`~experience_wrappers.replay.SuccessReplay` (``manager.replay``,
      created when missing, saved and loaded by :func:`~integrations.sb3.save_crl` /
      :func:`~integrations.sb3.load_crl`), and the policy's own logits are trained toward
      them (:class:`SelfImitationCallback`). On an algorithm other than PPO it stays off and
      says so once in the log;
    * logs ``bank/``, ``extractor/``, ``crl/`` and ``sil/`` figures through SB3's logger.
      ``bank/lag`` is the learner's backlog (episodes handed over and not processed yet; a
      service's learner: from every client), ``bank/replica_lag`` the bank versions a read
      replica of the retrievals misses (an experience service's ``local_reads``).
      ``crl/guided_*`` and ``crl/free_*`` are the last 100 guided and free episodes this callback
      saw; ``crl/outcome_delta`` is the mean, over the last 100 guided episodes that had a
      baseline, of the outcome minus the manager's free baseline when the episode ended (the
      last 100 free episodes the manager had processed: it lags ``crl/free_*``, so while
      outcomes rise the delta can be positive with guided below free).
      ``crl/delta_guided_*`` and ``crl/delta_baseline_*`` are its two parts:
      ``outcome_delta = delta_guided - delta_baseline``.

    ``paired=True`` on an env that cannot replay an instance credits its guided episodes
    against the task's recent free episodes (the unpaired rule; the critic's ``V(s0)`` in its
    place was measured no closer to pairing and removed: ``docs/what_to_use.md``).

    Args:
        guided_ratio: a constant, or ``(start, end)`` linear over training.
        merge_every: rollouts between merges (0: never).
        subgroup_advantages: normalise guided and free advantages separately.
        flush_at_end: wait for the manager's queue when training ends.
        self_imitation: True: self-imitation with the measured defaults; False: off; a
            mapping: :class:`SelfImitationCallback` arguments over those defaults.

    Raises:
        TypeError: an argument of the wrong type, named: a schedule that is not a number or a
            pair of numbers (``"0.5"``), a flag that is not a bool, a ``verbose`` that is not an int.
        ValueError: a value out of range (a guided ratio outside [0, 1], a negative ``merge_every``).
    """

    #: rollouts between TensorBoard histograms and figures of the bank (0: never)
    log_bank_every: int = 10

    def __init__(self, guided_ratio: tuple[float, float] | float = (0.5, 0.8), merge_every: int = 5,
                 subgroup_advantages: bool = True, flush_at_end: bool = True,
                 self_imitation: bool | Mapping[str, Any] = True, verbose: int = 0) -> None:
        verbose = check_int("verbose", verbose, minimum=0, type_error=TypeError)
        super().__init__(verbose)
        merge_every = check_int("merge_every", merge_every, minimum=0)
        check_bool("subgroup_advantages", subgroup_advantages)
        check_bool("flush_at_end", flush_at_end)
        if not isinstance(self_imitation, (bool, Mapping)):
            raise TypeError(f"self_imitation must be True, False or a mapping of SelfImitationCallback "
                            f"arguments, got {self_imitation!r}")
        self.self_imitation: dict[str, Any] | None = (
            None if self_imitation is False else
            {**SELF_IMITATION_DEFAULTS, **(self_imitation if isinstance(self_imitation, Mapping) else {})})
        if self.self_imitation is not None:  # its arguments checked now, not at the first learn()
            SelfImitationCallback(SuccessReplay(1), **self.self_imitation)
        self.sil: SelfImitationCallback | None = None
        # the schedules, checked here (numbers or (start, end) pairs of numbers: "0.5" is refused);
        # each manager's schedule is configured with them
        self._spec = Schedule(guided=guided_ratio)
        self.guided_ratio = guided_ratio
        self.merge_every = merge_every
        self.subgroup_advantages = subgroup_advantages
        self.flush_at_end = flush_at_end
        self.managers: list[ExperienceSource] = []
        self.injectors: list[ExperienceInjector] = []
        self.outcomes = OutcomeTracker(100)  # guided and free outcomes, unscaled deltas (for the logs)
        self._reports = SuccessReports()  # whether the env reports success: the outcomes logged as successes
        self._warned_degenerate = False
        self._normalises = False  # it turned PPO's per-minibatch advantage normalisation off for this learn()
        self._trained: Any = None  # the model of the last learn() (the figures above are its own)

    @property
    def outcome_kind(self) -> str:
        """How the logs name the episodes' outcomes: ``"success"`` once the env has reported one (in this callback's
        episodes, or as read by its wrappers: in an earlier ``learn`` or before a save), else ``"return"``."""
        seen = self._reports.seen or any(inj.reports.seen for inj in self.injectors)
        return "success" if seen else "return"

    @property
    def manager(self) -> ExperienceSource:
        """The (first) manager found in the training env."""
        return self.managers[0]

    # ------------------------------------------------------------------ setup
    def _init_callback(self) -> None:
        if self._trained is not None and self._trained is not self.model:  # reused on another model: its own figures
            self.outcomes, self._reports = OutcomeTracker(100), SuccessReports()
        self._trained = self.model
        self.managers, self.injectors = find_experience(self.training_env)
        check_callback(self, self.managers)  # on-policy, and one CRLCallback per learn()
        if self.subgroup_advantages:
            check_rollin_order(self)  # before a RollInCallback of this learn(), not after it
        for m in self.managers:
            m.schedule.configure(guided=self._spec.guided)
        start_training(self.model, self.training_env, self.managers, self.injectors)
        m = self.managers[0]
        if never_fed(self.model, self.managers, self.injectors):
            msg = (f"CRLCallback: this model has trained {self.model.num_timesteps} steps but its env's bank is "
                   "empty: was it loaded with PPO.load, or resumed from SB3's CheckpointCallback? Those save the "
                   "model only; integrations.sb3.load_crl(path, env) restores the bank, extractor and replay, "
                   "and CRLCheckpointCallback saves them beside each checkpoint")
            _warn(msg)
        if self.injectors and all(inj.learn is False for inj in self.injectors) and len(m.bank) == 0:
            _warn("CRLCallback: every experience wrapper of the training env was built with learn=False (an "
                  "evaluation env's setting) and the bank is empty: no episode will reach it; build the training "
                  "env's wrappers with the default learn=None (learn=False over a filled bank keeps it fixed)")
        # PPO's own normalisation is off for its updates only: the envs step with the user's value (what a
        # checkpoint saves, and what an interrupted learn() leaves)
        self._normalises = bool(self.subgroup_advantages and turn_off_advantage_normalisation(self.model))
        if self._normalises:
            msg = ("CRLCallback: PPO's per-minibatch advantage normalisation is off; advantages are "
                   "normalised per subgroup (guided / free) at each rollout's end")
            log.info(msg)
            if self.verbose:
                print(msg)
        n_envs, n_steps = self.training_env.num_envs, getattr(self.model, "n_steps", 1)
        self._guided = np.zeros((n_steps, n_envs), dtype=bool)
        self.sil = self._self_imitation()

    def _self_imitation(self) -> SelfImitationCallback | None:
        """The self-imitation child on the first manager's replay (None: off)."""
        if self.self_imitation is None:
            return None
        if not isinstance(self.model, PPO):  # (a warning: demonstrations given for it would never be trained on)
            _warn(f"CRLCallback: self-imitation is off: the callback's self-imitation updates a PPO policy, and "
                  f"this model is {type(self.model).__name__}; the demonstrations and successes in the replay are not "
                  "trained on "
                  "(integrations.sb3.SelfImitationCallback on its own takes other on-policy algorithms; "
                  "CRLCallback(self_imitation=False) says so and silences this)")
            return None
        manager = self.managers[0]
        if manager.replay is None:
            manager.replay = SuccessReplay()
        sil = SelfImitationCallback(manager.replay, **{"seed": getattr(self.model, "seed", None), **self.self_imitation})
        sil.init_callback(self.model)
        # what the wrappers know (an earlier learn, a loaded run): a later learn's failures are not "no reports"
        sil.reports.seen = any(inj.reports.seen for inj in self.injectors)
        return sil

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        if self.sil is not None:
            self.sil.update_locals(locals_)

    def _progress(self) -> float:
        return training_progress(self.model, self.num_timesteps)

    def _on_training_start(self) -> None:
        for inj in self.injectors:
            inj.in_learn = True
        if self.sil is not None:
            self._warn_of_another_self_imitation(self.locals.get("callback"))
            self.sil.on_training_start(self.locals, self.globals)
        self._advance_schedules()  # the schedule's values before any episode is drawn
        # SB3 resets the env before callbacks start, so the episodes now in flight were drawn
        # guided or free under the manager's previous ratio; while none has taken a step,
        # start them again so that the schedule holds from the very first episode
        if self.injectors and all(int(inj.steps.max(initial=0)) == 0 for inj in self.injectors):
            self.model._last_obs = self.training_env.reset()  # type: ignore[assignment]  # SB3: VecEnvObs includes tuples, _last_obs does not
            self.model._last_episode_starts = np.ones((self.training_env.num_envs,), dtype=bool)

    def _warn_of_another_self_imitation(self, callback: Any) -> None:
        """Warn where a SelfImitationCallback of the user's runs in the same learn beside this one's own."""
        stack, found = [callback], []
        while stack:
            cb = stack.pop()
            stack.extend(getattr(cb, "callbacks", []))  # (a CallbackList's)
            if isinstance(cb, SelfImitationCallback) and cb is not self.sil:
                found.append(cb)
        if found:
            warnings.warn("CRLCallback runs self-imitation of its own (with its replay, the one save_crl saves), and "
                          "a SelfImitationCallback of yours runs beside it in this learn: two replays, two updates "
                          "after each PPO update, and save_crl(path, model) saves CRLCallback's replay, not yours. Give "
                          "CRLCallback(self_imitation=False) to keep only yours (and save_crl(path, model, replay="
                          "your_replay)), or give your demonstrations to CRLCallback's own: "
                          "ComplementaryRL(demonstrations=...), or its manager's replay, set before learn: "
                          "manager.replay = demonstration_replay(...)",
                          UserWarning, stacklevel=2)

    def _advance_schedules(self) -> None:
        p = self._progress()
        for m in self.managers:
            m.schedule.advance(p)  # guided ratio and utility decay follow

    def _on_rollout_start(self) -> None:
        if self._normalises:  # (after the update: the user's own setting while the envs step)
            restore_advantage_normalisation(self.model)
        self._advance_schedules()
        if self.sil is not None:
            self.sil.on_rollout_start()  # its update, after the PPO update that just ran

    # ------------------------------------------------------------------- steps
    def _on_step(self) -> bool:
        if self.sil is not None:
            self.sil.on_step()
        infos = self.locals.get("infos", [])
        buf = getattr(self.model, "rollout_buffer", None)
        pos = buf.pos if buf is not None else 0
        n_envs = len(infos)
        if pos < len(self._guided):
            self._guided[pos, :n_envs] = [bool(i.get("experience_guided", False)) for i in infos]
        for info in infos:
            if "experience_outcome" not in info:
                continue
            outcome = float(info["experience_outcome"])
            self._reports(info)  # the outcomes are returns until the env has reported a success
            task = int(info.get("experience_task_id", 0))
            guided = bool(info.get("experience_guided", False))
            self.outcomes.add(outcome, guided=guided)
            if guided:
                # unscaled (free_spread=None), unlike the manager's credit of return outcomes
                baseline = self.managers[0].free_baseline(task)
                delta = outcome_delta(outcome, baseline, free_spread=None)
                if delta is not None:
                    self.outcomes.add_delta(delta, outcome, baseline)
        return True

    def _on_rollout_end(self) -> None:
        model = on_policy(self.model)
        buf = model.rollout_buffer
        guided = self._guided[: buf.buffer_size, : buf.n_envs]
        if self.subgroup_advantages:
            buf.advantages[:] = regroup_advantages(buf.advantages, guided).astype(buf.advantages.dtype)
        for m in self.managers:
            m.poll()  # process mode: the waiting episodes go to the learner, its entries into the bank
            rollouts = m.schedule.end_rollout()
            if self.merge_every and rollouts % self.merge_every == 0:
                m.request_merge()
        self._log()
        self._check_degenerate()
        if self.log_bank_every and self.manager.schedule.rollouts % self.log_bank_every == 0:
            log_bank_distributions(self.logger, self.managers[0].bank)  # TensorBoard only
        if self._normalises:  # off for PPO's update, which follows: the advantages are normalised per subgroup above
            turn_off_advantage_normalisation(self.model)

    def _log(self) -> None:
        rec = self.logger.record
        m = self.managers[0]
        bank = m.bank.stats()
        for key in ("size", "utilisation", "mean_utility"):
            rec(f"bank/{key}", bank[key])
        s = m.stats()
        rec("extractor/updates", s["extractor_updates"])
        rec("extractor/version", s["extractor_version"])
        rec("extractor/ssl_updates", s["ssl_updates"])
        for key in ("loss", "pg_loss", "utility_loss", "diversity_loss", "ssl_loss"):
            if f"loss_{key}" in s:
                rec(f"extractor/{key}", s[f"loss_{key}"])
        rec("crl/guided_ratio", m.schedule.guided_ratio)
        rec("crl/queue", s["queue"])
        # how far behind the learner is: episodes handed over and not processed yet (a service's
        # learner: from every client); and the bank versions the retrievals' replica misses
        rec("bank/lag", s.get("learner_backlog", s["queue"]))
        if "replica_lag" in s:
            rec("bank/replica_lag", s["replica_lag"])
        rec("crl/manager_busy_s", s["busy_seconds"])
        kind = self.outcome_kind
        means = self.outcomes.means()
        for name, key in (("guided", f"guided_{kind}"), ("free", f"free_{kind}"), ("delta", "outcome_delta")):
            if means[name] is not None:
                rec(f"crl/{key}", means[name])
        # outcome_delta's two parts: its guided episodes' mean and the manager's free baseline they
        # were judged against (which lags crl/free_*: the free episodes the manager had processed)
        for name, value in self.outcomes.delta_parts().items():
            if value is not None:
                rec(f"crl/delta_{name}_{kind}", value)

    def _check_degenerate(self) -> None:
        """Warn once where the bank or the extractor is degenerate (:func:`~experience_wrappers.health.degeneracy`)."""
        if not self._warned_degenerate:
            msg = degeneracy(self.managers[0])
            if msg is not None:
                self._warned_degenerate = True
                _warn(msg)

    def _on_training_end(self) -> None:
        if self.sil is not None:
            self.sil.on_training_end()
        after_learn(self.model, self.injectors)
        if self.flush_at_end:
            for m in self.managers:
                m.flush()
            self._check_degenerate()  # again once the learner has caught up (process mode lags the rollouts)
