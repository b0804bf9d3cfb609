"""Meta-World's constants as this integration pins them: reward version, horizon, MT10 tasks, goals."""

from __future__ import annotations

__all__ = ["INSTALL_HINT", "MAX_EPISODE_STEPS", "MT10_TASKS", "NUM_GOALS", "REWARD_FUNCTION_VERSION"]

REWARD_FUNCTION_VERSION: str = "v2"
"""Meta-World reward function version used by every factory here (pinned).

Meta-World v3 tasks implement two dense reward functions: ``"v2"`` (the
shaped rewards of Meta-World v2, the library default) and ``"v1"`` (the
original ones). Published success rates and learning curves swing a lot with
this choice, so it is pinned here and recorded with results; change it only
on purpose, through the ``reward_function_version`` argument.
"""

MAX_EPISODE_STEPS: int = 500
"""Meta-World's episode horizon (``SawyerXYZEnv.max_path_length``)."""

MT10_TASKS: tuple[str, ...] = (
    "reach-v3",
    "push-v3",
    "pick-place-v3",
    "door-open-v3",
    "drawer-open-v3",
    "drawer-close-v3",
    "button-press-topdown-v3",
    "peg-insert-side-v3",
    "window-open-v3",
    "window-close-v3",
)
"""The ten MT10 tasks in Meta-World's canonical order (``metaworld.env_dict.MT10_V3``).

The position of a task in this tuple is its MT10 task id and the index of the
1 in its one-hot vector.
"""

NUM_GOALS: int = 50
"""Goal configurations a Meta-World benchmark draws per task (``metaworld._N_GOALS``)."""

INSTALL_HINT = "pip install complementary-rl[metaworld]"

REWARD_VERSIONS = ("v1", "v2")
"""The reward function versions Meta-World v3 tasks implement."""
