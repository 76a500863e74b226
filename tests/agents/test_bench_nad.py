"""`nader-search bench-nad`: one run recorded against the loopback server, then the table
printed again in replay from that record, with no endpoint."""
from __future__ import annotations


import json
import re

import pytest
from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.bench import nad
from nader.cli import main
from scripted import ScriptedLLM

ONLY = "resnet_basic"  # 20 requests: 10 micro, 10 macro


def _broken(text: str) -> str:
    return text.rstrip("\n") + "\n99:Frobnicate\n2->99\n"


@pytest.fixture
def scripted_bench(server):
    """References as replies; every third request answers with a broken block first."""
    script = {}
    for i, r in enumerate(x for x in nad.load_requests() if x.id.startswith(ONLY)):
        ref = r.reference_text()
        script[r.text] = [_broken(ref), ref] if i % 3 == 0 else [ref]
    server.responder = ScriptedLLM(script)
    return server


def _rows(output: str) -> dict:
    rows = {}
    for line in output.splitlines()[1:]:
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


def test_bench_nad_recorded_then_replayed(scripted_bench, tmp_path):
    run = tmp_path / "run"
    llm = ["--llm-base-url", scripted_bench.base_url, "--llm-model", "local-model", "--llm-max-tokens", "10000000"]
    recorded = CliRunner().invoke(main, ["bench-nad", "--run-dir", str(run), "--only", ONLY, *llm])
    assert recorded.exit_code == 0, recorded.output
    print("\n" + recorded.stdout)
    rows = _rows(recorded.stdout)  # the progress lines go to stderr
    assert set(rows) == {"full", "no-feedback", "no-experience", "no-feedback-no-experience"}
    n, exe, exe_fb, success = rows["full"][:4]
    assert n == "20"
    # 7 of 20 requests start broken: executability 13/20, after feedback 20/20, and every
    # reference answer passes its checks.
    assert (float(exe), float(exe_fb), float(success)) == (0.65, 1.0, 1.0)
    assert [float(x) for x in rows["no-feedback"][1:4]] == [0.65, 0.65, 0.65]
    assert float(rows["full"][-1]) > float(rows["no-experience"][-1]) > 0  # the Reflector's tokens count
    calls = len(scripted_bench.chat_requests)

    replayed = CliRunner().invoke(main, ["bench-nad", "--run-dir", str(tmp_path / "replayed"), "--only", ONLY,
                                         "--replay", str(run)])
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == recorded.stdout
    assert len(scripted_bench.chat_requests) == calls  # the replay made no call

    as_json = CliRunner().invoke(main, ["bench-nad", "--run-dir", str(tmp_path / "again"), "--only", ONLY,
                                        "--setting", "no-feedback", "--replay", str(run), "--format", "json"])
    data = json.loads(as_json.stdout)
    assert data["settings"][0]["executability"] == 0.65 and data["requests"] == 20


def test_bench_nad_replay_miss_stops_with_status_1(scripted_bench, tmp_path):
    empty = tmp_path / "empty"
    result = CliRunner().invoke(main, ["bench-nad", "--run-dir", str(empty), "--only", ONLY, "--limit", "1",
                                       "--setting", "full", "--llm-base-url", scripted_bench.base_url,
                                       "--llm-model", "m"])
    assert result.exit_code == 0
    other = CliRunner().invoke(main, ["bench-nad", "--run-dir", str(tmp_path / "r2"), "--only", "convnext",
                                      "--limit", "1", "--setting", "full", "--replay", str(empty)])
    assert other.exit_code == 1 and re.search(r"stopped", other.output)
