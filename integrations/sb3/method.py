"""``ComplementaryRL``: the method in one object, in either scope.

``ComplementaryRL(env, ...)`` is the task scope (entries keyed by task, kept across episodes:
:class:`~integrations.sb3.task_scope.TaskScopeRL`); ``ComplementaryRL(env, scope="run",
instances=...)`` the run scope (trials of one instance read only their own run:
:class:`~integrations.sb3.run_scope.RunScopeRL`). ``ComplementaryRL.load`` reads a folder
saved by either. The overloads below give type checkers each scope's class.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, overload

import gymnasium as gym
from stable_baselines3.common.base_class import BaseAlgorithm

from .task_scope import (
    DEMO_SEED_OFFSET,
    METHOD_FILE,
    ROLLIN_DEFAULTS,
    TaskScopeRL,
    read_method_file,
)

if TYPE_CHECKING:  # the run scope's class subclasses this one: a name for the type checker only
    from .run_scope import RunScopeRL

__all__ = ["ComplementaryRL", "DEMO_SEED_OFFSET", "ROLLIN_DEFAULTS", "METHOD_FILE"]

_T = TypeVar("_T", bound="ComplementaryRL")


class ComplementaryRL(TaskScopeRL):
    __doc__ = TaskScopeRL.__doc__

    #: the class of each scope but ``"task"`` (registered by ``class RunScopeRL(ComplementaryRL, scope="run")``)
    scopes: ClassVar[dict[str, type[ComplementaryRL]]] = {}

    def __init_subclass__(cls, scope: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if scope is not None:
            ComplementaryRL.scopes[scope] = cls

    @overload
    def __new__(cls: type[_T], env: str | Callable[[], gym.Env], *, scope: Literal["task"] = "task",
                **kwargs: Any) -> _T: ...

    @overload
    def __new__(cls, env: str | Callable[[], gym.Env], *, scope: Literal["run"], **kwargs: Any) -> RunScopeRL: ...

    def __new__(cls, *args: Any, scope: str = "task", **kwargs: Any) -> Any:
        """``scope="run"``: the run-scope method (:class:`~integrations.sb3.run_scope.RunScopeRL`)."""
        if cls is ComplementaryRL and scope != "task":
            if scope not in cls.scopes:
                raise ValueError(f"scope must be 'task' or one of {sorted(cls.scopes)}, got {scope!r}")
            takes = inspect.signature(cls.scopes[scope].__init__).parameters
            unknown = sorted(set(kwargs) - set(takes))
            if unknown:
                why = " (run scope trains PPO: its entry reader and imitation are built for it)" \
                    if "algorithm" in unknown else ""
                raise TypeError(f"ComplementaryRL(scope={scope!r}) takes no {', '.join(unknown)}{why}; "
                                f"its arguments: {', '.join(k for k in takes if k not in ('self', 'env', 'scope'))}")
            return super().__new__(cls.scopes[scope])
        if cls is ComplementaryRL:  # the task scope: an argument of another scope's is named with its scope
            for other, scope_cls in cls.scopes.items():
                theirs = sorted(set(kwargs) & set(inspect.signature(scope_cls.__init__).parameters)
                                - set(inspect.signature(cls.__init__).parameters))
                if theirs:
                    # (the algorithm's own settings go to it, in either scope)
                    from stable_baselines3 import PPO

                    ppo = sorted(set(theirs) & set(inspect.signature(PPO.__init__).parameters))
                    hint = (f"; the algorithm's own ({', '.join(ppo)}) go in algorithm_kwargs here: "
                            f"algorithm_kwargs={{{', '.join(f'{k!r}: ...' for k in ppo)}}}") if ppo else ""
                    raise TypeError(f"{', '.join(theirs)}: argument(s) of scope={other!r}; pass scope={other!r} "
                                    f"(the task scope, the default, does not take them){hint}")
        return super().__new__(cls)

    @classmethod
    def load(cls, folder: str | Path, env: str | Callable[[], gym.Env] | None = None,
             algorithm: type[BaseAlgorithm] | str | None = None, **overrides: Any) -> Any:
        """Rebuild a saved run of either scope (the scope its ``method.json`` names) and restore it.

        The task scope's rules: :meth:`TaskScopeRL.load <integrations.sb3.task_scope.TaskScopeRL.load>`;
        the run scope's: :meth:`RunScopeRL.load <integrations.sb3.run_scope.RunScopeRL.load>`."""
        scope = read_method_file(Path(folder)).get("scope", "task")
        if cls is ComplementaryRL and scope in cls.scopes:
            return cls.scopes[scope].load(folder, env, algorithm, **overrides)
        return super().load(folder, env, algorithm, **overrides)
