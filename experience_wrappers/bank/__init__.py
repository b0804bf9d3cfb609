"""The experience bank: stable-id entries, HNSW retrieval, utility, merge, eviction, persistence."""

from .bank import ExperienceBank
from .config import BankConfig
from .provenance import Provenance
from .replica import BankReplica
from .results import AddResult, MergeResult, QueryResult
from .transaction import RWLock

__all__ = [
    "ExperienceBank",
    "BankConfig",
    "Provenance",
    "AddResult",
    "QueryResult",
    "MergeResult",
    "RWLock",
    "BankReplica",
]
