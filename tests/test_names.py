"""One name per concept (docs/architecture.md, "Glossary"), checked on the source with `ast`.

1. A public name (a class or function without a leading underscore, at the top level of a module
   of the package) is defined in one module only, so `Evaluator`, `Node` or `ConfigError` cannot
   come to mean two things again. The modules of a package found by discovery (`discovering()`:
   lint rules, mutation operators, fix kinds) share the names their package looks up in each of
   them, among themselves only; `SAME_NAME` lists the few names kept on purpose, with the reason.
2. No private name (one leading underscore) is imported across packages, by `from M import _x`
   or as `M._x`: what another package needs is public, and named for it.
"""
from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from conftest import REPO_ROOT
from test_imports import by_name_sites, modules

#: the folders scanned besides the library's (`test_imports.modules`): the bundled examples
EXTRA = {"examples": "nader.examples"}

#: name -> why several modules define it (a short list: each entry is a reason, not a convenience)
SAME_NAME = {
    "main": "a program's entry point: the console scripts pyproject.toml names (`nader.cli:main`, "
            "`nader.compiler.cli:main`) and examples/demo.py, run as a script",
}


@lru_cache(maxsize=1)
def sources() -> dict[str, Path]:
    found = dict(modules())
    for folder, package in EXTRA.items():
        for path in (REPO_ROOT / folder).rglob("*.py"):
            parts = [package, *path.relative_to(REPO_ROOT / folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@lru_cache(maxsize=None)
def tree(module: str) -> ast.Module:
    return ast.parse(sources()[module].read_text(encoding="utf-8"))


def package_of(module: str) -> str:
    return module if sources()[module].name == "__init__.py" else module.rpartition(".")[0]


def public_definitions() -> dict[str, list[str]]:
    """name -> the modules that define it at their top level."""
    out: dict[str, list[str]] = defaultdict(list)
    for module in sources():
        for node in tree(module).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                out[node.name].append(module)
    return out


def discovering() -> set[str]:
    """The packages that import every module of their own (lint rules, fix kinds, mutation operators)."""
    return {module for module, _, how in by_name_sites() if how == "discover"}


def duplicates() -> dict[str, list[str]]:
    found = {}
    for name, where in public_definitions().items():
        packages = {package_of(m) for m in where}
        if len(where) < 2 or name in SAME_NAME or (len(packages) == 1 and packages <= discovering()):
            continue
        found[name] = where
    return found


def test_the_scan_sees_the_definitions():
    defined = public_definitions()
    assert defined["SearchStore"] == ["nader.search.store.sqlite"]
    assert "nader.search.evaluator" in defined["Evaluator"]
    assert len(defined["check"]) > 5  # the lint rules' `check`, one per rule module
    assert "nader.examples.demo" in defined["main"]


def test_public_names_are_unique():
    found = duplicates()
    assert not found, ("each concept has one name (docs/architecture.md, Glossary); defined in several modules: "
                       + "; ".join(f"{n}: {', '.join(w)}" for n, w in sorted(found.items())))


def test_same_name_lists_only_names_defined_twice():
    defined = public_definitions()
    stale = [n for n in SAME_NAME if len(defined.get(n, ())) < 2]
    assert not stale, f"SAME_NAME entries no longer needed: {stale}"


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_the_glossary_and_the_store_table_name_classes_the_code_defines():
    """docs/architecture.md's glossary and run-store table name classes (`BaseStore`, `Table`, ...):
    each is defined in the package, so the doc cannot keep a name the code dropped."""
    doc = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    defined = public_definitions()
    named = set()
    for title in ("Glossary", "The run store"):
        named |= set(re.findall(r"`([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)`", _section(doc, title)))
    assert {"Evaluator", "Table", "TreeNode", "BaseStore", "RunReader"} <= named
    missing = sorted(n for n in named if n not in defined)
    assert not missing, f"docs/architecture.md names classes the package does not define: {missing}"


def _source(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = package_of(module).split(".")
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports() -> list[str]:
    """`module:line imports name from source` for every private name taken from another package."""
    known = sources()
    out = []
    for module in known:
        here = package_of(module)
        bound: dict[str, str] = {}  # local name -> project module it is bound to
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.ImportFrom):
                source = _source(module, node)
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    if full in known:
                        bound[alias.asname or alias.name] = full
                    elif alias.name.startswith("_") and not alias.name.startswith("__") and source in known \
                            and package_of(source) != here:
                        out.append(f"{module}:{node.lineno} imports {alias.name} from {source}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in known and alias.asname:
                        bound[alias.asname] = alias.name
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                    and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and package_of(bound[node.value.id]) != here:
                out.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}")
    return out


def test_no_private_name_is_imported_across_packages():
    found = private_imports()
    assert not found, f"private names used from another package (make them public, named for the use): {found}"


def test_the_private_import_scan_sees_both_forms(tmp_path, monkeypatch):
    """A module of one package importing `_x` from another, and using `M._y`, is found twice."""
    fake = {"nader.a.m": tmp_path / "m.py", "nader.b.n": tmp_path / "n.py", "nader.b": tmp_path / "__init__.py"}
    fake["nader.a.m"].write_text("from nader.b.n import _x\nfrom nader.b import n\nn._y()\n")
    fake["nader.b.n"].write_text("def _x(): ...\ndef _y(): ...\n")
    fake["nader.b"].write_text("")
    monkeypatch.setattr(sys.modules[__name__], "sources", lambda: fake)
    tree.cache_clear()
    try:
        assert [f.split(" ", 1)[1] for f in private_imports()] == ["imports _x from nader.b.n", "uses n._y"]
    finally:
        tree.cache_clear()
