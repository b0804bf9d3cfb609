"""``ExperimentalComplementaryRL``: the method in one object, trained with :class:`ExperimentalCRLCallback`."""

from __future__ import annotations

from ..method import ComplementaryRL
from .callback import ExperimentalCRLCallback

__all__ = ["ExperimentalComplementaryRL"]


class ExperimentalComplementaryRL(ComplementaryRL):
    """:class:`~integrations.sb3.ComplementaryRL` whose ``callback_kwargs`` build an :class:`ExperimentalCRLCallback`.

    So ``callback_kwargs`` may hold ``prior_weight`` and ``distill_coef``, and
    ``wrapper_kwargs={"experimental": {"value_baseline": True}}`` gets its ``V(s0)``. Pass
    ``policy=ActionPriorPolicy`` with ``wrapper_kwargs={"experimental": {"action_prior": True}}``
    for the action prior. Saved with :meth:`save` as the main object's runs are; load such a run
    with ``ExperimentalComplementaryRL.load`` (``ComplementaryRL.load`` refuses its
    ``callback_kwargs``).

    >>> ExperimentalComplementaryRL.callback_class.__name__
    'ExperimentalCRLCallback'
    """

    callback_class = ExperimentalCRLCallback
