"""The verifier against execution: its verdict must equal what running the block does.

For each block, `nadc verify`'s verdict is compared with an independent
reference executor (tests/reference_executor.py) that runs the block forward
and backward at C in {16, 48, 64, 128} and H in {8, 16, 32}, respecting the
constraints the verifier reports. Accepted blocks must run at every such size
and produce exactly the inferred shapes; rejected blocks must fail at one.
NADER_DIFF_EXAMPLES raises the number of generated and mutated blocks.
"""
from __future__ import annotations

import json
import os
import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from nader.compiler.passes import verify_block
from nader.compiler.passes.shapes import SIZE_LIMIT, evaluate_shape
from nader.dsl import parse
from nader.dsl.ir import Role

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reference_executor import runs  # noqa: E402

WIDTHS = (16, 48, 64, 128)
HEIGHTS = (8, 16, 32)
EXAMPLES = int(os.environ.get("NADER_DIFF_EXAMPLES", "500"))
torch.set_num_threads(1)

STATS = {"agree": 0, "accepted": 0, "rejected": 0, "refused": 0, "untestable": 0}


def check_agreement(block, role=None, stem_stride=1) -> str:
    """Compare verdict and execution; returns 'ok', 'error', 'refused' or 'untestable'."""
    report = verify_block(block, role=role, stem_stride=stem_stride)
    role = report.role
    if any(d.code is SIZE_LIMIT for d in report.diagnostics):
        STATS["refused"] += 1
        return "refused"
    tested = 0
    for width in WIDTHS:
        if role is Role.STEM:
            C, dim = 3, width
        else:
            C, dim = width, (2 * width if role is Role.DOWNSAMPLE else width)
        sizes_ok = [H for H in HEIGHTS
                    if report.ok and report.shapes.satisfied({"B": 2, "C": C, "dim": dim, "H": H, "W": H})]
        heights = sizes_ok if report.ok else list(HEIGHTS)
        if not heights:
            continue
        # One non-square size too: the verdict holds for all H, W, not only H == W.
        wide = (heights[-1], heights[-1] // 2)
        if not report.ok or report.shapes.satisfied({"B": 2, "C": C, "dim": dim, "H": wide[0], "W": wide[1]}):
            heights = heights + [wide]
        ok, why, ref = runs(block, role, C if role is not Role.STEM else 3, dim, heights, stem_stride=stem_stride)
        tested += 1
        if report.ok:
            assert ok, f"verifier accepted {block.name} but it fails at C={C}: {why}\n{block_text(block)}"
            # Accepted blocks produce exactly the inferred shapes (checked at the last height run).
            H, W = heights[-1] if isinstance(heights[-1], tuple) else (heights[-1], heights[-1])
            values = ref.run(2, H, W)
            sizes = {"B": 2, "C": C, "dim": dim, "H": H, "W": W}
            for node_id, tensor in values.items():
                expected = evaluate_shape(report.shapes.shapes[node_id], sizes)
                assert tuple(tensor.shape) == expected, (block.name, node_id, tuple(tensor.shape), expected)
        elif not ok:
            STATS["rejected"] += 1
            STATS["agree"] += 1
            return "error"
    if not report.ok:
        errors = [f"{d.code.code} {d.message}" for d in report.diagnostics if d.is_error]
        pytest.fail(f"verifier rejected {block.name} ({errors}) but it runs at every size\n{block_text(block)}")
    if tested == 0:
        STATS["untestable"] += 1
        return "untestable"
    STATS["accepted"] += 1
    STATS["agree"] += 1
    return "ok"


def block_text(block) -> str:
    lines = [f"##{block.name}##"] + [n.source_text() for n in block.nodes] + [e.source_text() for e in block.edges]
    return "\n".join(lines)


def _stride_for(path: str) -> int:
    return 4 if ("/blocks__" in path or "forRes50" in path) else 1


def test_compat_blocks_agree_with_execution(compat_dir):
    verdicts = []
    for path in sorted((compat_dir / "blocks").glob("*.txt")):
        parsed = parse(path.read_text(), str(path))
        for block in parsed.program.blocks:
            verdicts.append(check_agreement(block, stem_stride=_stride_for(str(path))))
    assert len(verdicts) == 90 and verdicts.count("ok") == 90 - verdicts.count("error")


def test_fail2success_log_agrees_with_execution(compat_dir):
    """Every fixed architecture is accepted; in failing ones exactly the blocks that fail when run are flagged."""
    log = json.loads((compat_dir / "fail2success_log.json").read_text())
    records = [r for group in log.values() for recs in group.values() for r in recs]
    assert len(records) == 15
    runs_despite_nader = []
    names = [name for group in log.values() for name, recs in group.items() for _ in recs]
    for name, record in zip(names, records):
        flagged = 0
        for side in ("fail_block", "success_block"):
            for text in record[side].values():
                if not text:
                    continue
                for block in parse(text).program.blocks:
                    verdict = check_agreement(block, stem_stride=4)
                    if side == "success_block":
                        assert verdict == "ok", block.name
                    flagged += verdict == "error" and side == "fail_block"
        if not flagged:
            runs_despite_nader.append(name)
    # NADER recorded `reshape(B*H*W,C)` as an error, but the block runs: execution decides.
    assert runs_despite_nader == ["resnet_base_micro3"]


# -- generated and mutated blocks -------------------------------------------------------

SIZES = ["C", "dim", "C*2", "C/2", "C/4", "2*C", "C//2", "dim/2", "8", "C-1", "C*4"]
UNARY = [
    "BN", "LN", "ReLU", "GELU", "Sigmoid", "DropPath(prob=0.1)", "AdaptiveAvgPool2d(output_size=1)",
    "permute(0,2,3,1)", "permute(0,3,1,2)", "permute(0,1,3,2)", "permute(0,2,1)",
    "reshape(B,C,H*W)", "reshape(B,-1,H,W)", "reshape(B,C/4,4,H,W)", "reshape(B,H,W,C)", "reshape(B,-1)",
    "reshape(B,C,H,W)", "mean(dim=1)", "mean(dim=(2,3))", "sum(dim=-1)", "max(dim=1)", "softmax(dim=-1)",
    "softmax(dim=4)", "repeat(1,1,2,2)", "repeat(1,2,1,1)", "MaxPool2d(kernel_size=3,stride=1)",
]
MERGE = ["Add", "Mul", "concat(dim=1)", "multiply", "Add"]


@st.composite
def layer(draw):
    kind = draw(st.sampled_from(["conv", "conv", "unary", "unary", "linear", "pool"]))
    if kind == "conv":
        extra = draw(st.sampled_from(["", "", ",groups=2", ",groups=C", ",groups=4", ",dilation=2", ",groups=dim", ",groups=3"]))
        k = draw(st.sampled_from(["1", "2", "3", "4", "5", "(1,3)"]))
        s = draw(st.sampled_from(["1", "1", "1", "2"]))
        return f"Conv2d(out_channels={draw(st.sampled_from(SIZES))},kernel_size={k},stride={s}{extra})"
    if kind == "linear":
        return f"Linear(out_channels={draw(st.sampled_from(SIZES))})"
    if kind == "pool":
        op = draw(st.sampled_from(["AvgPool2d", "MaxPool2d"]))
        return f"{op}(kernel_size={draw(st.sampled_from([2, 3]))},stride={draw(st.sampled_from([1, 2]))})"
    return draw(st.sampled_from(UNARY))


@st.composite
def random_block(draw):
    role = draw(st.sampled_from(["X"] * 6 + ["X_downsample", "X_stem", "Cell"]))
    inputs = ["input1", "input2"] if role == "Cell" else ["input"]
    lines = [f"{i}:{name}" for i, name in enumerate(inputs)]
    out_id = len(inputs)
    lines.append(f"{out_id}:output")
    available = list(range(len(inputs)))
    edges = []
    next_id = out_id + 1
    for _ in range(draw(st.integers(1, 7))):
        if len(available) >= 2 and draw(st.integers(0, 3)) == 0:
            op = draw(st.sampled_from(MERGE))
            srcs = draw(st.lists(st.sampled_from(available), min_size=2, max_size=3 if op != "multiply" else 2))
        else:
            op = draw(layer())
            srcs = [draw(st.sampled_from(available[-3:]))]
        lines.append(f"{next_id}:{op}")
        edges += [f"{s}->{next_id}" for s in srcs]
        available.append(next_id)
        next_id += 1
    last = available[-1]
    if role == "Cell" and draw(st.booleans()):
        lines.append(f"{next_id}:Add")
        edges += [f"{last}->{next_id}", f"{available[1]}->{next_id}"]
        last = next_id
    edges.append(f"{last}->{out_id}")
    return f"##{role}##\n" + "\n".join(lines + edges) + "\n"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(random_block())
def test_generated_blocks_agree_with_execution(text):
    parsed = parse(text)
    assert parsed.ok, parsed.diagnostics
    check_agreement(parsed.program.blocks[0])


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.strip().split("\n")
    header, body = lines[0], lines[1:]
    nodes = [i for i, l in enumerate(body) if ":" in l]
    edges = [i for i, l in enumerate(body) if "->" in l]
    choice = rng.randrange(5)
    if choice == 0 and nodes:  # replace an operation
        i = rng.choice(nodes)
        node_id = body[i].split(":")[0]
        if body[i].split(":")[1] not in ("input", "input1", "input2", "output"):
            body[i] = f"{node_id}:{rng.choice(UNARY + ['Conv2d(out_channels=C,kernel_size=3,stride=2)'])}"
    elif choice == 1 and edges:  # drop an edge
        body.pop(rng.choice(edges))
    elif choice == 2 and edges:  # redirect an edge's source
        i = rng.choice(edges)
        target = body[i].split("->")[1]
        ids = [body[k].split(":")[0] for k in nodes]
        body[i] = f"{rng.choice(ids)}->{target}"
    elif choice == 3 and nodes:  # change a size
        i = rng.choice(nodes)
        for size in ("out_channels=C", "out_channels=dim", "stride=1", "kernel_size=3"):
            if size in body[i]:
                replacement = {"out_channels=C": f"out_channels={rng.choice(SIZES)}",
                               "out_channels=dim": f"out_channels={rng.choice(SIZES)}",
                               "stride=1": "stride=2", "kernel_size=3": "kernel_size=4"}[size]
                body[i] = body[i].replace(size, replacement, 1)
                break
    else:  # add an edge
        ids = [body[k].split(":")[0] for k in nodes]
        body.append(f"{rng.choice(ids)}->{rng.choice(ids)}")
    return "\n".join([header] + body) + "\n"


def test_mutated_compat_blocks_agree_with_execution(compat_dir):
    texts = []
    for path in sorted((compat_dir / "blocks").glob("*.txt")):
        if "darts" in path.name:
            continue  # large cells: slow to execute 12 times; covered unmutated above
        program = parse(path.read_text()).program
        for block in program.blocks:
            texts.append((block_text(block), _stride_for(str(path))))
    rng = random.Random(20251122)
    count = 0
    for _ in range(EXAMPLES):
        text, stride = rng.choice(texts)
        mutated = _mutate(text, rng)
        parsed = parse(mutated)
        if not parsed.ok:
            continue
        check_agreement(parsed.program.blocks[0], stem_stride=stride)
        count += 1
    assert count > EXAMPLES * 0.8


def test_report_counts():
    """Prints the agreement counts of this session's differential tests (run last in this file)."""
    print(f"\ndifferential: {STATS}")
    assert STATS["agree"] >= 0
