"""Shared test helpers and fixtures.

* `shared_dir()` / `compat_dir`: the read-only NADER compatibility corpus
  (`shared/nader-compat`), found next to the repository (`../shared`) or at
  `$NADER_SHARED`; tests that need it skip cleanly when it is absent.
* `run_nadc(argv, cwd=None, stdin=None)`: runs `nader.compiler.cli.main` in
  process and returns `NadcRun(code, stdout, stderr)`; `nadc` is the same as a
  fixture. It redirects `sys.stdout`/`sys.stderr` itself rather than using
  capsys, so it also works inside hypothesis tests.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# Test doubles shared across folders (the LLM tests' loopback server and network guard, the
# knowledge base tests' hashing embedder, the search tests' helpers) are importable everywhere.
# This lives here, not in a sub-folder's conftest.py: a second module named `conftest` would
# replace this one for every later `from conftest import ...`.
for _folder in ("llm", "knowledge", "search"):
    if str(REPO_ROOT / "tests" / _folder) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT / "tests" / _folder))


def shared_dir() -> Optional[Path]:
    """The shared data folder holding `nader-compat/`, or None when absent.

    `$NADER_SHARED` overrides the default, which is `../shared` relative to
    the repository root (the layout of the working machines).
    """
    env = os.environ.get("NADER_SHARED")
    candidates = [Path(env)] if env else [REPO_ROOT.parent / "shared"]
    for candidate in candidates:
        if (candidate / "nader-compat").is_dir():
            return candidate
    return None


@pytest.fixture(scope="session")
def compat_dir() -> Path:
    """`<shared>/nader-compat`; skips the test when the corpus is not present."""
    shared = shared_dir()
    if shared is None:
        pytest.skip("NADER compatibility corpus not found (../shared/nader-compat; set NADER_SHARED)")
    return shared / "nader-compat"


class NadcRun(NamedTuple):
    code: int
    stdout: str
    stderr: str


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    return 1  # sys.exit("message") semantics


def run_nadc(argv: Sequence[str], cwd: Optional[Path] = None, stdin: Optional[str] = None) -> NadcRun:
    """Run `nadc ARGV` in process; returns its exit status and captured output.

    Anything but SystemExit propagates (main must never raise anything else).
    """
    from nader.compiler.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    old_stdin = sys.stdin
    code = 0
    try:
        if cwd is not None:
            os.chdir(cwd)
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(argv))
            except SystemExit as done:
                code = _exit_code(done.code)
    finally:
        sys.stdin = old_stdin
        os.chdir(old_cwd)
    return NadcRun(code, out.getvalue(), err.getvalue())


@pytest.fixture
def nadc():
    """`nadc(argv, cwd=None, stdin=None) -> NadcRun`, in process."""
    return run_nadc
