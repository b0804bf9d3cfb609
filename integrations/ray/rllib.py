"""RLlib (new API stack) on the experience service: the second engine integration.

Needs the ``[rllib]`` extra, in a virtual environment of its own: RLlib pins a gymnasium
that NLE (MiniHack) does not accept, so ``[rllib]`` is not part of ``[all]``.

Three pieces, each small:

* :func:`experience_env_creator`: RLlib's env, wrapped on its EnvRunner by the service's
  :class:`~experience_wrappers.ExperienceWrapper` (retrieval, injection, episode hand-over:
  finished episodes go to the service's learner from the EnvRunners), then flattened
  to a Box for RLlib's default models;
* :func:`experience_callback`: an ``RLlibCallback`` class that puts the subgroup
  advantage piece into every Learner's pipeline, schedules the guided ratio and the
  learner's progress (EnvRunners read the ratio from the service), asks for merges,
  and reports the service's figures under ``result["crl"]``;
* :func:`subgroup_advantages`: a Learner connector piece, run after RLlib's GAE, that
  normalises advantages within guided and within free episodes separately, with the
  library's own rule (:func:`~experience_wrappers.advantages.regroup_advantages`).

Everything RLlib is imported when one of these is called, never when this module is
imported, so the rest of the library (and its test run) does not need RLlib.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from experience_wrappers.advantages import regroup_advantages
from experience_wrappers.schedule import check_fraction_schedule, linear
from experience_wrappers.validators import check_int

from .remote import RemoteManager
from .service import ExperienceService

__all__ = ["experience_env_creator", "experience_callback", "subgroup_advantages", "require_rllib",
           "RLLIB_EXTRA_HINT"]

RLLIB_EXTRA_HINT = "pip install 'complementary-rl[rllib]' (in its own virtual environment)"


def require_rllib() -> Any:
    """The ``ray.rllib`` module, or ImportError naming the extra that installs it."""
    try:
        import ray.rllib
        from ray.rllib.connectors.connector_v2 import ConnectorV2  # noqa: F401  (needs RLlib's own deps)
    except ImportError as exc:
        raise ImportError(f"the RLlib adapter needs RLlib: {RLLIB_EXTRA_HINT}") from exc
    return ray.rllib


def experience_env_creator(env_creator: Callable[[dict], Any], service: ExperienceService, *,
                           flatten: bool = True, manager_kwargs: dict[str, Any] | None = None,
                           **wrapper_kwargs: Any) -> Callable[[dict], Any]:
    """An env creator for RLlib (``tune.register_env(name, creator)``) that adds experience.

    Args:
        env_creator: ``env_config -> gymnasium.Env``, the plain env.
        service: the experience service (its handle travels to every EnvRunner).
        flatten: flatten the Dict observation to a Box (RLlib's default encoders take Boxes).
        manager_kwargs: the learner's config, used when the service creates it.
        wrapper_kwargs: :class:`~experience_wrappers.ExperienceWrapper` arguments (``k``,
            ``retrieve_every``, ``task_id``, ...).

    On each EnvRunner the guided ratio follows the service's schedule (set by
    :func:`experience_callback`), read again at most once a second.
    """
    if not callable(env_creator):
        raise TypeError(f"env_creator must be callable (env_config -> env), got {env_creator!r}")
    if not isinstance(service, ExperienceService):
        raise TypeError(f"service must be an ExperienceService, got {type(service).__name__}")
    return functools.partial(_make_env, env_creator, service, flatten, manager_kwargs or {}, wrapper_kwargs)


def _make_env(env_creator: Callable[[dict], Any], service: ExperienceService, flatten: bool,
              manager_kwargs: dict[str, Any], wrapper_kwargs: dict[str, Any], env_config: Any) -> Any:
    from gymnasium.wrappers import FlattenObservation

    env = service.wrap(env_creator(env_config), manager_kwargs=manager_kwargs, **wrapper_kwargs)
    manager = env.manager
    assert isinstance(manager, RemoteManager)  # service.wrap gives the wrapper the service's manager
    manager.follow_schedule = True  # the ratio comes from the driver's callback
    return FlattenObservation(env) if flatten else env


def _episode_guided(episode: Any) -> bool:
    """Whether an RLlib single-agent episode (or chunk) was experience-guided (from its infos)."""
    for info in episode.get_infos():
        if isinstance(info, dict) and "experience_guided" in info:
            return bool(info["experience_guided"])
    return False


@functools.cache
def _subgroup_class() -> type:
    require_rllib()
    from ray.rllib.connectors.connector_v2 import ConnectorV2
    from ray.rllib.core.columns import Columns  # noqa: F401
    from ray.rllib.evaluation.postprocessing import Postprocessing
    from ray.rllib.utils.numpy import convert_to_numpy

    class SubgroupAdvantages(ConnectorV2):
        """Re-normalise the advantages GAE wrote, within guided and within free episodes.

        ``last_guided_fraction`` holds the share of guided steps in the last batch.
        """

        last_guided_fraction: float | None = None

        def __call__(self, *, rl_module: Any, episodes: list[Any], batch: dict[str, Any],
                     **kwargs: Any) -> Any:
            import torch

            sa_episodes = list(self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False))
            for module_id, module_batch in batch.items():
                if Postprocessing.ADVANTAGES not in module_batch:
                    continue
                if rl_module[module_id].is_stateful():
                    raise NotImplementedError("subgroup advantages are implemented for stateless "
                                              "RLModules only (no LSTM / attention)")
                mine = [e for e in sa_episodes if e.module_id in (None, module_id)]
                guided = np.repeat([_episode_guided(e) for e in mine], [len(e) for e in mine])
                adv = module_batch[Postprocessing.ADVANTAGES]
                values = np.asarray(convert_to_numpy(adv))
                if values.shape != guided.shape:
                    raise ValueError(f"advantages of module {module_id!r} have shape {values.shape}, "
                                     f"but its episodes have {guided.shape[0]} steps")
                out = regroup_advantages(values, guided).astype(values.dtype)
                self.last_guided_fraction = float(guided.mean()) if guided.size else None
                module_batch[Postprocessing.ADVANTAGES] = (
                    torch.as_tensor(out, device=adv.device) if isinstance(adv, torch.Tensor) else out)
            return batch

    return SubgroupAdvantages


def subgroup_advantages() -> Any:
    """A Learner connector piece: advantages normalised per subgroup (guided / free).

    :func:`experience_callback` inserts it after ``GeneralAdvantageEstimation`` in every
    Learner's pipeline; to do it by hand:
    ``learner._learner_connector.insert_after("GeneralAdvantageEstimation", subgroup_advantages())``.
    """
    return _subgroup_class()()


def _insert_piece(learner: Any) -> bool:
    pipeline = learner._learner_connector
    if pipeline is None or any(type(c).__name__ == "SubgroupAdvantages" for c in pipeline.connectors):
        return False
    pipeline.insert_after("GeneralAdvantageEstimation", subgroup_advantages())
    return True


def experience_callback(service: ExperienceService, *, total_steps: int,
                        guided_ratio: tuple[float, float] | float = (0.5, 0.8), merge_every: int = 5,
                        subgroup: bool = True) -> type:
    """An ``RLlibCallback`` class for ``config.callbacks(...)``: Complementary RL's driver side.

    Args:
        service: the experience service the envs use (see :func:`experience_env_creator`).
        total_steps: env steps of the whole run (the schedules' 100 %).
        guided_ratio: a constant, or ``(start, end)`` linear over training.
        merge_every: training iterations between merges (0: never).
        subgroup: insert :func:`subgroup_advantages` into every Learner's pipeline.
    """
    require_rllib()
    from ray.rllib.callbacks.callbacks import RLlibCallback

    total_steps = check_int("total_steps", total_steps, minimum=1)
    check_fraction_schedule("guided_ratio", guided_ratio)
    merge_every = check_int("merge_every", merge_every, minimum=0)

    class ExperienceCallback(RLlibCallback):
        """Schedules, merges, service figures and the subgroup advantage piece."""

        def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
            self.iterations = 0
            service.call("set_schedule", guided_ratio=linear(guided_ratio, 0.0), progress=0.0)
            if subgroup:
                inserted = algorithm.learner_group.foreach_learner(_insert_piece)
                if hasattr(inserted, "result_or_errors"):  # remote learners
                    [r.get() for r in inserted.result_or_errors]

        def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
            self.iterations = getattr(self, "iterations", 0) + 1
            steps = _lifetime_env_steps(result)
            progress = min(1.0, steps / total_steps)
            service.call("set_schedule", guided_ratio=linear(guided_ratio, progress), progress=progress)
            if merge_every and self.iterations % merge_every == 0:
                service.send("request_merge")
            stats = service.stats()
            try:
                learner = service.call("learner_stats")
            except RuntimeError:  # no env has attached a learner yet
                learner = {}
            result["crl"] = {"bank_size": stats["size"], "bank_mean_utility": stats["mean_utility"],
                             "guided_ratio": linear(guided_ratio, progress), "progress": progress,
                             **{k: learner[k] for k in ("episodes_processed", "entries_added",
                                                        "extractor_updates", "guided_outcome",
                                                        "free_outcome", "delta") if k in learner}}

    return ExperienceCallback


def _lifetime_env_steps(result: dict) -> float:
    """Env steps sampled so far, from an RLlib (new API stack) result dict."""
    runners = result.get("env_runners", {})
    for key in ("num_env_steps_sampled_lifetime", "num_env_steps_sampled"):
        if key in runners:
            return float(runners[key])
        if key in result:
            return float(result[key])
    return 0.0
