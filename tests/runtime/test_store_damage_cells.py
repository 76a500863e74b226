"""Damaged cells and indexes (issue 30, points 6-9): a cell nested 3,000 deep, a number stored as
the text 'NaN', a cell that is not UTF-8, an index that disagrees with its table.

Readers (status, best, export, report) warn per cell and go on; a `run` resume warns the same way
and keeps going, or, when the store fails the full integrity check, stops before writing with one
line naming the file. `--repair` rewrites the unreadable cells as NULL in a copy beside the store,
with a note per cell.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from nader.runtime.integrity import RECOVERED_NAME
from test_store_damage import EVAL, SEARCH, TINY_ARCH, invoke

from search_helpers import EXAMPLE

READERS = ("status", "best", "export", "report")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A REA search of two trained architectures, its whole population (so a resume compares them), and an
    eval job."""
    base = tmp_path_factory.mktemp("cells")
    run, arch = base / "run", base / "tiny.nad"
    arch.write_text(TINY_ARCH)
    r = invoke("run", "--from", EXAMPLE, *SEARCH, "--trials", "2", "--strategy", "rea", "--option", "population=2",
               "--option", "sample_size=2", "--run-dir", run)
    assert r.exit_code == 0, r.output
    r = invoke("eval", arch, *EVAL, "--run-dir", run)
    assert r.exit_code == 0, r.output
    return run, arch


