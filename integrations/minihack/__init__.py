"""MiniHack integration: env factories, success detection, a glyph CNN extractor and key encoder.

Needs the ``minihack`` extra (``pip install complementary-rl[minihack]``) to make envs;
the extractor and the key encoder only need the core dependencies. The core package
``experience_wrappers`` never imports this one.
"""

from .demonstrations import scripted_demonstrations
from .envs import (
    DEFAULT_OBSERVATION_KEYS,
    END_STATUS_ABORTED,
    END_STATUS_DEATH,
    END_STATUS_RUNNING,
    END_STATUS_SUCCESS,
    LAST_ACTION_KEY,
    LastAction,
    MiniHackCompat,
    MiniHackSuccess,
    StepLimitTruncation,
    import_minihack,
    make_minihack_env,
    make_minihack_vec_env,
    max_episode_steps,
)
from .glyph_features import GlyphCNNExtractor, minihack_policy_kwargs, normalise_blstats
from .hidden_goal import HiddenGoalRoom, shortest_path_actions, split_goals
from .hidden_key_door import HiddenKeyDoorRoom, key_door_actions, split_pairs, sweep_success
from .incontext_maze import (
    InContextMaze,
    maze_demonstration,
    maze_distances,
    position_key_encoder,
    split_mazes,
)
from .keys import DEFAULT_BLSTATS_KEY_FIELDS, DEFAULT_KEY_WEIGHTS, MiniHackKeyEncoder
from .scripted import NAVIGATOR_KEYS, MapNavigator, StairsSeeker

__all__ = [
    "DEFAULT_BLSTATS_KEY_FIELDS",
    "DEFAULT_KEY_WEIGHTS",
    "DEFAULT_OBSERVATION_KEYS",
    "END_STATUS_ABORTED",
    "END_STATUS_DEATH",
    "END_STATUS_RUNNING",
    "END_STATUS_SUCCESS",
    "LAST_ACTION_KEY",
    "GlyphCNNExtractor",
    "HiddenGoalRoom",
    "HiddenKeyDoorRoom",
    "InContextMaze",
    "maze_demonstration",
    "maze_distances",
    "position_key_encoder",
    "split_mazes",
    "key_door_actions",
    "shortest_path_actions",
    "split_goals",
    "split_pairs",
    "sweep_success",
    "LastAction",
    "MapNavigator",
    "MiniHackCompat",
    "MiniHackKeyEncoder",
    "MiniHackSuccess",
    "NAVIGATOR_KEYS",
    "StairsSeeker",
    "StepLimitTruncation",
    "import_minihack",
    "make_minihack_env",
    "make_minihack_vec_env",
    "max_episode_steps",
    "minihack_policy_kwargs",
    "normalise_blstats",
    "scripted_demonstrations",
]
