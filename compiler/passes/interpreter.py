"""One walk over a block's live nodes, torch.fx-style: the `Interpreter` and its per-op tables.

Shape inference (`shapes.py`: `ShapeInference`), the cost model (`cost.py`: `CostInterpreter`), the
PyTorch lowering (`backends/torch_backend.py`: `ModuleLowering`, `SourceLowering`) and the ONNX
lowering (`backends/onnx/block.py`: `OnnxLowering`) are its subclasses. Each names its table in
`HANDLERS` (a dict keyed by `Op`: `SHAPE_RULES`, `COST_RULES`, torch's and ONNX's `LOWERINGS`) and
what the table must cover in `REQUIRED`; the walk, the fetching of a node's inputs and the
dispatch to the table are here, once:

* `run` visits the live nodes in topological order (`order`, the shape result's), fetches each
  node's inputs' values in edge order, from the walk's own values or from values it reads (the
  cost and PyTorch walks read the inferred shapes), hands them to the per-node step `run_node`,
  stores what it returns (None stores nothing) and returns `finish()`;
* `run_node` calls the `input` hook for a source terminal, `output` for the output terminal, and
  otherwise the handler of the node's operation, looked up in the table once, through `apply`
  (which adapts the call to the table's signature; `missing` when the table has none);
* a walk may give source terminals' values up front (`terminals`), operations whose value is
  their input's (`PASS_THROUGH`) and a memo of handler results (`memo`): the loop takes those
  without a call, which keeps shape inference, run by every `verify`, as fast as its own loop was;
* `missing_handlers` lists the operations a table has no handler for, by name: the registry tests
  use it (adding an operation means one registry entry and one handler per table).

`Transformer` (`transformer.py`, beside this module so that the passes that only read a block do
not load it) is the walk that builds a new block, as torch.fx pairs its `Transformer` with its
`Interpreter`.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterable, Mapping, Optional, Union

from nader.dsl.ir import Block, Node, NodeId
from nader.dsl.ops import REGISTRY, Group, Op

_SOURCES = Group.SOURCE


class MissingHandler(KeyError):
    """The table of an interpreter has no handler for a node's operation."""


