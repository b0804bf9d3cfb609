"""Meta-World (v3 tasks, ``metaworld`` 3.1.x) environment factories for SB3 training.

Meta-World ships its environments through gymnasium's registry
(``gym.make("Meta-World/MT1", env_name=..., seed=...)`` and
``gym.make_vec("Meta-World/MT10", vector_strategy="sync", seed=...)``). Those
factories are built for Meta-World's own evaluation loop and have properties
that get in the way of a Stable-Baselines3 training run:

* ``gym.make_vec("Meta-World/MT10")`` returns a *gymnasium* ``VectorEnv``, which
  SB3 cannot consume; here each task is a plain ``gymnasium.Env`` and
  :func:`make_mt10_vec_env` assembles them into an SB3 ``VecEnv``.
* ``reset(seed=...)`` is ignored by the Sawyer environments (they only know the
  old ``env.seed()``), so seeded resets are not reproducible. The wrapper here
  re-seeds the environment's generator when a seed is passed.
* The declared observation space is computed before the task is set, so its
  goal bounds are ``[0, 0]`` while observations carry the goal: observations lie
  outside the space (gymnasium's checker warns on every ``gym.make``). The
  wrapper declares the space of the fully observable task. Meta-World's
  ``OneHotWrapper`` also declares a ``float32`` space for ``float64``
  observations; :class:`TaskOneHotWrapper` keeps ``float64``.
* ``info["success"]`` is a per-step float. Here it is a bool that stays
  ``True`` once success was reached in the episode (see :class:`MetaWorldTaskWrapper`).

Task sampling follows Meta-World: a benchmark (``metaworld.MT1(name, seed)`` or
``metaworld.MT10(seed)``) draws 50 goal configurations per task once, from
``seed`` (``num_goals`` changes the 50); every ``reset()`` then picks one of them uniformly with the
environment's own generator (``RandomTaskSelectWrapper`` semantics). Goals are
observed (the MT setting: ``partially_observable=False``), in ``obs[36:39]``.

Nothing in :mod:`experience_wrappers` imports this module.

The integration lives in small modules, re-exported here and by
:mod:`integrations.metaworld`: :mod:`~integrations.metaworld.constants` (pinned
reward version, horizon, MT10 task list), :mod:`~integrations.metaworld.checks`
(argument checks, the Meta-World import), :mod:`~integrations.metaworld.goals`
(goal draws and their cache), :mod:`~integrations.metaworld.wrappers`,
:mod:`~integrations.metaworld.factories` (MT1, one MT10 task) and
:mod:`~integrations.metaworld.vec` (the SB3 ``VecEnv`` over MT10).
"""

from integrations.metaworld.constants import (
    INSTALL_HINT,
    MAX_EPISODE_STEPS,
    MT10_TASKS,
    NUM_GOALS,
    REWARD_FUNCTION_VERSION,
)
from integrations.metaworld.factories import make_mt1_env, make_mt10_env
from integrations.metaworld.goals import mt10_tasks
from integrations.metaworld.vec import make_mt10_vec_env
from integrations.metaworld.wrappers import (
    MetaWorldTaskWrapper,
    TaskOneHotWrapper,
    task_id_from_obs,
)

__all__ = [
    "INSTALL_HINT",
    "MAX_EPISODE_STEPS",
    "MT10_TASKS",
    "NUM_GOALS",
    "REWARD_FUNCTION_VERSION",
    "MetaWorldTaskWrapper",
    "TaskOneHotWrapper",
    "make_mt10_env",
    "make_mt10_vec_env",
    "make_mt1_env",
    "mt10_tasks",
    "task_id_from_obs",
]
