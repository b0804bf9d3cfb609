"""What :class:`~integrations.sb3.ComplementaryRL` takes and writes: its arguments checked at
the boundary, and its settings turned into ``method.json`` and back.

``method.json`` holds plain JSON only. Classes and functions (an activation, a features
extractor, a policy class) are written as a reference to their importable name
(``{"__object__": "module:qualname"}``) and imported again at load; so is a plain object of an
importable class whose attributes are its constructor's arguments (SB3's ``LinearSchedule``),
with them (``"arguments"``), checked at save to rebuild as it is. Any other value (a lambda
schedule, a local class) is refused at save with the setting's name, never written as its ``repr``.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm

from experience_wrappers import ExperienceBank

__all__ = ["resolve_algorithm", "check_given_bank", "check_open", "check_seed", "check_run_arguments", "check_demonstrations", "user_callbacks", "settings_to_json", "settings_from_json", "warn_unsavable",
           "to_json", "from_json", "load_arguments", "ARGUMENTS_KEY", "saved_algorithm", "options", "OBJECT_KEY", "SEED_LIMIT", "RESTORED_ON_LOAD",
           "UPDATED_ON_LOAD"]

log = logging.getLogger(__name__)

#: the key of a reference to an importable class or function in ``method.json``
OBJECT_KEY = "__object__"
#: beside :data:`OBJECT_KEY`: the constructor's arguments of a saved plain object
ARGUMENTS_KEY = "arguments"
#: seeds are ints in ``[0, SEED_LIMIT)`` (the envs, the demonstrations and SB3 add to them)
SEED_LIMIT = 2**31
#: where an algorithm given by name is looked up, in this order
ALGORITHM_MODULES = ("stable_baselines3", "sb3_contrib")


def resolve_algorithm(algorithm: Any, name: str = "algorithm") -> type[BaseAlgorithm]:
    """An SB3 algorithm class, given as the class or as its name in SB3 or sb3_contrib.

    >>> resolve_algorithm("A2C").__name__
    'A2C'

    Raises:
        ValueError: a name that is no algorithm of SB3 or sb3_contrib.
        TypeError: anything but a class of :class:`BaseAlgorithm` or a string.
    """
    if isinstance(algorithm, str):
        for module_name in ALGORITHM_MODULES:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            found = getattr(module, algorithm, None)
            if isinstance(found, type) and issubclass(found, BaseAlgorithm):
                return found
        raise ValueError(f"{name}={algorithm!r} is not an algorithm of stable_baselines3 or sb3_contrib (e.g. "
                         "'PPO', 'A2C', 'RecurrentPPO'); pass the algorithm class itself")
    if isinstance(algorithm, type) and issubclass(algorithm, BaseAlgorithm):
        return algorithm
    raise TypeError(f"{name} must be an SB3 algorithm class or its name (e.g. PPO or 'PPO'), got {algorithm!r}")


def saved_algorithm(name: str, given: type[BaseAlgorithm] | str | None) -> type[BaseAlgorithm]:
    """The algorithm of a saved run: ``given``, which must be the one saved, or found by its saved name."""
    if given is not None:
        algorithm = resolve_algorithm(given)
        if algorithm.__name__ != name:
            raise ValueError(f"this run trained {name}, not {algorithm.__name__}")
        return algorithm
    try:
        return resolve_algorithm(name)
    except (ValueError, TypeError):
        raise ValueError(f"this run trained {name!r}, which is not an algorithm of SB3 or sb3_contrib: pass "
                         "algorithm=the class") from None


def options(value: bool | Mapping[str, Any] | None, defaults: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """``True`` -> the defaults; ``False``/None -> None; a mapping -> the defaults updated by it."""
    if value is None or value is False:
        return None
    if value is True:
        return dict(defaults)
    if isinstance(value, Mapping):
        return {**defaults, **value}
    raise TypeError(f"{name} must be True, False or a mapping of its arguments, got {value!r}")


#: the algorithm's arguments that ComplementaryRL sets from its own (passed in ``algorithm_kwargs`` they
#: clashed: SB3's "got multiple values", or one silently replaced)
OWN_ARGUMENTS = ("policy", "env", "seed", "policy_kwargs", "tensorboard_log")


def check_run_arguments(algorithm_kwargs: Mapping[str, Any] | None, tensorboard_log: Any,
                        own: tuple[str, ...] = OWN_ARGUMENTS) -> None:
    """Refuse ``algorithm_kwargs`` naming an argument the run sets from its own (``own``: ``seed=``,
    ``policy_kwargs=``...), and a ``tensorboard_log`` that is no path (SB3 found an int only at ``learn``).

    >>> check_run_arguments({"seed": 3}, None)
    Traceback (most recent call last):
    ...
    ValueError: algorithm_kwargs names seed, which ComplementaryRL sets from its own argument: pass seed=... to ComplementaryRL
    """
    if algorithm_kwargs is not None:
        if not isinstance(algorithm_kwargs, Mapping):
            raise TypeError(f"algorithm_kwargs must be a mapping of the algorithm's arguments, got {algorithm_kwargs!r}")
        clash = [k for k in own if k in algorithm_kwargs]
        if clash:
            raise ValueError(f"algorithm_kwargs names {', '.join(clash)}, which ComplementaryRL sets from its own "
                             f"argument: pass {', '.join(f'{k}=...' for k in clash)} to ComplementaryRL")
    if tensorboard_log is not None and not isinstance(tensorboard_log, str | os.PathLike):
        raise TypeError(f"tensorboard_log must be a folder's path or None, got {tensorboard_log!r}")


def check_given_bank(bank: Any, experience: bool, bank_kwargs: Mapping[str, Any] | None) -> None:
    """``ComplementaryRL(bank=...)``: an ExperienceBank no manager serves, experience on, no ``bank_kwargs`` (which
    build the run's own bank: with one given they would be saved as its settings and never applied)."""
    if bank is not None and not experience:
        raise ValueError("a bank was given with experience=False: the run would never use it")
    if bank is not None and not isinstance(bank, ExperienceBank):
        raise TypeError(f"bank must be an ExperienceBank, got {type(bank).__name__}")
    if bank is not None and (bank_kwargs or bank.manager is not None):  # (a closed manager lets its bank go)
        raise ValueError(f"bank_kwargs {dict(bank_kwargs or {})} build the run's own bank, and a bank was given: build it "
                         "with them" if bank_kwargs else "this bank is already served by a manager (another run's?): a run "
                         "stops its bank's manager at close(); give each run a bank of its own (ExperienceBank() or .load(folder))")


def check_seed(seed: Any) -> int:
    """The run's seed: an int in ``[0, 2**31)``; None draws one at random (logged, and saved with the run).

    Raises:
        TypeError: not an int (a bool, a float, a string).
        ValueError: an int outside the range.
    """
    if seed is None:
        drawn = int(np.random.SeedSequence().entropy % SEED_LIMIT)  # type: ignore[operator]  # entropy is an int here
        log.info("seed=None: this run draws seed %d (saved with the run)", drawn)
        return drawn
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int (or None for a random one), got {seed!r}")
    if not 0 <= int(seed) < SEED_LIMIT:
        raise ValueError(f"seed must be an int in [0, 2**31), got {seed!r}")
    return int(seed)


def user_callbacks(callback: Any) -> list[Any]:
    """``learn(callback=...)`` as a list of SB3 callbacks, taking what SB3's ``learn`` takes: None,
    a callback, a list of callbacks, or a function ``(locals, globals) -> bool`` (wrapped as SB3
    wraps it, in a ``ConvertCallback``).

    Raises:
        TypeError: anything else (a str, a list holding a non-callback), named.

    >>> [type(c).__name__ for c in user_callbacks(lambda loc, glob: True)], user_callbacks(None)
    (['ConvertCallback'], [])
    """
    from stable_baselines3.common.callbacks import BaseCallback, ConvertCallback

    if callback is None:
        return []
    if isinstance(callback, BaseCallback):
        return [callback]
    if isinstance(callback, (list, tuple)):
        bad = [c for c in callback if not isinstance(c, BaseCallback)]
        if bad:
            raise TypeError(f"callback: a list must hold SB3 callbacks (BaseCallback), got {bad[0]!r}")
        return list(callback)
    if callable(callback):
        return [ConvertCallback(callback)]
    raise TypeError(f"callback must be an SB3 callback, a list of them or a function (locals, globals) -> bool, "
                    f"got {type(callback).__name__} {callback!r}")


def check_demonstrations(demonstrations: Any) -> int | list[Any]:
    """An int >= 0 (that many scripted demonstrations) or a list of demonstrations.

    Each item is a :class:`~integrations.demos.Demonstration`, or what
    :func:`~integrations.demos.as_demonstration` turns into one (a dict of observations and
    actions, an ``imitation`` trajectory); the list returned holds Demonstration objects.

    Raises:
        TypeError: a bool, a float, a string, a mapping or another non-sequence.
        ValueError: a negative count, or an item that is no demonstration (named by its index).
    """
    if isinstance(demonstrations, (bool, np.bool_)):
        raise TypeError(f"demonstrations must be an int >= 0 or a sequence of demonstrations, got {demonstrations!r}")
    if isinstance(demonstrations, (int, np.integer)):
        if demonstrations < 0:
            raise ValueError(f"demonstrations must be an int >= 0 or a sequence of demonstrations, "
                             f"got {demonstrations!r}")
        return int(demonstrations)
    if isinstance(demonstrations, (str, bytes, Mapping)) or not isinstance(demonstrations, Iterable):
        raise TypeError(f"demonstrations must be an int >= 0 (that many scripted ones) or a sequence of "
                        f"Demonstration objects, got {type(demonstrations).__name__} {demonstrations!r}")
    from integrations.demos.trajectories import Demonstration, as_demonstration

    out: list[Demonstration] = []
    for i, item in enumerate(demonstrations):
        if isinstance(item, (str, bytes, int, float, np.number)) or item is None:
            raise ValueError(f"demonstrations[{i}] is {item!r}, not a demonstration (a Demonstration, or a dict "
                             "of observations and actions)")
        try:
            out.append(as_demonstration(item))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"demonstrations[{i}] is not a demonstration: {exc}") from exc
    return out


