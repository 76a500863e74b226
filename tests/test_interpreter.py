"""The one walk over a block (`compiler/passes/interpreter.py`) and the tables its subclasses run."""
from fractions import Fraction

import pytest

from nader.compiler.passes.cost import COST_RULES, Cost, CostError, CostInterpreter, block_cost
from nader.compiler.passes.interpreter import Interpreter, MissingHandler, missing_handlers
from nader.compiler.passes.shape_rules import SHAPE_RULES
from nader.compiler.passes.shapes import ShapeInference
from nader.compiler.passes.symbolic import Poly
from nader.compiler.passes.verify import verify_block
from nader.dsl.diagnostics import DiagnosticSink
from nader.dsl.ir import Role
from nader.dsl.ops import REGISTRY, Group, Op
from nader.dsl.parser import parse

# The lines are out of order: every node is written before the nodes it reads.
OUT_OF_ORDER = """##Shuffled##
5:output
4:Add
3:Conv2d(C,1)
2:BN
1:Conv2d(C,3)
0:input
0->1
1->2
2->3
0,3->4
4->5
"""

# One node of each kind a table treats differently: layers, a pass-through activation, a merge.
MIXED = """##Mixed##
0:input
1:Conv2d(C,3)
2:BN
3:ReLU
4:Conv2d(C,1,bias=0)
5:BN
6:Add
7:output
0->1
1->2
2->3
3->4
4->5
0,5->6
6->7
"""


def _block(text):
    result = parse(text)
    assert result.ok, [str(d) for d in result.diagnostics]
    return result.program.blocks[0]


class Recorder(Interpreter):
    """Writes each node's value as the expression it computes, and the order it visits them in."""

    __slots__ = ("visits",)

    HANDLERS = {op: (lambda self, node, inputs: f"{node.op_name}({', '.join(inputs)})") for op in Group.COMPUTE}

    def __init__(self, block, order=None):
        super().__init__(block, order)
        self.visits = []

    def run_node(self, node, inputs):
        self.visits.append(node.id)
        return super().run_node(node, inputs)

    def input(self, node):
        return f"x{node.id}"


# -- the walk ----------------------------------------------------------------------------------

def test_the_walk_is_topological_for_a_block_whose_lines_are_out_of_order():
    block = _block(OUT_OF_ORDER)
    assert [n.id for n in block.nodes] == [5, 4, 3, 2, 1, 0]  # the file order is the reverse
    walk = Recorder(block)  # every node, in topological order
    values = walk.run()
    assert walk.visits == [0, 1, 2, 3, 4, 5]
    seen = set()
    for node_id in walk.visits:
        assert set(block.inputs_of(node_id)) <= seen, f"node {node_id} visited before its inputs"
        seen.add(node_id)
    # Inputs are fetched in edge order, so the output's value spells the whole computation.
    assert values[5] == "Add(x0, Conv2d(BN(Conv2d(x0))))"


def test_shape_inference_and_cost_walk_the_same_topological_order():
    block = _block(OUT_OF_ORDER)
    report = verify_block(block, role=Role.BASE)
    assert report.ok, [str(d) for d in report.diagnostics]
    assert report.shapes.order == [0, 1, 2, 3, 4, 5]
    assert list(report.shapes.shapes) == [0, 1, 2, 3, 4, 5]  # stored in the order of the walk
    assert list(block_cost(block, report.shapes).nodes) == [0, 1, 2, 3, 4, 5]


def test_an_input_without_a_value_is_an_error_unless_the_walk_gives_such_nodes_none():
    block = _block(MIXED)
    with pytest.raises(KeyError):
        Recorder(block, [0, 1, 2, 6, 7]).run()  # node 6 reads node 5, which the walk never visited
    # Shape inference gives a node below a failure no shape (reported where it failed, once).
    broken = _block(MIXED.replace("4:Conv2d(C,1,bias=0)", "4:softmax(dim=7)"))
    report = verify_block(broken, role=Role.BASE)
    assert not report.ok and report.shapes.failed
    assert set(report.shapes.shapes) == {0, 1, 2, 3}
    errors = [d for d in report.diagnostics if d.is_error]
    assert len(errors) == 1 and "dim" in errors[0].message, [str(d) for d in errors]


# -- overriding one handler ----------------------------------------------------------------------

