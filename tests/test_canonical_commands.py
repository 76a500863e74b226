"""Canonical hashing against the compat corpus, and the commands (`nadc hash`, `nadc diff`).

The properties of the hash on generated blocks are in test_canonical.py.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given

from conftest import run_nadc, shared_dir
from text_strategies import mutated_texts
from test_canonical import SETTINGS, block_of
from nader.compiler.cli import main
from nader.compiler.passes.canonical import canonical_hash, equivalent, group_equal, source_hash
from nader.compiler.passes.diff import block_diff
from nader.dsl.ir import Block
from nader.dsl.parser import parse

_SHARED = shared_dir()
COMPAT = _SHARED / "nader-compat" / "blocks" if _SHARED else Path("/nonexistent")

# -- the compat corpus -------------------------------------------------------------------

needs_corpus = pytest.mark.skipif(not COMPAT.is_dir(), reason="nader-compat corpus not available")


def _corpus():
    items = []
    for path in sorted(COMPAT.glob("*.txt")):
        result = parse(path.read_text(encoding="utf-8"), str(path))
        assert result.ok, path
        items += [(f"{path.name}:{b.name}", b) for b in result.program.blocks]
    return items


def _renumbered_text(block: Block) -> tuple:
    """Independent oracle: the block's lines with ids replaced by their rank."""
    rank = {i: k for k, i in enumerate(sorted({n.id for n in block.nodes}))}
    nodes = sorted(f"{rank[n.id]}:{n.source_text().split(':', 1)[1]}" for n in block.nodes)
    edges = sorted(",".join(str(rank[s]) for s in e.sources) + f"->{rank[e.target]}" for e in block.edges)
    return tuple(nodes), tuple(edges)


@needs_corpus
def test_corpus_distinct_blocks_hash_distinct():
    items = _corpus()
    assert len(items) == 90
    by_hash: dict[str, list[str]] = {}
    for label, block in items:
        by_hash.setdefault(canonical_hash(block), []).append(label)
    by_text: dict[tuple, list[str]] = {}
    for label, block in items:
        by_text.setdefault(_renumbered_text(block), []).append(label)
    # 41 distinct blocks: the rest are copies across files (the *_forRes50 variants share
    # their base block with the plain runs; stems and downsamples are shared widely), and
    # darts__dartsv2_downsample2's `stem_block` is the common DARTS stem renumbered.
    assert len(by_hash) == 41
    assert sorted(map(sorted, by_hash.values())) == sorted(map(sorted, by_text.values()))
    assert sorted(map(sorted, group_equal(items))) == sorted(map(sorted, by_hash.values()))
    same = {frozenset(v) for v in by_hash.values()}
    assert any({"nas-bench-201__nasbench201_cifar100_optimal.txt:NASBench201Seed777",
                "nas-bench-201__nasbench201_cifar100_optimal_forRes50.txt:NASBench201Seed777"} <= g for g in same)
    assert any({"darts__dartsv2.txt:DARTSv2_stem", "darts__dartsv2_downsample2.txt:stem_block"} <= g for g in same)


@needs_corpus
def test_corpus_diffs():
    items = dict(_corpus())
    a = items["darts__dartsv2.txt:DARTSv2_base"]
    b = items["darts__dartsv2_craft1.txt:DARTSv2_base"]
    d = block_diff(a, b)
    assert not d.added and not d.removed and not d.edges_added and not d.edges_removed
    assert sorted((c.a.id, c.op) for c in d.changed if c.op) == [(57, ("concat", "Add"))]
    assert {c.a.id: c.params for c in d.changed if not c.op} == {
        i: {"prob": ("0.0", "0.2")} for i in (11, 20, 30, 39, 49, 55)}
    rng = random.Random(7)
    for label, block in list(items.items())[:30]:
        lines = block.nodes, block.edges
        text = "\n".join([f"##{block.name}##"] + [n.source_text() for n in rng.sample(lines[0], len(lines[0]))]
                         + [e.source_text() for e in block.edges])
        assert block_diff(block, block_of(text)).equal, label


