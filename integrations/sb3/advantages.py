"""Per-subgroup advantage normalisation (guided and free normalised separately).

The rule lives in the core, :func:`experience_wrappers.advantages.regroup_advantages`
(plain numpy, usable without SB3); it is re-exported here, where SB3 users look for it.
"""

from __future__ import annotations

from experience_wrappers.advantages import regroup_advantages

__all__ = ["regroup_advantages"]
