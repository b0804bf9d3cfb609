"""docs/api.md, the API reference generated from the docstrings, covers every public name; the
package front doors stay small and shadow nothing of Stable-Baselines3."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"

sys.path.insert(0, str(DOCS))
try:
    from make_api import MODULES, render
finally:
    sys.path.remove(str(DOCS))

#: what a user imports first (issue 35: at most 30 names in all); the rest is public in the
#: module that defines it, each of those in MODULES
FRONT_DOORS = ("experience_wrappers", "integrations.sb3", "experience_wrappers.trials")


@pytest.mark.parametrize("module", MODULES)
def test_every_public_class_and_function_is_in_the_page(module):
    try:
        mod = importlib.import_module(module)
    except ImportError:  # an optional extra that is not installed
        pytest.skip(f"{module} is not importable here")
    page = (DOCS / "api.md").read_text()
    names = [n for n in mod.__all__ if inspect.isclass(getattr(mod, n)) or inspect.isfunction(getattr(mod, n))]
    missing = [n for n in names if f"### `{module}.{n}`" not in page]
    assert not missing, f"{missing} missing from docs/api.md: run python docs/make_api.py"
    if names:
        assert f"### `{module}.{names[0]}`" in render((module,))
    assert ">>>" not in page  # examples stay in the docstrings (the page is collected as a doctest)


def test_the_front_doors_hold_at_most_30_names_and_shadow_no_sb3_name():
    names = [n for m in FRONT_DOORS for n in importlib.import_module(m).__all__]
    assert len(names) <= 30, f"{len(names)} names at the front doors: {names}"
    assert len(set(names)) == len(names), "a name at two front doors"
    sb3 = set()
    for m in ("stable_baselines3", "stable_baselines3.common.evaluation", "stable_baselines3.common.callbacks",
              "stable_baselines3.common.vec_env"):
        mod = importlib.import_module(m)
        sb3 |= set(getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")])
    assert "evaluate_policy" in sb3 and "PPO" in sb3
    assert not set(names) & sb3, f"{sorted(set(names) & sb3)} shadow Stable-Baselines3's"


def test_the_front_doors_point_to_the_modules_that_define_the_rest():
    for module in FRONT_DOORS:
        mod = importlib.import_module(module)
        assert module in MODULES and all(hasattr(mod, n) for n in mod.__all__)
    # every submodule documented on the page has the docstring whose first paragraph heads its section
    for module in MODULES:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        assert (mod.__doc__ or "").strip(), f"{module} has no module docstring"
        assert isinstance(getattr(mod, "__all__", None), list), f"{module} has no __all__"
