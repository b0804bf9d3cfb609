"""docs/api.md, the API reference generated from the docstrings, covers every public name."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.parametrize("module", ["experience_wrappers", "experience_wrappers.trials", "integrations.sb3"])
def test_every_public_class_and_function_is_in_the_page(module):
    import inspect

    sys.path.insert(0, str(DOCS))
    try:
        from make_api import render
    finally:
        sys.path.remove(str(DOCS))
    page = (DOCS / "api.md").read_text()
    mod = importlib.import_module(module)
    names = [n for n in mod.__all__ if inspect.isclass(getattr(mod, n)) or inspect.isfunction(getattr(mod, n))]
    missing = [n for n in names if f"### `{module}.{n}`" not in page]
    assert not missing, f"{missing} missing from docs/api.md: run python docs/make_api.py"
    assert f"### `{module}.{names[0]}`" in render((module,))
    assert ">>>" not in page  # examples stay in the docstrings (the page is collected as a doctest)
