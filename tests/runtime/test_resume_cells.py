"""A resume over a damaged cell (issue 41, finding 14): a `params` cell holding bytes is a warning, as
`status` says, and `run` off a terminal (the plain progress line, its best) goes on."""
from __future__ import annotations

import shutil
import sqlite3

import pytest

from test_store_damage import SEARCH, invoke

from search_helpers import EXAMPLE


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("cells") / "run"
    r = invoke("run", "--from", EXAMPLE, *SEARCH, "--trials", "2", "--strategy", "rea", "--option", "population=2",
               "--option", "sample_size=2", "--run-dir", run)
    assert r.exit_code == 0, r.output
    return run


@pytest.mark.parametrize("column, value", [("params", "X'00ff'"), ("flops", "X'00'"), ("params", "'many'"),
                                           ("params", "1e400")])
def test_a_resume_over_a_damaged_number_cell_warns_and_goes_on(trained, tmp_path, column, value):
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    conn = sqlite3.connect(run / "runs.sqlite")
    conn.execute(f"UPDATE archs SET {column}={value} WHERE arch_id=0")
    conn.execute("UPDATE archs SET valid_acc=50.0")  # a tie: the best is then chosen by parameters
    conn.commit()
    conn.close()
    status = invoke("status", run)
    assert status.exit_code == 0 and f"column {column}" in status.stderr, status.output
    r = invoke("run", "--run-dir", run, "--trials", "3", "--progress", "plain")
    assert "internal error" not in r.output and "Traceback" not in r.output, r.output
    assert r.exit_code == 0, r.output
    assert f"column {column}: expected a number" in r.stderr, r.stderr
    assert "trial done=3/3" in r.stderr and "best=" in r.stderr, r.stderr
