"""`export -o` and `report -o` never write over a run directory's own files, nor two outputs on one
file (issue 41, finding 13's guards, for the read commands that write): refused in one line, exit 2,
before anything is read or written."""
from __future__ import annotations

import hashlib

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.search import run_search
from search_helpers import TableEvaluator, settings


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guards") / "run"
    run_search(settings(folder, trials=2), evaluator=TableEvaluator())
    (folder / "checkpoints").mkdir(exist_ok=True)
    (folder / "checkpoints" / "job.pt").write_bytes(b"weights")
    return folder


def _files(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("target", ["runs.sqlite", "search.lock", "checkpoints/job.pt", "checkpoints/new.csv"])
@pytest.mark.parametrize("command", [["export"], ["export", "--format", "json"], ["report"]], ids="-".join)
def test_an_output_on_a_run_directorys_own_file_is_refused(run, command, target):
    before = _files(run)
    r = invoke(command[0], run, *command[1:], "-o", run / target)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot write {run / target}: it is") and "write the output elsewhere" in line
    assert _files(run) == before


def test_a_link_to_the_database_is_refused_and_a_plain_output_is_written(run, tmp_path):
    (tmp_path / "out.csv").symlink_to(run / "runs.sqlite")
    r = invoke("export", run, "-o", tmp_path / "out.csv")
    assert r.exit_code == 2 and "own runs.sqlite" in r.stderr, r.output
    ok = invoke("export", run, "-o", tmp_path / "records.csv")
    assert ok.exit_code == 0 and (tmp_path / "records.csv").read_text().startswith("arch_id"), ok.output
    report = invoke("report", run, "-o", tmp_path / "r.html")
    assert report.exit_code == 0 and (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>"), report.output
