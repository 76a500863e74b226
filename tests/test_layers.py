"""The compiler library never imports its command line: backends and passes raise and report through
library modules (`backends/errors.py`, `reporting.py`), and `compiler/commands/` imports them."""
from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LIBRARY = REPO_ROOT / "compiler"


def _cli_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("nader.compiler.commands") or name.split(".")[-1] == "cli":
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {name}")
    return found


def test_compiler_library_does_not_import_the_cli():
    library = [p for p in LIBRARY.rglob("*.py") if "commands" not in p.parts and p.name != "cli.py"]
    assert len(library) > 20  # the walk found the library
    offenders = [hit for path in library for hit in _cli_imports(path)]
    assert not offenders, offenders
