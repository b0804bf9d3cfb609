"""ManagerConfig.extractor, the one home of every extractor setting, and the deprecated keywords."""

from __future__ import annotations

import hashlib
import inspect
import json
import pickle
import warnings
from pathlib import Path

import attrs
import gymnasium as gym
import pytest

import experience_wrappers
from experience_wrappers import ExperienceBank, ExperienceManager, ExperienceWrapper, ManagerConfig
from experience_wrappers.extractor import ExtractorConfig
from experience_wrappers.manager.config import MOVED_TO_EXTRACTOR
from integrations.sb3 import ComplementaryRL

CARTPOLE = gym.make("CartPole-v1")
OBS, ACT = CARTPOLE.observation_space, CARTPOLE.action_space
#: a value other than the default for each moved setting
NEW = {"exp_dim": 32, "hidden": 128, "max_len": 8, "lr": 1e-3, "seed": 3}
SMALL = {"n_steps": 64, "batch_size": 64, "n_epochs": 1}


@pytest.fixture
def managers():
    made: list[ExperienceManager] = []

    def make(config: ManagerConfig) -> ExperienceManager:
        made.append(ExperienceManager(ExperienceBank(), OBS, ACT, config=config))
        return made[-1]

    yield make
    for mgr in made:
        mgr.close()


def _deprecations(record: list[warnings.WarningMessage]) -> list[str]:
    """The messages of the deprecation warnings among ``record`` that are the library's: the
    deprecated keywords', or any raised in its own files (third-party ones are not its to fix)."""
    library = str(Path(experience_wrappers.__file__).parent.parent)
    return [str(w.message) for w in record if issubclass(w.category, DeprecationWarning)
            and ("deprecated: pass extractor=" in str(w.message) or w.filename.startswith(library + "/experience_wrappers")
                 or w.filename.startswith(library + "/integrations"))]


def test_defaults_are_unchanged(managers) -> None:
    mgr = managers(ManagerConfig(mode="sync"))
    key_dim = mgr.key_encoder.key_dim
    assert mgr.extractor_config == ExtractorConfig(state_dim=key_dim, action_dim=2, exp_dim=16, hidden=64,
                                                   max_len=16, lr=3e-4, seed=0, discrete_actions=True)
    cfg = ManagerConfig()
    assert cfg.extractor == {}
    assert (cfg.exp_dim, cfg.hidden, cfg.max_len, cfg.lr, cfg.seed) == (16, 64, 16, 3e-4, 0)


def test_the_new_spelling_sets_every_extractor_setting(managers) -> None:
    cfg = ManagerConfig(mode="sync", extractor={**NEW, "clip": 0.2, "ssl_coef": 0.0})
    assert (cfg.exp_dim, cfg.hidden, cfg.max_len, cfg.lr, cfg.seed) == tuple(NEW.values())
    mgr = managers(cfg)
    ec = mgr.extractor_config
    assert {name: getattr(ec, name) for name in NEW} == NEW
    assert (ec.clip, ec.ssl_coef, ec.utility_coef) == (0.2, 0.0, 0.5)  # the rest keeps its defaults
    assert mgr.exp_dim == 32 and mgr.config.max_len == 8  # what the manager and its distiller read
    assert isinstance(ManagerConfig(extractor={"lr": 1}).lr, float)  # as the old field's converter made it


@pytest.mark.parametrize("name", MOVED_TO_EXTRACTOR)
def test_each_old_keyword_warns_and_lands_in_extractor(managers, name) -> None:
    with pytest.warns(DeprecationWarning, match=rf"pass extractor=\{{'{name}': {NEW[name]!r}\}} instead") as record:
        old = ManagerConfig(mode="sync", **{name: NEW[name]})
    assert record[0].filename == __file__  # pointed at the caller, not at the library
    new = ManagerConfig(mode="sync", extractor={name: NEW[name]})
    assert old == new and old.extractor == {name: NEW[name]} and getattr(old, name) == NEW[name]
    assert managers(old).extractor_config == managers(new).extractor_config


def test_an_old_keyword_through_manager_kwargs_warns_at_the_users_line() -> None:
    with pytest.warns(DeprecationWarning, match="ManagerConfig\\(exp_dim=...\\) is deprecated") as record:
        env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={"mode": "sync", "exp_dim": 8})
    assert record[0].filename == __file__
    assert env.manager.extractor_config.exp_dim == 8
    env.close()


def test_one_setting_given_both_ways() -> None:
    with pytest.raises(ValueError, match=r"lr is given twice, as lr=0.001 and as extractor=\{'lr': 0.0003\}"):
        ManagerConfig(lr=1e-3, extractor={"lr": 3e-4})
    with pytest.warns(DeprecationWarning):  # the same value both ways: no conflict
        assert ManagerConfig(seed=3, extractor={"seed": 3, "clip": 0.2}).extractor == {"seed": 3, "clip": 0.2}


@pytest.mark.parametrize("name", ["state_dim", "action_dim", "discrete_actions"])
def test_the_dims_come_from_the_spaces(name) -> None:
    with pytest.raises(ValueError, match=f"extractor={{'{name}': ...}}: the manager sets {name} from the spaces"):
        ManagerConfig(extractor={name: 3})


