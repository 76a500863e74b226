"""The verifier's short paths for common blocks agree with the general ones they stand in for."""
from __future__ import annotations

import pickle
from heapq import heappop, heappush

from hypothesis import given, settings
from hypothesis import strategies as st

from nader.compiler.passes.structure import STRUCTURE_CHECKS, check_structure, dead_nodes
from nader.compiler.passes.symbolic import Poly
from nader.dsl.diagnostics import DiagnosticSink
from nader.dsl.ir import Block, Role, _file_order_if_topological
from nader.dsl.parser import parse

OPS = ["input", "input1", "input2", "output", "ReLU", "BN", "Add", "concat", "Conv2d(out_channels=C,kernel_size=3)",
       "multiply", "bogus"]


@st.composite
def graphs(draw) -> Block:
    """Random small blocks, parsed: nodes in any order (duplicate ids too), wires forward and backward,
    to and from undefined ids, mostly one `output`."""
    ids = draw(st.lists(st.integers(0, 8), min_size=1, max_size=8))
    ops = draw(st.lists(st.sampled_from(OPS), min_size=len(ids), max_size=len(ids)))
    wires = draw(st.lists(st.tuples(st.lists(st.integers(0, 9), min_size=1, max_size=3), st.integers(0, 9)),
                          max_size=10))
    if draw(st.booleans()):  # mostly forward in id order, as blocks are written
        wires = [([min(s, t) for s in sources], t) for sources, t in wires]
    lines = ["##b##"] + [f"{i}:{op}" for i, op in zip(ids, ops)]
    lines += [f"{','.join(map(str, sources))}->{t}" for sources, t in wires]
    return parse("\n".join(lines)).program.blocks[0]


@st.composite
def chains(draw) -> Block:
    """Chains from a terminal through a few layers to `output`, often clean, sometimes one terminal off."""
    first = draw(st.sampled_from(["input", "input1", "input2"]))
    middle = draw(st.lists(st.sampled_from(["ReLU", "BN", "Conv2d(out_channels=C,kernel_size=1)"]), max_size=3))
    extra = draw(st.sampled_from([None, "input", "input1", "input2", "output"]))
    n = len(middle) + 1
    lines = ["##b##", f"0:{first}"] + [f"{k}:{op}" for k, op in enumerate(middle, 1)] + [f"{n}:output"]
    lines += [f"{k}->{k + 1}" for k in range(n)]
    if extra:
        lines.append(f"{n + 1}:{extra}")
        if draw(st.booleans()):
            lines.append(f"{n + 1}->{draw(st.sampled_from([0, n]))}")  # into the input, or a second into output
    return parse("\n".join(lines)).program.blocks[0]


def heap_order(block: Block):
    """The specified order: repeatedly take the ready node that comes first in the file (first definitions)."""
    ids = list(dict.fromkeys(n.id for n in block.nodes))
    position = {i: k for k, i in enumerate(ids)}
    indegree = [0] * len(ids)
    successors: list[list[int]] = [[] for _ in ids]
    for e in block.edges:
        if e.target in position:
            for s in e.sources:
                if s in position:
                    indegree[position[e.target]] += 1
                    successors[position[s]].append(position[e.target])
    ready = [k for k in range(len(ids)) if indegree[k] == 0]
    order = []
    while ready:
        k = heappop(ready)
        order.append(ids[k])
        for t in successors[k]:
            indegree[t] -= 1
            if indegree[t] == 0:
                heappush(ready, t)
    return order if len(order) == len(ids) else None


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_topological_order_is_the_file_first_ready_order(block):
    assert block.topological_order() == heap_order(block)


def test_an_output_above_the_nodes_it_waits_for_comes_once_its_input_is_out():
    # every wire forward, the output's line in the middle: the order without a heap puts it after its input
    # and before the node below it that it does not wait for
    block = parse("##b##\n0:input\n1:output\n2:ReLU\n3:BN\n4:ReLU\n0->2\n2->1\n0->3\n3->4\n").program.blocks[0]
    assert block.topological_order() == heap_order(block) == [0, 2, 1, 3, 4]
    inputs = block.input_map()
    assert _file_order_if_topological(block.node_map(), inputs, inputs.items()) == [0, 2, 1, 3, 4]  # the short path
    no_output = parse("##b##\n0:input\n2:ReLU\n1:BN\n0->2\n2->1\n").program.blocks[0]
    assert no_output.topological_order() == heap_order(no_output) == [0, 2, 1]


def live_from_outputs(block: Block) -> set:
    nodes = {}
    for n in block.nodes:
        nodes.setdefault(n.id, n)
    outputs = [i for i, n in nodes.items() if n.op_name == "output"]
    alive, todo = set(outputs), list(outputs)
    while todo:
        target = todo.pop()
        for e in block.edges:
            if e.target == target:
                for s in e.sources:
                    if s in nodes and s not in alive:
                        alive.add(s)
                        todo.append(s)
    return alive if outputs else set(nodes)


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_dead_nodes_are_those_no_output_depends_on(block):
    alive = live_from_outputs(block)
    assert set(dead_nodes(block)) == {n.id for n in block.nodes} - alive


@settings(max_examples=400, deadline=None)
@given(st.one_of(graphs(), chains()), st.sampled_from(list(Role)))
def test_a_block_found_clean_at_once_gets_what_every_check_reports(block, role):
    every = DiagnosticSink("f")
    for check in STRUCTURE_CHECKS:
        check(block, role, every)
    fast = DiagnosticSink("f")
    check_structure(Block(block.name, block.nodes, block.edges, header_span=block.header_span), role, fast)
    assert fast.items == every.items


def test_equal_polynomials_are_one_object():
    c, two = Poly.atom("C"), Poly.const(2)
    assert (c + c) is (two * c) is (c * two)
    assert (c - c) is Poly.const(0)
    assert pickle.loads(pickle.dumps(c * c + two)) is c * c + two
    assert {c * two: "x"}[c + c] == "x"
    assert (c + two) is not (c + Poly.const(3))
