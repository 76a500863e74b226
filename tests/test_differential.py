"""The verifier against execution: its verdict must equal what running the block does.

Every block is checked in both size domains (docs/semantics.md, "Domains"):

* `square` (the default) at the square sizes 32, 16, 8 (the concrete stage resolutions of the
  nb201 skeleton) and 7 (odd), with the block's weights built for each resolution, as a network
  builds each stage's blocks. The nb201 stage sizes of the block's role (base 32, 16, 8;
  downsample 32, 16; stem 32) are also verified as fixed resolutions, as `--network` commands
  do, and compared with the run at that size.
* `any` at the same squares and 32x16, with one set of weights for every size.

Each run goes forward and backward at batch 2, then at batch 3 with the same weights (the last
batch of an epoch, evaluation). Accepted blocks must run at every size that meets the constraints
the verifier reports, and produce exactly the inferred shapes; rejected blocks must fail at one.
Widths: C in {16, 48, 64, 128}; an accepted block runs at the first two widths that meet its
constraints, a rejected one at each until it fails. The tests print the counts per domain
(`test_report_counts`). NADER_DIFF_EXAMPLES raises the number of generated and mutated blocks.
"""
from __future__ import annotations

import json
import os
import random
import re
from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from nader.compiler.passes import ANY, SQUARE, fixed, verify_block
from nader.compiler.passes.shapes import SIZE_LIMIT, evaluate_shape
from nader.dsl import parse
from nader.dsl.ir import Role
from nader.dsl.ops import Op

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reference_executor import runs  # noqa: E402

WIDTHS = (16, 48, 64, 128)
SQUARES = (7, 8, 16, 32)
NON_SQUARE = (32, 16)
NB201_SIZES = {Role.STEM: (32,), Role.BASE: (32, 16, 8), Role.DOWNSAMPLE: (32, 16), Role.CELL: (32, 16, 8),
               Role.REDUCTION_CELL: (32, 16)}
EXAMPLES = int(os.environ.get("NADER_DIFF_EXAMPLES", "500"))
torch.set_num_threads(1)

#: Verdicts per domain ("fixed": the nb201 stage resolutions), each agreeing with execution.
STATS: dict[str, Counter] = {"square": Counter(), "any": Counter(), "fixed": Counter()}


def _widths(role: Role):
    for width in WIDTHS:
        if role is Role.STEM:
            yield 3, width
        else:
            yield width, (2 * width if role is Role.DOWNSAMPLE else width)


class Executions:
    """The runs of one block, shared by the verdicts compared with them.

    Weights built per resolution make each size an independent run, cached per size. A run with one
    set of weights for several sizes (the `any` domain) that succeeds also settles every one of its
    sizes per resolution: each layer then meets at every size the shape it was built for, which is
    the shape a layer built for that size would have.
    """

    def __init__(self, block, role: Role, stem_stride: int):
        self.block, self.role, self.stem_stride = block, role, stem_stride
        self.per_size: dict = {}  # (C, dim, size) -> (ok, why, ReferenceBlock)
        self.shared: dict = {}  # (C, dim, sizes) -> (ok, why, ReferenceBlock)

    def run(self, C: int, dim: int, sizes: list, per_resolution: bool):
        """(ok, why, a ReferenceBlock that ran the last size)."""
        if not per_resolution:
            key = (C, dim, tuple(sizes))
            if key not in self.shared:
                self.shared[key] = runs(self.block, self.role, C, dim, sizes, stem_stride=self.stem_stride)
                if self.shared[key][0]:
                    for size in sizes:
                        self.per_size.setdefault((C, dim, size), self.shared[key])
            return self.shared[key]
        result = None
        for size in sizes:
            key = (C, dim, size)
            if key not in self.per_size:
                self.per_size[key] = runs(self.block, self.role, C, dim, [size], stem_stride=self.stem_stride)
            result = self.per_size[key]
            if not result[0]:
                return result
        return result


