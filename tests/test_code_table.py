"""The diagnostic code table is assembled without the front end naming the compiler.

Each module that declares codes (`define_code`) registers them in `nader.dsl.diagnostics` when
it is imported; `nader.compiler.codes` imports every such module, so its `code_table()` is the
complete table that `nadc explain`, lint's selectors and the docs read.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys

from conftest import REPO_ROOT

from nader.compiler.codes import code_table, find_code


def declared_in_source() -> dict[str, str]:
    """Every code a `define_code("NAD...", ...)` call of the library declares -> its file."""
    found = {}
    for folder in ("dsl", "compiler"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) \
                        == "define_code" and node.args and isinstance(node.args[0], ast.Constant):
                    found[node.args[0].value] = str(path.relative_to(REPO_ROOT))
    return found


def test_the_table_holds_every_code_the_source_declares():
    declared = declared_in_source()
    assert len(declared) > 50 and any(c.startswith("NAD4") for c in declared)
    assert set(code_table()) == set(declared), {c: f for c, f in declared.items() if c not in code_table()}
    assert list(code_table()) == sorted(declared)


def _fresh(code: str) -> list[str]:
    """The registered codes after running `code` in a new interpreter."""
    out = subprocess.run([sys.executable, "-c", code + "\nimport json\nfrom nader.dsl.diagnostics import "
                          "registered_codes\nprint(json.dumps(list(registered_codes())))"],
                         capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    return json.loads(out.stdout)


def test_the_front_end_registers_its_own_codes_and_names_no_compiler_module():
    front_end = _fresh("import nader.dsl.parser")
    assert front_end and all(c.startswith("NAD1") for c in front_end)
    assert _fresh("import nader.compiler.codes") == list(code_table())


def test_a_code_is_found_by_number_or_name():
    assert find_code(" nad104 ") is find_code("unknown-operation") is code_table()["NAD104"]
    assert find_code("NAD401").name == code_table()["NAD401"].name
    assert find_code("no-such-code") is None
