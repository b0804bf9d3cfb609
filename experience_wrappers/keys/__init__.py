"""Frozen query encoders: observation (and task id) -> key vector."""

from .base import KeyEncoder, batch_flatten, flat_dim, normalise_rows
from .callable import CallableKeyEncoder
from .flat import FlatKeyEncoder, default_run_keys
from .random_projection import RandomProjectionKeyEncoder

__all__ = [
    "KeyEncoder",
    "RandomProjectionKeyEncoder",
    "CallableKeyEncoder",
    "FlatKeyEncoder",
    "default_run_keys",
    "batch_flatten",
    "flat_dim",
    "normalise_rows",
]
