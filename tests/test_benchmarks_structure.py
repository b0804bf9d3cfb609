"""The structure figures (benchmarks/perf/structure.py) find what they say they find."""

from __future__ import annotations

from pathlib import Path

from benchmarks.perf.structure import measure


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_circles_private_accesses_and_lines_are_found_and_experimental_parts_left_out(tmp_path: Path) -> None:
    _write(tmp_path, "experience_wrappers/__init__.py", "")
    _write(tmp_path, "experience_wrappers/a.py", "from .b import g\n\ndef f(x):\n    return x._hidden\n")
    _write(tmp_path, "experience_wrappers/b.py", "from . import a\n\ndef g():\n    return 1\n")
    _write(tmp_path, "experience_wrappers/c.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                                 "    from .a import f\n\nclass C:\n    def __init__(self):\n"
                                                 "        self._own = 1\n\n    def same(self, other):\n"
                                                 "        return other._own\n")
    _write(tmp_path, "experience_wrappers/experimental/__init__.py", "x = 1\n" * 1000)
    _write(tmp_path, "integrations/__init__.py", "")
    res = measure(tmp_path)
    assert res["import_circles"] == [["experience_wrappers.a", "experience_wrappers.b"]]  # c's import is for types only
    assert res["private_accesses_by_file"] == {"experience_wrappers/a.py": ["4: _hidden"]}  # c reads its own name
    assert res["main_path_lines"] == 4 + 4 + 10 and res["over_limit"] == {}


def test_lines_are_counted_by_kind_and_the_kinds_add_up_to_the_lines(tmp_path: Path) -> None:
    _write(tmp_path, "experience_wrappers/__init__.py", "")
    _write(tmp_path, "experience_wrappers/a.py", '''"""Module doc,
on two lines."""

# a comment
def f(x):
    """One line."""
    s = """not a docstring"""
    return x  # a trailing comment is code
''')
    _write(tmp_path, "integrations/__init__.py", "")
    res = measure(tmp_path)
    assert res["lines_by_kind"] == {"code": 3, "docstring": 3, "comment": 1, "blank": 1}
    assert sum(res["lines_by_kind"].values()) == res["main_path_lines"]
