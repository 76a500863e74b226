"""map_forked: results in order from forked children; a failing child is an error, never a hang."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from nader.compiler.commands.forked import WorkerFailed, map_forked


def _square_and_pid(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def _fails_on_two(n: int) -> int:
    if n == 2:
        raise ValueError("two is not allowed")
    return n


def _dies_on_one(n: int) -> int:
    if n == 1:
        os._exit(3)  # a worker killed without a word (out of memory, a signal)
    return n


def _children() -> set[int]:
    """This process's children, zombies included (Linux lists them per thread)."""
    return {int(pid) for task in Path("/proc/self/task").iterdir()
            for pid in (task / "children").read_text().split()}


@pytest.fixture
def no_children_left():
    """Fails a test that leaves a child of its own running or unreaped (other tests' may remain)."""
    before = _children()
    yield
    assert _children() <= before


def test_results_come_back_in_order_and_the_parent_computes_the_last(no_children_left):
    results = map_forked(_square_and_pid, [3, 1, 4, 1, 5])
    assert [r for r, _ in results] == [9, 1, 16, 1, 25]
    pids = [pid for _, pid in results]
    assert pids[-1] == os.getpid() and os.getpid() not in pids[:-1]
    assert len(set(pids)) == 5


def test_large_results_pass_through_the_pipe(no_children_left):
    big = map_forked(lambda n: "x" * n, [1 << 20, 3])  # larger than a pipe's buffer
    assert [len(b) for b in big] == [1 << 20, 3]


def test_an_exception_in_a_child_is_raised_with_its_text(no_children_left):
    with pytest.raises(WorkerFailed, match="ValueError: two is not allowed"):
        map_forked(_fails_on_two, [1, 2, 3, 4])


def test_a_child_that_dies_is_an_error(no_children_left):
    with pytest.raises(WorkerFailed, match="without a result"):
        map_forked(_dies_on_one, [0, 1, 2])


def test_an_exception_in_the_parent_stops_the_children(no_children_left):
    with pytest.raises(ValueError):
        map_forked(_fails_on_two, [1, 3, 2])  # the parent computes the last item, 2


def test_nothing_to_do():
    assert map_forked(_square_and_pid, []) == []
