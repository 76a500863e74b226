"""benchmarks/llm_records.py judges a recorded run's first Modifier replies as issue 28 defines E
(as written and after the compiler's repair) and checks the blocks it counts against the NAD
request's machine checks, from the run's `llm_calls` alone. Here the run is recorded against the
loopback server with the Modifier's edit replies, as `real_llm.py` records bench-nad's; before
this test, `--summarize` raised on every run (it read the requests with a function that does not
exist) and did not know `modifier_edits.v3`."""
from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path

from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.bench.nad import base_blocks, load_requests, request_by_id
from nader.agents.llm.profiles import ModelProfile
from nader.agents.modifier import EDITS_SMALL, Modifier
from scripted import ScriptedLLM

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from llm_records import first_reply_e, first_replies  # noqa: E402

REPLIES = {  # NAD request -> the first reply
    "resnet_basic/micro/02": "##ResNetBasic##\nreplace 4:GELU\nreplace 8:GELU\n",  # verifies, does what was asked
    "resnet_basic/micro/08": "##ResNetBasic##\ninsert 9:ReLU after 6\nconnect 3->6\n",  # BN fed twice: repaired
    "resnet_basic/micro/01": "##ResNetBasic##\nreplace 4:ReLU\n",  # the parent again: nothing to repair
}


def test_first_replies_are_judged_from_the_record_with_and_without_repair(server, tmp_path):
    requests = load_requests()
    plans = {request_by_id(requests, r).text: reply for r, reply in REPLIES.items()}
    server.responder = ScriptedLLM({plan: [reply] for plan, reply in plans.items()})
    profile = ModelProfile("local-model", reply="edits", small=True)
    with closing(make_client(server, tmp_path, profiles=(profile,))) as client:
        modifier = Modifier(client, rounds=1)
        for ident in REPLIES:
            request = request_by_id(requests, ident)
            modifier.write_block(base_blocks()["resnet_basic"], request.text, arch_id=f"no-experience:{ident}")
    entries = first_replies(tmp_path)
    assert [e["request"].split(":")[1] for e in entries] == list(REPLIES) and {e["prompt"] for e in entries} == \
        {EDITS_SMALL}
    assert [(e["ok"], e["repaired"]) for e in entries] == [(True, True), (False, True), (False, False)]
    assert "3->6" not in entries[1]["block"] and "9:ReLU" in entries[1]["block"] and entries[2]["block"] is None
    figures = first_reply_e(tmp_path)
    assert figures["replies"] == 3 and figures["e"] == 0.333 and figures["e_repair"] == 0.667
    assert figures["e_repair_first"] == 0.667 and figures["e_repair_beyond"] is None
    assert figures["checks_passed"] == "2/2"
