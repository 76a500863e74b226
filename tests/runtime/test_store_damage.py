"""Damaged run stores: every command that opens a run answers with one line, never a traceback.

One healthy run directory (a search of one trained root, plus one `eval` job) is copied and
damaged in each way a disk or a user can damage it; then status, best, export, report, a `run`
resume and an `eval` resume are run on the copy. A read-only directory means nothing to root,
so as root those cases run the command in a subprocess as `nobody`.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.runtime.integrity import RECOVERED_NAME

from search_helpers import EXAMPLE

TINY_ARCH = json.dumps({"width": 4})
EVAL = ["--builder", "runtime_helpers:tiny_builder", "--epochs", "1", "--threads", "1", "--seeds", "1"]
SEARCH = ["--dataset", "digits", "--depths", "1,1,1", "--epochs", "1", "--threads", "1", "--seeds", "1"]
NOBODY = 65534


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """A run directory with a trained root (search) and a finished eval job, and the eval's .nad."""
    base = tmp_path_factory.mktemp("healthy")
    run, arch = base / "run", base / "tiny.nad"
    arch.write_text(TINY_ARCH)
    r = invoke("run", "--from", EXAMPLE, *SEARCH, "--trials", "1", "--run-dir", run)
    assert r.exit_code == 0, r.output
    r = invoke("eval", arch, *EVAL, "--run-dir", run)
    assert r.exit_code == 0, r.output
    return run, arch


def _commands(run: Path, arch: Path, out: Path) -> dict:
    return {"status": ["status", run], "best": ["best", run], "export": ["export", run],
            "report": ["report", run, "-o", out / "report.html"], "run": ["run", "--run-dir", run],
            "eval": ["eval", arch, *EVAL, "--run-dir", run]}


def _db(run: Path) -> Path:
    return run / "runs.sqlite"


