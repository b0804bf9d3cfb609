"""Write ``docs/api.md``, the API reference, from the public names' docstrings.

Run ``python docs/make_api.py`` after changing a public signature or docstring. The page holds
each name of the modules' ``__all__`` with its signature and docstring (the ``>>>`` examples
left out: they run as doctests in the modules themselves); a name documented under an earlier
module (a front door's, again in the module that defines it) points there.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

#: each package's front door, then the modules that define what a user imports second
MODULES = ("experience_wrappers", "experience_wrappers.bank", "experience_wrappers.manager", "experience_wrappers.keys",
           "experience_wrappers.errors", "experience_wrappers.schedule", "experience_wrappers.advantages",
           "experience_wrappers.rollin", "experience_wrappers.inspect",
           "experience_wrappers.trials", "experience_wrappers.manager.entry_layout", "experience_wrappers.trials.memory",
           "experience_wrappers.trials.wrapper", "experience_wrappers.trials.novelty",
           "experience_wrappers.trials.trial_index", "experience_wrappers.trials.run_best",
           "experience_wrappers.trials.goal_locator",
           "experience_wrappers.trials.nearest_success",
           "integrations.sb3", "integrations.sb3.run_scope", "integrations.sb3.self_imitation", "integrations.sb3.evaluation",
           "integrations.sb3.experience_features", "integrations.sb3.vec_env", "integrations.sb3.run_persistence",
           "integrations.sb3.rollin_callbacks", "integrations.sb3.env_families", "integrations.sb3.trials_method",
           "integrations.sb3.trials_features", "integrations.sb3.trials_imitation",
           "integrations.sb3.trials_evaluation",
           "integrations.minihack", "integrations.metaworld", "integrations.metaworld.keys", "integrations.demos", "experience_wrappers.experimental",
           "integrations.sb3.experimental")
OUT = Path(__file__).resolve().parent / "api.md"


def _doc(obj: object) -> str:
    """The docstring without its ``>>>`` examples (each runs until a blank line)."""
    lines, skipping = [], False
    for line in inspect.cleandoc(inspect.getdoc(obj) or "(no docstring)").splitlines():
        if line.lstrip().startswith(">>>"):
            skipping = True
        elif skipping and not line.strip():
            skipping = False
        if not skipping:
            lines.append(line)
    return "\n".join(lines).strip()


def _signature(name: str, obj: object) -> str:
    try:
        text = f"{name}{inspect.signature(obj)}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return name
    # a set's order changes with the hash seed from run to run: write its items sorted
    return re.sub(r"frozenset\(\{([^{}]*)\}\)",
                  lambda m: "frozenset({" + ", ".join(sorted(m.group(1).split(", "))) + "})", text)


def render(modules: tuple[str, ...] = MODULES) -> str:
    out = ["# API reference", "",
           "Generated from the docstrings by `python docs/make_api.py`; the public names of each module",
           "(its `__all__`). Examples are in the docstrings themselves, in [quickstart](quickstart.md) and",
           "in `examples/`.", ""]
    shown: dict[int, str] = {}  # id(object) -> where it was documented first
    for mod_name in modules:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError as exc:  # an optional extra that is not installed
            out += [f"## `{mod_name}`", "", f"(not importable here: {exc})", ""]
            continue
        out += [f"## `{mod_name}`", "", _doc(mod).split("\n\n")[0], ""]
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if id(obj) in shown:  # a front door's name, again in the module that defines it
                out += [f"### `{mod_name}.{name}`", "", f"The same object as `{shown[id(obj)]}` (above).", ""]
                continue
            shown[id(obj)] = f"{mod_name}.{name}"
            kind = "class" if inspect.isclass(obj) else "def"
            out += [f"### `{mod_name}.{name}`", "", "```text", f"{kind} {_signature(name, obj)}", "```", "",
                    _doc(obj), ""]
            if inspect.isclass(obj):
                for meth_name, meth in inspect.getmembers(obj):
                    if meth_name.startswith("_") or meth_name not in vars(obj):
                        continue
                    if inspect.isfunction(meth) and meth.__doc__:
                        out += [f"- `{_signature(meth_name, meth)}`: {_doc(meth).splitlines()[0]}"]
                out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
    sys.exit(0)
