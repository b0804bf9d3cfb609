"""``ExperienceWrapper``: experience retrieval, injection and episode recording for one env."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Literal, SupportsFloat, TypeVar, overload

import attrs
import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs

from ..bank import ExperienceBank
from ..keys.base import add_batch_axis
from ..manager import ExperienceManager
from ..manager.sharing import hold, let_go, released_if_refused
from ..validators import check_int
from .env_checks import (
    check_finite_observation,
    check_not_in_vector_worker,
    env_name,
    reward_row,
    warn_drifting_keys,
)
from .injector import ExperienceInjector
from .options import ExperienceOptions
from .spaces import EXPERIENCE_KEYS, base_parts

if TYPE_CHECKING:  # run scope's wrapper subclasses this one: names for the type checker only
    from ..trials.memory import TrialMemory
    from ..trials.wrapper import RunScopeWrapper

__all__ = ["ExperienceWrapper", "SCOPES", "check_not_wrapped"]

_ROW_0 = np.zeros(1, dtype=np.int64)  # this env's row in its injector (of one env)
_ROW_0.setflags(write=False)

_W = TypeVar("_W", bound="ExperienceWrapper")

#: the scopes of experience: ``"task"`` (entries keyed by task, kept across episodes) and ``"run"``
#: (a run's trials of one instance read only that run's earlier trials)
SCOPES = ("task", "run")


def check_not_wrapped(env: gym.Env, what: str) -> None:
    """Refuse an env that is already experience-wrapped (in either scope): two wrappers would each
    record, retrieve and credit the same episodes, and the outer one would read the inner one's keys.

    Raises:
        ValueError: an :class:`ExperienceWrapper` lies below ``env``'s top.
    """
    inner: Any = env
    while isinstance(inner, gym.Wrapper):
        if isinstance(inner, ExperienceWrapper):
            raise ValueError(f"{what}: the env is already wrapped in {inner.scope} scope's ExperienceWrapper; "
                             "wrap it once, in one scope")
        inner = inner.env


class ExperienceWrapper(gym.Wrapper, RecordConstructorArgs):
    """Show retrieved experience to the agent and hand finished episodes to the manager, in either scope.

    ``ExperienceWrapper(env, bank)`` is the task scope, described here.
    ``ExperienceWrapper(env, memory, scope="run", instances=..., trials=K)`` is the run scope: the
    env replays one instance for runs of ``K`` trials and a guided trial reads only its run's
    earlier trials (a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`, a subclass,
    on a :class:`~experience_wrappers.trials.TrialMemory`; its arguments are documented there).
    ``wrapper.scope`` says which; both have :attr:`manager` and :attr:`bank`.

    At each reset the episode is drawn experience-guided (probability
    ``manager.guided_ratio``, scheduled by :class:`~integrations.sb3.CRLCallback`) or
    experience-free. Guided episodes retrieve ``k`` entries at reset and every
    ``retrieve_every`` steps; free ones show zeros with mask 0. The observation becomes a
    Dict: the original observation (its own keys if it was a Dict, else under
    ``"observation"``) plus ``experience`` ``(k, d)``, ``experience_utility`` ``(k,)``,
    ``experience_mask`` ``(k,)`` (one key instead, the shown entries' mean, for SB3's default
    policy: the experimental :class:`~experience_wrappers.experimental.CompactExperience` on top).
    ``info`` carries ``experience_guided``,
    ``experience_ids`` (the entries shown in the observation the action was taken
    from; after a re-retrieval the returned observation may show others) and, at an
    episode's end, ``experience_outcome``. The wrapper trains nothing.

    Retrieval is the wrapper's own (``injector.retriever``, a
    :class:`~experience_wrappers.wrappers.retrieval.Retriever` on the key encoder and the
    bank). Every wrapper on one bank shares one :class:`ExperienceManager`, :attr:`manager`,
    which receives the finished episodes (created on first use; pass ``manager`` or
    ``key_encoder`` / ``manager_kwargs`` to choose). A manager created this way is closed by
    the last of its wrappers' ``close()`` (its learner process stops; the bank keeps its entries).

    Args:
        env: the env to wrap.
        bank: the experience bank.
        options: the settings, an :class:`~experience_wrappers.wrappers.ExperienceOptions`
            (shareable with :class:`~integrations.sb3.ExperienceVecEnv`).
        **kwargs: its fields, over ``options``: ``k`` (4), ``retrieve_every`` (8),
            ``key_encoder``, ``task_id`` (0), ``query_mode``
            (``"utility"``), ``filter_by_task`` (True), ``learn`` (None), ``manager``,
            ``manager_kwargs``, ``seed``, ``paired`` (False: see :class:`~experience_wrappers.wrappers.ReplayInstances`
            for what True needs); see :class:`~experience_wrappers.wrappers.ExperienceOptions`.

    What the env returns is checked at the step that returned it, and the message names the
    env (``CartPole-v1's step()``) and the step: a reward must be one finite real number of
    magnitude at most :data:`~experience_wrappers.wrappers.env_checks.MAX_ABS_REWARD` (``"1"``
    is a ``TypeError``, not 1.0); the success flag ``info["success"]`` / ``info["is_success"]``
    must be a bool, a numpy bool or 0/1 (``"False"``, NaN or ``[0, 1]`` raise at the episode's
    end instead of counting as a success: :func:`~experience_wrappers.validators.success_flag`).
    An observation with NaN or inf is refused at the step that returned it; one outside the
    space (a Discrete value out of range, a wrong shape) at the step that records it for the
    first :data:`~experience_wrappers.wrappers.injector.FULL_CHECKS` steps and at resets and
    retrievals always, then at random steps, one in
    :data:`~experience_wrappers.wrappers.injector.CHECK_EVERY` on average (so a value that comes
    back is refused in time, whatever the episodes' length).

    Raises:
        TypeError: an option of the wrong type (``learn="no"``, ``seed="abc"``), named; a
            :class:`~experience_wrappers.trials.TrialMemory` given in task scope (or a bank in run scope).
        ValueError: an option out of range (``seed=-1``); ``scope`` is not one of :data:`SCOPES`.
        RuntimeError: built inside a ``SubprocVecEnv`` worker process (``start_method="fork"``
            would give every worker a copy of the bank, which the main process never sees):
            wrap the VecEnv with :class:`~integrations.sb3.ExperienceVecEnv` instead.

    >>> env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={"mode": "sync"})
    >>> obs, info = env.reset(seed=0)
    >>> sorted(obs), obs in env.observation_space
    (['experience', 'experience_mask', 'experience_utility', 'observation'], True)
    """

    #: this wrapper's scope
    scope: ClassVar[str] = "task"
    #: the manager this wrapper holds until close() (set by task scope's __init__; run scope's memory holds none)
    _held: ExperienceManager | None = None
    #: the class of each scope but ``"task"`` (registered by ``class RunScopeWrapper(ExperienceWrapper, scope="run")``)
    scopes: ClassVar[dict[str, type[ExperienceWrapper]]] = {}

    def __init_subclass__(cls, scope: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if scope is not None:
            owner = ExperienceWrapper if scope == "task" else ExperienceWrapper.scopes.get(scope)
            if owner is not None and (owner.__module__, owner.__qualname__) != (cls.__module__, cls.__qualname__):
                raise ValueError(f"scope {scope!r} is {owner.__name__}'s: subclass {owner.__name__} to change what it "
                                 f"does ({cls.__name__} would replace it for every user)")
            cls.scope = scope
            ExperienceWrapper.scopes[scope] = cls

    @overload
    def __new__(cls: type[_W], env: gym.Env, bank: Any, *, scope: Literal["task"] = "task",
                **kwargs: Any) -> _W: ...

    @overload
    def __new__(cls, env: gym.Env, bank: Any, *, scope: Literal["run"], **kwargs: Any) -> RunScopeWrapper: ...

    def __new__(cls, *args: Any, scope: str = "task", **kwargs: Any) -> Any:
        """``scope="run"``: run scope's wrapper (:class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`)."""
        if cls is ExperienceWrapper and scope != "task":
            if scope not in SCOPES:
                raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
            from .. import trials  # noqa: F401  (registers scope="run")
            return super().__new__(cls.scopes[scope])
        return super().__new__(cls)

    def __init__(self, env: gym.Env, bank: ExperienceBank | TrialMemory, *, scope: str = "task",
                 options: ExperienceOptions | None = None, **kwargs: Any) -> None:
        from ..trials.memory import TrialMemory  # noqa: F811  (run scope's package imports this one)

        if scope != "task":  # a subclass of the task scope's wrapper asked for another scope
            raise ValueError(f"{type(self).__name__} is task scope's wrapper, got scope={scope!r}; "
                             "use ExperienceWrapper(env, memory, scope=\"run\", ...) for run scope")
        check_not_wrapped(env, type(self).__name__)
        warn_drifting_keys(env, type(self).__name__)
        base_parts(env.observation_space, EXPERIENCE_KEYS, type(self).__name__)  # (before a key encoder reads it)
        if isinstance(bank, TrialMemory):
            raise TypeError("ExperienceWrapper: a TrialMemory is run scope's memory; pass scope=\"run\" "
                            "(ExperienceWrapper(env, memory, scope=\"run\", instances=..., trials=...))")
        opts = ExperienceOptions.of(options, **kwargs)
        # every option by name, as keywords rebuild the wrapper; the bank and manager are shared
        # objects: record them, never copy them
        RecordConstructorArgs.__init__(self, _disable_deepcopy=True, bank=bank, **attrs.asdict(opts, recurse=False))
        gym.Wrapper.__init__(self, env)
        self.options = opts
        self.manager = opts.resolve_manager(bank, env.observation_space, env.action_space)
        with released_if_refused(self.manager):  # refused: the bank is left free for the next try
            if isinstance(self.manager, ExperienceManager):  # a bank of this process (not a service's), in a worker:
                check_not_in_vector_worker(type(self).__name__)  # a copy that the main process never sees
            self._source = f"{env_name(env)}'s step()"
            self.injector = ExperienceInjector(self.manager, 1, env.observation_space, opts)
            self.observation_space = self.injector.retriever.observation_space(env.observation_space)
        self._last_obs: Any = None
        self._ended = True
        self._warned_cut = False  # a reset cut an episode short (warned once)
        self._held = hold(self.manager)

    @property
    def bank(self) -> ExperienceBank:
        return self.manager.bank

    def close(self) -> None:
        """Close the env, and the manager the wrappers built where this is its last wrapper (:func:`.let_go`)."""
        held, self._held = self._held, None
        try:
            let_go(held)
        finally:
            super().close()

    def set_force_guided(self, value: bool | None) -> None:
        """Force every episode guided (True) or free (False); None restores the schedule."""
        self.injector.force_guided = value

    def _wrap(self, obs: Any) -> dict[str, Any]:
        return self.injector.retriever.observation(obs, 0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the env and draw the episode guided or free; ``seed`` (an int >= 0 or None, else
        TypeError / ValueError) also seeds the draws."""
        seed = check_int("reset(seed=...)", seed, minimum=0, numpy=True, optional=True, type_error=TypeError)
        if seed is not None:
            self.injector.rng = np.random.default_rng([seed, 0x5EED])
        inj = self.injector  # (in learn() only: an evaluation's reset cuts the last episode on purpose)
        if not self._ended and inj.in_learn and inj.learning and not self._warned_cut and int(inj.recorder.lengths[0]):
            self._warned_cut = True
            warnings.warn(f"reset() while an episode of {int(inj.recorder.lengths[0])} steps was still going "
                          "on: it is dropped, neither credited nor written, and so is every episode cut this way. A "
                          "TimeLimit (or another wrapper that ends episodes) outside the ExperienceWrapper does that: "
                          "put it inside, ExperienceWrapper(TimeLimit(env, n), bank)", UserWarning, stacklevel=2)
        obs, info = self.env.reset(seed=seed, options=options)
        check_finite_observation(obs, "reset")
        batch = add_batch_axis(obs)
        self.injector.begin(_ROW_0, batch, [info])
        self._last_obs, self._ended = batch, False
        return self._wrap(obs), {**info, **self.injector.info(0)}

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        if self._ended:
            raise RuntimeError("step() called before reset() or after the episode ended; call reset()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        check_finite_observation(obs, "step")
        inj = self.injector
        step_info = inj.info(0)
        inj.record(self._last_obs, np.asarray([action]), reward_row(reward), self._source)
        self._last_obs = batch = add_batch_axis(obs)  # (views: made once, recorded at the next step)
        if terminated or truncated:
            ep = inj.finish(0, inj.reports(info))
            step_info["experience_outcome"] = ep.outcome
            self._ended = True
        elif len(inj.due()):
            inj.retrieve(_ROW_0, batch)
        return self._wrap(obs), reward, terminated, truncated, {**info, **step_info}
