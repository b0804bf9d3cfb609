"""Frozen query encoders: observation (and task id) -> key vector."""

from .base import KeyEncoder, batch_flatten, flat_dim, normalise_rows
from .callable import CallableKeyEncoder
from .flat import FlatKeyEncoder
from .random_projection import RandomProjectionKeyEncoder

__all__ = [
    "KeyEncoder",
    "RandomProjectionKeyEncoder",
    "CallableKeyEncoder",
    "FlatKeyEncoder",
    "batch_flatten",
    "flat_dim",
    "normalise_rows",
]
