"""``ExperienceSource``: both managers a wrapper and the callback accept have every member it names."""

from __future__ import annotations

import inspect
import re

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from experience_wrappers import ExperienceBank, ExperienceManager, ExperienceWrapper, ManagerConfig
from experience_wrappers.manager import ExperienceSource, protocol
from integrations.ray import RemoteManager
from integrations.sb3 import ExperienceVecEnv
from integrations.sb3.discovery import find_experience

_cartpole = gym.make("CartPole-v1")
OBS, ACT = _cartpole.observation_space, _cartpole.action_space
_cartpole.close()

#: read-only members (properties in the protocol)
PROPERTIES = sorted(n for n, v in vars(ExperienceSource).items() if isinstance(v, property))
#: members set from outside (plain annotations in the protocol)
SETTABLE = sorted(ExperienceSource.__annotations__)
METHODS = sorted(n for n, v in vars(ExperienceSource).items()
                 if inspect.isfunction(v) and not n.startswith("_"))
MEMBERS = PROPERTIES + SETTABLE + METHODS


@pytest.fixture
def manager():
    mgr = ExperienceManager(ExperienceBank(seed=0), OBS, ACT, config=ManagerConfig(mode="sync"))
    yield mgr
    mgr.close()


def test_the_protocol_names_what_the_wrappers_and_the_callback_use():
    assert PROPERTIES == ["action_space", "bank", "episodes_submitted", "exp_dim", "guided_ratio",
                          "key_encoder", "observation_space", "reader", "schedule"]
    assert SETTABLE == ["learn_claim", "replay", "success_reports", "training_injectors"]
    assert METHODS == ["close", "encode_keys", "flush", "free_baseline", "poll", "request_merge",
                       "restore", "save", "stats", "submit"]
    assert protocol.__all__ == ["ExperienceSource"]


def test_a_local_manager_is_an_experience_source(manager):
    assert isinstance(manager, ExperienceSource)
    for name in MEMBERS:
        assert hasattr(manager, name), name
    keys = manager.encode_keys(np.zeros((2, 4), np.float32), np.zeros(2, np.int64))
    assert keys.shape == (2, manager.key_encoder.key_dim)
    assert manager.free_baseline() is None and manager.replay is None


def test_something_else_is_not(manager):
    assert not isinstance(manager.bank, ExperienceSource)
    assert not isinstance(object(), ExperienceSource)


def _set_in_init(cls: type) -> set[str]:
    """The attributes ``cls.__init__`` sets on ``self`` (instance attributes: not on the class)."""
    return set(re.findall(r"^\s*self\.(\w+)\s*(?::[^=\n]+)?=", inspect.getsource(cls.__init__), re.M))


def test_remote_manager_has_every_member():
    """Checked on the class (no service needed): methods and properties on it, attributes set in ``__init__``."""
    attributes = _set_in_init(RemoteManager)
    for name in METHODS + PROPERTIES:
        assert hasattr(RemoteManager, name) or name in attributes, name
    for name in METHODS:
        assert callable(getattr(RemoteManager, name)), name
    for name in SETTABLE:
        assert name in attributes, name
        assert not isinstance(getattr(RemoteManager, name, None), property), name


@pytest.mark.parametrize("name", METHODS)
def test_methods_take_the_protocol_s_arguments(name):
    want = _parameters(getattr(ExperienceSource, name))
    assert _parameters(getattr(ExperienceManager, name)) == want
    assert _parameters(getattr(RemoteManager, name)) == want


def _parameters(fn) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_wrappers_and_discovery_hand_over_the_same_manager(manager):
    env = ExperienceWrapper(gym.make("CartPole-v1"), manager.bank, manager=manager)
    assert env.manager is manager and env.injector.manager is manager
    venv = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")]), manager.bank, manager=manager)
    managers, _ = find_experience(venv)
    assert managers == [manager] and isinstance(managers[0], ExperienceSource)
    venv.close()
