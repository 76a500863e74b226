"""Drawings: `--emit dot` (our own DOT text) and `--emit svg` (our own layout, no Graphviz).

The DOT text is read back with a small tokenizer and parser written here (quoted strings with
escapes, attribute lists, node and edge statements, subgraphs), so the tests check structure:
every node and every edge present once, shapes on edges, operand numbers, escaping. Where
Graphviz's `dot` is installed, it must also accept the text. SVG is parsed as XML.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_nadc
from nader.compiler.backends import drawing
from nader.compiler.backends.drawing import ORDERED, draw_block, quote
from nader.compiler.passes.contract import ANY
from nader.compiler.passes.shapes import shape_str
from nader.compiler.passes.verify import verify_block
from nader.dsl.ops import Group, Op
from nader.dsl.parser import parse

HAS_DOT = shutil.which("dot") is not None

RESNET = """##ResNetBasicBlock##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=1)
3:BN
4:ReLU
5:Conv2d(out_channels=C,kernel_size=3,stride=1)
6:BN
7:ReLU
8:Add
0->2
2->3
3->4
4->5
5->6
6->8
0->8
8->7
7->1
##ResNetBasicBlock_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=2,stride=2)
3:BN
4:ReLU
0->2
2->3
3->4
4->1
"""

ATTENTION = """##Attention##
0:input
1:output
2:reshape(B,C,H*W)
3:permute(0,2,1)
4:Linear(out_channels=C)
5:softmax(dim=-1)
6:multiply
7:multiply
8:reshape(B,C,H,W)
9:concat(dim=1)
10:Conv2d(out_channels=C,kernel_size=1)
0->2
2->3
3->4
4->5
2->6
5->6
6->7
2->7
7->8
0->9
8->9
9->10
10->1
"""

BROKEN = """##Broken##
0:input
1:output
2:Conv2d(out_channels=C/4,kernel_size=1)
3:Add
0->2
2->3
0->3
3->1
"""


# -- a small DOT reader ------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<arrow>->)|(?P<punct>[{}\[\]=,;])|(?P<id>[A-Za-z_][\w.]*))',
                    re.S)


def tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m, f"unexpected DOT text at {pos}: {text[pos:pos + 40]!r}"
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "str":
            value = _unescape(value[1:-1])
        out.append((kind, value))
        pos = m.end()
    return out


def _unescape(body: str) -> str:
    result, k = [], 0
    while k < len(body):
        ch = body[k]
        if ch == "\\":
            nxt = body[k + 1]
            result.append({"n": "\n", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
            k += 2
        else:
            result.append(ch)
            k += 1
    return "".join(result)


@dataclass
class Graph:
    name: str
    nodes: dict = field(default_factory=dict)  # id -> attrs
    edges: list = field(default_factory=list)  # (a, b, attrs)
    clusters: list = field(default_factory=list)  # graph attrs of each subgraph


def read_dot(text: str) -> Graph:
    toks = tokens(text)
    k = 0

    def take(kind=None, value=None):
        nonlocal k
        t = toks[k]
        assert kind is None or t[0] == kind, (t, kind, k)
        assert value is None or t[1] == value, (t, value, k)
        k += 1
        return t[1]

    def attrs() -> dict:
        result = {}
        take("punct", "[")
        while toks[k] != ("punct", "]"):
            key = take()
            take("punct", "=")
            result[key] = take()
            if toks[k] == ("punct", ","):
                take()
        take("punct", "]")
        return result

    assert take("id") == "digraph"
    graph = Graph(take("str"))
    take("punct", "{")
    depth = 1
    while depth:
        t = toks[k]
        if t == ("punct", "}"):
            take()
            depth -= 1
        elif t == ("id", "subgraph"):
            take()
            take("str")
            take("punct", "{")
            depth += 1
            graph.clusters.append({})
        elif t[0] == "id" and t[1] in ("graph", "node", "edge"):
            take()
            a = attrs()
            if t[1] == "graph" and depth > 1:
                graph.clusters[-1] = a
            take("punct", ";")
        else:
            source = take("str")
            if toks[k][0] == "arrow":
                take()
                target = take("str")
                graph.edges.append((source, target, attrs()))
            else:
                assert source not in graph.nodes, f"node {source} declared twice"
                graph.nodes[source] = attrs()
            take("punct", ";")
    assert k == len(toks), "text after the graph"
    return graph


def _block(text: str, index: int = 0):
    parsed = parse(text)
    assert parsed.ok
    return parsed.program.blocks[index]


# -- structure ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [RESNET, ATTENTION], ids=["resnet", "attention"])
def test_every_node_and_edge_is_drawn_with_its_shape(text):
    block = _block(text)
    report = verify_block(block)
    graph = read_dot(draw_block(block))
    assert set(graph.nodes) == {str(n.id) for n in block.nodes}
    wires = list(block.wires())
    assert [(a, b) for a, b, _ in graph.edges] == [(str(s), str(t)) for s, t, _, _ in wires]
    nodes = block.node_map()
    for (s, t, _, _), (_, _, attrs) in zip(wires, graph.edges):
        assert shape_str(report.shapes.shapes[s]) in attrs["label"]
        assert attrs["label"].startswith("#") == (nodes[t].op in ORDERED)


def test_operand_order_is_numbered_on_edges_into_merges():
    block = _block(ATTENTION)
    graph = read_dot(draw_block(block, domain=ANY))
    into = {}
    for a, b, attrs in graph.edges:
        into.setdefault(b, []).append((a, attrs["label"]))
    assert into["6"] == [("2", "#1 (B,C,H*W)"), ("5", "#2 (B,H*W,C)")]
    assert into["7"] == [("6", "#1 (B,C,C)"), ("2", "#2 (B,C,H*W)")]
    assert into["9"] == [("0", "#1 (B,C,H,W)"), ("8", "#2 (B,C,H,W)")]
    assert into["10"] == [("9", "(B,2*C,H,W)")]
    # In the default domain the inputs are square: one spatial symbol.
    square = {(a, b): attrs["label"] for a, b, attrs in read_dot(draw_block(block)).edges}
    assert square[("2", "6")] == "#1 (B,C,H*H)" and square[("9", "10")] == "(B,2*C,H,H)"


def test_dead_nodes_are_drawn_dashed_as_dropped():
    text = RESNET.split("##ResNetBasicBlock_downsample##")[0].replace("0->2\n", "0->2\n0->9\n").replace(
        "8:Add\n", "8:Add\n9:Sigmoid\n")
    graph = read_dot(draw_block(_block(text)))
    assert "dashed" in graph.nodes["9"]["style"] and "dropped" in graph.nodes["9"]["label"]
    assert "dashed" not in graph.nodes["2"].get("style", "")


def test_golden_labels_of_a_small_block():
    block = _block(RESNET)
    graph = read_dot(draw_block(block, domain=ANY))
    assert graph.nodes["2"]["label"] == "2: Conv2d\nout_channels=C\nkernel_size=3\nstride=1"
    assert graph.nodes["3"]["label"] == "3: BN"
    assert graph.nodes["0"]["label"] == "0: input\n(B,C,H,W)"
    assert graph.nodes["1"]["label"] == "1: output\n(B,C,H,W)"
    for terminal in ("0", "1"):
        assert graph.nodes[terminal]["shape"] == "ellipse"
    for inner in ("2", "3", "8"):
        assert "shape" not in graph.nodes[inner]  # the default box
    assert len({graph.nodes[i]["fillcolor"] for i in ("0", "2", "3", "4", "8")}) == 5  # by category
    assert graph.clusters == [{"label": "ResNetBasicBlock (base)", "labelloc": "t", "style": "rounded",
                               "color": "#999999"}]
    labels = {(a, b): attrs["label"] for a, b, attrs in graph.edges}
    assert labels[("0", "8")] == "#2 (B,C,H,W)"
    assert labels[("6", "8")] == "#1 (B,C,H,W)"
    down = read_dot(draw_block(_block(RESNET, 1), domain=ANY))
    assert down.clusters[0]["label"] == "ResNetBasicBlock_downsample (downsample)"
    assert {(a, b): attrs["label"] for a, b, attrs in down.edges}[("2", "3")] == "(B,2*C,ceil(H/2),ceil(W/2))"
    assert down.nodes["1"]["label"] == "1: output\n(B,2*C,ceil(H/2),ceil(W/2))"


def test_lists_are_written_inline_and_swapped_products_are_marked():
    text = ATTENTION.replace("6->7\n2->7\n", "2->7\n6->7\n")  # only the swapped order fits now
    graph = read_dot(draw_block(_block(text)))
    assert graph.nodes["2"]["label"] == "2: reshape(B,C,H*W)"
    assert graph.nodes["3"]["label"] == "3: permute(0,2,1)"
    assert graph.nodes["7"]["label"] == "7: multiply\n(computed as #2 x #1)"
    assert "computed" not in graph.nodes["6"]["label"]
    assert "computed" not in read_dot(draw_block(_block(ATTENTION))).nodes["7"]["label"]


def test_blocks_that_fail_verification_are_drawn_with_the_error():
    block = _block(BROKEN)
    graph = read_dot(draw_block(block, domain=ANY))
    assert set(graph.nodes) == {"0", "1", "2", "3"}
    assert "NAD301" in graph.nodes["3"]["label"] and graph.nodes["3"]["color"] == "#c00000"
    assert "color" not in graph.nodes["2"]
    labels = {(a, b): attrs.get("label") for a, b, attrs in graph.edges}
    assert labels[("2", "3")] == "#1 (B,C/4,H,W)"
    assert labels[("3", "1")] is None  # no shape past the error
    assert "does not verify" in graph.clusters[0]["label"]


def test_constraints_appear_in_the_block_title():
    text = RESNET.split("##ResNetBasicBlock_downsample##")[0].replace(
        "5:Conv2d(out_channels=C,kernel_size=3,stride=1)", "5:Conv2d(out_channels=C,kernel_size=3,groups=4)")
    graph = read_dot(draw_block(_block(text)))
    assert "requires C % 4 == 0" in graph.clusters[0]["label"]


# -- escaping -------------------------------------------------------------------------------------

@settings(max_examples=200)
@given(st.text())
def test_quote_round_trips_through_the_reader(text):
    ((kind, value),) = tokens(quote(text))
    assert kind == "str"
    kept = "".join(ch for ch in text if ch == "\n" or ch == "\t" or (ord(ch) >= 32 and ord(ch) != 127))
    assert value == kept


def test_quote_escapes_graphviz_escapes():
    assert quote('a"b') == '"a\\"b"'
    assert quote("a\\Nb") == '"a\\\\Nb"'  # not Graphviz's \\N (the node name)
    assert quote("x\ny") == '"x\\ny"'
    assert quote("c\rd\x00") == '"cd"'


def test_file_names_with_quotes_and_backslashes(tmp_path):
    path = tmp_path / 'odd "name" \\ here.nad'
    path.write_text(RESNET)
    run = run_nadc([str(path), "--emit", "dot"])
    assert run.code == 0, run.stderr
    graph = read_dot(run.stdout)
    assert graph.name == str(path)
    assert len(graph.clusters) == 2
    # several blocks: ids are prefixed per block, so nothing collides
    assert {k for k in graph.nodes if k.startswith("b0_")} == {f"b0_{i}" for i in range(9)}
    assert {k for k in graph.nodes if k.startswith("b1_")} == {f"b1_{i}" for i in range(5)}
    if HAS_DOT:
        done = subprocess.run(["dot", "-Tplain"], input=run.stdout.encode(), capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr


# -- the corpus -------------------------------------------------------------------------------------

def test_corpus_blocks_draw(compat_dir):
    files = sorted((compat_dir / "blocks").glob("*.txt"))
    assert files
    for path in files:
        run = run_nadc([str(path), "--emit", "dot"])
        assert run.code == 0, (path, run.stderr)
        graph = read_dot(run.stdout)
        blocks = parse(path.read_text(), str(path)).program.blocks
        prefix = (lambda k: f"b{k}_") if len(blocks) > 1 else (lambda k: "")
        expected_nodes = {prefix(k) + str(n.id) for k, b in enumerate(blocks) for n in b.nodes}
        expected_edges = [(prefix(k) + str(s), prefix(k) + str(t)) for k, b in enumerate(blocks)
                          for s, t, _, _ in b.wires()]
        assert set(graph.nodes) == expected_nodes, path
        assert [(a, b) for a, b, _ in graph.edges] == expected_edges, path
        assert all(attrs["label"] for _, _, attrs in graph.edges), path


# -- svg ----------------------------------------------------------------------------------------------

def _svg_tree(text: str):
    import xml.etree.ElementTree as ET

    return ET.fromstring(text.split("?>", 1)[-1] if text.startswith("<?xml") else text)


def _svg_texts(root) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_svg_is_drawn_without_graphviz(tmp_path):
    src = tmp_path / "a.nad"
    src.write_text(ATTENTION)
    run = run_nadc([str(src), "--emit", "svg"])
    assert run.code == 0, run.stderr
    root = _svg_tree(run.stdout)  # well-formed XML
    texts = _svg_texts(root)
    for text in ("6: multiply", "#2 (B,H*H,C)", "(B,2*C,H,H)", "2: reshape(B,C,H*W)"):
        assert text in texts, text
    out = tmp_path / "a.svg"
    assert run_nadc([str(src), "--emit", "svg", "-o", str(out)]).code == 0
    assert out.read_text() == run.stdout


def test_svg_draws_every_node_and_edge_once_and_flows_downwards():
    from nader.compiler.backends.svg import block_svg

    block = parse(RESNET).program.blocks[0]
    root = _svg_tree(block_svg(verify_block(block)))
    ns = "{http://www.w3.org/2000/svg}"
    shapes = list(root.iter(ns + "rect")) + list(root.iter(ns + "ellipse"))
    assert len(shapes) == len(block.nodes)
    curves = [p for p in root.iter(ns + "path") if p.get("marker-end")]
    assert len(curves) == len(list(block.wires()))
    for curve in curves:  # every edge of an acyclic block starts above where it ends
        numbers = [float(v) for v in re.findall(r"-?[\d.]+", curve.get("d"))]
        assert numbers[1] < numbers[-1], curve.get("d")


def test_svg_escapes_untrusted_text():
    from nader.compiler.backends.svg import block_svg

    import dataclasses

    block = parse(RESNET).program.blocks[0]  # the parser refuses such names; the IR does not
    block = dataclasses.replace(block, name="<script>alert('x')</script>&\"")
    text = block_svg(verify_block(block))
    assert "<script>" not in text
    root = _svg_tree(text)
    assert any("<script>alert('x')</script>" in t for t in _svg_texts(root))


def test_svg_marks_errors(tmp_path):
    src = tmp_path / "bad.nad"
    src.write_text(RESNET.replace("5:Conv2d(out_channels=C,kernel_size=3,stride=1)",
                                  "5:Conv2d(out_channels=C,kernel_size=3,stride=2)"))
    run = run_nadc([str(src), "--emit", "svg"])
    root = _svg_tree(run.stdout)
    assert any("NAD3" in t for t in _svg_texts(root))
    assert drawing._ERROR_COLOR in run.stdout


def test_every_operation_gets_a_style():
    """Each operation is drawn in its group's colour (no silent white or grey boxes)."""
    from nader.dsl.ir import Node

    whites = [op for op in Group.COMPUTE if drawing._fill(Node(2, op.value)) == drawing._DEFAULT_FILL]
    assert whites in ([], [Op.DROP_PATH]), whites  # DropPath is drawn white on purpose (regularization)
    ungrouped = [op.value for op in Group.COMPUTE if drawing._fill(Node(2, op.value)) == drawing._UNGROUPED_FILL]
    assert ungrouped == ["Zero"], f"operations in no coloured group (give them a category): {ungrouped}"


