"""The task scope of :class:`~integrations.sb3.ComplementaryRL`: the measured method in one object.

It owns what a run of the method needs, in the order the measurements used it: the bank, the
experience-wrapped vector env (the observation channel), the successful-state replay beside the bank,
:class:`~integrations.sb3.CRLCallback` with self-imitation, optional demonstrations (distilled into the
bank and pinned in the replay) and optional guided roll-in, and the SB3 on-policy model. It builds on SB3
without forking it: ``run.model`` is a plain SB3 model, ``run.env`` a plain VecEnv (the README shows it).

Its defaults are the ones the benchmarks measured as the method (``crl-sil-obs`` in
``benchmarks/suites/arms.py``; what each part earned is in ``docs/what_to_use.md``). The two-line form,
``ExperienceWrapper(env, bank)`` and ``model.learn(callback=CRLCallback())``, runs the same callback with
the same self-imitation defaults.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self, cast

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import VecEnv

from experience_wrappers import ExperienceBank, ExperienceManager
from experience_wrappers.errors import RunFileError
from experience_wrappers.manager.config import move_deprecated
from experience_wrappers.replay import SuccessReplay
from experience_wrappers.validators import check_bool, check_int, check_timesteps

from . import success_record as success
from .callback import CRLCallback
from .default_policy import default_policy
from .discovery import find_experience
from .env_families import Family, build_env, family_of
from .evaluation import check_episodes, evaluate_with_and_without_experience, run_episodes
from .guards import check_action_space, check_on_policy_class
from .lifecycle import after_learn
from .method_rollin import (
    DEMO_SEED_OFFSET,
    ROLLIN_DEFAULTS,
    check_rollin,
    check_same_demonstrations,
    demonstrations_digest,
    rollin_env,
)
from .method_settings import (
    check_demonstrations,
    check_given_bank,
    check_open,
    check_run_arguments,
    check_seed,
    load_arguments,
    options,
    resolve_algorithm,
    saved_algorithm,
    settings_to_json,
    user_callbacks,
    warn_unsavable,
)
from .rollin_callbacks import RollInCallback, RollInView
from .rollin_env import GuidedRollInVecEnv
from .run_persistence import (
    METHOD_FILE,
    RUN_NAMES,
    check_same_save,
    load_crl,
    load_run,
    read_method_file,
    save_run,
)
from .schedules import first_learn
from .self_imitation import SELF_IMITATION_DEFAULTS, SelfImitationCallback, add_demonstrations

__all__ = ["TaskScopeRL", "DEMO_SEED_OFFSET", "ROLLIN_DEFAULTS", "METHOD_FILE", "read_method_file"]

log = logging.getLogger(__name__)


class TaskScopeRL:
    """The method, assembled: bank, wrapped env, replay, callbacks and an SB3 on-policy model.

    Args:
        env: a gymnasium env id (MiniHack ids get MiniHack's factory, glyph CNN and key
            encoder; ``Meta-World/MT10`` the MT10 factory; any other id ``gym.make``) or a
            factory ``() -> gym.Env``.
        algorithm: an SB3 on-policy algorithm class or its name in SB3 or sb3_contrib
            (``"PPO"``, the default; self-imitation needs PPO).
        policy: the policy (default: ``"MultiInputPolicy"`` with the experience features
            extractor, or SB3's default network for ``experience=False``). It and
            ``policy_kwargs`` are saved with the run (classes by their importable names).
        n_envs: training envs (one :class:`~stable_baselines3.common.vec_env.DummyVecEnv`).
        seed: seeds the envs, the bank, the manager, the demonstrations and the model: an int
            in ``[0, 2**31)``, or None for one drawn at random (``run.seed``, saved with the run).
        experience: False: no bank, no wrapper, no :class:`CRLCallback`: plain PPO plus what
            else is asked for (the benchmarks' peers, e.g. self-imitation from a plain buffer).
        demonstrations: an int (that many scripted demonstrations, recorded from reset seeds
            ``seed + DEMO_SEED_OFFSET`` on; MiniHack navigation tasks have a script) or a
            sequence of :class:`~integrations.demos.Demonstration`. They are distilled into the
            bank (one entry per state) and pinned in the replay.
        self_imitation: True (default): :data:`SELF_IMITATION_DEFAULTS` (off, said once in the
            log, on an env that reports no success); False: off; a mapping:
            :class:`SelfImitationCallback` arguments over those defaults.
        rollin: False (default); True: :data:`ROLLIN_DEFAULTS`; a mapping over them: ``guide_type``
            ("bank": the bank's nearest demonstration entry acts; "replay": each demonstration's actions
            replayed on its own instance), ``guide``, ``curriculum``, ``on_demonstrated``, ``instance_seeds``
            (the demonstrations' reset seeds, for a sequence of demonstrations with ``on_demonstrated``) and
            the other :class:`GuidedRollInVecEnv` arguments. Needs demonstrations.
        group_size: envs form groups of this size that replay one instance per episode index,
            guided members credited against the free ones of their instance (paired credit).
        bank: the bank to use, one no other manager serves (default: a new
            ``ExperienceBank(seed=seed, **bank_kwargs)``).
        bank_kwargs, wrapper_kwargs, manager_kwargs, callback_kwargs, ingest_kwargs: extra arguments of
            :class:`~experience_wrappers.ExperienceBank`, :class:`~experience_wrappers.ExperienceWrapper`,
            :class:`~experience_wrappers.ManagerConfig`, :class:`CRLCallback` and
            :func:`~integrations.demos.ingest_demonstrations`.
        policy_kwargs, algorithm_kwargs: the model's (``algorithm_kwargs``: PPO's
            hyperparameters; SB3's defaults where not given).
        tensorboard_log: SB3's TensorBoard folder.
        add_demonstrations: False: the demonstrations serve roll-in only; they are not distilled into the bank
            nor pinned in the replay (what :meth:`load` does: the saved bank and replay hold them already).
        scope: ``"task"`` (this class: entries keyed by task, kept across episodes) or ``"run"``
            (trials of one instance read only their own run: ``ComplementaryRL(env, scope="run",
            instances=...)`` builds :class:`~integrations.sb3.run_scope.RunScopeRL`, whose
            arguments are its own).

    Attributes:
        model, env, bank, manager, replay, demonstrations, rollin_env, callbacks.
    """

    def __init__(self, env: str | Callable[[], gym.Env], *, algorithm: type[BaseAlgorithm] | str = PPO,
                 policy: Any = None, n_envs: int = 8, seed: int | None = 0, experience: bool = True,
                 demonstrations: int | Sequence[Any] = 0, self_imitation: bool | Mapping[str, Any] = True,
                 rollin: bool | Mapping[str, Any] = False, group_size: int | None = None,
                 bank: ExperienceBank | None = None, bank_kwargs: Mapping[str, Any] | None = None,
                 wrapper_kwargs: Mapping[str, Any] | None = None, manager_kwargs: Mapping[str, Any] | None = None,
                 callback_kwargs: Mapping[str, Any] | None = None, ingest_kwargs: Mapping[str, Any] | None = None,
                 policy_kwargs: Mapping[str, Any] | None = None, algorithm_kwargs: Mapping[str, Any] | None = None,
                 tensorboard_log: str | None = None, add_demonstrations: bool = True, scope: str = "task") -> None:
        if scope != "task":
            raise ValueError(f"{type(self).__name__} is the task scope; got scope={scope!r} (ComplementaryRL("
                             "env, scope='run', ...) builds the run scope)")
        if not (isinstance(env, str) or callable(env)):
            raise TypeError(f"env must be a gymnasium env id or a factory () -> gym.Env, got {env!r}")
        check_bool("experience", experience)
        n_envs = check_int("n_envs", n_envs, minimum=1)
        check_given_bank(bank, experience, bank_kwargs)
        algorithm = resolve_algorithm(algorithm)
        demonstrations = check_demonstrations(demonstrations)
        self.env_id = env
        self.seed = check_seed(seed)
        check_run_arguments(algorithm_kwargs, tensorboard_log)
        self.experience = experience
        self._closed, self._reported = False, False  # (_reported: a loaded run's env reported success in training)
        self.self_imitation = options(self_imitation, SELF_IMITATION_DEFAULTS, "self_imitation")
        self.rollin = options(rollin, ROLLIN_DEFAULTS, "rollin")
        # refused now, not at the first learn(): each of these parts reads or fills a rollout buffer
        check_on_policy_class(algorithm, experience=experience, self_imitation=self.self_imitation is not None,
                              rollin=self.rollin is not None)
        self.group_size = group_size
        self._settings: dict[str, Any] = {
            "env": env if isinstance(env, str) else None, "algorithm": algorithm.__name__, "n_envs": n_envs,
            "seed": self.seed, "experience": experience, "self_imitation": self.self_imitation,
            "rollin": self.rollin, "group_size": group_size,
            "demonstrations": demonstrations if isinstance(demonstrations, int) else len(demonstrations),
            "demonstrations_scripted": isinstance(demonstrations, int), "policy": policy,
            "demonstrations_digest": demonstrations_digest(demonstrations) if self.rollin is not None else None,
            **{name: dict(v or {}) for name, v in (
                ("bank_kwargs", bank_kwargs), ("wrapper_kwargs", wrapper_kwargs), ("policy_kwargs", policy_kwargs),
                ("manager_kwargs", manager_kwargs), ("callback_kwargs", callback_kwargs),
                ("ingest_kwargs", ingest_kwargs), ("algorithm_kwargs", algorithm_kwargs))}}
        warn_unsavable(self._settings)  # a setting a save could not write: said now (before learn), refused at save()
        fam = family_of(env)
        self.family: Family = fam
        self._check(fam, demonstrations)
        # ``is None``: an empty bank is falsy, and the caller's must be the one the run fills
        self.bank = (ExperienceBank(seed=self.seed, **dict(bank_kwargs or {})) if bank is None else bank) \
            if experience else None
        self.env: VecEnv = build_env(env, n_envs, self.seed, self.bank, dict(wrapper_kwargs or {}),
                                     dict(manager_kwargs or {}), fam, group_size=group_size)
        try:  # a setting refused from here on (by SB3, a demonstration) must not leave the learner process running
            # the bank's own manager: build_env wraps the envs on a bank of this process
            self.manager: ExperienceManager | None = (
                cast(ExperienceManager, find_experience(self.env)[0][0]) if experience else None)
            self.replay: SuccessReplay | None = SuccessReplay() if self.self_imitation is not None else None
            if self.manager is not None:
                self.manager.replay = self.replay  # saved with the run by save_crl
            gamma = float(dict(algorithm_kwargs or {}).get("gamma", 0.99))
            self.demonstrations, self.demonstrations_record = self._add_demonstrations(
                demonstrations, dict(ingest_kwargs or {}), gamma, ingest=add_demonstrations)
            self.rollin_env = self._rollin_env() if self.rollin is not None else None
            train_env = self.rollin_env if self.rollin_env is not None else self.env
            if policy is None:
                policy, policy_kwargs = default_policy(algorithm, fam, experience, self.env.observation_space,
                                                       policy_kwargs)
            self.model: BaseAlgorithm = algorithm(policy, train_env, seed=self.seed, policy_kwargs=dict(policy_kwargs or {}),
                                                  tensorboard_log=tensorboard_log,
                                                  **{"verbose": 0, **dict(algorithm_kwargs or {})})
            check_action_space(self.model.action_space, "ComplementaryRL")  # refused now, not in the learner
            if add_demonstrations:  # (a loaded run's replay holds them already)
                self._pin_demonstrations(gamma)
            self.crl_callback: CRLCallback | None = None
            self.sil_callback: SelfImitationCallback | None = None
            self.rollin_callback: RollInCallback | None = None
            self.callbacks: list[BaseCallback] = self._callbacks(dict(callback_kwargs or {}))
        except BaseException:
            self.close()
            raise
        #: the run-folder saves this run descends from (loaded from, then written): stale saves are refused
        self._lineage: list[str] = []

    # ------------------------------------------------------------------ assembly
    def _check(self, fam: Family, demonstrations: int | Sequence[Any]) -> None:
        n = demonstrations if isinstance(demonstrations, int) else len(demonstrations)  # checked: check_demonstrations
        if isinstance(demonstrations, int) and n and fam.demonstrator is None:
            raise ValueError(f"demonstrations={n} asks for scripted demonstrations, but {self.env_id!r} has no scripted "
                             "demonstrator (MiniHack navigation tasks have one); pass a list of Demonstration objects")
        if n and not self.experience and self.self_imitation is None:
            raise ValueError("demonstrations were given, but with experience=False and self_imitation off "
                             "nothing would use them")
        if self.rollin is not None:
            check_rollin(self.rollin, n, self.experience, self.group_size)
        if self.group_size is not None and not self.experience:
            raise ValueError("group_size pairs guided and free episodes for credit: it needs experience=True")

    def _add_demonstrations(self, demonstrations: int | Sequence[Any], ingest_kwargs: dict[str, Any], gamma: float,
                            ingest: bool = True) -> tuple[list[Any], dict[str, Any] | None]:
        """Record (an int) or take the demonstrations; distil them into the bank and pin them in
        the replay (``ingest=False``: a loaded run, whose bank and replay hold them already)."""
        t0 = time.perf_counter()
        if isinstance(demonstrations, int):
            if not demonstrations:
                return [], None
            assert self.family.demonstrator is not None and isinstance(self.env_id, str)  # _check
            demos = list(self.family.demonstrator(self.env_id, demonstrations, self.seed + DEMO_SEED_OFFSET))
        else:
            demos = list(demonstrations)
        if not demos:
            return [], None
        from integrations.demos import validate_demonstration

        space = self.manager.observation_space if self.manager is not None else self.env.observation_space
        # checked (every step) and trimmed once, before the bank or the replay takes any
        demos = [validate_demonstration(d, space, self.env.action_space, i) for i, d in enumerate(demos)]
        record: dict[str, Any] = {"episodes": len(demos),
                                  "mean_length": float(np.mean([len(d.actions) for d in demos]))}
        if ingest and self.manager is not None:
            from integrations.demos import ingest_demonstrations

            record["segments"] = ingest_demonstrations(self.manager, demos, **{"segment_every": 1, **ingest_kwargs})
            record["bank_size"] = len(self.manager.bank)
        record["seconds"] = round(time.perf_counter() - t0, 2)
        return demos, record

    def _pin_demonstrations(self, gamma: float) -> None:
        """Pin the demonstrations in the replay as the policy sees them (after the model is built:
        SB3 shows images channel-first)."""
        if self.replay is None or not self.demonstrations or self.demonstrations_record is None:
            return
        t0 = time.perf_counter()
        self.demonstrations_record["replay_states"] = add_demonstrations(
            self.replay, self.demonstrations, gamma, self.model.observation_space)
        self.demonstrations_record["seconds"] += round(time.perf_counter() - t0, 2)

    def _rollin_env(self) -> GuidedRollInVecEnv:
        """The training env under guided roll-in (:func:`~integrations.sb3.method_rollin.rollin_env`)."""
        assert self.rollin is not None
        env, self.rollin_seeds = rollin_env(
            self.env, self.rollin, self.demonstrations, manager=self.manager, seed=self.seed, family=self.family,
            env_id=self.env_id, scripted=self._settings["demonstrations_scripted"])
        return env

    def _callbacks(self, callback_kwargs: dict[str, Any]) -> list[BaseCallback]:
        """CRLCallback (with self-imitation unless roll-in needs it wrapped), self-imitation, roll-in last."""
        out: list[BaseCallback] = []
        sil_inside = self.rollin_env is None and self.experience
        if self.experience:
            # without roll-in, self-imitation is the callback's own (on the manager's replay, this
            # run's): the code path of the two-line form
            sil = {"seed": self.seed, **self.self_imitation} if sil_inside and self.self_imitation else False
            self.crl_callback = CRLCallback(**{**callback_kwargs, "self_imitation": sil})
            out.append(self.crl_callback)
        elif callback_kwargs:
            raise ValueError(f"callback_kwargs {sorted(callback_kwargs)} are CRLCallback's; experience=False has none")
        if self.self_imitation is not None and not sil_inside:
            assert self.replay is not None
            self.sil_callback = SelfImitationCallback(self.replay, seed=self.seed, **self.self_imitation)
            # under roll-in the replay must hold the actions executed (the guide's on guide-acted steps)
            out.append(self.sil_callback if self.rollin_env is None else RollInView(self.sil_callback))
        if self.rollin_env is not None:  # after CRLCallback: its advantage normalisation would undo the zeros
            self.rollin_callback = RollInCallback(self.rollin_env)
            out.append(self.rollin_callback)
        return out

    # ------------------------------------------------------------------ use
    def learn(self, total_timesteps: int, callback: BaseCallback | Sequence[BaseCallback] | None = None,
              **learn_kwargs: Any) -> Self:
        """Train for ``total_timesteps`` more (``model.learn`` with the method's callbacks after yours).

        The run goes on from its steps so far (a loaded run's too): its step count and logs continue
        (SB3's ``reset_num_timesteps=False``; a fresh run's first call opens a TensorBoard folder of its
        own, as SB3's). Its schedules (learning rate, guided ratio, self-imitation) follow SB3's progress: the
        run's steps over its steps so far plus this call's, so each call takes them to their end, and four
        calls of 128 steps do not anneal as one of 512 (the second call starts half-way, at 128 of 256). Under roll-in your callbacks see the policy's actions; :class:`RollInView` shows the executed ones."""
        check_open(self._closed, "learn")
        total_timesteps = check_timesteps(total_timesteps)
        user = user_callbacks(callback)
        learn_kwargs.setdefault("reset_num_timesteps", first_learn(self.model))
        try:
            self.model.learn(total_timesteps, callback=CallbackList(user + self.callbacks), **learn_kwargs)
        finally:  # (also after a learn() that raised: a later save or plain use sees the model as configured)
            after_learn(self.model, find_experience(self.env)[1] if self.experience else [])
        if self.crl_callback is not None and self.crl_callback.sil is not None:
            self.sil_callback = self.crl_callback.sil
        return self

    def evaluate(self, n_episodes: int = 32, deterministic: bool = False, seed: int | None = None) -> dict[str, Any]:
        """Success (or return) over ``n_episodes`` from true starts, every episode shown experience and every one
        shown none (``experience=False``: without only). Nothing is learned. ``seed``: the episodes' starts, the
        retrieval draws and the policy's sampling seeded, so that the same run (or its save, loaded) gives the
        same figures (:func:`~integrations.sb3.evaluation.run_episodes`); None: unseeded. An episode that ends
        without a success key is a failure once the env reported success (in training too: saved with the run).

        Raises:
            ValueError: ``n_episodes`` is not an int >= 1, or ``seed`` a negative int.
            TypeError: ``seed`` is not an int.
        """
        check_open(self._closed, "evaluate")
        n_episodes, seed = check_episodes(n_episodes, seed)  # (before the roll-in env is switched off)
        if self.rollin_env is not None:
            self.rollin_env.enabled = False
        try:
            if self.experience:
                return evaluate_with_and_without_experience(self.model, self.env, n_episodes, deterministic, seed, resume=False)
            return {"without_experience": run_episodes(self.model, self.env, n_episodes, deterministic, seed,
                                                       success.known_reports(self.model, self.env, self._reported))}
        finally:
            if self.rollin_env is not None:
                self.rollin_env.enabled = True
                self.model._last_obs = self.rollin_env.reset()  # type: ignore[assignment]  # SB3's VecEnvObs includes tuples, _last_obs's annotation does not
            else:  # the evaluated episodes moved the envs on: the next learn() starts them again
                self.model._last_obs = None

    def save(self, folder: str | Path, *, overwrite: bool = False) -> Path:
        """Write the run: ``model.zip``, ``experience/`` (bank, extractor, manager), ``replay.npz``, ``meta.json``
        and ``method.json`` (its settings, and whether its env reported success; :meth:`load` rebuilds from them).

        Whole and atomic, with experience or without (:func:`~integrations.sb3.run_persistence.save_run`): a
        folder holding anything but a saved run is refused, and so is a stale save (the folder holds a save this
        run neither loaded nor wrote: another run saved there since), with
        :class:`~experience_wrappers.errors.RunFileError` naming both saves; a run never loaded nor saved is
        refused a folder holding another run's save unless ``overwrite=True``. A setting that ``method.json``
        cannot hold so that it loads (a lambda schedule in ``algorithm_kwargs``) is refused by name
        (``TypeError``) before anything is written."""
        check_open(self._closed, "save")
        settings = settings_to_json(self._settings)  # refuses, by name, what cannot be saved

        def files(save_id: str) -> dict[str, bytes]:
            state = {} if self.rollin_env is None else {"rollin_state": self.rollin_env.curriculum.state_dict()}
            record = success.success_record(success.known_reports(self.model, self.env, self._reported).seen)
            return {METHOD_FILE: json.dumps({**settings, **state, **record, "save_id": save_id}, indent=1).encode()}

        replay = self.replay if self.replay is not None or self.manager is None else self.manager.replay
        return save_run(Path(folder), self.model, self.manager, replay, files=files,
                        own=RUN_NAMES | {METHOD_FILE}, lineage=self._lineage, overwrite=overwrite)

    @classmethod
    def load(cls, folder: str | Path, env: str | Callable[[], gym.Env] | None = None,
             algorithm: type[BaseAlgorithm] | str | None = None, **overrides: Any) -> Self:
        """Rebuild a saved run with its settings and restore its model, bank, extractor and replay.

        ``env``: needed when the run was built from a factory (an id is saved). ``algorithm``:
        needed when it is not SB3's or sb3_contrib's (it is found by its saved name). Scripted
        demonstrations are recorded again for roll-in's guide, not added again; the roll-in
        curriculum goes on from where it stood (its ``h``, shrinks and outcomes are saved).

        ``overrides`` (the constructor's arguments) are applied or refused by name (see
        :func:`~integrations.sb3.method_settings.load_arguments`): ``experience``, ``policy``,
        ``policy_kwargs``, ``bank_kwargs`` and ``ingest_kwargs`` are the saved files' (refused
        unless equal); ``demonstrations`` serve roll-in only; the others are applied (``seed``
        to the envs and the model's generators, ``algorithm_kwargs`` over the saved model's)."""
        folder = Path(folder)
        saved = read_method_file(folder)
        if saved.get("scope", "task") != "task":  # ComplementaryRL.load gives it to its scope's class
            raise RunFileError(f"cannot load run from {str(folder)!r} with {cls.__name__}: a run of scope "
                               f"{saved['scope']!r}; use ComplementaryRL.load")
        method_save_id, record = saved.pop("save_id", None), {success.SUCCESS_REPORTED: saved.pop(success.SUCCESS_REPORTED, False)}
        rollin_state = saved.pop("rollin_state", None)  # where the roll-in curriculum stood (goes on from there)
        settings, load_kwargs = load_arguments(saved, overrides, inspect.signature(cls.__init__).parameters)
        # a run saved before ManagerConfig.extractor held every extractor setting: moved silently
        settings["manager_kwargs"] = move_deprecated(settings.get("manager_kwargs") or {}, warn=False)
        env = env if env is not None else settings.get("env")
        settings.pop("env", None)
        if env is None:
            raise ValueError("this run was built from an env factory: pass env=the same factory")
        algorithm = saved_algorithm(settings.pop("algorithm"), algorithm)
        demos, scripted = settings.pop("demonstrations"), settings.pop("demonstrations_scripted")
        digest = settings.pop("demonstrations_digest", None)  # (a save of an earlier version has none)
        if settings["rollin"] is None:
            if "demonstrations" in overrides:
                raise ValueError("ComplementaryRL.load cannot apply demonstrations: a loaded run uses them for "
                                 "roll-in only (the saved bank and replay hold the run's own), and this run has "
                                 "no roll-in; add them with integrations.demos.ingest_demonstrations(run.manager, ...)")
            demos = 0  # the bank and the replay hold them; only roll-in needs them again
        elif not scripted and "demonstrations" not in overrides:
            raise ValueError("this run rolled in from demonstrations it was given: pass demonstrations=the same "
                             "ones (they are not added to the bank or the replay again)")
        run = cls(env, algorithm=algorithm, **{"demonstrations": demos, **settings}, add_demonstrations=False)
        try:
            check_same_demonstrations(digest, run._settings["demonstrations_digest"])
            train_env = run.rollin_env or run.env
            if run.experience:
                run.model = load_crl(folder, train_env, algorithm, lineage=run._lineage, **load_kwargs)
                run.replay = run.manager.replay if run.manager is not None else None
            else:
                run.model, run.replay = load_run(folder, train_env, algorithm, lineage=run._lineage, **load_kwargs)
            check_same_save(folder, method_save_id, run._lineage)
            if rollin_state is not None and run.rollin_env is not None:
                run.rollin_env.curriculum.load_state_dict(rollin_state)
            run._reported = success.restore_success(record, success.success_readers(run.env, run.sil_callback))
        except BaseException:
            run.close()
            raise
        if "seed" in overrides:  # the loaded model keeps its saved seed and generators otherwise
            run.model.seed = run.seed
            run.model.set_random_seed(run.seed)
        if run.replay is not None and run.sil_callback is not None:
            run.sil_callback.replay = run.replay
        return run

    def close(self) -> None:
        """Stop the manager's worker and close the envs; learn, evaluate and save then raise."""
        if self._closed:
            return
        self._closed = True
        try:
            for m in find_experience(self.env)[0] if self.experience else []:
                m.close()
        finally:  # the envs too, when a manager's close raises (a learner process that died)
            self.env.close()