def _agree(report, sizes, executions: Executions, per_resolution: bool) -> str:
    """Compare one verdict with execution at `sizes` (ints are n x n); returns 'ok', 'error' or 'untestable'."""
    block = report.block
    tested = 0
    for C, dim in _widths(report.role):
        def meets(size):
            H, W = size if isinstance(size, tuple) else (size, size)
            return report.shapes.satisfied({"B": 2, "C": C, "dim": dim, "H": H, "W": W})
        chosen = [s for s in sizes if meets(s)] if report.ok else list(sizes)
        if not chosen:
            continue
        ok, why, ref = executions.run(C, dim, chosen, per_resolution)
        tested += 1
        if report.ok:
            assert ok, f"verifier accepted {block.name} ({report.domain}) but it fails at C={C}: {why}\n{block_text(block)}"
            # Accepted blocks produce exactly the inferred shapes (checked at the last size run).
            last = chosen[-1]
            H, W = last if isinstance(last, tuple) else (last, last)
            values = ref.run(2, H, W)
            sizes_at = {"B": 2, "C": C, "dim": dim, "H": H, "W": W}
            live = {i for i in report.shapes.order if block.node(i).op is not Op.OUTPUT}
            assert set(values) == live, (block.name, sorted(values), sorted(live))  # dead nodes are dropped
            for node_id, tensor in values.items():
                expected = evaluate_shape(report.shapes.shapes[node_id], sizes_at)
                assert tuple(tensor.shape) == expected, (block.name, str(report.domain), node_id, tuple(tensor.shape),
                                                        expected)
            if tested == 2:
                break
        elif not ok:
            return "error"
    if not report.ok:
        errors = [f"{d.code.code} {d.message}" for d in report.diagnostics if d.is_error]
        pytest.fail(f"verifier rejected {block.name} in {report.domain} ({errors}) but it runs at every size\n"
                    f"{block_text(block)}")
    return "ok" if tested else "untestable"


def check_agreement(block, role=None, stem_stride=1) -> dict[str, str]:
    """Compare the verdicts of every domain with execution; returns the outcome per domain ("square",
    "any"): 'ok', 'error', 'refused' (absurd sizes, not run) or 'untestable' (no width meets the constraints)."""
    outcome = {}
    executions = None
    for domain, sizes, per_resolution in ((ANY, SQUARES + (NON_SQUARE,), False), (SQUARE, SQUARES, True)):
        report = verify_block(block, role=role, stem_stride=stem_stride, domain=domain)
        executions = executions or Executions(block, report.role, stem_stride)
        if any(d.code is SIZE_LIMIT for d in report.diagnostics):
            outcome[domain.name] = "refused"
        else:
            outcome[domain.name] = _agree(report, sizes, executions, per_resolution)
        STATS[domain.name][outcome[domain.name]] += 1
    assert not (outcome["any"] == "ok" and outcome["square"] == "error"), "`any` accepted what `square` rejects"
    for size in NB201_SIZES[executions.role]:
        report = verify_block(block, role=role, stem_stride=stem_stride, domain=fixed(size))
        if any(d.code is SIZE_LIMIT for d in report.diagnostics):
            STATS["fixed"]["refused"] += 1
            continue
        STATS["fixed"][_agree(report, (size,), executions, True)] += 1
    return outcome


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
    assert len(verdicts) == 90
    for domain in ("square", "any"):
        assert [v[domain] for v in verdicts].count("ok") == 90 - [v[domain] for v in verdicts].count("error")
    assert all(v["square"] == "ok" for v in verdicts)  # every compatibility block verifies


