"""What `nader-search run` tells off a terminal (issue 29, points 2 and 5): one plain line per
finished trial (`--progress plain`, the default when stderr is not a terminal), nothing with
`--progress off`, and at the end the failed trials' reasons, grouped and counted."""
from __future__ import annotations

import io
import json
import re

import pytest
from click.testing import CliRunner

import derived_tables as D
from nader.cli import main
from nader.search.progress import LiveProgress, resolve_mode
from nader.search.spaces import nb201 as S
from search_helpers import run_records

ROOT = S.CellStructure.parse(S.RESNET)
# The root and its one-edge neighbours only: random search draws mostly cells the table lacks.
CELLS = [ROOT] + [S.CellStructure(ROOT.ops[:i] + (op,) + ROOT.ops[i + 1:]) for i in range(6) for op in S.OPS
                  if op != ROOT.ops[i]]
LINE = re.compile(r"trial done=(\d+)/(\d+) id=(\d+) status=(\w+)(.*) elapsed=(\d+:\d\d)(?: eta=(\d+:\d\d))?$")


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    return D.write(tmp_path_factory.mktemp("sparse") / "sparse.csv", cells=CELLS)


def _run(tmp_path, table, *extra, run="run", fmt="json"):
    return CliRunner().invoke(main, ["run", "--space", "nb201", "--evaluator", f"table:{table}", "--dataset",
                                     "cifar10", "--preset", "nb201-12", "--seeds", "777", "--strategy", "random",
                                     "--trials", "12", "--root", "train",  # the sparse table holds the root
                                     "--run-dir", str(tmp_path / run), "--format", fmt, *extra],
                              catch_exceptions=False)


def test_plain_progress_prints_one_line_per_finished_trial(tmp_path, sparse):
    done = _run(tmp_path, sparse, "--progress", "plain")
    assert done.exit_code == 0, done.output
    lines = [line for line in done.stderr.splitlines() if line.startswith("trial ")]
    recs = {r["arch_id"]: r for r in run_records(tmp_path / "run")}
    finished = [r for r in recs.values() if r["status"] in ("ok", "failed")]
    assert len(lines) == len(finished) == 12
    best = None
    for n, line in enumerate(lines, 1):
        m = LINE.match(line)
        assert m, line
        count, total, arch_id, status, rest = int(m[1]), int(m[2]), int(m[3]), m[4], m[5]
        assert (count, total) == (n, 12) and recs[arch_id]["status"] == status
        if status == "ok":
            assert f"valid_acc={recs[arch_id]['valid_acc']:.2f}" in rest
            best = max(best or 0, recs[arch_id]["valid_acc"])
        else:
            assert "error=missing-entry" in rest and "valid_acc=" not in rest
        assert (f"best={best:.2f}" if best is not None else "best=-") in rest
        assert m[7] is not None  # known once a trial of this session has finished: from the first line on
    assert LINE.match(lines[-1])[7] == "0:00"  # nothing left


def test_progress_off_prints_no_trial_lines_and_auto_is_plain_off_a_terminal(tmp_path, sparse):
    off = _run(tmp_path, sparse, "--progress", "off", "--trials", "3")
    assert off.exit_code == 0, off.output
    assert not [line for line in off.stderr.splitlines() if line.startswith("trial ")]
    auto = _run(tmp_path, sparse, "--trials", "3", run="auto")  # CliRunner's stderr is no terminal
    assert len([line for line in auto.stderr.splitlines() if LINE.match(line)]) == 3
    assert resolve_mode("auto", io.StringIO()) == "plain"

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert resolve_mode("auto", Tty()) == "rich" and resolve_mode("off", Tty()) == "off"
    assert LiveProgress(stream=io.StringIO(), enabled=True).mode == "rich"  # the older flag still works
    with pytest.raises(ValueError, match="progress"):
        resolve_mode("loud", io.StringIO())


def test_the_summary_groups_and_counts_the_failed_trials_reasons(tmp_path, sparse):
    done = _run(tmp_path, sparse, "--progress", "off", fmt="table")
    assert done.exit_code == 0, done.output
    recs = run_records(tmp_path / "run")
    failed = [r for r in recs if r["status"] == "failed"]
    assert failed  # most random draws are cells the sparse table lacks
    out = done.stdout.splitlines()
    header = next(i for i, line in enumerate(out) if "failed or diverged, by reason:" in line)
    assert out[header].startswith(f"{len(failed)} trial")
    group = out[header + 1]
    assert re.match(rf"\s+{len(failed)} missing-entry: table sparse\.csv has no row for \|", group), group
    assert f"#{failed[0]['arch_id']}" in group
    as_json = json.loads(_run(tmp_path, sparse, "--progress", "off").stdout)  # the same run, resumed
    assert [(g["kind"], g["count"]) for g in as_json["failures"]] == [("missing-entry", len(failed))]
    status = CliRunner().invoke(main, ["status", str(tmp_path / "run")])  # and what `status` says
    assert status.exit_code == 0 and group in status.stdout.splitlines()
    status = json.loads(CliRunner().invoke(main, ["status", str(tmp_path / "run"), "--format", "json"]).stdout)
    assert status["failures"] == as_json["failures"]


def test_a_run_where_nothing_trains_says_why(tmp_path):
    """Every cell's number missing: the summary names the reason, not only that nothing trained."""
    path = D.write(tmp_path / "blank.csv", cells=CELLS, blank=CELLS, columns=["valid_acc@12"])
    done = _run(tmp_path, path, "--progress", "off", "--trials", "4", fmt="table")
    assert done.exit_code == 1, done.output
    assert "no architecture trained successfully" in done.stdout
    assert re.search(r"4 trials failed or diverged, by reason:\n\s+\d+ missing-(value|entry)", done.stdout)
