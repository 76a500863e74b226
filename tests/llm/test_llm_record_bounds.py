"""A reply refused for its size is recorded as a bounded prefix with its length and hash (issue 30,
point 10: nine 30 MB replies made a 541 MB database), and a cache or replay of that row is refused
the same way, with the same feedback, as the reply itself was."""
from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.llm.jsonreply import MAX_REPLY_CHARS, reply_too_long


def test_an_oversized_reply_is_recorded_as_a_bounded_prefix_with_length_and_hash(server, tmp_path):
    text = "y" * 3_000_000
    server.responder = lambda body: reply(text)
    with closing(make_client(server, tmp_path)) as client:
        got = client.chat_sync(user("hi"))
        first = reply_too_long(got.text)
        assert first is not None
    with closing(make_client(server, tmp_path)) as client:  # the next session: answered from the record
        again = client.chat_sync(user("hi"))
    conn = sqlite3.connect(tmp_path / "runs.sqlite")
    rows = [json.loads(r) for r, in conn.execute("SELECT reply FROM llm_calls WHERE source = 'endpoint'")]
    conn.close()
    (row,) = rows
    assert len(row["text"]) == MAX_REPLY_CHARS + 1
    assert row["length"] == len(text) and row["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert (tmp_path / "runs.sqlite").stat().st_size < 2 * MAX_REPLY_CHARS + 200_000
    assert again.source == "cache" and reply_too_long(again.text) == first  # the same feedback either way


def test_a_reply_within_the_bound_is_recorded_whole(server, tmp_path):
    server.responder = lambda body: reply("z" * 1000)
    with closing(make_client(server, tmp_path)) as client:
        client.chat_sync(user("hi"))
    conn = sqlite3.connect(tmp_path / "runs.sqlite")
    (stored,) = conn.execute("SELECT reply FROM llm_calls").fetchone()
    conn.close()
    assert json.loads(stored) == {"text": "z" * 1000, "finish_reason": "stop"}


def test_a_damaged_recorded_reply_is_asked_again_not_an_internal_error(server, tmp_path, caplog):
    server.responder = lambda body: reply("fresh")
    with closing(make_client(server, tmp_path)) as client:
        client.chat_sync(user("hi"))
    conn = sqlite3.connect(tmp_path / "runs.sqlite")
    conn.execute("UPDATE llm_calls SET reply = ?, prompt_tokens = 'NaN'", ("[" * 5000 + "]" * 5000,))
    conn.execute("INSERT INTO llm_calls(key, occurrence, kind, model, request, reply, status, source)"
                 " SELECT key, 1, kind, model, request, CAST(X'7B22FF227D' AS TEXT), status, source FROM llm_calls")
    conn.commit()
    conn.close()
    with closing(make_client(server, tmp_path)) as client:
        first, second = client.chat_sync(user("hi")), client.chat_sync(user("hi"))
    assert (first.text, first.source, second.text, second.source) == ("fresh", "endpoint", "fresh", "endpoint")
    assert "column reply: JSON nested deeper than" in caplog.text and "column reply: not valid UTF-8" in caplog.text
