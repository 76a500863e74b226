"""`eval` and `run` spell the executor and the trial timeout one way (settings declared in
`nader.runtime.options`, made click options by `nader.inputs.cli`); eval's old spellings still
work, hidden from --help, with a warning."""
from __future__ import annotations

import click
from click.testing import CliRunner

from nader.cli import main
from nader.inputs.cli import options
from nader.runtime.options import EXECUTOR, TRIAL_TIMEOUT


@click.command()
@options(EXECUTOR, TRIAL_TIMEOUT.but(old=("--timeout",)))
def probe(executor, trial_timeout):
    click.echo(f"{executor} {trial_timeout}")


def _run(*args):
    return CliRunner().invoke(probe, list(args))


def test_new_spellings_and_durations():
    assert _run("--executor", "POOL", "--trial-timeout", "10m").output.strip() == "pool 600.0"
    assert _run().output.strip() == "local None"
    bad = _run("--executor", "threads")
    assert bad.exit_code == 2 and "local" in bad.output and "inprocess" not in bad.output


def test_old_spellings_work_with_a_warning():
    old = _run("--executor", "inprocess", "--timeout", "90")
    assert old.exit_code == 0 and old.stdout.strip() == "local 90.0"
    assert "--executor inprocess is now --executor local" in old.stderr
    assert "--timeout is now --trial-timeout" in old.stderr
    both = _run("--timeout", "9", "--trial-timeout", "9")
    assert both.exit_code == 2 and "give --trial-timeout alone" in both.output


def test_eval_and_run_document_the_same_spelling_and_hide_the_old():
    for command in ("eval", "run"):
        shown = CliRunner().invoke(main, [command, "--help"]).output
        assert "--executor" in shown and "--trial-timeout" in shown
        assert "inprocess" not in shown and "--timeout " not in shown