def test_svg_lays_out_a_400_node_chain_without_recursion():
    from nader.compiler.backends.svg import block_svg
    n = 400
    text = "\n".join(["##Chain##", "0:input", "1:output", *[f"{i}:ReLU" for i in range(2, n + 2)], "0->2",
                      *[f"{i}->{i + 1}" for i in range(2, n + 1)], f"{n + 1}->1"]) + "\n"
    root = _svg_tree(block_svg(verify_block(_block(text))))
    ns = "{http://www.w3.org/2000/svg}"
    tops = {}
    for rect in root.iter(f"{ns}rect"):
        tops[len(tops)] = float(rect.get("y"))
    assert len(tops) == n and all(tops[k] < tops[k + 1] for k in range(n - 1))  # one layer per node, downwards


CYCLE_THROUGH_INPUT = "##B##\n0:input\n1:output\n2:ReLU\n0->2\n2->0\n2->1\n"
CYCLE_OFF_THE_PATH = "##B##\n0:input\n1:output\n2:ReLU\n3:ReLU\n4:ReLU\n0->2\n2->1\n3->4\n4->3\n"


@pytest.mark.parametrize("text", [CYCLE_THROUGH_INPUT, CYCLE_OFF_THE_PATH])
def test_svg_of_a_cycle_is_the_structural_diagnostic(tmp_path, text):
    from nader.compiler.backends.svg import block_svg
    src = tmp_path / "cycle.nad"
    src.write_text(text)
    run = run_nadc([str(src), "--emit", "svg"])
    assert run.code == 1 and "error[NAD203]: cycle" in run.stderr and "internal error" not in run.stderr
    assert run.stdout == ""
    as_json = run_nadc([str(src), "--emit", "svg", "--format", "json"])
    assert as_json.code == 1 and "NAD203" in [d["code"] for d in json.loads(as_json.stderr)]  # one document
    root = _svg_tree(block_svg(verify_block(_block(text))))  # the layout itself copes: every node drawn once
    assert len(list(root.iter("{http://www.w3.org/2000/svg}rect"))) == text.count(":ReLU")
