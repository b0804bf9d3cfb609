"""Guided roll-in for SB3, the callbacks: the policy gradient off guide-acted steps, the curriculum moved.

* :class:`RollInCallback` takes the policy gradient off the steps that
  :class:`~integrations.sb3.rollin_env.GuidedRollInVecEnv` marked (advantage 0 in the rollout
  buffer, after SB3 has computed returns and advantages), advances the curriculum from the
  outcomes of roll-in episodes, and logs ``rollin/*``.
* :class:`RollInView` shows another callback the steps as the env executed them (the
  guide's actions; optionally without the ends of rolled-in episodes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from experience_wrappers.advantages import drop_guide_steps

from .guards import on_policy
from .lifecycle import restore_advantage_normalisation, turn_off_advantage_normalisation
from .rollin_env import GuidedRollInVecEnv, find_rollin

__all__ = ["RollInCallback", "RollInView"]


class RollInCallback(BaseCallback):
    """Takes the policy gradient off guide-acted steps and moves the roll-in curriculum.

    At each rollout's end (SB3 has already computed returns and advantages, so the values
    still learn from the whole trajectory, guide-acted steps included) the advantages of
    the steps marked ``info["rollin"]`` are set to 0: only policy-acted steps train the
    actor. The rollout buffer holds, for a guide-acted step, the action the *policy* chose
    there and its log-probability, not the executed one; with advantage 0 PPO's clipped
    surrogate is 0 at that sample whatever the ratio, so that is harmless for the actor
    loss (the entropy bonus still applies there, and PPO's ``approx_kl`` / ``clip_fraction``
    statistics count those samples).

    PPO normalises advantages per minibatch, which would turn the zeros into
    ``-mean / std``; so, where ``normalize_advantage`` is still on at training start, it is
    switched off for PPO's updates (the user's value while the envs step, and at the run's end) and
    the policy-acted advantages are normalised over the rollout here instead, before the zeros are
    written. Where
    :class:`~integrations.sb3.CRLCallback` already normalises per subgroup, it must come
    *before* this callback in the ``CallbackList`` (its normalisation would undo the zeros).

    Then the curriculum records the outcomes of the roll-in episodes that finished, and
    ``rollin/h``, ``rollin/success`` (the success rate at the current ``h``, or of this
    rollout's roll-in episodes when the window was just reset), ``rollin/guided_steps_fraction``,
    ``rollin/episodes`` and ``rollin/handed_over`` are logged. :attr:`history` keeps them per rollout.

    Args:
        env: the :class:`GuidedRollInVecEnv` (None: found in the training env).
    """

    def __init__(self, env: GuidedRollInVecEnv | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        if env is not None and not isinstance(env, GuidedRollInVecEnv):
            raise TypeError(f"env must be a GuidedRollInVecEnv or None, got {type(env).__name__}")
        self.env = env
        self.history: list[dict[str, Any]] = []
        self._mask = np.zeros((0, 0), dtype=bool)
        self._normalise = False

    def _init_callback(self) -> None:
        if self.env is None:
            self.env = find_rollin(self.training_env)
        buf = getattr(self.model, "rollout_buffer", None)
        if buf is None:
            raise TypeError(f"RollInCallback needs an on-policy algorithm (PPO, A2C), got {type(self.model).__name__}")
        self.env.rollin_claim = getattr(self.model, "start_time", None)  # (guards.check_rollin_order reads it)
        self._mask = np.zeros((buf.buffer_size, buf.n_envs), dtype=bool)

    def _on_training_start(self) -> None:
        # the user's setting is kept where save_crl and CRLCallback keep theirs
        self._normalise = turn_off_advantage_normalisation(self.model)

    def _on_training_end(self) -> None:
        restore_advantage_normalisation(self.model)

    def _on_rollout_start(self) -> None:
        if self._normalise:  # (after the update: the user's own setting while the envs step, as CRLCallback)
            restore_advantage_normalisation(self.model)
        self._mask[:] = False

    def _on_step(self) -> bool:
        pos = on_policy(self.model).rollout_buffer.pos
        if pos < len(self._mask):
            for e, info in enumerate(self.locals.get("infos", [])):
                self._mask[pos, e] = bool(info.get("rollin", False))
        return True

    def _on_rollout_end(self) -> None:
        assert self.env is not None
        buf = on_policy(self.model).rollout_buffer
        mask = self._mask[: buf.buffer_size, : buf.n_envs]
        buf.advantages[:] = drop_guide_steps(buf.advantages, mask, self._normalise)
        if self._normalise:  # off for PPO's update, which follows (normalised above)
            turn_off_advantage_normalisation(self.model)
        finished = self.env.pop_finished()
        cur = self.env.curriculum
        for ep in finished:
            cur.record(ep.success, ep.h)
        rate = cur.success_rate
        if rate is None and finished:
            rate = float(np.mean([ep.success for ep in finished]))
        row = {"steps": int(self.num_timesteps), "h": int(cur.h), "success": rate,
               "guided_steps_fraction": float(mask.mean()) if mask.size else 0.0,
               "episodes": len(finished), "handed_over": sum(ep.handed_over_early for ep in finished)}
        self.history.append(row)
        for key in ("h", "guided_steps_fraction", "episodes", "handed_over"):
            self.logger.record(f"rollin/{key}", row[key])
        if rate is not None:
            self.logger.record("rollin/success", rate)


class RollInView(BaseCallback):
    """Forwards every event to ``callback``, showing it the steps as the env executed them.

    SB3 hands callbacks the actions the *policy* chose (``locals["actions"]``); at a
    guide-acted step the env executed ``info["rollin_action"]`` instead. A callback that
    records what was done (self-imitation's replay of successful episodes) must see the
    executed action, or it would imitate the policy's unexecuted choice on the guide's
    path. With ``true_starts_only`` the last step of a rolled-in episode is shown as not
    done, so a callback that counts episodes (a learning-curve tracker) counts only those
    that started from a true start; do not use it for callbacks that cut episodes at ``dones``.

    Args:
        callback: the callback to forward to.
        executed_actions: replace ``actions`` at guide-acted steps by the executed ones.
        true_starts_only: hide the ends of rolled-in episodes.
    """

    def __init__(self, callback: BaseCallback, *, executed_actions: bool = True, true_starts_only: bool = False) -> None:
        super().__init__(callback.verbose)
        if not isinstance(callback, BaseCallback):
            raise TypeError(f"callback must be an SB3 BaseCallback, got {type(callback).__name__}")
        self.callback = callback
        self.executed_actions = bool(executed_actions)
        self.true_starts_only = bool(true_starts_only)

    def _init_callback(self) -> None:
        self.callback.init_callback(self.model)

    def _on_training_start(self) -> None:
        # SB3 gives every callback of a CallbackList the same locals dict; the child gets its own,
        # or the rewritten view would leak into (and be overwritten by) the other callbacks
        self.callback.on_training_start(dict(self.locals), self.globals)

    def _on_rollout_start(self) -> None:
        self.callback.on_rollout_start()

    def _on_step(self) -> bool:
        return self.callback.on_step()

    def _on_rollout_end(self) -> None:
        self.callback.on_rollout_end()

    def _on_training_end(self) -> None:
        self.callback.on_training_end()

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        infos = locals_.get("infos")
        if not infos:
            self.callback.update_locals(locals_)
            return
        view = dict(locals_)
        if self.executed_actions and "actions" in locals_ and any("rollin_action" in i for i in infos):
            actions = np.array(locals_["actions"], copy=True)
            flat = actions.reshape(len(infos), -1)
            for e, info in enumerate(infos):
                if "rollin_action" in info:
                    flat[e, 0] = info["rollin_action"]
            view["actions"] = actions
        if self.true_starts_only and "dones" in locals_ and any("rollin_episode" in i for i in infos):
            dones = np.array(locals_["dones"], copy=True)
            for e, info in enumerate(infos):
                if "rollin_episode" in info:
                    dones[e] = False
            view["dones"] = dones
        self.callback.update_locals(view)
