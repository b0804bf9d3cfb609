"""A benchmark's result file: written in one place, one way (indented JSON, its folder made), and
read in one place (:func:`read_result`: a damaged or foreign file named, not a raw traceback).

Written atomically, at the end of a run: a run stopped on the way (SIGTERM, Ctrl-C, kill -9,
a full disk) leaves no result file, or the previous one as it was, never a truncated one
that a resumed suite would take for finished.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["write_result", "read_result"]


def write_result(path: Path, result: Any, *, announce: bool = True,
                 default: Callable[[Any], Any] | None = None) -> Path:
    """Write ``result`` as indented JSON to ``path`` atomically, making its folder if needed.

    The JSON goes to a hidden temporary file beside ``path`` (flushed to disk), which then
    replaces ``path`` in one step; on any failure the temporary file is removed.
    ``announce`` prints ``wrote <path>``; ``default`` is :func:`json.dumps`'s.
    """
    path = Path(path)
    text = json.dumps(result, indent=1, default=default)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if announce:
        print(f"wrote {path}")
    return path


def read_result(path: Path, needs: tuple[str, ...] = ("arm", "seed")) -> dict[str, Any]:
    """One result file as a dict; ValueError naming it where it is not one (damaged, another JSON, or
    without the fields ``needs``)."""
    try:
        res = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a result file ({exc}): remove it, or rerun with --force") from None
    if not isinstance(res, dict) or not set(needs) <= set(res):
        raise ValueError(f"{path} is not a result file (it lacks {', '.join(needs)}): remove it, or rerun "
                         "with --force")
    return res
