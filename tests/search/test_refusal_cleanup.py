"""A refused start leaves nothing behind (issue 41, finding 17's first item): a refused `[llm]`
configuration, or an `eval --run-dir` refused before it trains, releases the run directory's lock and
removes its file (and the folder the command made), so the next start finds no trace of it."""
from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.runtime import lock as lock_module
from nader.runtime.lock import RunLock, RunLocked
from search_helpers import EXAMPLE


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture()
def bad_llm_config(tmp_path):
    path = tmp_path / "llm.toml"
    path.write_text("[llm]\nbase_url = 5\n")
    return path


def test_a_refused_llm_configuration_leaves_no_run_directory(tmp_path, bad_llm_config):
    run = tmp_path / "run"
    r = invoke("run", "--from", EXAMPLE, "--strategy", "genius", "--llm-config", bad_llm_config, "--run-dir", run,
               "--trials", "1")
    assert r.exit_code == 2 and "base_url must be a string" in r.stderr, r.output
    assert not run.exists(), sorted(p.name for p in run.iterdir())


def test_a_refused_start_in_a_folder_that_was_there_empties_it_and_keeps_it(tmp_path, bad_llm_config):
    run = tmp_path / "run"
    run.mkdir()
    r = invoke("run", "--from", EXAMPLE, "--strategy", "genius", "--llm-config", bad_llm_config, "--run-dir", run,
               "--trials", "1")
    assert r.exit_code == 2, r.output
    assert run.is_dir() and list(run.iterdir()) == []


def test_an_eval_refused_before_training_leaves_no_run_directory(tmp_path):
    run = tmp_path / "run"
    r = invoke("eval", EXAMPLE, "--dataset", "digits", "--max-memory", "1", "--run-dir", run)
    assert r.exit_code == 2 and "over the memory budget" in r.stderr, r.output
    assert not run.exists()


def test_a_lock_taken_on_a_file_its_holder_removed_is_taken_on_the_paths_file(tmp_path, monkeypatch):
    """Another process opened the lock file just before its holder removed it: its lock on that file would
    guard nothing, so it takes the file now at the path."""
    first = RunLock(tmp_path).acquire()
    stale = os.open(first.path, os.O_RDWR)
    first.release(remove=True)
    assert not first.path.exists()
    real_open, opened = os.open, []

    def opening(path, *args, **kwargs):
        if not opened:
            opened.append(path)
            return stale
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(lock_module.os, "open", opening)
    second = RunLock(tmp_path).acquire()
    assert opened and os.fstat(second.fd).st_ino == os.stat(first.path).st_ino  # the path's file is held
    with pytest.raises(RunLocked):
        RunLock(tmp_path).acquire()
    second.release()
