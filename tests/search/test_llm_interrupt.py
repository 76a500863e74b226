"""SIGTERM or Ctrl-C while a search waits on an LLM call (issue 30, point 18): the search stops as
interrupted (exit 130) with its one line, and no asyncio noise ("Task exception was never
retrieved", "Task was destroyed but it is pending!") follows; the same command then resumes."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import hang, reply
from search_helpers import REPO, WIDE
from test_llm_faults import SEARCH_TOML


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_an_llm_call_stops_quietly_and_resumes(server, tmp_path, signum):
    (tmp_path / "search.toml").write_text(SEARCH_TOML)
    (tmp_path / "llm.toml").write_text("[llm]\nrequest_timeout = 60\ndeadline = 120\n")
    cmd = [sys.executable, "-m", "nader.cli", "run", str(tmp_path / "search.toml"), "--strategy", "genius",
           "--llm-config", str(tmp_path / "llm.toml"), "--llm-base-url", server.base_url, "--llm-model",
           "local-model", "--run-dir", str(tmp_path / "run")]
    server.responder = lambda body: hang()
    # A suite started in the background inherits SIGINT ignored: Ctrl-C needs the default disposition.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while not server.chat_requests and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.chat_requests, proc.communicate(timeout=60)
    time.sleep(0.3)  # inside the call
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted; run the same command again to resume" in err
    for noise in ("Task exception was never retrieved", "Task was destroyed", "Traceback", "Exception ignored"):
        assert noise not in err, err
    conn = sqlite3.connect(tmp_path / "run" / "runs.sqlite")
    assert conn.execute("SELECT stop_reason FROM search_sessions").fetchall() == [("interrupted",)]
    conn.close()
    server.responder = lambda body: reply(f"```\n{WIDE}```")
    resumed = subprocess.run(cmd + ["--format", "json"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["resumed"] and summary["trials"] == 2
