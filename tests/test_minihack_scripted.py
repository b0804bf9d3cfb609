"""Scripted MiniHack navigation: BFS paths, the map navigator, demonstrations in training keys."""

from __future__ import annotations

import numpy as np
import pytest

from integrations.minihack.pathing import MOVE_DELTAS, first_step, frontier

pytest.importorskip("minihack")

from integrations.demos import ingest_demonstrations, record_demonstrations  # noqa: E402
from integrations.minihack import (  # noqa: E402
    NAVIGATOR_KEYS,
    MapNavigator,
    make_minihack_env,
    make_minihack_vec_env,
    scripted_demonstrations,
)


def test_first_step_goes_around_a_wall():
    free = np.ones((3, 5), bool)
    free[:2, 2] = False  # a wall from the top, open at the bottom row
    move = first_step((0, 0), [(0, 4)], free, np.zeros_like(free))
    assert MOVE_DELTAS[move] in ((1, 0), (1, 1))


def test_first_step_never_moves_diagonally_through_a_door():
    free = np.zeros((3, 3), bool)
    free[0, 0] = free[1, 1] = free[2, 2] = free[1, 2] = True
    doors = np.zeros_like(free)
    assert first_step((0, 0), [(2, 2)], free, doors) is not None
    doors[1, 1] = True  # the only way is a diagonal step into, then out of, a doorway
    assert first_step((0, 0), [(2, 2)], free, doors) is None


def test_first_step_unreachable_or_already_there():
    free = np.ones((2, 2), bool)
    assert first_step((0, 0), [(0, 0)], free, np.zeros_like(free)) is None
    assert first_step((0, 0), [], free, np.zeros_like(free)) is None
    free[1, 1] = False
    assert first_step((0, 0), [(1, 1)], free, np.zeros_like(free)) is None


def test_frontier_is_passable_cells_beside_unseen_ones():
    passable = np.array([[1, 1, 0], [1, 1, 0]], bool)
    unseen = np.array([[0, 0, 0], [0, 0, 1]], bool)
    assert frontier(passable, unseen).tolist() == [[False, True, False], [False, True, False]]


@pytest.mark.parametrize("env_id, max_len", [("MiniHack-KeyRoom-S5-v0", 60), ("MiniHack-MazeWalk-9x9-v0", 120),
                                             ("MiniHack-Room-Ultimate-5x5-v0", 60)])
def test_the_navigator_solves_navigation_tasks(env_id, max_len):
    env = make_minihack_env(env_id, observation_keys=NAVIGATOR_KEYS, seed=0)
    demos = record_demonstrations(env, MapNavigator(env, 0), 4, seed=0)
    env.close()
    assert all(d.success for d in demos), [len(d.actions) for d in demos]
    assert max(len(d.actions) for d in demos) <= max_len


def test_the_navigator_picks_up_the_key_and_unlocks_the_door():
    env = make_minihack_env("MiniHack-KeyRoom-S5-v0", observation_keys=NAVIGATOR_KEYS, seed=0)
    nav = MapNavigator(env, 0)
    actions = list(env.unwrapped.actions)
    demo = record_demonstrations(env, nav, 1, seed=3)[0]
    env.close()
    taken = [actions[int(a)].name for a in demo.actions]
    assert demo.success and taken.count("PICKUP") >= 1 and taken.count("APPLY") >= 1
    assert taken.index("PICKUP") < taken.index("APPLY")


def test_the_navigator_names_missing_keys_and_forgets_on_reset():
    env = make_minihack_env("MiniHack-KeyRoom-S5-v0", seed=0)
    nav = MapNavigator(env, 0)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="chars"):
        nav(obs)
    env.close()
    env = make_minihack_env("MiniHack-MazeWalk-9x9-v0", observation_keys=NAVIGATOR_KEYS, seed=0)
    nav = MapNavigator(env, 0)
    obs, _ = env.reset(seed=0)
    nav(obs)
    assert nav.memory
    nav.reset()
    assert not nav.memory and nav.key_pos is None
    env.close()


def test_scripted_demonstrations_keep_the_training_keys_and_ingest():
    demos = scripted_demonstrations("MiniHack-KeyRoom-S5-v0", 3, seed=0)
    assert len(demos) == 3 and all(d.success for d in demos)
    assert all(sorted(d.observations) == ["blstats", "glyphs_crop", "inv_glyphs", "last_action"] for d in demos)
    from experience_wrappers import ExperienceBank, ExperienceWrapper

    venv = make_minihack_vec_env("MiniHack-KeyRoom-S5-v0", n_envs=1, seed=0, wrapper_class=ExperienceWrapper,
                                 wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": {"mode": "sync"}})
    manager = venv.envs[0].manager
    assert ingest_demonstrations(manager, demos) > 0 and len(manager.bank) > 0
    venv.close()


def test_scripted_demonstrations_raise_when_the_script_falls_short():
    with pytest.raises(RuntimeError, match=r"navigator on MiniHack-Room-5x5-v0: .* of the 2 episodes asked after 1 "
                                           r"attempts \(max_attempts 1, successful ones kept\)"):
        scripted_demonstrations("MiniHack-Room-5x5-v0", 2, max_attempts=1)
    with pytest.raises(ValueError, match="n_episodes"):
        scripted_demonstrations("MiniHack-Room-5x5-v0", 0)
