"""kill -9 during `optimize(..., n_jobs=4, executor="process")`: of a worker (its trial runs again),
of a second driver's attempt (refused: one driver owns a study), and of the driver (every finished
trial is kept, the workers die with it, and the study resumes, asking again what was running)."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import nader.search as ns
import study_objectives as obj

HERE = Path(__file__).resolve().parent
DRIVER = """
import sys, study_objectives as obj, nader.search as ns
study = ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"], storage=sys.argv[1],
                        strategy="random", load_if_exists=True)
study.optimize(obj.Workers(sys.argv[2], 1.0), n_trials=40, n_jobs=4, executor="process")
"""


def rows(run: Path, sql: str) -> list:
    if not (run / "runs.sqlite").exists():
        return []
    conn = sqlite3.connect(f"file:{run / 'runs.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # its tables not created yet
        return []
    finally:
        conn.close()


def until(condition, seconds: float = 120.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def driver(run: Path, folder: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(run), str(folder)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_kill_9_of_a_worker_and_of_the_driver_loses_no_finished_trial(tmp_path):
    run, folder = tmp_path / "run", tmp_path / "workers"
    folder.mkdir()
    first = driver(run, folder)
    try:
        def running_worker():  # a worker whose trial is still training
            training = {a for (a,) in rows(run, "SELECT arch_id FROM archs WHERE status='training'")}
            for f in folder.glob("worker-*"):
                pid, arch = int(f.name.split("-")[1]), int(f.read_text() or -1)
                if arch in training and alive(pid):
                    return pid, arch
            return None

        pid, victim = until(running_worker)
        os.kill(pid, signal.SIGKILL)
        until(lambda: rows(run, f"SELECT 1 FROM archs WHERE arch_id={victim} AND status='ok'"))
        second = driver(run, folder)  # a second driver on the same study is refused, pointed to n_jobs
        _, err = second.communicate(timeout=120)
        assert second.returncode != 0 and "RunLocked" in err and "n_jobs" in err
        until(lambda: rows(run, "SELECT 1 FROM archs WHERE status='training'"))
        finished = dict(rows(run, "SELECT arch_id, valid_acc FROM archs WHERE status='ok'"))
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    workers = [int(f.name.split("-")[1]) for f in folder.glob("worker-*")]
    until(lambda: not any(alive(w) for w in workers), 30)  # the workers died with their driver
    running = {a for (a,) in rows(run, "SELECT arch_id FROM archs WHERE status='training'")}
    after_kill = dict(rows(run, "SELECT arch_id, valid_acc FROM archs WHERE status='ok'"))
    assert finished.items() <= after_kill.items() and running

    study = ns.load_study(run)
    before = len(study.trials)
    study.optimize(obj.Workers(str(folder), 0.0), n_trials=2, n_jobs=4)
    trials = {t.number: t for t in study.trials}
    assert len(trials) == before + 2  # what was running was asked again, not added
    assert all(trials[a].state == "ok" and trials[a].value == v for a, v in after_kill.items())
    assert all(trials[a].state == "ok" for a in running)
    assert trials[victim].record["attempts"] == 2
