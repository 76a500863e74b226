"""Every LLM error reaches the user as one line with its advice, never a traceback: the endpoint
rejecting requests (404: a base_url without /v1, 401: a bad key, 400: a prompt over the context
length or a parameter the model refuses) and a server that is not there (connection refused),
driven through `read`, `kb import`, `kb search` and `bench-nad` against the loopback server or a
closed port. (`nader-search run`: tests/search/test_llm_errors_run.py.)"""
from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import LoopbackServer, status
from nader.cli import main

# Fail fast: no retry waits, and a breaker that opens on the second failed call.
LLM_TOML = "[llm]\nrequest_timeout = 2\ndeadline = 5\nmax_retries = 1\nbackoff_base = 0.01\nbackoff_max = 0.02\n" \
           "breaker_failures = 2\n"
ADVICE = {
    404: "check base_url (it usually ends in /v1)",
    401: "check the API key (api_key_env)",
    400: "check the prompt against the model's context length",
    "refused": "check that the server is running and base_url is right",
}
POOL = [{"id": i, "paper_id": 100 + i, "inspiration": text} for i, text in enumerate([
    "Use depthwise separable convolutions to reduce computation.",
    "Recalibrate channel responses with squeeze-and-excitation gating."])]


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _endpoint(server, fault) -> str:
    """The base URL to use, the server scripted to answer every request with `fault`."""
    if fault == "refused":
        return closed_port_url()
    server.responder = lambda body: status(fault)
    server.embed_script[:] = [status(fault)] * 50
    return server.base_url


def _command(name, tmp_path, base_url):
    config = tmp_path / "llm.toml"
    config.write_text(LLM_TOML)
    llm = ["--llm-config", str(config), "--llm-base-url", base_url]
    if name == "read":
        papers = tmp_path / "papers.jsonl"
        papers.write_text(json.dumps({"id": "p1", "title": "Gated block", "abstract": "A gated block.",
                                      "text": "Method. Gate the residual branch."}) + "\n")
        return ["read", str(papers), "--kb", str(tmp_path / "kb"), *llm, "--llm-model", "m"]
    if name == "bench-nad":
        return ["bench-nad", "--run-dir", str(tmp_path / "run"), "--only", "resnet_basic", "--limit", "1",
                "--setting", "no-experience", *llm, "--llm-model", "m"]
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(POOL))
    if name == "kb import":
        return ["kb", "import", str(pool), "--kb", str(tmp_path / "kb"), *llm, "--embedding-model", "e"]
    # kb search: a knowledge base built through a healthy endpoint first.
    with LoopbackServer() as healthy:
        built = CliRunner().invoke(main, ["kb", "import", str(pool), "--kb", str(tmp_path / "kb"),
                                          "--llm-base-url", healthy.base_url, "--embedding-model", "e"])
        assert built.exit_code == 0, built.output
    return ["kb", "search", "squeeze", "--kb", str(tmp_path / "kb"), *llm, "--embedding-model", "e"]


# (command, fault) -> exit status: 2 a rejected request (every one would be), except `read`'s 400,
# which fails that paper alone (1), and a server that is not there, which stops a resumable run (1)
# or fails the knowledge base's one step (2).
CASES = {
    ("read", 404): 2, ("read", 401): 2, ("read", 400): 1, ("read", "refused"): 1,
    ("bench-nad", 404): 2, ("bench-nad", 401): 2, ("bench-nad", 400): 2, ("bench-nad", "refused"): 1,
    ("kb import", 404): 2, ("kb import", 401): 2, ("kb import", 400): 2, ("kb import", "refused"): 2,
    ("kb search", 404): 2, ("kb search", 401): 2, ("kb search", 400): 2, ("kb search", "refused"): 2,
}


@pytest.mark.parametrize("name, fault", list(CASES), ids=[f"{c}-{f}" for c, f in CASES])
def test_an_llm_error_is_one_line_with_its_advice(server, tmp_path, name, fault):
    command = _command(name, tmp_path, _endpoint(server, fault))
    result = CliRunner().invoke(main, command)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == CASES[name, fault], result.output
    lines = [line for line in result.output.splitlines() if ADVICE[fault] in line]
    assert lines, result.output
    if result.exit_code == 2:
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error: ") and ADVICE[fault] in line