def _truncate(run):
    db = _db(run)
    os.truncate(db, db.stat().st_size // 2)


def _garbage_header(run):
    db = _db(run)
    data = bytearray(db.read_bytes())
    data[:100] = bytes(range(7, 107))
    db.write_bytes(bytes(data))


def _zero(run):
    os.truncate(_db(run), 0)


def _malformed_cells(run):
    conn = sqlite3.connect(_db(run))
    conn.execute("UPDATE archs SET widths='[16, 32', params='many' WHERE arch_id=0")
    conn.commit()
    conn.close()


def _readonly_dir(run):
    run.chmod(0o555)


def _readonly_db(run):
    _db(run).chmod(0o444)


def _missing(run):
    shutil.rmtree(run)


ERROR = 2
# damage -> (how, {command: expected exit status}); the rest of each row's commands exit 2.
CASES = {
    "truncated": (_truncate, {}),
    "garbage-header": (_garbage_header, {}),
    "zero-bytes": (_zero, {}),
    "malformed-cells": (_malformed_cells, {"status": 0, "best": 0, "export": 0, "report": 0, "run": 0, "eval": 0}),
    "readonly-dir": (_readonly_dir, {"status": 0, "best": 0, "export": 0, "report": 0}),
    "readonly-db": (_readonly_db, {"status": 0, "best": 0, "export": 0, "report": 0}),
    "missing-dir": (_missing, {"eval": 0}),
}
MESSAGE = {"truncated": "is damaged", "garbage-header": "is damaged", "zero-bytes": "delete it to start a new run",
           "readonly-dir": "permission denied", "readonly-db": "permission denied", "missing-dir": {"status": "not a search run directory", "best": "not a search run directory",
                           "export": "not a search run directory", "report": "not a search run directory",
                           "run": "no root architecture"}}


def _as_nobody() -> bool:
    return os.geteuid() == 0


def _run_as_nobody(args, cwd):
    """The command in a subprocess as `nobody` (setpriv), for whom permissions hold; (code, stdout, stderr)."""
    setpriv = shutil.which("setpriv")
    drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if setpriv else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    # `nobody` must reach this Python and the checkout too: a clone under a 0700 folder (mktemp -d) is not.
    if not drop or subprocess.run([*drop, sys.executable, "-c", "import nader.cli"], capture_output=True, env=env,
                                  cwd=cwd).returncode != 0:
        pytest.skip("running as root, and `nobody` cannot run this Python or import this checkout (a parent folder"
                    " it cannot enter?), so permissions cannot be made to hold")
    p = subprocess.run([*drop, sys.executable, "-m", "nader.cli", *map(str, args)], capture_output=True,
                       text=True, env=env, cwd=cwd, timeout=600)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("damage", list(CASES))
def test_every_command_answers_damage_in_one_line(healthy, damage):
    how, ok = CASES[damage]
    run0, arch0 = healthy
    readonly = damage.startswith("readonly")
    box = Path(tempfile.mkdtemp(prefix="nader-damage-"))  # not under pytest's 0700 tmp: `nobody` must reach it
    try:
        box.chmod(0o777)
        out = box / "out"
        out.mkdir()
        out.chmod(0o777)
        arch = box / "tiny.nad"
        shutil.copy(arch0, arch)
        arch.chmod(0o644)
        for name, args in _commands(box / "run", arch, out).items():
            run = box / "run"
            if run.exists():
                run.chmod(0o755)
                shutil.rmtree(run)
            shutil.copytree(run0, run)
            for p in run.rglob("*"):
                p.chmod(0o755 if p.is_dir() else 0o644)
            how(run)
            if readonly and _as_nobody():
                code, stdout, stderr = _run_as_nobody(args, box)
            else:
                r = invoke(*args)
                code, stdout, stderr = r.exit_code, r.stdout, r.stderr
            want = ok.get(name, ERROR)
            assert "Traceback" not in stdout + stderr, (name, stderr)
            assert code == want, (name, code, stdout, stderr)
            errors = [ln for ln in stderr.splitlines() if ln.startswith(("error", "internal error"))]
            if want == ERROR:
                needle = MESSAGE[damage] if isinstance(MESSAGE[damage], str) else MESSAGE[damage][name]
                assert len(errors) == 1 and needle in errors[0], (name, stderr)
                assert "internal error" not in errors[0], (name, stderr)
            else:
                assert not errors, (name, stderr)
            if damage == "malformed-cells" and name != "eval":
                assert "table archs, row arch_id=0, column widths: not valid JSON" in stderr, (name, stderr)
                assert "table archs, row arch_id=0, column params: expected a number" in stderr, (name, stderr)
            if damage == "zero-bytes":
                assert _db(run).stat().st_size == 0, "a 0-byte database must not become a new run"
    finally:
        for p in [box, *box.rglob("*")]:
            if p.is_dir():
                p.chmod(stat.S_IRWXU)
        shutil.rmtree(box, ignore_errors=True)


def test_malformed_cells_leave_the_rest_readable(healthy, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(healthy[0], run)
    before = json.loads(invoke("export", run, "--format", "json").stdout)
    _malformed_cells(run)
    r = invoke("export", run, "--format", "json")
    after = json.loads(r.stdout)
    assert [a["arch_id"] for a in after] == [a["arch_id"] for a in before]
    assert after[0]["widths"] is None and after[0]["params"] is None
    assert after[0]["valid_acc"] == before[0]["valid_acc"] and after[0]["text"] == before[0]["text"]
    assert invoke("best", run).stdout.splitlines()[1:] == before[0]["text"].rstrip("\n").splitlines()


def test_damaged_settings_stop_a_resume_but_not_status(healthy, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(healthy[0], run)
    conn = sqlite3.connect(_db(run))
    conn.execute("UPDATE meta SET value='{\"strategy\": ' WHERE key='search.config'")
    conn.commit()
    conn.close()
    r = invoke("status", run)
    assert r.exit_code == 0 and "table meta, row key=search.config, column value: not valid JSON" in r.stderr
    r = invoke("run", "--run-dir", run)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.count("\n") == 1 and "search.config" in r.stderr


def test_quick_check_failure_is_refused_and_repair_recovers_every_row(healthy, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(healthy[0], run)
    before = invoke("export", run, "--format", "json").stdout
    _garbage_header(run)
    refused = invoke("status", run)
    assert refused.exit_code == 2 and "--repair" in refused.stderr
    repaired = invoke("status", run, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "recovered" in repaired.stdout and "archs 1" in repaired.stdout and "lost: nothing" in repaired.stdout
    assert (run / RECOVERED_NAME).is_file()
    os.replace(run / RECOVERED_NAME, _db(run))
    assert invoke("export", run, "--format", "json").stdout == before


def test_repair_says_what_was_lost(tmp_path, monkeypatch):
    """Row by row (no sqlite3 shell): rows on a page overwritten with garbage are lost, and said so."""
    monkeypatch.setattr(shutil, "which", lambda name: None)
    run = tmp_path / "run"
    run.mkdir()
    conn = sqlite3.connect(_db(run))
    conn.execute("CREATE TABLE archs (arch_id INTEGER PRIMARY KEY, text TEXT)")
    conn.executemany("INSERT INTO archs VALUES (?, ?)", [(i, "x" * 400) for i in range(400)])
    conn.commit()
    conn.close()
    data = bytearray(_db(run).read_bytes())
    data[8 * 4096:9 * 4096] = b"\xa5" * 4096  # one leaf page in the middle
    _db(run).write_bytes(bytes(data))
    r = invoke("export", run, "--repair")
    assert r.exit_code == 1, r.output
    assert "row-by-row copy" in r.stdout and "lost: " in r.stdout and "architectures #" in r.stdout
    recovered = sqlite3.connect(run / RECOVERED_NAME)
    ids = [i for (i,) in recovered.execute("SELECT arch_id FROM archs")]
    recovered.close()
    assert 300 < len(ids) < 400 and ids[-1] == 399


def test_repair_on_a_healthy_run_changes_nothing(healthy, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(healthy[0], run)
    r = invoke("status", run, "--repair")
    assert r.exit_code == 0 and "nothing to repair" in r.stderr
    assert not (run / RECOVERED_NAME).exists()
