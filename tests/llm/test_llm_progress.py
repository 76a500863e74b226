"""Progress of the LLM commands: the client's observer hook, the plain per-call lines of
`bench-nad` and `read` on a stderr that is not a terminal, and `bench-nad` resuming from its
results file without asking the endpoint again."""
from __future__ import annotations

import io
import json
import re

from click.testing import CliRunner

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.bench import nad
from nader.agents.llm import CallStore
from nader.agents.llm.client import observe_new_clients
from nader.agents.llm.progress import CallProgress
from nader.cli import main

PLAN = re.compile(r"Modify it according to this plan:\n(.*?)\n(?:\nLessons learnt|\nReply with)", re.S)
LINE = re.compile(r"^llm call=(\d+) role=(\S+) source=(\S+) in=(\d+) out=(\d+) .*done=(\d+)/(\d+) eta=\S+$")
REQUESTS = [r for r in nad.load_requests() if r.id.startswith("resnet_basic")][:4]


def _fenced(text: str) -> str:
    return f"Here is the block:\n```\n{text.strip()}\n```\n"


def bench_responder(body):
    """The reference answer to each request, the first one broken in round 1 (one repair turn);
    a lesson for the Reflector."""
    first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    match = PLAN.search(first_user)
    if match is None:
        return reply(json.dumps({"lesson": "Check every node's inputs."}))
    request = next(r for r in REQUESTS if r.text == match.group(1).strip())
    answers = [request.reference_text()]
    if request is REQUESTS[0]:
        answers.insert(0, request.reference_text() + "99:Frobnicate\n2->99\n")
    rounds = sum(1 for m in body["messages"] if m["role"] == "assistant")
    return reply(_fenced(answers[min(rounds, len(answers) - 1)]))


def bench(server, run, *extra):
    args = ["bench-nad", "--run-dir", str(run), "--only", "resnet_basic", "--limit", str(len(REQUESTS)),
            "--llm-base-url", server.base_url, "--llm-model", "local-model", *extra]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_the_observer_gets_one_event_per_call_with_its_tokens(server, tmp_path):
    server.responder = lambda body: reply("fine", usage=(11, 7))
    client = make_client(server, tmp_path / "run")
    events, seen_by_new = [], []
    stop = observe_new_clients(seen_by_new.append)
    try:
        client.add_observer(events.append)
        client.chat_sync(user("hello"), role="proposer", arch_id="a1")
        client.chat_sync(user("again"), role="reflector")
    finally:
        client.close()
    assert [(e.role, e.source, e.prompt_tokens, e.completion_tokens, e.arch_id) for e in events] == [
        ("proposer", "endpoint", 11, 7, "a1"), ("reflector", "endpoint", 11, 7, None)]
    assert all(e.kind == "chat" and e.seconds >= 0 for e in events)
    # A client made while a command watches new clients reports to it too; the same request
    # answered from the run's record is an event with its recorded tokens.
    again = make_client(server, tmp_path / "run")
    stop()
    try:
        again.chat_sync(user("hello"), role="proposer")
    finally:
        again.close()
    assert [(e.source, e.prompt_tokens, e.completion_tokens) for e in seen_by_new] == [("cache", 11, 7)]
    assert len(server.chat_requests) == 2


def test_bench_nad_prints_a_plain_line_per_call_and_a_final_line(server, tmp_path):
    server.responder = bench_responder
    done = bench(server, tmp_path / "run", "--setting", "no-experience")
    assert done.exit_code == 0, done.output
    lines = done.stderr.splitlines()
    calls = [LINE.match(line) for line in lines if line.startswith("llm call=")]
    assert len(calls) == len(server.chat_requests) == len(REQUESTS) + 1  # one repair turn
    assert all(m is not None and m.group(2) == "modifier" and m.group(7) == str(len(REQUESTS)) for m in calls)
    store = CallStore(tmp_path / "run", read_only=True)
    spent = store.spent()
    store.close()
    assert sum(int(m.group(4)) for m in calls) == spent.prompt_tokens > 0
    assert sum(int(m.group(5)) for m in calls) == spent.completion_tokens > 0
    assert lines[-1].startswith(f"llm done calls={len(calls)} in={spent.prompt_tokens} out={spent.completion_tokens}")
    assert f"requests={len(REQUESTS)}/{len(REQUESTS)}" in lines[-1]
    assert "llm" not in done.stdout  # the table alone on stdout