def test_overriding_one_operations_handler_changes_only_that_operations_result():
    block = _block(MIXED)
    report = verify_block(block, role=Role.BASE)
    assert report.ok
    marker = Cost(params=Poly.const(1000))

    class BnCostsAThousand(CostInterpreter):
        __slots__ = ()
        HANDLERS = {**COST_RULES, Op.BN: lambda ctx, node, xs, out: marker}

    plain = CostInterpreter(block, report.shapes).run()
    changed = BnCostsAThousand(block, report.shapes).run()
    bn = {n.id for n in block.nodes if n.op is Op.BN}
    assert bn == {2, 5}
    for node_id, cost in plain.nodes.items():
        if node_id in bn:
            assert changed.nodes[node_id] == marker and cost != marker
        else:
            assert changed.nodes[node_id] == cost, f"node {node_id} changed"
    assert changed.total.params != plain.total.params


def test_overriding_one_shape_rule_changes_only_that_operations_shapes_and_not_the_shared_memo():
    block = _block(MIXED)
    sink = DiagnosticSink("<test>")
    plain = verify_block(block, role=Role.BASE).shapes
    calls = []

    def conv_rule(ctx, node, xs):
        calls.append(node.id)
        return SHAPE_RULES[Op.CONV2D](ctx, node, xs)

    def bn_rule(ctx, node, xs):  # a BN that halves H: its consumers see it, nothing before it does
        (x,) = xs
        return (x[0], x[1], x[2].scale(Fraction(1, 2)), x[3])

    class Halving(ShapeInference):
        __slots__ = ()
        HANDLERS = {**SHAPE_RULES, Op.CONV2D: conv_rule, Op.BN: bn_rule}

    result = Halving(block, type(plain)(plain.role, plain.contract), sink).run()
    assert sorted(calls) == [1, 4]  # its own rules ran: the walks with SHAPE_RULES memoise theirs apart
    assert result.shapes[1] == plain.shapes[1]
    assert result.shapes[2] != plain.shapes[2]
    assert result.shapes[2][2] == plain.shapes[2][2].scale(Fraction(1, 2))
    assert result.failed  # the change reaches the BN's consumers: the Add's inputs no longer match
    # A walk with the plain rules afterwards is unaffected.
    assert verify_block(block, role=Role.BASE).shapes.shapes == plain.shapes


def test_a_pass_through_operation_takes_its_inputs_value_without_a_handler_call():
    block = _block(MIXED)
    called = []

    class Counting(ShapeInference):
        __slots__ = ()
        HANDLERS = {op: (lambda ctx, node, xs, _rule=rule: called.append(node.op) or _rule(ctx, node, xs))
                    for op, rule in SHAPE_RULES.items()}

    plain = verify_block(block, role=Role.BASE).shapes
    result = Counting(block, type(plain)(plain.role, plain.contract), DiagnosticSink("<test>")).run()
    assert Op.RELU in ShapeInference.PASS_THROUGH and Op.RELU not in called
    assert result.shapes == plain.shapes


# -- a missing handler is named ------------------------------------------------------------------

def test_missing_handlers_names_the_operation_a_table_lacks():
    assert missing_handlers(SHAPE_RULES) == []
    table = {op: rule for op, rule in SHAPE_RULES.items() if op is not Op.SOFTMAX}
    assert missing_handlers(table) == ["softmax"]
    assert missing_handlers({}, required={Op.LN, Op.CONV2D}) == ["Conv2d", "LN"]  # in registry order

    class NoLayerNorm(Interpreter):
        HANDLERS = {op: None for op in Group.COMPUTE if op is not Op.LN}

    assert missing_handlers(NoLayerNorm) == ["LN"]


def test_a_walk_over_an_operation_without_a_handler_fails_naming_it():
    block = _block(MIXED)

    class NoBn(Recorder):
        __slots__ = ()
        HANDLERS = {op: h for op, h in Recorder.HANDLERS.items() if op is not Op.BN}

    with pytest.raises(MissingHandler, match="no handler for `BN` \\(node 2\\)"):
        NoBn(block).run()

    report = verify_block(block, role=Role.BASE)

    class NoBnCost(CostInterpreter):
        __slots__ = ()
        HANDLERS = {op: h for op, h in COST_RULES.items() if op is not Op.BN}

    with pytest.raises(CostError, match="no cost rule for `BN`"):
        NoBnCost(block, report.shapes).run()


def _walks():
    from nader.compiler.backends.onnx.block import OnnxLowering
    from nader.compiler.backends.torch_backend import ModuleLowering, SourceLowering
    return [ShapeInference, CostInterpreter, ModuleLowering, SourceLowering, OnnxLowering]


