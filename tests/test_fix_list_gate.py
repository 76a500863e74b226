"""`nadc fix --list` past the error gate (MOST_ERRORS) says what `nadc fix` does there: a block a model
restated (hundreds of errors one cleanup mends) is listed as `nadc fix --unsafe` repairs it, and a file
that is merely that broken says it was not searched instead of "no verified repair" for each error."""
from __future__ import annotations

import json

from conftest import run_nadc

from nader.compiler.repair.search import MOST_DIAGNOSTICS, MOST_ERRORS

BLOCK = "##B##\n0:input\n1:output\n2:ReLU\n3:BN\n0->2\n2->3\n3->1\n"


def restated() -> str:
    """The block, then its node lines again and edges to a node never defined: over the gate."""
    return BLOCK + "2:ReLU\n3:BN\n" * 12 + "3->9\n" * 20


def test_a_restated_block_past_the_gate_is_listed_as_fix_repairs_it(tmp_path):
    path = tmp_path / "restated.nad"
    path.write_text(restated())
    listed = run_nadc(["fix", "--list", "--format", "json", str(path)])
    (record,) = json.loads(listed.stdout)
    searched = [e for e in record["errors"] if e["searched"]]  # a block's first MOST_DIAGNOSTICS, as a repair's
    assert len(record["errors"]) > MOST_ERRORS and len(searched) == MOST_DIAGNOSTICS
    kinds = {a["kind"] for e in record["errors"] for a in e["alternatives"]}
    assert "drop-restatement" in kinds, kinds
    text = run_nadc(["fix", "--list", str(path)]).stdout
    assert text.count("not searched: a repair looks at the first 8 diagnostics of a block") == \
        len(record["errors"]) - MOST_DIAGNOSTICS and "no verified repair" not in text
    assert path.read_text() == restated()  # --list writes nothing
    fixed = run_nadc(["fix", "--unsafe", str(path)])
    assert fixed.code == 0 and path.read_text() == BLOCK, fixed.stderr


def test_a_file_past_the_gate_says_it_was_not_searched(tmp_path):
    path = tmp_path / "broken.nad"
    path.write_text("##B##\n0:input\n1:output\n" + "".join(f"{k}:Frobnicate\n" for k in range(2, 50)) + "0->1\n")
    listed = run_nadc(["fix", "--list", str(path)])
    assert listed.code == 1 and "no verified repair" not in listed.stdout
    assert listed.stdout.count(f"not searched: the file has more errors than a repair takes on ({MOST_ERRORS})") > MOST_ERRORS
    (record,) = json.loads(run_nadc(["fix", "--list", "--format", "json", str(path)]).stdout)
    assert not any(e["searched"] or e["alternatives"] for e in record["errors"])