def test_fail2success_log_agrees_with_execution(compat_dir):
    """Every fixed architecture is accepted; in failing ones exactly the blocks that fail when run are flagged."""
    log = json.loads((compat_dir / "fail2success_log.json").read_text())
    records = [r for group in log.values() for recs in group.values() for r in recs]
    assert len(records) == 15
    runs_despite_nader: dict[str, list] = {"square": [], "any": []}
    names = [name for group in log.values() for name, recs in group.items() for _ in recs]
    for name, record in zip(names, records):
        flagged = Counter()
        for side in ("fail_block", "success_block"):
            for text in record[side].values():
                if not text:
                    continue
                for block in parse(text).program.blocks:
                    verdicts = check_agreement(block, stem_stride=4)
                    if side == "success_block":
                        assert verdicts["square"] == "ok", block.name
                    for domain, verdict in verdicts.items():
                        flagged[domain] += verdict == "error" and side == "fail_block"
        for domain in runs_despite_nader:
            if not flagged[domain]:
                runs_despite_nader[domain].append(name)
    # NADER recorded `reshape(B*H*W,C)` as an error, but the block runs: execution decides. It also
    # rejected a dead node ("the node is not used"), which runs too (compiling drops it).
    assert sorted(runs_despite_nader["any"]) == ["resnet_base_macro1", "resnet_base_micro3"]
    # Its rule that `LN`/`Linear` act on channels rejected blocks that run at the resolution a network
    # builds them for: resolution-bound layers, valid in the square domain.
    assert sorted(runs_despite_nader["square"]) == sorted(runs_despite_nader["any"] + [
        "googlenet_macro6", "mobilenet_micro2", "convnext_micro3", "convnext_micro5", "convnext_micro6",
        "convnext_micro8"])


# -- generated and mutated blocks -------------------------------------------------------

SIZES = ["C", "dim", "C*2", "C/2", "C/4", "2*C", "C//2", "dim/2", "8", "C-1", "C*4"]
UNARY = [
    "BN", "LN", "ReLU", "GELU", "Sigmoid", "DropPath(prob=0.1)", "AdaptiveAvgPool2d(output_size=1)",
    "permute(0,2,3,1)", "permute(0,3,1,2)", "permute(0,1,3,2)", "permute(0,2,1)",
    "reshape(B,C,H*W)", "reshape(B,-1,H,W)", "reshape(B,C/4,4,H,W)", "reshape(B,H,W,C)", "reshape(B,-1)",
    "reshape(B,C,H,W)", "mean(dim=1)", "mean(dim=(2,3))", "sum(dim=-1)", "max(dim=1)", "softmax(dim=-1)",
    "softmax(dim=4)", "repeat(1,1,2,2)", "repeat(1,2,1,1)", "MaxPool2d(kernel_size=3,stride=1)",
    # The batch on a learned axis (rejected), spatial sizes swapped (square-only when merged back).
    "reshape(1,B*C,H,W)", "permute(1,0,2,3)", "reshape(B,C,W,H)",
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
    """A block of random layers and merges. Nodes no later node consumes are dead (dropped when
    compiled); `LN`/`Linear` on the last axis of a (B,C,H,W) tensor are resolution-bound; a cell
    may leave `input2` unused. Half the blocks name their ids (`2a`, `conv_2`, `n2`) as LLMs do."""
    role = draw(st.sampled_from(["X"] * 6 + ["X_downsample", "X_stem", "Cell"]))
    style = draw(st.sampled_from(["{}", "{}", "{}a", "conv_{}", "n{}"]))
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
    text = "\n".join(lines + edges)
    if style != "{}":  # rename every id; terminals are known by their operation, not their id
        text = re.sub(r"^(\d+):|(\d+)->(\d+)$",
                      lambda m: (f"{style.format(m[1])}:" if m[1] is not None
                                 else f"{style.format(m[2])}->{style.format(m[3])}"),
                      text, flags=re.M)
    return f"##{role}##\n{text}\n"


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
    """Prints the agreement counts of this session's differential tests, per domain (run last in this file)."""
    print(f"\ndifferential (blocks agreeing with execution; square sizes {SQUARES}, any: also {NON_SQUARE}; "
          f"fixed: the nb201 stage sizes {sorted(set(NB201_SIZES[Role.BASE]))}):")
    for domain, counts in STATS.items():
        total = sum(counts.values())
        print(f"  {domain}: accepted {counts['ok']}, rejected {counts['error']}, refused {counts['refused']}, "
              f"untestable {counts['untestable']}, total {total}")
    if STATS["square"]:  # the file ran, not only this test
        assert STATS["square"]["ok"] > STATS["any"]["ok"] and STATS["any"]["error"] > STATS["square"]["error"]
