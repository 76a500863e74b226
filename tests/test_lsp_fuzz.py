"""`nadc lsp` against a hostile client: a few hundred seeded cases of every class in
tests/lsp_hostile.py (broken framing, envelopes, lifecycle, every method's params, documents it must
not read, node ids it must not rename to, notifications) sent to one server. The server stays alive
and in step, every request is answered exactly once with the spec's code for its class, no answer is
an internal error and no traceback reaches stderr. benchmarks/lsp_fuzz_bench.py runs 10,000."""
from __future__ import annotations

import os
import random

import pytest

pytest.importorskip("pygls", reason="the `lsp` extra (pygls) is not installed")

from lsp_hostile import Generator, Report, drive, start  # noqa: E402

CASES = int(os.environ.get("NADC_LSP_FUZZ_CASES", "300"))


def test_a_hostile_client_gets_the_spec_s_answers_and_the_server_lives(tmp_path):
    wire, docs = start(tmp_path)
    try:
        generator = Generator(random.Random(41), docs)
        report = drive(wire, [generator.case() for _ in range(CASES)], Report())
        assert not report.problems, "\n".join(report.problems[:20])
        assert report.requests > CASES // 3 and len(report.kinds) >= 6  # the mix it claims to send
        assert wire.stop() == 0  # and it still ends as the spec says
    finally:
        wire.close()
