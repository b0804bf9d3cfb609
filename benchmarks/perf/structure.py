"""The shape of the main path, measured: the structure targets of issue 35 as figures.

``python -m benchmarks.perf.structure [--out benchmarks/results/structure.json]`` prints:

* non-test lines on the main path (``experience_wrappers/`` + ``integrations/``, the
  ``experimental`` subpackages and module not counted), and the modules over 450 lines; the
  lines by kind too (code, docstrings, comments, blank), since the target counts every line;
* import circles between files of one package: strongly connected groups of the graph of
  module-level imports (imports inside functions and under ``TYPE_CHECKING`` are not edges:
  they run after both modules exist);
* accesses to another file's private attributes: ``x._name`` where ``x`` is not ``self`` or
  ``cls`` and no class or function of the same file defines ``_name`` (an approximation by
  name: the same private name defined in both files is not counted).

A figure, not a check: the targets (<= 19,000 lines, no module over 450 lines, no circle
outside the bank's transaction code, no cross-file private access) are in the issue.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["line_kinds", "main_path_files", "measure", "main"]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("experience_wrappers", "integrations")
LIMIT = 450


def main_path_files(root: Path = ROOT) -> list[Path]:
    """The main path's Python files: both packages, experimental parts left out."""
    files = [p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))]
    return [p for p in files if "experimental" not in p.relative_to(root).parts
            and p.name != "experimental.py"]


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Modules imported at module level (relative imports resolved)."""
    out: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and not _type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    prefix = base[: len(base) - node.level + 1]
                    target = ".".join(prefix + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names)  # `from . import mod`

    visit(tree.body)
    return out


def _private_defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id.startswith("_"):
            names.add(node.id)
        elif isinstance(node, ast.arg) and node.arg.startswith("_"):
            names.add(node.arg)
    if any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in n.targets)
           for n in ast.walk(tree)):
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("_"):
                names.add(n.value)
    return names


def line_kinds(text: str, tree: ast.Module) -> dict[str, int]:
    """A module's lines by kind: ``code``, ``docstring`` (a module's, class's or function's), ``comment``, ``blank``."""
    doc: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                doc.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    kinds = dict.fromkeys(("code", "docstring", "comment", "blank"), 0)
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        kind = ("blank" if not stripped else "docstring" if number in doc else
                "comment" if stripped.startswith("#") else "code")
        kinds[kind] += 1
    return kinds


def _private_accesses(tree: ast.Module) -> list[tuple[int, str]]:
    own = _private_defined(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in own:
            continue
        out.append((node.lineno, node.attr))
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return groups


def measure(root: Path = ROOT) -> dict[str, Any]:
    """The figures for the main path under ``root``."""
    files = main_path_files(root)
    lines: dict[str, int] = {}
    trees: dict[str, ast.Module] = {}
    paths: dict[str, Path] = {}
    kinds = dict.fromkeys(("code", "docstring", "comment", "blank"), 0)
    for p in files:
        text = p.read_text()
        mod = _module(p, root)
        lines[str(p.relative_to(root))] = text.count("\n")
        trees[mod] = ast.parse(text)
        paths[mod] = p
        for kind, n in line_kinds(text, trees[mod]).items():
            kinds[kind] += n
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, tree in trees.items():
        package = mod.rsplit(".", 1)[0] if paths[mod].name != "__init__.py" else mod
        for target in _top_imports(tree, mod, paths[mod].name == "__init__.py"):
            if target in trees and target != mod and paths[target].name != "__init__.py":
                same_package = target.rsplit(".", 1)[0] == package
                if same_package:
                    graph[mod].add(target)
    private = {str(paths[m].relative_to(root)): acc for m, t in trees.items() if (acc := _private_accesses(t))}
    return {"main_path_lines": sum(lines.values()), "files": len(files), "lines_by_kind": kinds,
            "over_limit": {f: n for f, n in sorted(lines.items(), key=lambda x: -x[1]) if n > LIMIT},
            "import_circles": _cycles(graph),
            "private_accesses": sum(len(v) for v in private.values()),
            "private_accesses_by_file": {f: [f"{line}: {name}" for line, name in v] for f, v in sorted(private.items())}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    args = p.parse_args(argv)
    res = measure()
    if args.out:  # before printing: a reader that stops early (| head) does not lose the file
        args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"main-path lines: {res['main_path_lines']:,} in {res['files']} files ("
          + ", ".join(f"{kind} {n:,}" for kind, n in res["lines_by_kind"].items()) + ")")
    print(f"modules over {LIMIT} lines: {res['over_limit'] or 'none'}")
    print(f"import circles within a package: {len(res['import_circles'])}")
    for group in res["import_circles"]:
        print("  " + " <-> ".join(group))
    print(f"accesses to another file's private attributes: {res['private_accesses']}")
    for f, acc in res["private_accesses_by_file"].items():
        print(f"  {f}: {', '.join(acc[:6])}{' ...' if len(acc) > 6 else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
