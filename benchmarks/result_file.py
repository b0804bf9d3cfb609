"""A benchmark's result file: written in one place, one way (indented JSON, its folder made)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["write_result"]


def write_result(path: Path, result: Any) -> Path:
    """Write ``result`` as indented JSON to ``path``, making its folder if needed, and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")
    return path
