"""`nader-search eval --run-dir RUN` on a run directory a search is using: it takes the same lock
as `nader-search run` (runtime/lock.py), so it refuses at once with the same message and never
writes its jobs into the search's database."""
from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.runtime.lock import RunLock
from nader.search import run_search
from search_helpers import EXAMPLE, REPO, TableEvaluator, settings

HOLD = ("import sys; from nader.runtime.lock import RunLock; RunLock(sys.argv[1]).acquire(); "
        "print('held', flush=True); sys.stdin.read()")


@pytest.fixture()
def search_run(tmp_path):
    run = tmp_path / "run"
    run_search(settings(run, trials=2), evaluator=TableEvaluator())
    return run


def _snapshot(run) -> dict:
    """Every file of the run directory but the lock itself: size, modification time and content."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(run.iterdir()) if p.is_file() and p.name != "search.lock"}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "nader.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)  # a bound against hangs, not a speed target


def test_eval_on_a_run_dir_in_use_refuses_like_a_second_run_and_touches_nothing(search_run):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(search_run)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = _snapshot(search_run)
        evaluated = _cli("eval", EXAMPLE, "--seeds", "777", "--epochs", "1", "--threads", "1",
                         "--run-dir", search_run)
        second_run = _cli("run", "--run-dir", search_run, "--trials", "3")
        after = _snapshot(search_run)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    expected = (f"error: {search_run} is in use by another nader-search process (pid {holder.pid}); "
                f"wait for it to finish or stop it, or use another --run-dir\n")
    assert (evaluated.returncode, evaluated.stderr, evaluated.stdout) == (2, expected, "")
    assert (second_run.returncode, second_run.stderr) == (2, expected)
    assert after == before


def test_eval_releases_the_lock_when_it_ends(tmp_path):
    run = tmp_path / "run"
    # In this process, where a lock left held would stay held; a builder that does not exist fails
    # the job fast, after the lock was taken.
    done = CliRunner().invoke(main, ["eval", str(EXAMPLE), "--seeds", "1", "--run-dir", str(run),
                                     "--builder", "nader.no_such:build_network"])
    assert done.exit_code == 1 and (run / "search.lock").exists(), done.output
    RunLock(run).acquire().release()  # raises RunLocked were it still held
