"""Groups of envs that replay one task instance per episode: what paired credit needs.

The paper judges experience inside groups of rollouts on the same task, half guided and
half free. Here a group is ``size`` envs of a VecEnv; :class:`ReplayInstances`, a wrapper
*below* the VecEnv, resets member ``j`` of group ``g`` for its ``n``-th episode with
``instance_seed(seed, g, n)``, so every member's ``n``-th episode starts from the same
instance. Members do not wait for each other (SB3 VecEnvs reset each env on its own, inside
``step_wait``, with no seed): episodes are paired by ``(group, n)``, not by time.

The wrapper sits below the VecEnv because that is where the auto-reset happens: SB3's
``DummyVecEnv`` and ``SubprocVecEnv`` call ``env.reset()`` with no seed when an episode ends,
and their ``seed()`` / ``set_options()`` reach only the next *full* reset. The env must give
the same instance for the same ``reset(seed=...)``, as the MiniHack factory's envs do
(:func:`~integrations.minihack.make_minihack_env`; raw ``gym.make`` MiniHack envs do not).

Each reset's info carries ``experience_instance`` (``group``, ``member``, ``size``,
``index``, ``seed``); an experience wrapper with ``paired=True`` reads it to draw the
episode guided or free and to tag the finished episode for
:class:`~experience_wrappers.credit.PairedCredit`.

The same groups serve the run scope (:class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`):
with ``instances`` (the training or held-out reset seeds) and ``repeats`` (the trials of a
run), a group draws one of ``instances`` per run and replays it ``repeats`` times; the info
then also carries ``instance``, ``run`` and ``repeat`` (the trial's index in its run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs

from ..validators import check_instances, check_int

__all__ = ["INSTANCE_INFO_KEY", "ReplayInstances", "guided_members", "instance_seed", "paired_env_fns"]

#: the reset-info key of :class:`ReplayInstances`
INSTANCE_INFO_KEY = "experience_instance"


def instance_seed(seed: int, group: int, index: int) -> int:
    """The reset seed of group ``group``'s ``index``-th episode, in a run seeded ``seed``.

    Different for every (seed, group, index), the same wherever it is computed.

    >>> instance_seed(0, 1, 5) == instance_seed(0, 1, 5), instance_seed(0, 1, 5) == instance_seed(0, 2, 5)
    (True, False)
    """
    return int(np.random.SeedSequence([int(seed), int(group), int(index)]).generate_state(1, np.uint32)[0])


def guided_members(ratio: float, size: int) -> int:
    """How many members of a group of ``size`` are guided at guided ratio ``ratio``: the ratio
    rounded per group (halves up), kept in [1, size - 1] so that every group holds guided and
    free members.

    >>> guided_members(0.5, 4), guided_members(0.8, 4), guided_members(1.0, 4), guided_members(0.0, 2)
    (2, 3, 3, 1)
    """
    return int(min(max(np.floor(float(ratio) * size + 0.5), 1), size - 1))


class ReplayInstances(gym.Wrapper, RecordConstructorArgs):
    """Reset the env for its ``n``-th episode onto its group's ``n``-th instance.

    While :attr:`replaying` (the default), every reset, seeded or not, uses
    ``instance_seed(seed, group, n)`` (a seed given to ``reset`` is ignored: the members of a group
    must not be seeded apart, as a VecEnv's ``seed(s)`` would do with ``s + i``). The reset info gains ``experience_instance``.
    With ``instances``, the ``n``-th episode is repeat ``n % repeats`` of run ``n // repeats``,
    whose instance the group draws from ``instances`` (a generator seeded by ``(seed, group)``,
    one draw per run): every member of a group runs the same instances in the same order.

    Args:
        env: an env that gives the same instance for the same reset seed.
        group: the group index.
        member: this env's index in the group (0 .. size - 1).
        size: the group's size (>= 2: guided and free members; with ``instances``, >= 1).
        seed: the run's seed, the base of the instance seeds (>= 0).
        instances: the reset seeds runs are drawn from (None: a new instance per episode).
        repeats: episodes per run with ``instances`` (a run scope's trials).

    Attributes:
        replaying: False passes resets through as they come (a seed given is used, and no episode is
            counted): an evaluation's episodes are then its own, not the training's next instances
            (``integrations.sb3.no_learning`` switches it off for its block where ``instances`` is None).

    >>> from integrations.minihack import make_minihack_env
    >>> a = ReplayInstances(make_minihack_env("MiniHack-Room-5x5-v0"), group=0, member=0, size=2, seed=3)
    >>> b = ReplayInstances(make_minihack_env("MiniHack-Room-5x5-v0"), group=0, member=1, size=2, seed=3)
    >>> (oa, ia), (ob, ib) = a.reset(), b.reset(seed=99)
    >>> bool((oa["glyphs_crop"] == ob["glyphs_crop"]).all()), ib["experience_instance"]["index"]
    (True, 0)
    """

    def __init__(self, env: gym.Env, *, group: int, member: int, size: int, seed: int,
                 instances: Sequence[int] | None = None, repeats: int = 1) -> None:
        RecordConstructorArgs.__init__(self, group=group, member=member, size=size, seed=seed, instances=instances,
                                       repeats=repeats)
        gym.Wrapper.__init__(self, env)
        self.instances = None if instances is None else check_instances(instances)
        self.size = check_int("size", size, minimum=2 if self.instances is None else 1, numpy=True)
        self.group = check_int("group", group, minimum=0, numpy=True)
        self.member = check_int("member", member, minimum=0, maximum=self.size - 1, numpy=True)
        self.base_seed = check_int("seed", seed, minimum=0, numpy=True)
        self.repeats = check_int("repeats", repeats, minimum=1, numpy=True)
        self.episodes = 0  # the index of the next episode
        self._runs = np.random.default_rng([self.base_seed, self.group])  # the group's draw of one instance per run
        self.instance = -1
        self.replaying = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        if not self.replaying:
            return self.env.reset(seed=seed, options=options)
        index = self.episodes
        spec: dict[str, Any] = {"group": self.group, "member": self.member, "size": self.size, "index": index,
                                "seed": self.base_seed}
        if self.instances is None:
            s = instance_seed(self.base_seed, self.group, index)
        else:
            if index % self.repeats == 0:
                self.instance = self.instances[int(self._runs.integers(len(self.instances)))]
            s = self.instance
            spec.update(instance=s, run=index // self.repeats, repeat=index % self.repeats)
        obs, info = self.env.reset(seed=s, options=options)
        self.episodes += 1
        return obs, {**info, INSTANCE_INFO_KEY: spec}


def paired_env_fns(make_env: Callable[[], gym.Env], n_envs: int, group_size: int, seed: int,
                   wrapper: Callable[[gym.Env], gym.Env] | None = None) -> list[Callable[[], gym.Env]]:
    """Env constructors for a VecEnv whose envs form groups of ``group_size`` that replay instances.

    Env ``i`` is ``wrapper(ReplayInstances(make_env(), group=i // group_size,
    member=i % group_size, size=group_size, seed=seed))``; give the list to ``DummyVecEnv`` or
    ``SubprocVecEnv``. ``wrapper`` (e.g. a ``Monitor``, or an ``ExperienceWrapper`` with
    ``paired=True``) goes above the replay.

    Raises:
        ValueError: ``n_envs`` is not a multiple of ``group_size``, or ``group_size`` < 2.

    >>> len(paired_env_fns(lambda: gym.make("CartPole-v1"), 8, 4, seed=0))
    8
    >>> paired_env_fns(lambda: gym.make("CartPole-v1"), 6, 4, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: n_envs must be a multiple of group_size (4) to form groups, got n_envs=6
    """
    n_envs = check_int("n_envs", n_envs, minimum=1, numpy=True)
    group_size = check_int("group_size", group_size, minimum=2, numpy=True)
    seed = check_int("seed", seed, minimum=0, numpy=True)
    if n_envs % group_size:
        raise ValueError(f"n_envs must be a multiple of group_size ({group_size}) to form groups, got n_envs={n_envs}")

    def fn(i: int) -> Callable[[], gym.Env]:
        def make() -> gym.Env:
            env: gym.Env = ReplayInstances(make_env(), group=i // group_size, member=i % group_size,
                                           size=group_size, seed=seed)
            return wrapper(env) if wrapper is not None else env
        return make

    return [fn(i) for i in range(n_envs)]
