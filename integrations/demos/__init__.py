"""Demonstrations as initial experience: validate, ingest through the extractor, record, save, load."""

from .ingest import ingest_demonstrations
from .recording import load_demonstrations, record_demonstrations, save_demonstrations
from .trajectories import Demonstration, as_demonstration, as_demonstrations, validate_demonstration

__all__ = [
    "Demonstration",
    "as_demonstration",
    "as_demonstrations",
    "validate_demonstration",
    "ingest_demonstrations",
    "record_demonstrations",
    "save_demonstrations",
    "load_demonstrations",
]
