"""Meta-World integration: MT1/MT10 environment factories, SB3 callbacks and a key encoder.

Requires the ``metaworld`` extra (``pip install complementary-rl[metaworld]``).
Importing this package does not import Meta-World; the factories do, and
raise an ``ImportError`` naming the extra if it is missing. The core package
``experience_wrappers`` never imports this one.

Example:
    >>> from integrations.metaworld import MT10_TASKS, REWARD_FUNCTION_VERSION
    >>> len(MT10_TASKS), MT10_TASKS[0], REWARD_FUNCTION_VERSION
    (10, 'reach-v3', 'v2')
"""

from integrations.metaworld.callbacks import PerTaskSuccessCallback
from integrations.metaworld.envs import (
    MAX_EPISODE_STEPS,
    MT10_TASKS,
    NUM_GOALS,
    REWARD_FUNCTION_VERSION,
    MetaWorldTaskWrapper,
    TaskOneHotWrapper,
    make_mt1_env,
    make_mt10_env,
    make_mt10_vec_env,
    mt10_tasks,
    task_id_from_obs,
)
from integrations.metaworld.keys import MetaWorldKeyEncoder

__all__ = [
    "MAX_EPISODE_STEPS",
    "MT10_TASKS",
    "NUM_GOALS",
    "REWARD_FUNCTION_VERSION",
    "MetaWorldKeyEncoder",
    "MetaWorldTaskWrapper",
    "PerTaskSuccessCallback",
    "TaskOneHotWrapper",
    "make_mt1_env",
    "make_mt10_env",
    "make_mt10_vec_env",
    "mt10_tasks",
    "task_id_from_obs",
]
