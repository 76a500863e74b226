"""The checks' wall-time guard: a block whose checks run too long is rejected, the search goes on."""
from __future__ import annotations

import signal
import threading
import time

from nader.search.checks import Checker
from nader.search.config import merge
from nader.search.tree import Tree

from search_helpers import ROOT_TEXT

DEPTHS = [1, 1, 1]


def make_checker(time_limit):
    return Checker("nb201", "digits", DEPTHS, merge({"root_text": ROOT_TEXT}).budget(), time_limit=time_limit)


def busy_check(self, text, tree, error=None, arch=None):
    """Pure-Python CPU work that no thread timer could interrupt; gives up after a minute."""
    end = time.monotonic() + 60
    n = 0
    while time.monotonic() < end:
        n += 1
    raise AssertionError("the guard never fired")


def test_checks_that_outrun_the_guard_are_rejected_with_the_reason(monkeypatch):
    monkeypatch.setattr(Checker, "_check", busy_check)
    handler_before = signal.getsignal(signal.SIGALRM)
    checked = make_checker(0.2).check(ROOT_TEXT, Tree())
    assert checked.status == "invalid"
    assert checked.diagnostics["message"] == "checks took longer than 0.2 s"
    assert [d["code"] for d in checked.diagnostics["diagnostics"]] == ["checks-timeout"]
    # The guard leaves nothing behind: the handler is back and no timer is armed.
    assert signal.getsignal(signal.SIGALRM) is handler_before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_next_check_after_a_timeout_runs_normally(monkeypatch):
    checker = make_checker(0.2)
    with monkeypatch.context() as m:
        m.setattr(Checker, "_check", busy_check)
        assert checker.check(ROOT_TEXT, Tree()).status == "invalid"
    checked = checker.check(ROOT_TEXT, Tree())
    assert checked.status == "proposed", checked.diagnostics


def test_outside_the_main_thread_the_checks_run_unguarded(monkeypatch):
    calls = []

    def quick_check(self, text, tree, error=None, arch=None):
        calls.append(threading.current_thread() is threading.main_thread())
        return "checked"

    monkeypatch.setattr(Checker, "_check", quick_check)
    results = []
    worker = threading.Thread(target=lambda: results.append(make_checker(0.2).check(ROOT_TEXT, Tree())))
    worker.start()
    worker.join(timeout=60)
    assert results == ["checked"] and calls == [False]