def test_every_table_covers_what_it_must():
    # Adding an operation means one registry entry and one handler per table: this names the table
    # and the operations it still lacks.
    for walk in _walks():
        assert Group.COMPUTE <= walk.REQUIRED, walk.__name__
        missing = missing_handlers(walk)
        assert not missing, f"{walk.__name__} has no {walk.HANDLER_NAME} for: {missing}"
        assert not set(walk.HANDLERS) - set(REGISTRY), walk.__name__
    assert Op.OUTPUT in ShapeInference.REQUIRED  # the output's rule checks the block's contract


def test_every_walk_keeps_its_state_in_slots():
    for walk in _walks():
        for cls in walk.__mro__:
            if cls is not object and issubclass(cls, Interpreter):
                assert "__slots__" in vars(cls), f"{cls.__name__} has no __slots__"


# -- the Transformer: a walk that builds a new block ------------------------------------------
def _transformed(text, rules=None, handlers=None, prune=False):
    from nader.compiler.passes.transformer import Transformer
    from nader.dsl.format import format_block

    class Table(Transformer):  # rewrites by operation, as the other walks' tables
        __slots__ = ()
        HANDLERS = handlers or {}

    return format_block(Table(_block(text), rules or {}, prune=prune).run())


def test_a_transformer_that_rewrites_nothing_gives_the_block_back_line_for_line():
    from nader.dsl.format import format_block

    commented = MIXED.replace("3:ReLU", "# the activation\n3:ReLU  # kept").replace("0,5->6", "0,5->6  # shortcut")
    for text in (OUT_OF_ORDER, MIXED, commented):
        assert _transformed(text) == format_block(_block(text))


def test_a_transformer_table_rewrites_every_node_of_an_operation_in_its_place():
    import dataclasses

    gelu = {Op.RELU: lambda self, node, inputs: self.keep(node, inputs, dataclasses.replace(node, op_name="GELU"))}
    assert _transformed(MIXED, handlers=gelu) == MIXED.replace("3:ReLU", "3:GELU")


def test_a_rule_adds_nodes_and_its_consumers_read_what_it_returns():
    from nader.dsl.ir import Node

    def gated(self, node, inputs):  # node 2's consumers read a new Sigmoid of it
        self.keep(node, inputs)
        return self.emit(Node(self.fresh_id(), "Sigmoid"), [node.id])

    assert _transformed(MIXED, {2: gated}) == MIXED.replace("7:output\n", "7:output\n8:Sigmoid\n") \
        .replace("2->3", "8->3").replace("6->7\n", "6->7\n2->8\n")


def test_a_dropped_node_gives_its_consumers_what_it_returns_or_takes_its_wires_away():
    from nader.compiler.passes.transformer import GONE

    bypassed = _transformed(MIXED, {2: lambda self, node, inputs: inputs[0]})  # BN 2 goes; 3 reads 1
    assert bypassed == MIXED.replace("2:BN\n", "").replace("1->2\n2->3", "1->3")
    cut = _transformed(MIXED, {5: lambda self, node, inputs: GONE})  # BN 5 goes with its wires: the Add reads 0 alone
    assert cut == MIXED.replace("5:BN\n", "").replace("4->5\n", "").replace("0,5->6", "0->6")
    pruned = _transformed(MIXED, {5: lambda self, node, inputs: GONE}, prune=True)  # and what fed it only, too
    assert pruned == "##Mixed##\n0:input\n6:Add\n7:output\n0->6\n6->7\n"


def test_a_node_kept_with_other_inputs_reads_them_in_its_lines_or_new_ones():
    swapped = _transformed(MIXED, {6: lambda self, node, inputs: self.keep(node, inputs[::-1])})
    assert swapped == MIXED.replace("0,5->6", "5,0->6")  # as many inputs: the line keeps its place
    more = _transformed(MIXED, {6: lambda self, node, inputs: self.keep(node, (*inputs, 3))})
    assert more == MIXED.replace("0,5->6\n6->7\n", "6->7\n0->6\n5->6\n3->6\n")


def test_a_transformer_refuses_a_block_that_is_no_graph():
    from nader.compiler.passes.transformer import Transformer

    cycle = "##C##\n0:input\n1:output\n2:ReLU\n3:BN\n0->2\n2->3\n3->2\n3->1\n"
    twice = "##T##\n0:input\n1:output\n2:ReLU\n2:BN\n0->2\n2->1\n"
    for text in (cycle, twice):
        with pytest.raises(ValueError, match="no graph to walk"):
            Transformer(parse(text).program.blocks[0])


def test_the_transformer_and_the_mutations_rewrite_keep_their_state_in_slots():
    from nader.compiler.mutate.rewrite import Rewrite
    from nader.compiler.passes.transformer import Transformer

    for cls in (Transformer, Rewrite):
        assert "__slots__" in vars(cls), cls.__name__
