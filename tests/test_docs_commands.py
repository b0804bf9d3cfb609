"""Every ``python -m benchmarks...`` / ``python examples/...`` command the docs give names a module or script that exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", ROOT / "examples" / "README.md",
                ROOT / "benchmarks" / "reporting" / "analysis.md", *(ROOT / "docs").glob("*.md")])


def _commands(pattern: str) -> list[tuple[str, str]]:
    return sorted({(page.relative_to(ROOT).as_posix(), m) for page in PAGES
                   for m in re.findall(pattern, page.read_text())})


@pytest.mark.parametrize(("page", "module"), _commands(r"python -m (benchmarks(?:\.[A-Za-z_]+)+)"))
def test_the_benchmark_modules_the_docs_run_exist(page: str, module: str) -> None:
    assert importlib.util.find_spec(module) is not None, f"{page} runs python -m {module}, which does not exist"


@pytest.mark.parametrize(("page", "script"), _commands(r"python (examples/[A-Za-z_]+\.py)"))
def test_the_example_scripts_the_docs_run_exist(page: str, script: str) -> None:
    assert (ROOT / script).is_file(), f"{page} runs python {script}, which does not exist"