def test_unknown_names_and_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="not an extractor setting; settable: \\['clip'"):
        ManagerConfig(extractor={"clipp": 0.2})
    with pytest.raises(TypeError, match="unexpected keyword argument 'clip'; its fields"):
        ManagerConfig(clip=0.2)
    with pytest.raises(ValueError, match="max_len must be <= 100000"):
        ManagerConfig(extractor={"max_len": 10**6})
    with pytest.raises(ValueError, match="seed must be >= 0"):
        ManagerConfig(extractor={"seed": -1})


def test_evolve_pickle_and_equality_keep_the_extractor_settings() -> None:
    cfg = ManagerConfig(extractor={"exp_dim": 32, "seed": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        moved = attrs.evolve(cfg, mode="sync")
    assert moved.mode == "sync" and moved.extractor == {"exp_dim": 32, "seed": 3} and moved.exp_dim == 32
    assert pickle.loads(pickle.dumps(cfg)) == cfg  # what process mode sends its learner
    # equal when the settings in effect are: naming a default is the default
    assert ManagerConfig(extractor={"exp_dim": 16, "clip": 0.1}) == ManagerConfig()
    assert ManagerConfig(extractor={"exp_dim": 17}) != ManagerConfig()


def test_the_signature_names_the_fields_not_kwargs() -> None:
    params = inspect.signature(ManagerConfig).parameters
    assert "extractor" in params and "mode" in params and "kwargs" not in params
    assert not set(MOVED_TO_EXTRACTOR) & set(params)


def test_an_old_format_config_dict_loads_silently() -> None:
    old = {**ManagerConfig(mode="sync").to_dict(), **NEW}  # exp_dim ... at the top level, as saved before
    del old["extractor"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        cfg = ManagerConfig.from_dict(old)
    assert cfg == ManagerConfig(mode="sync", extractor=NEW)
    assert ManagerConfig.from_dict(cfg.to_dict()) == cfg


def test_a_manager_folder_saved_with_the_old_config_restores_silently(managers, tmp_path) -> None:
    path = managers(ManagerConfig(mode="sync", extractor={"exp_dim": 8})).save(tmp_path / "m")
    state = json.loads((path / "manager.json").read_text())
    state["config"] = {**{k: v for k, v in state["config"].items() if k != "extractor"},
                       "exp_dim": 8, "hidden": 64, "max_len": 16, "lr": 3e-4, "seed": 0}  # the old layout
    (path / "manager.json").write_text(json.dumps(state))
    meta = json.loads((path / "meta.json").read_text())
    meta["files"]["manager.json"] = hashlib.sha256((path / "manager.json").read_bytes()).hexdigest()
    (path / "meta.json").write_text(json.dumps(meta))
    fresh = managers(ManagerConfig(mode="sync", extractor={"exp_dim": 8}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        fresh.restore(path)


def test_sharing_a_bank_compares_the_settings_in_effect() -> None:
    bank = ExperienceBank()
    first = ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs={"mode": "sync", "extractor": {"exp_dim": 8}})
    # a later wrapper agrees when every setting it names has its value, in either spelling
    same = ExperienceWrapper(gym.make("CartPole-v1"), bank,
                             manager_kwargs={"mode": "sync", "extractor": {"exp_dim": 8, "clip": 0.1}})
    with pytest.warns(DeprecationWarning):
        old = ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs={"exp_dim": 8})
    assert first.manager is same.manager is old.manager
    with pytest.raises(ValueError, match="already has another config"):
        ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs={"extractor": {"hidden": 32}})
    first.close()


def test_the_method_seeds_the_extractor_and_its_defaults_warn_nothing(tmp_path) -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cfg = ManagerConfig()
        run = ComplementaryRL("CartPole-v1", n_envs=1, seed=5, algorithm_kwargs=SMALL)
    assert _deprecations(record) == [] and cfg.extractor == {}
    assert run.manager is not None and run.manager.extractor_config.seed == run.manager.config.seed == 5
    run.close()
    own = ComplementaryRL("CartPole-v1", n_envs=1, seed=5, algorithm_kwargs=SMALL,
                          manager_kwargs={"extractor": {"seed": 9, "exp_dim": 8}})
    assert own.manager is not None and own.manager.extractor_config.seed == 9  # the caller's wins
    own.close()


def test_a_run_saved_with_the_old_manager_kwargs_loads_silently(tmp_path) -> None:
    run = ComplementaryRL("CartPole-v1", n_envs=1, seed=0, algorithm_kwargs=SMALL,
                          manager_kwargs={"mode": "sync", "extractor": {"exp_dim": 8}})
    run.save(tmp_path / "run")
    run.close()
    settings = json.loads((tmp_path / "run" / "method.json").read_text())
    settings["manager_kwargs"] = {"mode": "sync", "exp_dim": 8}  # as an older version wrote it
    (tmp_path / "run" / "method.json").write_text(json.dumps(settings))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        back = ComplementaryRL.load(tmp_path / "run")
    assert _deprecations(record) == []
    assert back.manager is not None and back.manager.extractor_config.exp_dim == 8
    back.close()