class Interpreter:
    """Walks the live nodes of a block in topological order, one handler per node from `HANDLERS`.

    `order` is the walk (the live nodes in topological order, `ShapeResult.order`; by default every
    node of the block, in topological order); `inputs_from` is
    where inputs are fetched from, by default the walk's own values (`values`); `terminals` holds
    the values of source terminals known before the walk (else the `input` hook gives them).

    A walk whose handlers are pure functions of the node's line, its inputs' values and a state of
    the walk (`memo_state`) may set `memo`, a dict of their results: (op_name, id(args), inputs,
    memo_state) -> (args, value, side effects or None), which its `run_node` fills and `run` reads
    (replaying the side effects by `replay`). Per-walk state is in `__slots__`.
    """

    __slots__ = ("block", "order", "nodes", "sources", "values", "inputs_from", "terminals", "memo", "memo_state")

    #: The table: a handler per operation, called by `apply` (by default `handler(self, node, inputs)`).
    HANDLERS: ClassVar[Mapping[Op, Callable[..., Any]]] = {}
    #: The operations the table must have a handler for (the registry tests check it).
    REQUIRED: ClassVar[frozenset] = Group.COMPUTE
    #: Operations whose value is their one input's: the walk copies it and calls no handler.
    PASS_THROUGH: ClassVar[frozenset] = frozenset()
    #: What a handler of the table is called in messages.
    HANDLER_NAME: ClassVar[str] = "handler"

    def __init__(self, block: Block, order: Optional[Iterable[NodeId]] = None, inputs_from: Optional[Mapping] = None,
                 terminals: Mapping[Op, Any] = {}):
        self.block = block
        self.order = (block.topological_order() or []) if order is None else order
        self.nodes = block.node_map()
        self.sources = block.input_map()
        self.values: dict = {}
        self.inputs_from = self.values if inputs_from is None else inputs_from
        self.terminals = terminals  # values of source terminals known before the walk, by operation
        self.memo: Optional[dict] = None
        self.memo_state: Any = None

    def run(self) -> Any:
        """Visit every node of `order` and store the value it gets; then `finish()`.

        A source terminal in `terminals` takes its value from there. Any other node gets its inputs'
        values fetched from `inputs_from`, in edge order; a node with an input that has no value gets
        none (`blocked`), an operation of `PASS_THROUGH` its one input's, and a node whose handler
        result is in `memo` that result (its side effects replayed by `replay`); the others run their
        step, `run_node`, whose value is stored unless it is None.
        """
        values, nodes, sources = self.values, self.nodes, self.sources
        terminals, copied, memo = self.terminals, self.PASS_THROUGH, self.memo
        fetch = self.inputs_from.get
        run_node = self.run_node
        for node_id in self.order:
            node = nodes[node_id]
            op = node.op
            if op in terminals:
                values[node_id] = terminals[op]
                continue
            operands = sources.get(node_id, ())
            # Most nodes have one input: a tuple display costs a third of `tuple(map(...))`.
            inputs = (fetch(operands[0]),) if len(operands) == 1 else tuple(map(fetch, operands))
            if None in inputs:
                self.blocked(node)
                continue
            if op in copied:
                values[node_id] = inputs[0]
                continue
            if memo is not None:
                args = node.args
                hit = memo.get((node.op_name, id(args), inputs, self.memo_state))
                if hit is not None and hit[0] is args:
                    values[node_id] = hit[1]
                    if hit[2] is not None:
                        self.replay(node, hit[2])
                    continue
            value = run_node(node, inputs)
            if value is not None:
                values[node_id] = value
        return self.finish()

    def run_node(self, node: Node, inputs: tuple) -> Any:
        """One node, given its inputs' values: its terminal hook or its operation's handler."""
        op = node.op
        if op in _SOURCES:
            return self.input(node)
        if op is Op.OUTPUT:
            return self.output(node, inputs)
        handler = self.HANDLERS.get(op)  # type: ignore[call-overload]
        if handler is None:
            return self.missing(node)
        return self.apply(handler, node, inputs)

    # -- hooks -------------------------------------------------------------------------------
    def apply(self, handler: Callable[..., Any], node: Node, inputs: tuple) -> Any:
        """Call a handler of the table (subclasses adapt it to their table's signature)."""
        return handler(self, node, inputs)

    def input(self, node: Node) -> Any:
        """The value of an input terminal."""
        raise NotImplementedError

    def output(self, node: Node, inputs: tuple) -> Any:
        """The value of the output terminal: its one input's, by default."""
        return inputs[0]

    def replay(self, node: Node, side_effects: Any) -> None:
        """The side effects of a memoised handler result, replayed as the handler had them."""
        raise NotImplementedError

    def blocked(self, node: Node) -> None:
        """A node with an input that has no value: an error, unless a walk gives such a node none
        either (shape inference: one below a failure)."""
        raise KeyError(next(i for i in self.sources.get(node.id, ()) if self.inputs_from.get(i) is None))

    def missing(self, node: Node) -> Any:
        """A node whose operation has no handler in the table."""
        raise MissingHandler(f"no {self.HANDLER_NAME} for `{node.op_name}` (node {node.id})")

    def finish(self) -> Any:
        """The result of the walk: the values, by default."""
        return self.values


def missing_handlers(table: Union[Mapping[Op, Any], type], required: Optional[Iterable[Op]] = None) -> list[str]:
    """The names of the operations `table` has no handler for, in registry order.

    `table` is a dict keyed by `Op` or an `Interpreter` subclass (its `HANDLERS`, checked against its
    `REQUIRED` unless `required` is given; a dict is checked against `Group.COMPUTE`).
    """
    if isinstance(table, type) and issubclass(table, Interpreter):
        handlers: Mapping[Op, Any] = table.HANDLERS
        wanted = frozenset(table.REQUIRED if required is None else required)
    else:
        handlers = table  # type: ignore[assignment]
        wanted = frozenset(Group.COMPUTE if required is None else required)
    return [op.value for op in REGISTRY if op in wanted and op not in handlers]


__all__ = ["Interpreter", "MissingHandler", "missing_handlers"]
