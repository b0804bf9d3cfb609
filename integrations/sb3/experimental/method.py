"""``ExperimentalComplementaryRL``: the method in one object, trained with :class:`ExperimentalCRLCallback`."""

from __future__ import annotations

from ..method import ComplementaryRL
from .callback import ExperimentalCRLCallback

__all__ = ["ExperimentalComplementaryRL"]


class ExperimentalComplementaryRL(ComplementaryRL):
    """:class:`~integrations.sb3.ComplementaryRL` whose ``callback_kwargs`` build an :class:`ExperimentalCRLCallback`.

    So ``wrapper_kwargs={"experimental": {"value_baseline": True}}`` gets its ``V(s0)``. Saved
    with :meth:`save` as the main object's runs are; load such a run with
    ``ExperimentalComplementaryRL.load``.

    >>> ExperimentalComplementaryRL.callback_class.__name__
    'ExperimentalCRLCallback'
    """

    callback_class = ExperimentalCRLCallback