def _copy(trained, tmp_path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(trained[0], run)
    return run


def _sql(run: Path, *statements) -> None:
    conn = sqlite3.connect(run / "runs.sqlite")
    for s in statements:
        conn.execute(s)
    conn.commit()
    conn.close()


def _reader(name: str, run: Path, out: Path):
    args = {"status": ["status", run], "best": ["best", run], "export": ["export", run, "--format", "json"],
            "report": ["report", run, "-o", out / "report.html"]}[name]
    return invoke(*args)


def _deep(run):
    _sql(run, "UPDATE archs SET change='" + "[" * 3000 + "]" * 3000 + "' WHERE arch_id=0")


def _bad_utf8(run):
    _sql(run, "UPDATE archs SET change=CAST(X'7B2278223A22FF227D' AS TEXT) WHERE arch_id=0")


DAMAGE = {"deep": (_deep, "column change: JSON nested deeper than"),
          "utf8": (_bad_utf8, "column change: not valid UTF-8")}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_cell_is_a_warning_for_every_command(trained, tmp_path, damage):
    how, warning = DAMAGE[damage]
    run = _copy(trained, tmp_path)
    how(run)
    for name in READERS:
        r = _reader(name, run, tmp_path)
        assert r.exit_code == 0, (name, r.output)
        assert "Traceback" not in r.output and "internal error" not in r.output, (name, r.output)
        assert f"warning: runs.sqlite: table archs, row arch_id=0, {warning}" in r.stderr, (name, r.stderr)
    r = invoke("run", "--run-dir", run, "--trials", "3")
    assert r.exit_code == 0, r.output
    assert warning in r.stderr and "internal error" not in r.output
    assert sqlite3.connect(run / "runs.sqlite").execute("SELECT COUNT(*) FROM archs").fetchone()[0] == 3


def test_repair_rewrites_unreadable_cells_as_null_in_a_copy(trained, tmp_path):
    run = _copy(trained, tmp_path)
    _deep(run)
    _sql(run, "UPDATE archs SET operator=CAST(X'FF' AS TEXT) WHERE arch_id=0")
    r = invoke("status", run, "--repair")
    assert r.exit_code == 1, r.output
    assert "nothing to repair" not in r.output
    assert "lost: 2 unreadable cell(s)" in r.stdout, r.stdout
    assert ("note: runs.sqlite: table archs, row arch_id=0, column change: JSON nested deeper than 64 levels; "
            "set to NULL") in r.stdout, r.stdout
    assert "note: runs.sqlite: table archs, row arch_id=0, column operator: not valid UTF-8; set to NULL" in r.stdout
    conn = sqlite3.connect(run / "runs.sqlite")  # the original is kept as it was
    assert conn.execute("SELECT length(change) FROM archs WHERE arch_id=0").fetchone()[0] == 6000
    conn.close()
    copy = run / RECOVERED_NAME
    conn = sqlite3.connect(copy)
    assert conn.execute("SELECT change, operator, text IS NOT NULL FROM archs WHERE arch_id=0").fetchone() == \
        (None, None, 1)
    conn.close()
    shutil.move(copy, run / "runs.sqlite")
    clean = invoke("status", run)
    assert clean.exit_code == 0 and "warning" not in clean.stderr, clean.output


def test_nan_text_accuracy_warns_and_a_rea_resume_goes_on(trained, tmp_path):
    run = _copy(trained, tmp_path)
    _sql(run, "UPDATE archs SET valid_acc='NaN' WHERE arch_id=0")
    r = invoke("run", "--run-dir", run, "--trials", "3")
    assert r.exit_code in (0, 1), r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    assert "table archs, row arch_id=0, column valid_acc: expected a number" in r.stderr, r.stderr
    conn = sqlite3.connect(run / "runs.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM archs").fetchone()[0] == 3
    conn.close()


def _index_disagrees(run):
    """archs_hash's entries are of `hash`; its definition now says `status`: quick_check passes."""
    conn = sqlite3.connect(run / "runs.sqlite")
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute("UPDATE sqlite_master SET sql='CREATE INDEX archs_hash ON archs(status)' WHERE name='archs_hash'")
    conn.commit()
    conn.close()
    conn = sqlite3.connect(run / "runs.sqlite")
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok"
    conn.close()


def test_a_run_does_not_write_into_a_store_failing_the_full_check(trained, tmp_path):
    run = _copy(trained, tmp_path)
    _index_disagrees(run)
    before = (run / "runs.sqlite").read_bytes()
    for name in READERS:  # readers go on (with a warning: below)
        assert _reader(name, run, tmp_path).exit_code == 0, name
    for args in (["run", "--run-dir", run, "--trials", "3"], ["eval", trained[1], *EVAL, "--run-dir", run]):
        r = invoke(*args)
        assert r.exit_code == 2, r.output
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error")]
        assert len(errors) == 1 and "runs.sqlite is damaged (integrity_check:" in errors[0], r.stderr
        assert "--repair" in errors[0]
    assert (run / "runs.sqlite").read_bytes() == before
    r = invoke("run", "--run-dir", run, "--trials", "3", "--repair")
    assert r.exit_code in (0, 1) and (run / RECOVERED_NAME).is_file(), r.output
    shutil.move(run / RECOVERED_NAME, run / "runs.sqlite")
    conn = sqlite3.connect(run / "runs.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert json.loads(conn.execute("SELECT value FROM meta WHERE key='search.config'").fetchone()[0])
    conn.close()


def test_readers_report_an_index_that_disagrees_with_its_table(trained, tmp_path):
    """What `run` refuses, the read commands and `load_study` say, in one line naming the fix; what
    they print is otherwise what they printed before the damage (issue 41, finding 17)."""
    run = _copy(trained, tmp_path)
    before = {name: _reader(name, run, tmp_path).stdout for name in ("status", "best", "export")}
    _index_disagrees(run)
    for name in READERS:
        r = _reader(name, run, tmp_path)
        assert r.exit_code == 0, (name, r.output)
        lines = [ln for ln in r.stderr.splitlines() if "archs_hash" in ln]
        assert len(lines) == 1 and lines[0].startswith("warning: ") and "disagrees with its table" in lines[0] \
            and "run the same command with --repair" in lines[0] and RECOVERED_NAME in lines[0], (name, r.stderr)
        if name in before:
            assert r.stdout == before[name], name
    import nader.search as ns

    with pytest.warns(RuntimeWarning, match=f"archs_hash disagrees with its table.*nader-search status .* --repair"):
        study = ns.load_study(str(run))
    assert len(study.trials) == 2
    r = invoke("status", run, "--repair")  # recovers, as `run --repair` would
    assert r.exit_code in (0, 1) and (run / RECOVERED_NAME).is_file(), r.output
    shutil.move(run / RECOVERED_NAME, run / "runs.sqlite")
    clean = invoke("status", run)
    assert clean.exit_code == 0 and "archs_hash" not in clean.stderr, clean.output