def test_read_prints_a_plain_line_per_call_and_a_final_line(server, tmp_path):
    from test_read_cli import endpoint, papers_file
    from test_reader import scripted_reader

    server.responder = scripted_reader
    server.dim = 32
    done = CliRunner().invoke(main, ["read", str(papers_file(tmp_path)), "--kb", str(tmp_path / "kb"),
                                     *endpoint(server)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    lines = done.stderr.splitlines()
    calls = [LINE.match(line) for line in lines if line.startswith("llm call=")]
    assert len(calls) == len(server.calls) == 5  # 4 chat, 1 embeddings
    assert all(m is not None and m.group(7) == "2" for m in calls)
    roles = [m.group(2) for m in calls]
    assert "embed" in roles and all(r.startswith("reader") for r in roles if r != "embed")
    assert lines[-1].startswith("llm done calls=5 ") and "papers=2/2" in lines[-1]


def test_bench_nad_interrupted_resumes_without_asking_again(server, tmp_path, monkeypatch):
    server.responder = bench_responder
    # Two settings whose first prompts are the same (no lessons): a resumed run must number
    # identical requests as an uninterrupted one, or it would take one setting's reply for the other's.
    settings = ["--setting", "no-experience", "--setting", "no-feedback-no-experience", "--format", "json"]
    whole = bench(server, tmp_path / "whole", *settings)
    assert whole.exit_code == 0, whole.output
    uninterrupted = len(server.calls)

    real_score, scored = nad.score, []

    def interrupted_score(request, text):
        scored.append(request.id)
        if len(scored) == 6:  # in the second setting (its broken first reply is not scored)
            raise KeyboardInterrupt
        return real_score(request, text)

    monkeypatch.setattr(nad, "score", interrupted_score)
    stopped = bench(server, tmp_path / "run", *settings)
    assert stopped.exit_code == 130 and "resume" in stopped.stderr
    monkeypatch.setattr(nad, "score", real_score)
    first_session = len(server.calls) - uninterrupted
    assert 0 < first_session < uninterrupted
    rows = [json.loads(line) for line in (tmp_path / "run" / "bench-nad.jsonl").read_text().splitlines()]
    assert [r["setting"] for r in rows] == ["no-experience"] * 4 + ["no-feedback-no-experience"] * 2

    resumed = bench(server, tmp_path / "run", *settings)
    assert resumed.exit_code == 0, resumed.output
    assert len(server.calls) - uninterrupted == uninterrupted  # no request asked twice
    assert json.loads(resumed.stdout) == json.loads(whole.stdout)
    assert "done=6/8" in resumed.stderr.splitlines()[0]  # the six read back count as done


def test_progress_counts_units_for_the_eta():
    stream = io.StringIO()
    progress = CallProgress(stream=stream, enabled=False)
    progress.set_total(4, done=1)
    progress.unit_done()
    from nader.agents.llm.client import CallEvent

    progress(CallEvent("genius", "chat", "m", "endpoint", 100, 20, 2.0, 0.5, None))
    line = stream.getvalue().splitlines()[0]
    assert LINE.match(line) and "tok/s=10.0" in line and "cost=$0.5000" in line and "done=2/4" in line
    assert re.search(r"eta=\d+:\d\d$", line)
    progress.close()
    assert stream.getvalue().splitlines()[-1].startswith("llm done calls=1 in=100 out=20 cost=$0.5000")


def test_kb_import_through_an_endpoint_prints_a_line_per_embeddings_call(server, tmp_path):
    from test_kb_endpoint_cli import POOL

    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(POOL))
    done = CliRunner().invoke(main, ["kb", "import", str(pool), "--kb", str(tmp_path / "kb"), "--llm-base-url",
                                     server.base_url, "--embedding-model", "embedder"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    calls = [LINE.match(line) for line in done.stderr.splitlines() if line.startswith("llm call=")]
    assert len(calls) == len(server.calls) == 1
    words = sum(len(item["inspiration"].split()) for item in POOL)  # the loopback server's token count
    assert (calls[0].group(4), calls[0].group(5), calls[0].group(7)) == (str(words), "0", str(len(POOL)))
    assert done.stderr.splitlines()[-1].startswith("llm done calls=1 ")


def test_run_with_an_llm_strategy_prints_a_line_per_call(server, tmp_path):
    from search_helpers import WIDE
    from test_llm_faults import SEARCH_TOML

    server.responder = lambda body: reply(f"```\n{WIDE}```", usage=(300, 40))
    (tmp_path / "search.toml").write_text(SEARCH_TOML)
    done = CliRunner().invoke(main, ["run", str(tmp_path / "search.toml"), "--strategy", "genius", "--llm-base-url",
                                     server.base_url, "--llm-model", "m", "--run-dir", str(tmp_path / "run"),
                                     "--format", "json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["trials"] == 2
    calls = [LINE.match(line) for line in done.stderr.splitlines() if line.startswith("llm call=")]
    assert len(calls) == len(server.chat_requests) > 0
    assert all(m and (m.group(2), m.group(4), m.group(5), m.group(7)) == ("genius", "300", "40", "2") for m in calls)
    assert done.stderr.splitlines()[-1].startswith(f"llm done calls={len(calls)} in={300 * len(calls)}")
    assert sum(line.startswith("llm done") for line in done.stderr.splitlines()) == 1  # once, not per close