# -- the commands --------------------------------------------------------------------------

def run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_hash_command(tmp_path, capsys):
    f = tmp_path / "a.nad"
    f.write_text("##A##\n0:input\n1:output\n2:ReLU\n0->2\n2->1\n##B##\n0:input\n1:output\n7:ReLU # x\n0->7\n7->1\n")
    code, out, err = run(capsys, "hash", str(f))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].split()[0] == lines[1].split()[0]
    assert lines[0].endswith(f"  {f}:A") and lines[1].endswith(f"  {f}:B")
    code, out, _ = run(capsys, "hash", "--format", "json", str(f))
    rows = json.loads(out)
    assert code == 0 and [r["block"] for r in rows] == ["A", "B"] and rows[0]["hash"] == rows[1]["hash"]
    code, out, _ = run(capsys, "hash", "--duplicates", str(f))
    assert code == 0 and len(out.splitlines()) == 2
    bad = tmp_path / "bad.nad"
    bad.write_text("##A##\n0:input\n2:Conv2d(out_channels=C,,)\n")
    code, out, err = run(capsys, "hash", str(bad), str(f))
    assert code == 1 and "NAD101" in err and len(out.splitlines()) == 2 and "Traceback" not in err


def test_diff_command(tmp_path, capsys):
    a = tmp_path / "a.nad"
    b = tmp_path / "b.nad"
    c = tmp_path / "c.nad"
    a.write_text("##Net##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3)\n3:BN\n4:ReLU\n"
                 "0->2\n2->3\n3->4\n4->1\n")
    b.write_text("##Renamed##\n11:input\n5:output\n9:ReLU\n7:Conv2d(out_channels=C,kernel_size=3,stride=1)\n8:BN\n"
                 "8->9\n11->7\n9->5\n7->8\n")
    c.write_text("##Net##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=5)\n3:BN\n4:GELU\n5:BN\n"
                 "0->2\n2->3\n3->5\n5->4\n4->1\n")
    code, out, _ = run(capsys, "diff", str(a), str(b))
    assert code == 0 and out == ""
    code, out, _ = run(capsys, "diff", str(a), str(c))
    assert code == 1
    assert "~ node 2: Conv2d  kernel_size: 3 -> 5" in out
    assert "~ node 4: ReLU -> GELU" in out
    assert "+ node 5:BN" in out and "- edge 3->4" in out and "+ edge 3->5" in out and "+ edge 5->4" in out
    code, out, _ = run(capsys, "diff", "--format", "json", str(a), str(c))
    report = json.loads(out)
    assert code == 1 and report["equal"] is False
    (blk,) = report["blocks"]
    assert blk["nodes"]["changed"][0]["params"] == {"kernel_size": {"old": "3", "new": "5"}}
    assert [n["id"] for n in blk["nodes"]["added"]] == [5]
    code, out, _ = run(capsys, "diff", "--format", "json", str(a), str(b))
    assert code == 0 and json.loads(out)["equal"] is True
    code, _, err = run(capsys, "diff", str(a), str(c), "--block", "Missing")
    assert code == 2 and "no block `Missing`" in err
    code, _, err = run(capsys, "diff", str(a))
    assert code == 2
    code, _, err = run(capsys, "diff", str(a), str(tmp_path / "absent.nad"))
    assert code == 2 and "NAD100" in err and "Traceback" not in err


@SETTINGS
@given(mutated_texts(), mutated_texts())
def test_hash_and_diff_never_crash_on_broken_blocks(text_a, text_b):
    """Duplicate ids, undefined ids, cycles, unknown operations: hashing and diffing still work."""
    blocks_a, blocks_b = parse(text_a).program.blocks, parse(text_b).program.blocks
    for a in blocks_a:
        assert canonical_hash(a) == canonical_hash(a) and source_hash(a)
        assert block_diff(a, a).equal
        for b in blocks_b[:1]:
            d = block_diff(a, b)
            assert d.equal == equivalent(a, b)
    run = run_nadc(["diff", "-", "-"], stdin=text_a)
    assert run.code == 2 and "Traceback" not in run.stderr
