"""``ComplementaryRL(env, scope="run", instances=...)``: the trials method in the one object.

Run scope is the shape of the method where the observation lacks what changes from one instance to the
next (a hidden goal, an unseen map): an env replays one instance (its reset seed) for ``trials`` trials, a
*run*; a guided trial is shown the entries of its own run's earlier trials nearest to its state (or of a
demonstration placed in the run first), and the run's entries retire when it ends. What it reads and how
it learns to read it are
:class:`~experience_wrappers.trials.TrialMemory`, :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`,
:class:`~integrations.sb3.trials_features.TrialsFeaturesExtractor`, self-imitation and
:class:`~integrations.sb3.trials_imitation.EntryImitationCallback` (assembled by
:func:`~integrations.sb3.trials_method.build_trials_method`); this class gives them the task
scope's surface: ``learn``, ``evaluate``, ``save`` and ``ComplementaryRL.load``::

    from integrations.minihack.hidden_goal import HiddenGoalRoom, split_goals
    from integrations.sb3 import ComplementaryRL

    train, held_out = split_goals()                    # the room's goal cells: 79 to train on, 20 held out
    run = ComplementaryRL(HiddenGoalRoom, scope="run", instances=train, trials=4)
    run.learn(300_000, progress_bar=True)
    print(run.evaluate(instances=held_out))            # held-out goals, frozen weights
    run.save("runs/rooms")                             # ComplementaryRL.load("runs/rooms", env=HiddenGoalRoom)
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import VecEnv

from experience_wrappers.errors import RunFileError
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.checks import check_instances, demonstration_of, demonstration_parts
from experience_wrappers.trials.wrapper import DemoSource
from experience_wrappers.validators import check_int, check_real, check_timesteps

from .env_families import made_env
from .guards import check_action_space
from .method import ComplementaryRL
from .method_settings import (
    OWN_ARGUMENTS,
    check_open,
    check_run_arguments,
    check_seed,
    load_arguments,
    settings_to_json,
    user_callbacks,
    warn_unsavable,
)
from .run_env import (
    ENV_FACTS,
    capped,
    check_env_class,
    check_env_facts,
    checked_memory_kwargs,
    env_facts,
    step_cap,
)
from .run_persistence import (
    METHOD_FILE,
    RUN_NAMES,
    VEC_NORMALIZE_FILE,
    check_same_save,
    load_run,
    read_method_file,
    save_run,
)
from .schedules import first_learn
from .self_imitation import SelfImitationCallback
from .success_record import SUCCESS_REPORTED, restore_success, success_record
from .trials_evaluation import evaluate_trials, frozen_predict
from .trials_logging import TrialsLogCallback
from .trials_method import build_trials_method, check_groups, checked_vec_normalize, method_parts

__all__ = ["RunScopeRL", "VEC_NORMALIZE_FILE"]

log = logging.getLogger(__name__)
#: the first training instances whose demonstrations are asked for at construction, until one gives one to check
CHECKED_DEMONSTRATIONS = 8

#: settings a load may change; every other one is the saved run's (refused unless equal)
_APPLIED_ON_LOAD = frozenset({"seed", "n_envs", "verbose", "tensorboard_log", "algorithm_kwargs"})


class RunScopeRL(ComplementaryRL, scope="run"):
    """The method in run scope; built by ``ComplementaryRL(env, scope="run", instances=...)``.

    Args:
        env: a factory ``() -> gym.Env`` or a gymnasium id (``gym.make``) of an env whose
            ``reset(seed=s)`` gives instance ``s`` every time.
        instances: the training instances (reset seeds): a non-empty sequence of ints >= 0.
            Evaluate on others (:meth:`evaluate`): held out means never trained on.
        trials: trials per run (``K``).
        demonstrations: ``fn(instance) -> (observations, actions)`` of one demonstration of the
            instance (None where there is none), placed in ``demo_ratio`` of the guided training
            runs and in every run of :meth:`evaluate`'s ``"with_demonstration"`` condition. Not
            saved: give it again to :meth:`load`.
        n_envs, group_size, free_members: ``n_envs`` envs in groups of ``group_size`` that
            replay one instance, ``free_members`` of each group shown nothing (paired credit's baseline).
        seed: an int in ``[0, 2**31)``, or None for one drawn at random (``run.seed``).
        experience: False: the baseline: the same network and PPO with nothing shown, no
            self-imitation, no entry imitation, no novelty bonus (any of them asked for is warned of).
        self_imitation, imitate, novelty_bonus, novelty_until_success, demo_ratio: as
            :func:`~integrations.sb3.trials_method.build_trials_method` (whose docstring gives what each was
            measured to earn); None: on (:func:`~integrations.sb3.trials_method.method_parts`), off with
            ``experience=False``. ``imitate`` may be the imitation callback's arguments: for
            continuous states, which never repeat exactly, copy the nearest shown success at any distance
            (``{"max_distance": None}``; on Meta-World reach with 16 batches per update,
            ``{"max_distance": None, "n_batches": 16}``, one demonstration was followed at 0.61 from the first
            trial against 0.32 without the loss: docs/benchmarks.md, one seed).
        memory_kwargs: :class:`~experience_wrappers.trials.TrialMemory`'s (``horizon``: a trial's step cap,
            default the env's own (:func:`step_cap`: ``spec.max_episode_steps``, a ``TimeLimit``, ``max_steps``);
            one shorter than the env's, or on an env without one, truncates every trial there, in training and
            in :meth:`evaluate`; ``k``, ``exp_dim``, ``write_failures``, ``trial_index``, ``dense_rewards``, ...).
        algorithm_kwargs: PPO's (over :data:`~integrations.sb3.trials_method.TRIALS_PPO_KWARGS`).
        policy_kwargs: the policy's (``net_arch``, ``activation_fn``, ``log_std_init``); the
            features extractor is always the entry reader.
        features_kwargs: :class:`~integrations.sb3.trials_features.TrialsFeaturesExtractor`'s.
        vec_normalize: ``VecNormalize``'s arguments (None: not wrapped; ``norm_obs_keys`` by default the
            env's own keys and ``run_best``, as :func:`~integrations.sb3.trials_method.build_trials_method`);
            its statistics are saved with the run and frozen in :meth:`evaluate`.
        verbose, tensorboard_log: SB3's. Success by trial goes to SB3's logger (:class:`~integrations.sb3.trials_logging.TrialsLogCallback`, in :attr:`log_callback`).

    Attributes:
        model, env, memory, callbacks, log_callback, seed, instances, trials, demonstration_source;
        ``bank`` and ``manager``: the memory's (an :class:`~experience_wrappers.manager.ExperienceManager`
        in sync mode with run scope's layout: its ``stats()`` give the trials' credited outcomes and the
        writes, :func:`~experience_wrappers.manager.stats.manager_stats`).
    """

    def __init__(self, env: str | Callable[[], gym.Env], *, scope: str = "run", instances: Sequence[int],
                 trials: int = 4, demonstrations: DemoSource | None = None, n_envs: int = 8, group_size: int = 4,
                 free_members: int = 1, seed: int | None = 0, experience: bool = True, self_imitation: bool | None = None,
                 imitate: bool | Mapping[str, Any] | None = None, novelty_bonus: float | None = None,
                 novelty_until_success: bool = True,
                 demo_ratio: float | None = None, memory_kwargs: Mapping[str, Any] | None = None,
                 algorithm_kwargs: Mapping[str, Any] | None = None, policy_kwargs: Mapping[str, Any] | None = None,
                 features_kwargs: Mapping[str, Any] | None = None, vec_normalize: Mapping[str, Any] | None = None,
                 verbose: int = 0, tensorboard_log: str | None = None) -> None:
        if scope != "run":
            raise ValueError(f"RunScopeRL is the run scope; got scope={scope!r} (use ComplementaryRL for 'task')")
        if not (isinstance(env, str) or callable(env)):
            raise TypeError(f"env must be a gymnasium env id or a factory () -> gym.Env, got {env!r}")
        if demonstrations is not None and not callable(demonstrations):
            raise TypeError("in run scope, demonstrations must be a function instance -> (observations, actions) of "
                            f"one demonstration of that instance, got {type(demonstrations).__name__}")
        self_imitation, imitate, novelty_bonus, demo_ratio = method_parts(experience, self_imitation, imitate,
                                                                         novelty_bonus, demo_ratio)
        for name, flag in (("experience", experience), ("self_imitation", self_imitation),
                           ("novelty_until_success", novelty_until_success)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        if not isinstance(imitate, bool | Mapping):
            raise TypeError(f"imitate must be a bool or EntryImitationCallback's arguments, got {imitate!r}")
        demo_ratio = check_real("demo_ratio", demo_ratio, minimum=0, maximum=1)
        check_run_arguments(algorithm_kwargs, tensorboard_log, (*OWN_ARGUMENTS, "verbose"))
        verbose = check_int("verbose", verbose, minimum=0, maximum=2)
        self.instances = check_instances(list(instances) if isinstance(instances, range) else instances)
        if len(set(self.instances)) < len(self.instances):  # (taken: a weight; evaluate refuses them)
            warnings.warn(f"instances holds {len(self.instances) - len(set(self.instances))} repeats: a repeated "
                          "instance is trained on as often as it appears", UserWarning, stacklevel=2)
        self.trials = check_int("trials", trials, minimum=1)
        n_envs = check_int("n_envs", n_envs, minimum=1)
        group_size = check_int("group_size", group_size, minimum=1)
        free_members = check_int("free_members", free_members, minimum=0)
        check_groups(experience, group_size, free_members, self.trials, demonstrations)
        self.seed = check_seed(seed)
        self.experience = experience
        self.env_id = env
        self.make_env: Callable[[], gym.Env] = functools.partial(gym.make, env) if isinstance(env, str) else functools.partial(made_env, env)
        self.demonstration_source = demonstrations
        mem_kwargs = dict(memory_kwargs or {})
        if not experience:
            mem_kwargs["scope"] = "none"
        self._settings: dict[str, Any] = {
            "scope": "run", "env": env if isinstance(env, str) else None, "algorithm": "PPO",
            "instances": self.instances, "trials": self.trials, "demonstrations": demonstrations is not None,
            "n_envs": n_envs, "group_size": group_size, "free_members": free_members, "seed": self.seed,
            "experience": experience, "self_imitation": self_imitation,
            "imitate": dict(imitate) if isinstance(imitate, Mapping) else imitate,
            "novelty_bonus": check_real("novelty_bonus", novelty_bonus, minimum=0),
            "novelty_until_success": novelty_until_success,
            "demo_ratio": float(demo_ratio), "memory_kwargs": checked_memory_kwargs(memory_kwargs),
            "algorithm_kwargs": dict(algorithm_kwargs or {}), "policy_kwargs": dict(policy_kwargs or {}),
            "features_kwargs": dict(features_kwargs or {}),
            "vec_normalize": checked_vec_normalize(vec_normalize),
            "verbose": verbose, "tensorboard_log": tensorboard_log}
        warn_unsavable(self._settings)  # a setting a save could not write: said now, refused at save()
        #: what a save records of the env (:func:`~.run_env.env_facts`), compared on load
        self.env_facts: dict[str, Any] | None = None
        self.memory = self._memory(mem_kwargs)
        if imitate is not False and not self.memory.show_entries:
            warnings.warn("imitate (on by default) copies the action of an entry shown to the policy, and "
                          "memory_kwargs show_entries=False shows none: it does nothing; pass imitate=False",
                          UserWarning, stacklevel=2)
        if demonstrations is not None:  # checked now on the first instance that has one, not in learn()
            for instance in self.instances[:CHECKED_DEMONSTRATIONS]:
                source = f"demonstrations({instance})"
                demo = demonstration_parts(demonstration_of(demonstrations, instance), source)
                if demo is not None:
                    self.memory.check_demonstration(demo[0], demo[1], source, demo[2])
                    break
        ppo_kwargs = {**dict(algorithm_kwargs or {}), "tensorboard_log": tensorboard_log}
        if policy_kwargs:
            ppo_kwargs["policy_kwargs"] = dict(policy_kwargs)
        built = build_trials_method(
            self.make_env, self.instances, memory=self.memory, n_envs=n_envs, group_size=group_size,
            free_members=free_members, trials=self.trials, sil=self_imitation, demonstrations=demonstrations,
            demo_ratio=demo_ratio if demonstrations is not None else 0.0, imitate=imitate,
            novelty_bonus=novelty_bonus, novelty_until_success=novelty_until_success, ppo_kwargs=ppo_kwargs,
            features_kwargs=dict(features_kwargs) if features_kwargs else None,
            vec_normalize=None if vec_normalize is None else dict(vec_normalize), seed=self.seed, verbose=verbose)
        self.model: BaseAlgorithm = built.model
        env_of_model = built.model.get_env()
        assert env_of_model is not None
        self.env: VecEnv = env_of_model
        try:  # refused before any step, naming the remedy (not at the first rollout's end)
            check_action_space(self.model.action_space, "ComplementaryRL")
            if imitate is not False and not isinstance(self.model.action_space, gym.spaces.Discrete | gym.spaces.Box):
                raise ValueError(f"ComplementaryRL(scope='run'): entry imitation (imitate=True, the default) copies a "
                                 f"Discrete or Box action, and the env acts in {self.model.action_space}: pass "
                                 "imitate=False")
        except ValueError:
            self.env.close()
            raise
        self.log_callback = TrialsLogCallback(self.trials)
        self.callbacks: list[BaseCallback] = [self.log_callback, *built.callbacks]
        self.sil_callback = next((c for c in built.callbacks if isinstance(c, SelfImitationCallback)), None)
        self.replay = self.sil_callback.replay if self.sil_callback is not None else None
        # the one manager type of both scopes: here the memory's (sync mode, run scope's layout)
        self.bank, self.crl_callback, self.rollin_env = self.memory.bank, None, None
        self.manager = self.memory.manager if self.experience else None
        self._lineage: list[str] = []
        self._closed = False

    def _memory(self, kwargs: dict[str, Any]) -> TrialMemory:
        """The run's memory, on the spaces of one env made and closed here; :attr:`env_facts` of that env
        (what a save records of it). The first, lowest and highest training instances are reset to here,
        so an instance the env cannot reset to is said now, not at ``learn()``'s first reset."""
        kwargs.setdefault("seed", self.seed)
        proto = self.make_env()
        try:
            obs_space, act_space, env_cap = proto.observation_space, proto.action_space, step_cap(proto)
            enforced = step_cap(proto, enforced_only=True)
            if "horizon" not in kwargs:
                if not env_cap:
                    raise ValueError("the env has no max_episode_steps (nor a TimeLimit, nor an int max_steps): give "
                                     "memory_kwargs={'horizon': a trial's step cap} (the entries record a step's "
                                     "time as a share of it)")
                kwargs["horizon"] = env_cap
            horizon = check_int("memory_kwargs['horizon']", kwargs["horizon"], minimum=1)
            if self.env_facts is None:  # the run's own memory (an evaluation memory's env is the same)
                self.env_facts = env_facts(proto, self.instances, horizon)
        finally:
            proto.close()
        memory = TrialMemory(obs_space, act_space, **kwargs)
        if env_cap and horizon > env_cap:  # (warned, not refused: saves made before this still load)
            warnings.warn(f"memory_kwargs['horizon'] = {horizon} is past the env's own step cap {env_cap}, where its "
                          f"trials end{'' if enforced else ' if it keeps its max_steps'}: the entries time a trial's "
                          f"steps by a horizon it never reaches; give horizon <= {env_cap}, or leave it out",
                          UserWarning, stacklevel=3)
        # the horizon caps every trial, here and in evaluate, unless gymnasium already does (an env's own
        # max_steps attribute is only read: a trial of an env that does not keep it would never end)
        if not enforced or enforced > memory.layout.horizon:
            self.make_env = functools.partial(capped, self.make_env, memory.layout.horizon)
        return memory

    # ------------------------------------------------------------------ use
    def learn(self, total_timesteps: int, callback: BaseCallback | Sequence[BaseCallback] | None = None,
              **learn_kwargs: Any) -> RunScopeRL:
        """Train for ``total_timesteps`` more (``model.learn`` with the method's callbacks after yours;
        ``progress_bar=True`` and the other ``learn`` arguments as in SB3). The run goes on from its
        steps so far (a loaded run's too: ``reset_num_timesteps=False`` unless you pass it; a fresh run's first call
        opens a TensorBoard folder of its own, as SB3's)."""
        check_open(self._closed, "learn")
        total_timesteps = check_timesteps(total_timesteps)
        user = user_callbacks(callback)
        learn_kwargs.setdefault("reset_num_timesteps", first_learn(self.model))
        self.model.learn(total_timesteps, callback=CallbackList(user + self.callbacks), **learn_kwargs)
        return self

    def evaluate(self, instances: Sequence[int], *, repeats: int = 5,  # type: ignore[override]
                 conditions: Sequence[str] | None = None, deterministic: bool = False,
                 search: float | None = None) -> dict[str, Any]:
        """Success by trial on ``instances`` (held out: not trained on), frozen weights.

        Each instance gets ``repeats`` runs of :attr:`trials` trials in each condition:
        ``"without_experience"`` (shown nothing), ``"with_experience"`` (reading the run's own
        earlier trials) and ``"with_demonstration"`` (one demonstration placed in the run
        first); default: all that apply (without only for ``experience=False``; with a
        demonstration where the run has ``demonstrations``). Each condition reports
        ``success_by_trial``, ``cumulative_by_trial``, ``after_first_success`` and ``runs``
        (:func:`~integrations.sb3.trials_evaluation.trial_metrics`). The evaluation memory is
        built from the run's own settings with its extractor frozen, so it cannot mismatch
        the policy; nothing the run learned changes. ``search``: the evaluation memory's
        :class:`~experience_wrappers.trials.TrialMemory` ``search`` instead of the run's (a
        test-time setting that changes only the marks shown; it needs ``relocate_every``): on
        Meta-World ML1 reach a run trained without it reached 0.77 cumulative success by trial 2
        evaluated with ``search=1.0``, 0.71 without (3 seeds).

        Raises:
            ValueError: ``search`` > 0 (given, or the run's own where ``search`` is None) without
                ``relocate_every``, or before the run's goal locator has measured its error (nothing to spread
                the marks by: ``search=0`` evaluates without it); the instances' and conditions' errors
                (:func:`~integrations.sb3.trials_evaluation.evaluate_trials`).
        """
        check_open(self._closed, "evaluate")
        instances = check_instances(list(instances) if isinstance(instances, range) else instances)
        seen = sorted(set(instances) & set(self.instances))
        if seen:
            log.warning("evaluating on %d training instances (%s...): held-out success needs instances the run "
                        "never trained on", len(seen), seen[:5])
        if isinstance(conditions, str):
            raise TypeError(f"conditions must be a sequence of condition names, got the str {conditions!r}; "
                            f"e.g. [{conditions!r}]")
        if conditions is None:
            conditions = ["without_experience"]
            if self.experience:
                conditions += ["with_experience"] + (["with_demonstration"] if self.demonstration_source else [])
        elif not self.experience and set(conditions) - {"without_experience"}:
            raise ValueError(f"this run has experience=False: its policy reads nothing, so only without_experience "
                             f"can be evaluated, got conditions {list(conditions)}")
        with frozen_predict(self.model) as predict:
            return evaluate_trials(predict, self.make_env, lambda: self._evaluation_memory(search), instances,
                                   trials=self.trials, repeats=repeats, conditions=list(conditions),
                                   demonstrations=self.demonstration_source, deterministic=deterministic,
                                   seed=self.seed, success_reports=self.memory.success_reports)

    def _evaluation_memory(self, search: float | None = None) -> TrialMemory:
        """A fresh memory of the run's settings (``search`` instead of the run's where given), its extractor
        (and goal locator) a frozen copy of the run's."""
        kwargs = dict(self._settings["memory_kwargs"])
        if search is not None:
            kwargs["search"] = search
        if not self.experience:
            kwargs["scope"] = "none"
        memory = self._memory({**kwargs, "train_extractor": False})
        memory.load_weights_of(self.memory)
        if memory.search and memory.locator is not None and not np.any(memory.locator.error_dims):
            raise ValueError(f"search={memory.search} spreads the marks by the goal locator's measured error, and this "
                             "run's locator has measured none (it has had no training pair, a failed trial of an "
                             "instance that then succeeded, or it was loaded from a save older than the measure); "
                             "train longer, or evaluate with search=0")
        return memory

    # ------------------------------------------------------------------ persistence
    def save(self, folder: str | Path, *, overwrite: bool = False) -> Path:
        """Write the run: ``model.zip``, ``experience/`` (the memory's extractor), ``replay.npz`` (self-imitation's),
        ``vecnormalize.pkl`` (with ``vec_normalize``), ``meta.json`` and ``method.json``; whole and atomic, stale
        saves, another run's save (without ``overwrite``) and foreign folders refused, as :meth:`ComplementaryRL.save
        <integrations.sb3.ComplementaryRL.save>`. A closed run still saves (its model and memory live in this
        process). ``method.json`` records whether the env reported success and the env's class, the trials' cap and a
        digest of its first training instance's start (:func:`~.run_env.env_facts`), which a load compares: a run
        loaded onto another env is refused (warned of, where only the start differs)."""
        settings = settings_to_json(self._settings)

        def files(save_id: str) -> dict[str, bytes]:
            record = success_record(self.memory.success_reports.seen)
            return {METHOD_FILE: json.dumps({**settings, ENV_FACTS: self.env_facts, **record, "save_id": save_id},
                                            indent=1).encode()}

        return save_run(Path(folder), self.model, self.memory if self.experience else None, self.replay, files=files,
                        own=RUN_NAMES | {METHOD_FILE}, lineage=self._lineage,
                        overwrite=overwrite)

    @classmethod
    def load(cls, folder: str | Path, env: str | Callable[[], gym.Env] | None = None,
             algorithm: type[BaseAlgorithm] | str | None = None, **overrides: Any) -> RunScopeRL:
        """Rebuild a run-scope run saved by :meth:`save` and restore its model, extractor, replay
        and normalisation statistics.

        ``env``: needed when the run was built from a factory; ``demonstrations``: give them
        again where the run had some. ``seed``, ``n_envs``, ``verbose``, ``tensorboard_log`` and
        ``algorithm_kwargs`` may be changed (the last three reach the loaded model); any other
        override must equal the saved value. The rule is the task scope's
        (:func:`~integrations.sb3.method_settings.load_arguments`), with every setting the run's
        memory, envs and policy are built from among those the saved files decide.
        """
        folder = Path(folder)
        saved = _read_settings(folder)
        if algorithm not in (None, "PPO", PPO):
            raise ValueError(f"a run-scope run trains PPO; got algorithm={algorithm!r}")
        method_save_id, record = saved.pop("save_id", None), {SUCCESS_REPORTED: saved.pop(SUCCESS_REPORTED, False)}
        saved_env = saved.pop(ENV_FACTS, None)  # None: a save made before they were recorded
        if isinstance(saved.get("memory_kwargs"), dict):  # a save written before run_best=True was saved as "taken"
            saved["memory_kwargs"] = checked_memory_kwargs(saved["memory_kwargs"])
        if isinstance(overrides.get("memory_kwargs"), Mapping):
            overrides["memory_kwargs"] = checked_memory_kwargs(overrides["memory_kwargs"], saved.get("memory_kwargs"))
        demonstrations = overrides.pop("demonstrations", None)
        accepted = set(inspect.signature(cls.__init__).parameters) - {"demonstrations"}
        settings, load_kwargs = load_arguments(  # the task scope's rule, with this scope's restored settings
            saved, overrides, accepted, updated=("algorithm_kwargs",),
            restored={name: "a run-scope run's memory, envs and policy are built from it"
                      for name in accepted - _APPLIED_ON_LOAD})
        settings.pop("algorithm", None)
        had_demos = settings.pop("demonstrations")
        if not had_demos and demonstrations is not None:
            raise ValueError("this run was saved without demonstrations: a loaded run is the saved one (its "
                             "demo_ratio was inert); build a new run with demonstrations= to train with them")
        env = env if env is not None else settings.get("env")
        settings.pop("env", None)
        if env is None:
            raise ValueError("this run was built from an env factory: pass env=the same factory")
        if had_demos and demonstrations is None and settings.get("experience", True):  # (the baseline reads none)
            raise ValueError("this run was given demonstrations: pass demonstrations=the same function (they are "
                             "not saved)")
        if demonstrations is not None:  # (its class said before the demonstrations are checked against the env)
            check_env_class(saved_env, functools.partial(gym.make, env) if isinstance(env, str)
                            else functools.partial(made_env, env))
        run = cls(env, demonstrations=demonstrations, **settings)
        try:
            check_env_facts(saved_env, run.env_facts)
            run.model, replay = load_run(folder, run.env, PPO, lineage=run._lineage,
                                         restore=run.memory.load if run.experience else None, **load_kwargs)
            check_same_save(folder, method_save_id, run._lineage)
            restore_success(record, [run.memory.success_reports])  # (its trials read a missing key as a failure)
        except BaseException:
            run.close()
            raise
        if replay is not None and run.sil_callback is not None:
            run.sil_callback.replay = run.replay = replay
        if "seed" in overrides:
            run.model.set_random_seed(run.seed)
        return run

    def close(self) -> None:
        """Close the envs; learn and evaluate then raise, save still writes the run (closing again does nothing)."""
        if not self._closed:
            self._closed = True
            self.env.close()


def _read_settings(folder: Path) -> dict[str, Any]:
    """A run-scope ``method.json``, or a :class:`RunFileError` that says what the folder is."""
    saved = read_method_file(folder)
    if saved.get("scope") != "run":
        raise RunFileError(f"cannot load run from {str(folder)!r}: not a run-scope run's settings "
                           "(load a task-scope run with ComplementaryRL.load)")
    return saved
