"""``TrialMemory``: the experience of trials of one instance, in a manager's bank, scoped by run.

A *run* is ``K`` consecutive trials of one instance by one env. Its finished trials are written
under its scope, one entry per step (:mod:`experience_wrappers.manager.entry_layout`), each trial
under a bank task id of its own; its later trials read only there, so trial ``t`` sees exactly
the run's trials ``1 .. t - 1`` (and a demonstration placed first). A run's entries leave the bank
when it ends. The manager's extractor writes each entry's vector and is trained by outcome: a
guided trial's delta against the free trial of its group (:class:`~experience_wrappers.credit.PairedCredit`)
is credited to every entry it was shown, and the manager's learner
(:class:`~experience_wrappers.manager.learner.ExtractorLearner`) trains on it as in task scope.
Writes happen when a trial ends, in the stepping thread (every wrapper of a memory must live in
the process that owns it).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections import deque
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from ..bank import ExperienceBank, Provenance
from ..extractor import ActionCoder, ExtractorTrainer
from ..keys import KeyEncoder, default_run_keys
from ..keys.base import add_batch_axis, check_key_encoder, checked_keys
from ..manager import ExperienceManager, SuccessReports
from ..manager.config import ManagerConfig
from ..manager.crediting import credit_trial
from ..manager.entry_layout import EntryLayout, trial_outcome
from ..manager.episode import Episode
from ..manager.learner import ExtractorLearner
from ..validators import check_bool, check_int
from ..wrappers.env_checks import observation_checker
from .checks import check_demonstration
from .goal_locator import GoalLocator
from .memory_files import load_memory, save_memory
from .run_best import LOCATE_HISTORY, ahead_steps, locator_options, run_best_mode

__all__ = ["TrialMemory", "SCOPES"]

logger = logging.getLogger(__name__)

#: where a guided trial reads: ``"instance"``, its run's own earlier trials (the method);
#: ``"other"``, the entries of a finished run of another instance (the random-retrieval
#: ablation: real entries, the wrong instance); ``"none"``: nothing (the no-retrieval ablation)
SCOPES = ("instance", "other", "none")

#: finished runs kept as donors for ``scope="other"``
DONORS = 32


class TrialMemory:
    """Run scope over an :class:`~experience_wrappers.manager.ExperienceManager`: what the trial wrappers of one VecEnv share.

    The manager (``memory.manager``, sync mode, ``ManagerConfig(segment_every=1, layout=...)``)
    holds the bank, the extractor, its learner and the pairing table, and distils each trial into
    one entry per step; the memory adds run scope's own: the runs' scopes, the read of a run's
    nearest steps, and the credit of a guided trial's shown entries, taken when it ends.

    Args:
        observation_space: the env's observation space (the states keyed).
        action_space: the env's action space.
        horizon: the trial's step cap (steps to go are divided by it).
        k: entries read per step (slots of the observation).
        per_trial: entries read of each earlier trial nearest the agent's state
            (``k // per_trial`` trials are read, newest first; reading steps along each trial's
            whole path too, measured to hurt, is
            :class:`~experience_wrappers.experimental.PathTrialMemory`).
        key_encoder: the frozen key encoder, or its class (built as ``cls(observation_space)``); None: the
            flattened observation (Box bounds mapped to [-1, 1]; two visits of one state at distance 0),
            projected where it is wider than 256 (:func:`~experience_wrappers.keys.default_run_keys`).
        exp_dim: width of the extractor's vector (0: no extractor; entries hold decodable content only).
        scope: ``"instance"`` (default), ``"other"`` or ``"none"`` (see :data:`SCOPES`).
        write_failures: write failed trials too. Off by default, as measured (hidden-goal room,
            5 seeds: following a success 0.94 without against 0.86 with, cumulative success tied).
        train_extractor: train the extractor by paired credit (False: the frozen-extractor ablation).
        trial_index: show every trial env's policy the trial's index in its run (a one-hot
            ``trials`` wide, observation key ``trial_index``), guided or free: not experience of
            the instance, but what a plan across trials needs (an LSTM across trials counts for
            itself). Hidden-goal room (5 seeds): cumulative success by trial 4 0.59 against 0.51,
            with the memory or without it. False (the default): not shown.
        run_best: show where the run's best trial got to (:class:`~experience_wrappers.trials.run_best.RunBest`,
            observation key ``run_best``): ``True`` or ``"taken"``, its best step marked by the state
            its action was taken from (for a success, the state before the successful action);
            ``"reached"``, by the state its reward (or success) came in (measured to tie ``"taken"``);
            ``"located"`` (needs ``dense_rewards``), as ``"reached"`` but, until the run succeeds, the
            key where a learned :class:`~experience_wrappers.trials.goal_locator.GoalLocator`
            (``memory.locator``, trained by hindsight on every training trial while ``train_extractor``)
            guesses it will. False (the default): not shown.
        relocate_every: with ``run_best="located"``, guess again every ``relocate_every`` steps of a guided
            trial while its run has no success, from the trial's own steps so far where they came closer than
            the run's failed trials (the first trial too); the locator then learns from prefixes of trials
            as well (``GoalLocator(prefix_every=...)``). ML1 reach (``relocate_every=10``, 5 seeds): trial 1 0.58
            against 0.27, cumulative success tied, 3x the locator's pairs. 0 (the default): at reset only.
        locate_from: with ``run_best="located"``, what the locator reads: ``"best"`` (the default), the
            run's failed trial of the highest reward (and, with ``relocate_every``, the trial going on where it
            came closer); ``"all"``, the run's newest ``run_best.LOCATE_HISTORY + 1`` failed trials together
            (with ``relocate_every``, with the trial going on), the locator learning from trials joined
            with earlier ones of their instance (``GoalLocator(history=...)``). ML1 reach (one seed): cumulative
            success by trial 2 0.71 against 0.72 with ``"best"``, at about 4x the locator's training.
        search: with ``relocate_every``, where a trial's best reward stopped rising (it stands at a wrong
            guess), show the guess moved by a normal draw of ``search`` times the locator's error per key
            dimension (``locator.error_dims``), to gather rewards elsewhere for the next guess. 0: none. A
            test-time setting: ML1 reach, 1.0 at evaluation only, cumulative success by trial 2 0.77 against
            0.71 (3 seeds); in training too, a tie (3 seeds).
        success_ahead: with ``run_best``, mark a run's own success (not a demonstration's) this many steps (at most
            ``horizon``) further along its approach, in key space (:mod:`~experience_wrappers.trials.run_best`; for
            keys that move in straight lines). 0 (the default): where it came in.
        show_entries: show the policy the run's entries (its ``k`` rows). False (needs ``run_best``): the rows
            stay blank (zeros, mask 0), the run's entries serve ``run_best`` alone, the extractor is never
            credited. ML1 reach (``run_best="located"``, 5 seeds): following a success 0.94 without them
            against 0.84 with, cumulative success tied; the rows are the method on MiniHack. True (default).
        dense_rewards: for dense, positive rewards (Meta-World's): each entry carries its step's reward
            (``EntryLayout(step_reward=True)``), and the trial-return column holds the trial's outcome (1
            success, 0 failure), not the rewards' (positive) sum. False (the default).
        batch_size: credited entries per extractor update.
        hidden, max_len, lr: the extractor's LSTM width, the most steps it reads of a trial's rest, and its
            learning rate (:class:`~experience_wrappers.extractor.ExtractorConfig`).
        seed: seed of the extractor and of its sampling.

    >>> mem = TrialMemory(spaces.Box(0, 9, (2,)), spaces.Discrete(8), horizon=25, k=2, exp_dim=4)
    >>> s = mem.new_scope()
    >>> ids = mem.write(s, np.array([[0, 0], [1, 1]]), np.array([3, 3]), [0.0, 1.0])
    >>> rows, mask, shown = mem.read(np.array([s]), np.array([[1, 1]]), np.array([1.0]))
    >>> mask.tolist(), rows[0, 0, :2].tolist()   # the nearest entry is the visit of (1, 1)
    ([[True, True]], [0.0, 0.0])
    """

    #: slots read of each earlier trial besides its nearest steps, by :meth:`_read_paths` (none here)
    path: int = 0
    #: the newest success is the run's best step (False: its first, a demonstration placed first; a suite's ablation)
    newest_success: bool = True

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, *, horizon: int,
                 k: int = 8, per_trial: int = 2, key_encoder: KeyEncoder | type[KeyEncoder] | None = None, exp_dim: int = 8,
                 scope: str = "instance", write_failures: bool = False, train_extractor: bool = True,
                 trial_index: bool = False, run_best: bool | str = False, show_entries: bool = True,
                 relocate_every: int = 0, locate_from: str = "best", search: float = 0.0, dense_rewards: bool = False,
                 success_ahead: int = 0, batch_size: int = 256, hidden: int = 32, max_len: int = 16, lr: float = 3e-4, seed: int = 0) -> None:
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
        self.observation_space, self.action_space = observation_space, action_space
        self.k = check_int("k", k, minimum=1, maximum=256)
        self.per_trial = check_int("per_trial", per_trial, minimum=1, maximum=self.k)
        self.scope = scope
        self.write_failures = check_bool("write_failures", write_failures)
        self.train_extractor = check_bool("train_extractor", train_extractor)
        self.trial_index = check_bool("trial_index", trial_index)
        #: "" (not shown), "taken", "reached" or "located" (see the argument)
        self.run_best: str = run_best_mode(run_best, dense_rewards)
        self.dense_rewards = check_bool("dense_rewards", dense_rewards)
        self.show_entries = check_bool("show_entries", show_entries)
        if not self.show_entries and not self.run_best:
            raise ValueError("show_entries=False shows the policy nothing without run_best; for the no-retrieval "
                             "ablation use scope='none'")
        #: the locator's options (see the arguments): every how many steps it guesses again, what it reads (the run's
        #: best failed trial, "best", or its newest failed trials together, "all"), the search around its guess
        self.relocate_every, self.locate_from, self.search = locator_options(self.run_best, relocate_every, locate_from,
                                                                             search, horizon)
        self.success_ahead = ahead_steps(success_ahead, self.run_best, horizon, observation_space, key_encoder)
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        #: how its wrappers read a trial's success, shared by all of them (a missing key is a failure once one reported)
        self.success_reports = SuccessReports()
        self.key_encoder = default_run_keys(observation_space) if key_encoder is None else check_key_encoder(key_encoder, observation_space)
        self.key_dim = int(self.key_encoder.key_dim)
        self.action_coder = ActionCoder(action_space)
        #: where a run will succeed, learned from its failed trials (``run_best="located"``; else None)
        self.locator = (GoalLocator(self.key_dim, prefix_every=self.relocate_every,
                                    history=LOCATE_HISTORY if locate_from == "all" else 0, seed=seed)
                        if self.run_best == "located" else None)
        self.layout = EntryLayout(self.key_dim, self.action_coder.dim, exp_dim, horizon, step_reward=dense_rewards)
        self.exp_dim = int(exp_dim)
        #: the manager that holds run scope's bank, extractor, learner and distillation: in sync mode
        #: (a trial's entries are written when it ends), one entry per step in this layout
        #: (``segment_every=1``), the learner training on ``batch_size`` credited entries
        self.manager = ExperienceManager(
            ExperienceBank(seed=seed, dedup_threshold=0.0, capacity=1 << 20), observation_space, action_space,
            key_encoder=self.key_encoder,
            # (no self-supervised step: with it, a hidden-goal room's trials follow a run's first success
            # 0.89 against 0.94, trials-darkroom at 5 seeds, benchmarks/results/equivalence-manager-trials-darkroom.json)
            config=ManagerConfig(mode="sync", segment_every=1, batch_size=self.batch_size, ssl_batch_size=0,
                                 train_extractor=self.train_extractor,
                                 layout={"horizon": int(horizon), "step_reward": self.dense_rewards},
                                 # (with exp_dim 0 there is no extractor, and the width here is unused)
                                 extractor={"exp_dim": max(self.exp_dim, 1), "hidden": hidden, "max_len": max_len,
                                            "lr": lr, "seed": seed}))
        self.bank = self.manager.bank
        #: the extractor's learner (credited entries, updates; None with ``exp_dim=0``)
        self.learner: ExtractorLearner | None = self.manager.learner if self.exp_dim else None
        self._check_demo = observation_checker(observation_space)  # a demonstration's observations, as the env's
        self._pid, self._next_scope, self._next_task = os.getpid(), 1, 1
        #: run scope -> its trials (and demonstrations), oldest first: ``(bank task id, entry ids, end key)``
        self._scope_ids: dict[int, list[tuple[int, np.ndarray, np.ndarray | None, bool]]] = {}  # (..., succeeded)
        self._donors: deque[tuple[int, int]] = deque()  # (scope, instance) of finished runs
        self._live: set[int] = set()  # ids of the entries in the bank (a shown entry may have left it)
        self.stats: dict[str, float] = {"trials_written": 0.0, "entries_written": 0.0, "extractor_updates": 0.0,
                                        "credited_entries": 0.0, "mean_delta": 0.0}
        self.wrappers: weakref.WeakSet[Any] = weakref.WeakSet()  # its open run-scope wrappers (members checked)

    @property
    def config(self) -> ManagerConfig:
        """The settings of the manager's parts that run scope uses."""
        return self.manager.config

    @property
    def max_len(self) -> int:
        """The most steps the extractor reads of a trial's rest (``config.max_len``)."""
        return self.config.max_len

    @property
    def trainer(self) -> ExtractorTrainer | None:
        """The extractor's trainer (the learner's; None with ``exp_dim=0``)."""
        return None if self.learner is None else self.learner.trainer

    def keys(self, obs: Any) -> np.ndarray:
        """Keys ``(n, key_dim)`` of a batch of observations."""
        n = len(obs) if not isinstance(obs, dict) else len(next(iter(obs.values())))
        return checked_keys(self.key_encoder, obs, np.zeros(n, np.int64))

    def check_process(self) -> None:
        """Raise when used from another process than the one that made it (a copy shares nothing)."""
        if os.getpid() != self._pid:
            raise RuntimeError("a TrialMemory is shared by the trial envs of one process: this env runs in another "
                               "process (SubprocVecEnv?), where it holds a copy that no other env sees; use a "
                               "DummyVecEnv for the trial envs")

    def new_scope(self) -> int:
        """A fresh scope (bank task id) for a new run."""
        s = self._next_scope
        self._next_scope += 1
        self._scope_ids[s] = []
        return s

    def forget(self, scope: int) -> int:
        """Remove a finished run's entries from the bank; returns how many."""
        chunks = self._scope_ids.pop(scope, [])
        if not chunks:
            return 0
        ids = np.concatenate([c for _, c, *_ in chunks])
        self._live.difference_update(ids.tolist())
        if self.learner is not None:  # their credited samples stay (copies) until trained on
            self.learner.trained.forget(ids)
        return self.bank.remove(ids)

    def retire(self, scope: int, instance: int) -> None:
        """A run on ``instance`` ended: forget its entries, or keep them as a donor (``scope="other"``)."""
        if self.scope != "other":
            self.forget(scope)
            return
        self._donors.append((scope, int(instance)))
        while len(self._donors) > DONORS:
            self.forget(self._donors.popleft()[0])

    def donor(self, instance: int, rng: np.random.Generator) -> int:
        """A finished run of another instance than ``instance``, drawn at random (0: none yet)."""
        others = [s for s, i in self._donors if i != int(instance)]
        return int(others[int(rng.integers(len(others)))]) if others else 0

    def trials_of(self, scope: int) -> list[np.ndarray]:
        """The entry ids of ``scope``'s written trials (and demonstrations), oldest first."""
        return [ids for _, ids, *_ in self._scope_ids.get(scope, [])]

    def ends_of(self, scope: int) -> list[np.ndarray | None]:
        """The key of the state each of :meth:`trials_of` ended in (after its last action); None where
        not given (a demonstration's) or without ``run_best``."""
        return [end for _, _, end, _ in self._scope_ids.get(scope, [])]

    def outcomes_of(self, scope: int) -> list[bool]:
        """Whether each of :meth:`trials_of` succeeded, as written (``success``; a demonstration: True)."""
        return [won for *_, won in self._scope_ids.get(scope, [])]

    def size(self, scope: int) -> int:
        """Entries held in ``scope``."""
        return int(sum(len(c) for _, c, *_ in self._scope_ids.get(scope, [])))

    def write(self, scope: int, observations: Any, actions: Any, rewards: Any, *,
              provenance: Provenance = Provenance.EXTRACTED, success: bool | None = None,
              end_observation: Any | None = None) -> np.ndarray:
        """Write one finished trial into ``scope``: one entry per step. Returns the new ids.

        Args:
            observations: the ``T`` observations the steps started from (a batch).
            actions: the ``T`` actions taken.
            rewards: the ``T`` rewards received.
            provenance: ``DEMO`` for a demonstration (see :meth:`add_demonstration`).
            success: the trial's outcome; with ``dense_rewards`` the return column holds it
                (None: a positive sum of rewards counts as success).
            end_observation: the observation the trial ended in, after its last action (no batch
                axis); its key is kept for :meth:`ends_of` where ``run_best`` reads it.
        """
        if scope not in self._scope_ids:
            raise KeyError(f"scope {scope} is not open (new_scope() makes one; forget() closed it)")
        rewards = np.asarray(rewards, dtype=np.float64).reshape(-1)
        t = len(rewards)
        if t == 0:
            return np.zeros(0, np.int64)
        actions = np.asarray(actions)
        n_obs = len(next(iter(observations.values()))) if isinstance(observations, dict) else len(observations)
        if n_obs != t or len(actions) != t:
            raise ValueError(f"a trial needs one observation, action and reward per step, got {n_obs}, "
                             f"{len(actions)} and {t}")
        task = self._next_task
        self._next_task += 1
        if self.learner is not None:  # distilled by the manager: one entry per step, in this layout
            ids = self.manager.write_entries(Episode(observations=observations, actions=actions, rewards=rewards,
                                                     success=success, guided=False, task_id=task), provenance)
            self._live.update(ids.tolist())
        else:
            keys = self.keys(observations)
            values = self.layout.trial_values(keys, self.action_coder.encode(actions), np.zeros((t, 0), np.float32),
                                              rewards, success)
            ids = np.asarray(self.bank.add(keys, values, task_ids=task, provenance=provenance).ids, np.int64)
        end = None if end_observation is None or not self.run_best else self.keys(add_batch_axis(end_observation))[0]
        self._scope_ids[scope].append((task, ids, end, trial_outcome(rewards, success)))
        self.stats["trials_written"] += 1
        self.stats["entries_written"] += t
        return ids

    def write_trial(self, scope: int, observations: Any, actions: Any, rewards: Any, success: bool,
                    end_observation: Any | None = None) -> np.ndarray:
        """:meth:`write` a finished trial of a run, unless it failed and failures are not written."""
        if not success and not self.write_failures:
            return np.zeros(0, np.int64)
        return self.write(scope, observations, actions, rewards, success=success, end_observation=end_observation)

    def check_demonstration(self, observations: Any, actions: Any, source: str = "a demonstration",
                            rewards: Any | None = None) -> int:
        """The checks :meth:`add_demonstration` makes, placing nothing; returns the steps.

        See :func:`~experience_wrappers.trials.checks.check_demonstration`; ``rewards`` (None: a
        success, 1 on its last step) must be one finite number per step."""
        return check_demonstration(self._check_demo, self.action_space, self.layout.horizon, observations, actions,
                                   source, rewards, observation_space=self.observation_space)

    def add_demonstration(self, scope: int, observations: Any, actions: Any, rewards: Any | None = None, *,
                          source: str = "a demonstration") -> np.ndarray:
        """Place a demonstration of the scope's instance in the scope (no learning, no retraining).

        ``rewards`` None: a successful demonstration, return 1 on its last step. Its observations
        get the checks of the env's (:func:`~experience_wrappers.trials.checks.checked_observations`):
        one of the wrong shape (width), NaN or a value the space refuses is a ValueError naming
        ``source``; Box values outside the bounds warn once per memory.

        Raises:
            ValueError: an empty demonstration (no steps: give None where there is none), or
                observations as above.
        """
        n = self.check_demonstration(observations, actions, source, rewards)
        rewards = np.eye(1, n, n - 1)[0] if rewards is None else rewards  # None: a success, 1 on its last step
        return self.write(scope, observations, actions, rewards, provenance=Provenance.DEMO, success=True)

    def read(self, scopes: np.ndarray, obs: Any, same: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows the policy reads for a batch: ``(rows (n, k, row_dim), mask (n, k), ids (n, k))``.

        Each earlier trial of the run (and each demonstration) is searched on its own, newest
        first: its ``per_trial`` nearest steps (of its ``4 * per_trial`` nearest, those fewest
        steps from the trial's end first among equally near ones), so that a successful trial
        is never crowded out by the many visits of failed ones, then :attr:`path` slots of
        :meth:`_read_paths`; ``k // (per_trial + path)`` trials fill the ``k`` slots.

        Args:
            scopes: ``(n,)`` the scope (run) each observation reads (0: none, nothing shown).
            obs: the batch of observations.
            same: ``(n,)`` 1 where the scope is the reader's own instance.
        """
        scopes = np.asarray(scopes, np.int64)
        n, k, per = len(scopes), self.k, self.per_trial
        if not self.show_entries:  # the rows blank: the run's entries serve run_best alone
            blank = np.zeros((n, k, self.layout.row_dim), np.float32)
            return blank, np.zeros((n, k), bool), np.full((n, k), -1, np.int64)
        width = per + self.path  # slots per trial read
        keys = self.keys(obs)
        mask = np.zeros((n, k), bool)
        ids = np.full((n, k), -1, np.int64)
        values = np.zeros((n, k, self.layout.value_dim), np.float32)
        dist = np.zeros((n, k), np.float32)
        rows_of, tasks, slots, trial_ids = [], [], [], []
        for i, s in enumerate(scopes.tolist()):
            for j, (task, entry_ids, *_) in enumerate(reversed(self._scope_ids.get(s, [])[-(k // width):])):
                rows_of.append(i)
                tasks.append(task)
                slots.append(j * width)
                trial_ids.append(entry_ids)
        if rows_of:
            m = 4 * per
            res = self.bank.query(keys[rows_of], m, task_ids=np.asarray(tasks), mode="knn", record=False)
            stg = res.values[..., self.layout.steps_to_go_col] if res.values.shape[-1] else np.zeros(res.mask.shape)
            d = np.where(res.mask, res.distances, np.inf)
            for q, (i, slot) in enumerate(zip(rows_of, slots, strict=True)):
                order = np.lexsort((stg[q], np.round(d[q], 5)))[:per]
                order = order[res.mask[q, order]]
                span = slice(slot, slot + len(order))
                mask[i, span] = True
                ids[i, span] = res.ids[q, order]
                values[i, span] = res.values[q, order]
                dist[i, span] = res.distances[q, order]
            if self.path:
                self._read_paths(keys, rows_of, [slot + per for slot in slots], trial_ids, mask, ids, values, dist)
        return self.layout.rows(values, keys, dist, same, mask), mask, ids

    def _read_paths(self, keys: np.ndarray, rows_of: list[int], starts: list[int], trial_ids: list[np.ndarray],
                    mask: np.ndarray, ids: np.ndarray, values: np.ndarray, dist: np.ndarray) -> None:
        """Fill :attr:`path` slots per read trial from ``starts`` (in place); a subclass's (here: none)."""

    def finish_trial(self, key: Hashable, success: float, *, guided: bool, members: int, free: int,
                     shown: set[int] | None = None) -> None:
        """One finished trial of a group; credits the guided trials it resolves and trains the extractor.

        ``key`` is the group's (run, trial index); ``shown``, the entries a guided trial read.
        Their fields are taken now (the run's entries may retire before its free trial ends) and
        credited with the delta when the group's trial resolves; the learner trains when it has a batch.
        """
        learner = self.learner
        ids = None
        if guided and shown and learner is not None:
            ids = np.asarray(sorted(i for i in shown if i in self._live), np.int64)
        for credited, fields, delta in credit_trial(self.manager, key, float(success), guided=guided, members=members,
                                                    free=free, shown=ids):
            assert learner is not None  # credits name shown entries, which only a memory with an extractor gives
            learner.add_credit(credited, fields, delta)
            self.stats["credited_entries"] += len(credited)
            self.stats["mean_delta"] += 0.05 * (float(delta) - self.stats["mean_delta"])
        if learner is not None:
            learner.train_if_ready()
            self.stats["extractor_updates"] = float(learner.extractor_version)

    def save(self, folder: str | Path) -> Path:
        """Save the extractor and the goal locator (:func:`.memory_files.save_memory`); returns the folder."""
        return save_memory(self, folder)

    def load(self, folder: str | Path) -> None:
        """Load what :meth:`save` wrote into this memory, one built with the same settings
        (:func:`.memory_files.load_memory`, which says what it refuses)."""
        load_memory(self, folder)

    def load_weights_of(self, other: TrialMemory) -> None:
        """Copy ``other``'s learned weights (extractor, goal locator) into this memory of the same settings."""
        if self.trainer is not None and other.trainer is not None:
            self.trainer.extractor.load_state_dict(other.trainer.extractor.state_dict())
        if self.locator is not None and other.locator is not None:
            self.locator.load_state_dict(other.locator.state_dict())
            self.locator.error_dims = other.locator.error_dims.copy()  # the spread of its search
