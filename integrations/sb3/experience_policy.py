"""The policy for experience-wrapped observations: SB3's ``MultiInputPolicy`` that says so
when it is given an observation without its experience."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import CombinedExtractor

from .experience_features import refuse_small_images

__all__ = ["ExperiencePolicy", "check_wrapped_observation"]


def check_wrapped_observation(observation: Any, observation_space: spaces.Space) -> None:
    """Raise a ``ValueError`` that names the remedy when ``observation`` is not the Dict of
    ``observation_space`` (an env's own observation given to a policy that reads experience).

    >>> space = spaces.Dict({"obs": spaces.Box(0, 1, (2,)), "experience": spaces.Box(0, 1, (3,))})
    >>> check_wrapped_observation({"obs": np.zeros(2), "experience": np.zeros(3)}, space)
    >>> check_wrapped_observation(np.zeros(2), space)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: this policy reads observations wrapped with their experience (a dict with keys ['experience', 'obs']) but was given an ndarray of shape (2,), the env's own observation. ...
    """
    if not isinstance(observation_space, spaces.Dict):
        return
    keys = sorted(observation_space.spaces)
    if isinstance(observation, dict):
        missing = sorted(set(keys) - set(observation))
        if not missing:
            return
        given = f"a dict without the keys {missing}"
    else:
        shape = getattr(observation, "shape", None)
        given = f"{'an' if isinstance(observation, np.ndarray) else 'a'} {type(observation).__name__}" + (
            f" of shape {tuple(shape)}" if shape is not None else "")
        given += ", the env's own observation"
    raise ValueError(
        f"this policy reads observations wrapped with their experience (a dict with keys {keys}) but was "
        f"given {given}. Step the env through ExperienceWrapper / ExperienceVecEnv with its bank: "
        "`load_crl(folder, env)` restores the bank onto an env built as for training, "
        "`ComplementaryRL.load(folder)` restores the whole run (then `run.evaluate()`), and "
        "`evaluate_with_and_without_experience(model, env)` reports both conditions. "
        "A model loaded with PPO.load alone has no bank.")


class ExperiencePolicy(MultiInputActorCriticPolicy):
    """SB3's ``MultiInputPolicy`` (for PPO and A2C) that checks its input: an env's own
    observation, given where the experience-wrapped Dict is expected (``model.predict(obs)``
    on a model loaded without its env), raises a ``ValueError`` that says how to restore the
    experience, instead of SB3's ``IndexError``. :class:`~integrations.sb3.ComplementaryRL`
    builds its models with it; ``PPO(ExperiencePolicy, env)`` does the same by hand."""

    def __init__(self, observation_space: spaces.Dict, action_space: spaces.Space, lr_schedule: Any,
                 *args: Any, **kwargs: Any) -> None:
        if kwargs.get("features_extractor_class", CombinedExtractor) is CombinedExtractor and isinstance(
                observation_space, spaces.Dict):  # (SB3's default reader: a NatureCNN for each image key)
            refuse_small_images(observation_space, "give policy_kwargs={'features_extractor_class': ...} an extractor "
                                "for small images, or crl_policy_kwargs(MyCNN) (the reader with your CNN)")
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    # (SB3's arguments, as the docs and help() show them)
    __init__.__signature__ = inspect.signature(MultiInputActorCriticPolicy.__init__)  # type: ignore[attr-defined]

    def obs_to_tensor(self, observation: Any) -> tuple[th.Tensor | dict[str, th.Tensor], bool]:
        check_wrapped_observation(observation, self.observation_space)
        return super().obs_to_tensor(observation)
