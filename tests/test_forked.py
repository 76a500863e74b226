"""map_forked: results in order from forked children pulling from one queue; a failing child is an
error, never a hang."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nader.compiler.commands.forked import MAX_ITEMS, WorkerFailed, map_forked

PARENT = os.getpid()


def _square_and_pid(n: int) -> tuple[int, int]:
    time.sleep(0.2)  # long enough that every process takes an item
    return n * n, os.getpid()


def _sleep_and_pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _fails_in_a_child(n: int) -> int:
    if os.getpid() != PARENT:
        raise ValueError("not allowed in a child")
    time.sleep(1)  # the child takes the other item meanwhile
    return n


def _dies_in_a_child(n: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)  # a worker killed without a word (out of memory, a signal)
    time.sleep(1)
    return n


def _fails_in_the_parent(n: int) -> int:
    if os.getpid() == PARENT:
        raise ValueError("not allowed in the parent")
    time.sleep(60)  # stopped long before
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


def test_results_come_back_in_order_whoever_computed_them(no_children_left):
    results = map_forked(_square_and_pid, [3, 1, 4, 1, 5, 9], processes=3)
    assert [r for r, _ in results] == [9, 1, 16, 1, 25, 81]
    pids = {pid for _, pid in results}
    assert PARENT in pids and len(pids) == 3


def test_a_process_held_up_by_a_slow_item_takes_fewer(no_children_left):
    pids = map_forked(_sleep_and_pid, [1.0] + [0.0] * 20, processes=2)
    assert pids.count(pids[0]) == 1  # the other process took all the quick ones meanwhile


def test_large_results_pass_through_the_pipe(no_children_left):
    big = map_forked(lambda n: (time.sleep(0.2), "x" * n)[1], [1 << 20, 3], processes=2)
    assert [len(b) for b in big] == [1 << 20, 3]


def test_an_exception_in_a_child_is_raised_with_its_text(no_children_left):
    with pytest.raises(WorkerFailed, match="ValueError: not allowed in a child"):
        map_forked(_fails_in_a_child, [1, 2], processes=2)


def test_a_child_that_dies_is_an_error(no_children_left):
    with pytest.raises(WorkerFailed, match="without a result"):
        map_forked(_dies_in_a_child, [0, 1], processes=2)


def test_an_exception_in_the_parent_stops_the_children(no_children_left):
    with pytest.raises(ValueError, match="not allowed in the parent"):
        map_forked(_fails_in_the_parent, [1, 2, 3], processes=3)


def test_one_process_runs_everything_itself():
    assert map_forked(_sleep_and_pid, [0.0, 0.0], processes=1) == [PARENT, PARENT]


def test_nothing_to_do_and_too_much():
    assert map_forked(_square_and_pid, [], processes=2) == []
    with pytest.raises(ValueError, match="at most"):
        map_forked(_square_and_pid, [0] * (MAX_ITEMS + 1), processes=2)
