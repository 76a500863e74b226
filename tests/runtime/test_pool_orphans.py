"""A pool worker dies with its parent (issue 41, finding 16): `kill -9` on the process that runs the pool
leaves no worker training on, and the worker prints no traceback (no BrokenPipeError) on its way out."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HELPERS = Path(__file__).resolve().parent

# The parent: a pool of one worker running one job of thousands of one-step epochs, each sending an
# event to the parent (after the parent's death, to a closed pipe); it prints the worker's pid once
# the first epoch is done.
PARENT = """
import json, sys
sys.path.insert(0, {helpers!r})
from nader.runtime.jobs import Job
from nader.runtime.pool import PoolExecutor

def event(ev, said=[]):
    if ev.get("type") == "epoch" and not said:
        said.append(True)
        print(dispatch.workers[0].proc.pid, flush=True)

dispatch = PoolExecutor(workers=1, threads=1).start(on_event=event)
dispatch.submit(Job(arch=json.dumps({{"width": 2}}), builder="runtime_helpers:tiny_builder", dataset="digits",
                    preset="quick", seed=1, options={{"epochs": 100000, "threads": 1, "train_limit": 64,
                                                     "eval_limit": 64}}))
dispatch.wait()
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie: exited, not yet reaped
    except OSError:
        return True


def test_a_worker_dies_with_its_parent_and_prints_no_traceback(tmp_path):
    with open(tmp_path / "stderr", "wb") as err:  # the worker writes to the parent's stderr
        parent = subprocess.Popen([sys.executable, "-c", PARENT.format(helpers=str(HELPERS))],
                                  stdout=subprocess.PIPE, stderr=err)
    try:
        line = parent.stdout.readline()  # the worker has trained an epoch (empty: the parent ended)
        assert line.strip().isdigit(), (tmp_path / "stderr").read_text()
        worker = int(line)
        time.sleep(0.5)  # the worker trains on, an event every few milliseconds
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 120  # a guard against a hang, not a measure of time
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = not _gone(worker)
        if alive:
            os.kill(worker, signal.SIGKILL)
        assert not alive, "the worker went on after its parent was killed"
        time.sleep(0.2)  # whatever the worker printed on its way out is in the file
        stderr = (tmp_path / "stderr").read_text()
        assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    finally:
        if parent.poll() is None:
            parent.kill()