def check_open(closed: bool, what: str) -> None:
    """Refuse ``what`` (``"learn"``, ``"evaluate"``; a task-scope run's ``"save"``) on a run that was closed.

    A run-scope run still saves once closed (its memory lives in this process); a task-scope run does
    not: its manager's learner stopped at ``close()`` with the extractor's state."""
    if closed and what == "save":
        raise RuntimeError("this run is closed: it cannot save (its manager's learner stopped at close() with the "
                           "extractor's state): save before close()")
    if closed:
        raise RuntimeError(f"this run is closed: it cannot {what} (its envs are closed); save it before close() and "
                           "load the save (ComplementaryRL.load) to go on")


def to_json(value: Any, name: str) -> Any:
    """``value`` as plain JSON for ``method.json``; classes and functions as references to their names.

    Tuples become lists, numpy scalars and numeric arrays Python numbers and lists.

    >>> to_json({"net_arch": (8, 8), "lr": np.float32(0.5)}, "policy_kwargs")
    {'net_arch': [8, 8], 'lr': 0.5}

    Raises:
        TypeError: naming the setting (``name``, e.g. ``algorithm_kwargs['learning_rate']``)
            that cannot be saved so that it loads.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) and isinstance(value.item(), (bool, int, float)):
        return value.item()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value.tolist()
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str) or key == OBJECT_KEY:
                raise TypeError(f"{name} has the key {key!r}: method.json holds mappings with string keys only "
                                f"(and none named {OBJECT_KEY!r}), so this run cannot be saved")
            out[key] = to_json(item, f"{name}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [to_json(item, f"{name}[{i}]") for i, item in enumerate(value)]
    ref = _reference(value)
    if ref is not None:
        if ref.startswith("__main__:"):
            warnings.warn(f"{name} is saved as {ref}: a run loads it only where __main__ defines "
                          f"{ref.split(':', 1)[1]} again (the script that saved it); define it in a module to load "
                          "the run anywhere", UserWarning, stacklevel=2)
        return {OBJECT_KEY: ref}
    plain = _plain_object(value, name)
    if plain is not None:
        return plain
    if callable(value) and not (isinstance(value, type) or inspect.isroutine(value)):  # an object that calls
        raise TypeError(f"{name} = {value!r} ({type(value).__name__}) cannot be saved in method.json: an object is "
                        "saved as its importable class and constructor arguments, where its attributes are exactly "
                        "those arguments (SB3's LinearSchedule), and this one's are not (a key encoder's projection, "
                        "a functools.partial); a key encoder given as its class (key_encoder=FlatKeyEncoder, built "
                        "from the observation space) saves by name")
    if callable(value):
        raise TypeError(f"{name} = {value!r} cannot be saved in method.json: a callable is saved by its importable "
                        "name, and a lambda or a function or class defined inside another has none (a learning-rate "
                        "schedule?); use a constant, or a function or class defined at the top of a module")
    raise TypeError(f"{name} = {value!r} ({type(value).__name__}) cannot be saved in method.json, which holds "
                    "numbers, strings, lists, mappings and importable classes or functions only")


def from_json(value: Any, name: str) -> Any:
    """The inverse of :func:`to_json`: references imported again.

    Raises:
        ValueError: a reference that cannot be imported here, naming the setting.
    """
    if isinstance(value, dict):
        if set(value) == {OBJECT_KEY}:
            return _resolve(value[OBJECT_KEY], name)
        if set(value) == {OBJECT_KEY, ARGUMENTS_KEY} and isinstance(value[ARGUMENTS_KEY], dict):
            cls = _resolve(value[OBJECT_KEY], name)
            try:
                return cls(**from_json(value[ARGUMENTS_KEY], name))
            except Exception as exc:  # a class changed since the save: name the setting
                raise ValueError(f"method.json: {name} cannot be rebuilt as {value[OBJECT_KEY]}"
                                 f"({value[ARGUMENTS_KEY]}) ({type(exc).__name__}: {exc})") from exc
        return {k: from_json(v, f"{name}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v, f"{name}[{i}]") for i, v in enumerate(value)]
    return value


def settings_to_json(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting as plain JSON (:func:`to_json`, each named by its key)."""
    return {key: to_json(value, key) for key, value in settings.items()}


