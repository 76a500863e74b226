"""Golden tests of `nadc`'s diagnostics: one fixture folder per diagnostic code.

Layout and conventions are documented in tests/golden/README.md. In short, each
folder under tests/golden/ holding an `input.nad` (or an `args.txt`) is a case,
run once per format from inside the folder (so paths in the output are the
relative ones and stable):

    nadc <args> --format concise   -> transcript must equal concise.txt
    nadc <args> --format full      -> transcript must equal full.txt
    nadc <args> --format json      -> record must equal json.json

`<args>` is the content of `args.txt` (shell-style words; default
`input.nad`). A transcript records the exit status and both streams, since
commands differ in where diagnostics go (`compile` and `fmt` keep stdout for
their artifact; `verify` prints its report on stdout). The JSON record holds
each stream parsed as JSON where it is JSON, else as text.

`NADC_UPDATE_GOLDEN=1 pytest tests/test_diagnostics_golden.py` rewrites the
expected files; review the diff before committing it.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from conftest import run_nadc
from nader.compiler.codes import code_table

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("NADC_UPDATE_GOLDEN", "") not in ("", "0")

#: Code ranges whose every code must have a fixture. A range is also enforced
#: as soon as one fixture folder of it exists (NAD2xx, NAD3xx, NAD4xx join
#: automatically when their authors drop in the first fixture).
ENFORCED_RANGES = ("NAD1",)

#: Expected file -> format.
OUTPUTS = {"concise.txt": "concise", "full.txt": "full", "json.json": "json"}

_CODE_DIR = re.compile(r"^(NAD\d{3})(?:-[A-Za-z0-9_.-]+)?$")


def fixtures() -> list[Path]:
    return sorted(p for p in GOLDEN.iterdir()
                  if p.is_dir() and ((p / "input.nad").exists() or (p / "args.txt").exists()))


def fixture_args(case: Path) -> list[str]:
    args_file = case / "args.txt"
    if not args_file.exists():
        return ["input.nad"]
    return [w for line in args_file.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#") for w in shlex.split(line)]


def _maybe_json(text: str):
    if not text.strip():
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def render_run(argv: list[str], result, fmt: str) -> str:
    """The expected-file text of one run."""
    command = " ".join(["nadc", *map(shlex.quote, argv)])
    if fmt == "json":
        record = {"command": command, "exit": result.code,
                  "stdout": _maybe_json(result.stdout), "stderr": _maybe_json(result.stderr)}
        return json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    parts = [f"$ {command}\n", f"exit {result.code}\n"]
    for name in ("stderr", "stdout"):
        text = getattr(result, name)
        if text:
            parts.append(f"--- {name}\n{text}" + ("" if text.endswith("\n") else "\n--- (no newline at end)\n"))
    return "".join(parts)


def run_case(case: Path, fmt: str):
    argv = [*fixture_args(case), "--format", fmt]
    result = run_nadc(argv, cwd=case)
    return argv, result


def read_expected(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def write_expected(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def _diagnostic_lists(value):
    """Lists of diagnostic objects in a parsed stream (the compile/fmt JSON format)."""
    if isinstance(value, list) and value and all(isinstance(d, dict) and "severity" in d and "code" in d
                                                 for d in value):
        yield value


CASES = fixtures()


@pytest.mark.parametrize("expected_name", sorted(OUTPUTS))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_output(case: Path, expected_name: str):
    fmt = OUTPUTS[expected_name]
    argv, result = run_case(case, fmt)
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    assert "internal error" not in output, output
    assert result.code in (0, 1), f"exit status {result.code}: {output}"
    actual = render_run(argv, result, fmt)
    expected_path = case / expected_name
    if UPDATE:
        write_expected(expected_path, actual)
    assert expected_path.exists(), f"{expected_path} missing; run with NADC_UPDATE_GOLDEN=1 to create it"
    assert actual == read_expected(expected_path), (
        f"{case.name}: `nadc {' '.join(argv)}` differs from {expected_name}; if the change is "
        f"intended, rerun with NADC_UPDATE_GOLDEN=1 and review the diff")
    if fmt == "json":
        for stream in (result.stdout, result.stderr):
            for diagnostics in _diagnostic_lists(_maybe_json(stream)):
                has_error = any(d["severity"] == "error" for d in diagnostics)
                assert result.code == (1 if has_error else 0), "exit status disagrees with the severities"


def _outputs_text(case: Path) -> str:
    return "".join(read_expected(case / name) for name in OUTPUTS if (case / name).exists())


def enforced_codes() -> list[str]:
    table = code_table()
    ranges = set(ENFORCED_RANGES)
    for case in CASES:
        m = _CODE_DIR.match(case.name)
        if m:
            ranges.add(m.group(1)[:4])
    return [code for code in table if code[:4] in ranges]


@pytest.mark.parametrize("code", enforced_codes())
def test_every_code_has_a_golden_fixture(code: str):
    cases = [c for c in CASES if (m := _CODE_DIR.match(c.name)) and m.group(1) == code]
    assert cases, f"no golden fixture for {code}: add tests/golden/{code}/input.nad (see tests/golden/README.md)"
    assert any(re.search(rf"\b{code}\b", _outputs_text(c)) for c in cases), (
        f"the fixtures {[c.name for c in cases]} never report {code}")


def test_nad1_range_is_enforced():
    """The meta-test above must not go vacuous: the NAD1xx codes are all there."""
    codes = enforced_codes()
    assert {f"NAD{n}" for n in range(100, 118)} <= set(codes)


def test_fixture_folders_name_existing_codes():
    table = code_table()
    for case in CASES:
        m = _CODE_DIR.match(case.name)
        if case.name.startswith("NAD"):
            assert m, f"fixture folder {case.name}: name it NADxxx or NADxxx-variant"
            assert m.group(1) in table, f"fixture folder {case.name} names a code that does not exist"


def test_fixtures_are_complete():
    """Every expected file exists, and json.json is valid JSON."""
    assert CASES, "no golden fixtures found"
    for case in CASES:
        for name in OUTPUTS:
            assert (case / name).exists(), f"{case.name}/{name} missing; run with NADC_UPDATE_GOLDEN=1"
        record = json.loads(read_expected(case / "json.json"))
        assert {"command", "exit", "stdout", "stderr"} <= set(record)
