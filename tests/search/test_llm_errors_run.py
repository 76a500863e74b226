"""`nader-search run` with an endpoint that rejects every request (404: a base_url without /v1,
401: a bad key, 400: a prompt over the context length) or is not there (connection refused): a
clean, resumable `llm-stopped` (exit 3) whose message carries the advice, never a traceback. The
same run directory goes through each fault in turn (the root trains once)."""
from __future__ import annotations

import json
import socket

from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import status
from nader.cli import main
from test_llm_faults import LLM_TOML, SEARCH_TOML

ADVICE = {
    404: "check base_url (it usually ends in /v1)",
    401: "check the API key (api_key_env)",
    400: "check the prompt against the model's context length",
    "refused": "check that the server is running and base_url is right",
}


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_each_endpoint_error_stops_the_run_with_its_advice(server, tmp_path):
    (tmp_path / "llm.toml").write_text(LLM_TOML)
    (tmp_path / "search.toml").write_text(SEARCH_TOML)
    for fault, advice in ADVICE.items():
        server.responder = lambda body, fault=fault: status(fault)
        base_url = closed_port_url() if fault == "refused" else server.base_url
        result = CliRunner().invoke(main, [
            "run", str(tmp_path / "search.toml"), "--strategy", "genius", "--llm-config", str(tmp_path / "llm.toml"),
            "--llm-base-url", base_url, "--llm-model", "m", "--run-dir", str(tmp_path / "run"), "--format", "json"])
        assert "Traceback" not in result.output and "internal error" not in result.output, fault
        assert result.exit_code == 3, (fault, result.output)
        out = json.loads(result.stdout)
        assert out["stop_reason"] == "llm-stopped", fault
        assert advice in out["stop_message"], (fault, out["stop_message"])