def warn_unsavable(settings: Mapping[str, Any], stacklevel: int = 3) -> None:
    """Warn, at construction, of a setting that a save could not write (naming it, as the refusal at
    ``save()`` will): the run trains as asked (an SB3 ``get_linear_fn`` schedule, a key encoder
    object), and the warning comes before the training, not after it."""
    try:
        settings_to_json(settings)
    except TypeError as exc:
        warnings.warn(f"{exc}. The run trains; its save() will refuse this setting (the model alone saves with "
                      "run.model.save)", UserWarning, stacklevel=stacklevel)


def settings_from_json(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting from ``method.json`` (:func:`from_json`, each named by its key)."""
    return {key: from_json(value, key) for key, value in settings.items()}


def _reference(value: Any) -> str | None:
    """``"module:qualname"`` of a class or function that importing that name gives back, else None."""
    if not (isinstance(value, type) or inspect.isfunction(value) or inspect.isbuiltin(value)):
        return None
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
    if not isinstance(module, str) or not qualname or "<" in qualname:
        return None
    ref = f"{module}:{qualname}"
    try:
        found = _resolve(ref, "")
    except ValueError:
        return None
    return ref if found is value else None


def _plain_object(value: Any, name: str) -> dict[str, Any] | None:
    """``value`` as its class's reference and its constructor's arguments, where its attributes are
    exactly those arguments and rebuilding it from them gives the same attributes; else None."""
    cls = type(value)
    ref = _reference(cls)
    attributes = getattr(value, "__dict__", None)
    if ref is None or not isinstance(attributes, dict):
        return None
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    if set(params) != set(attributes) or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
        return None
    try:
        arguments = {key: to_json(item, f"{name}.{key}") for key, item in attributes.items()}
        rebuilt = cls(**from_json(arguments, name))
        same = {key: to_json(item, key) for key, item in vars(rebuilt).items()} == arguments
    except Exception:  # noqa: BLE001 - whatever fails, the object is not one that saves as its arguments
        return None
    return {OBJECT_KEY: ref, ARGUMENTS_KEY: arguments} if same else None


def _resolve(ref: Any, name: str) -> Any:
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise ValueError(f"method.json: {name} is a damaged reference {ref!r} (expected 'module:name')")
    module_name, qualname = ref.split(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"method.json names {ref} for {name}, which cannot be imported here ({exc}): define or "
                         "import it where the run is loaded") from exc
    return obj


#: load overrides that the saved files decide: one that differs from the saved value is refused
RESTORED_ON_LOAD: dict[str, str] = {
    "experience": "whether the run has experience is the saved run's",
    "policy": "the policy is the saved model's (model.zip)",
    "policy_kwargs": "the policy's settings are the saved model's (model.zip)",
    "bank_kwargs": "the bank's config is restored with its entries",
    "ingest_kwargs": "a loaded run does not ingest its demonstrations again (the saved bank holds them)",
}
#: mapping settings a load override updates (key by key, over the saved mapping)
UPDATED_ON_LOAD = ("wrapper_kwargs", "manager_kwargs", "callback_kwargs", "algorithm_kwargs")


def load_arguments(saved: Mapping[str, Any], overrides: Mapping[str, Any], accepted: Iterable[str], *,
                   restored: Mapping[str, str] = RESTORED_ON_LOAD, updated: Iterable[str] = UPDATED_ON_LOAD
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The constructor's arguments for a loaded run and the keyword arguments of the algorithm's ``load``:
    the one load-override rule of both scopes.

    Args:
        saved: the settings of ``method.json`` as written (plain JSON, before :func:`settings_from_json`).
        overrides: what the caller passed to ``load``.
        accepted: the constructor's argument names.
        restored: the settings the saved files decide, each with why (the task scope's:
            :data:`RESTORED_ON_LOAD`; the run scope names every setting its memory, envs and
            policy are built from).
        updated: the mapping settings an override updates key by key (:data:`UPDATED_ON_LOAD`).

    Every override is applied or refused by name: those of ``restored`` must equal the saved
    value (a file of an earlier version that lacks one takes it as given); those of ``updated``
    update the saved mapping (``algorithm_kwargs``, ``tensorboard_log`` and ``verbose`` also go
    to the algorithm's ``load``, over the saved model's: a loaded model is the saved one); the
    others replace the saved value (a new ``seed`` leaves the saved extractor's seed as saved).
    ``demonstrations`` are the caller's to handle.

    Raises:
        TypeError: an unknown name, or a mapping setting given as something else.
        ValueError: an override the saved files decide, different from the saved value.
    """
    accepted = set(accepted) - {"env", "algorithm", "add_demonstrations", "self", "scope"}
    unknown = sorted(set(overrides) - accepted)
    if unknown:
        raise TypeError(f"ComplementaryRL.load got {unknown}, which are not settings of a run "
                        f"(those are {sorted(accepted)})")
    updated = tuple(updated)
    kwargs = settings_from_json(saved)
    load_kwargs: dict[str, Any] = {}
    for name, value in overrides.items():
        if name in restored:
            if name in saved and json_or_none(list(value) if isinstance(value, range) else value, name) != saved[name]:
                raise ValueError(f"ComplementaryRL.load cannot apply {name}={value!r}: {restored[name]} "
                                 f"(saved: {saved[name]!r}); build a new run to change it")
        elif name in updated:
            if not isinstance(value, Mapping):
                raise TypeError(f"{name} must be a mapping, got {value!r}")
            kwargs[name] = {**(kwargs.get(name) or {}), **value}
            if name == "algorithm_kwargs":
                load_kwargs.update(value)
            continue
        elif name in ("tensorboard_log", "verbose"):
            load_kwargs[name] = value
        kwargs[name] = value
    manager_kwargs = dict(kwargs.get("manager_kwargs") or {})
    if "manager_kwargs" in accepted and "seed" in overrides and "seed" in saved and "seed" not in manager_kwargs \
            and "seed" not in (manager_kwargs.get("extractor") or {}):
        # the saved extractor was seeded by the saved run's seed; a restore must find the same config
        kwargs["manager_kwargs"] = {**manager_kwargs, "extractor": {**(manager_kwargs.get("extractor") or {}),
                                                                    "seed": saved["seed"]}}
    return kwargs, load_kwargs


def json_or_none(value: Any, name: str) -> Any:
    """``value`` as ``method.json`` would hold it, or a marker equal to nothing saved (it cannot be saved)."""
    try:
        return to_json(value, name)
    except TypeError:
        return object()  # cannot be saved: equal to no saved value
