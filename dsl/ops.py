"""The operation registry: the single source of truth for every operation.

Each operation is declared once here: its parameters (kind, default,
required), how many inputs it takes, its categories and the one-line
description that LLM prompts show. `Group` derives sets of operations from
those declarations (activations, gates, multi-input, ...): code that treats a
kind of operation queries a group, so a new operation joins it by its
categories. Passes and backends hang their rules on `Op` in tables of their
own (shape rules, lowerings, costs), and tests fail when a registered
operation lacks an entry in one of them.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Optional


class Op(str, enum.Enum):
    INPUT = "input"
    INPUT1 = "input1"
    INPUT2 = "input2"
    OUTPUT = "output"
    CONV2D = "Conv2d"
    LINEAR = "Linear"
    AVG_POOL2D = "AvgPool2d"
    MAX_POOL2D = "MaxPool2d"
    ADAPTIVE_AVG_POOL2D = "AdaptiveAvgPool2d"
    ADAPTIVE_MAX_POOL2D = "AdaptiveMaxPool2d"
    RELU = "ReLU"
    GELU = "GELU"
    SIGMOID = "Sigmoid"
    BN = "BN"
    LN = "LN"
    ADD = "Add"
    MUL = "Mul"
    MATMUL = "multiply"
    CONCAT = "concat"
    MEAN = "mean"
    MAX = "max"
    SUM = "sum"
    SOFTMAX = "softmax"
    PERMUTE = "permute"
    REPEAT = "repeat"
    RESHAPE = "reshape"
    DROP_PATH = "DropPath"
    ZERO = "Zero"

    # Group membership tests are hot: hash in C, consistently with str equality.
    __hash__ = str.__hash__

    def __str__(self) -> str:
        return self.value


class Category(enum.Enum):
    TERMINAL = "terminal"
    SOURCE = "source"  # an input terminal: no incoming edges
    SINK = "sink"  # the output terminal
    LEARNABLE = "learnable"  # owns weights
    ACTIVATION = "activation"
    NORMALIZATION = "normalization"
    POOLING = "pooling"
    MERGE = "merge"  # combines two or more inputs
    REDUCTION = "reduction"  # reduces an axis to size 1
    LAYOUT = "layout"  # moves or copies elements only
    SHAPE_PRESERVING = "shape-preserving"  # output shape == input shape
    REGULARIZATION = "regularization"

    # Members are singletons compared by identity; `OpDef.has` looks them up per node in every
    # pass, and Enum's own hash is a Python-level call.
    __hash__ = object.__hash__


class ParamKind(enum.Enum):
    SIZE = "size"  # channel count: an expression in C and dim (not H, W)
    SPATIAL = "spatial"  # a positive integer or a pair `(h,w)`
    AXIS = "axis"  # an integer axis; negative counts from the end
    AXES = "axes"  # an axis or a tuple of axes
    SHAPE = "shape"  # a size in B C dim H W, or -1 (reshape only)
    PROBABILITY = "probability"  # a number in [0, 1)
    FLAG = "flag"  # 0 or 1


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


@dataclass(frozen=True)
class Param:
    """One parameter of an operation: its name, kind and default."""

    name: str
    kind: ParamKind
    default: object = REQUIRED  # a Python int/float, or REQUIRED
    default_from: Optional[str] = None  # defaults to another parameter's value
    variadic: bool = False  # collects all remaining positional arguments

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and self.default_from is None

    def signature(self) -> str:
        if self.variadic:
            return "*" + self.name
        if self.default_from:
            return f"{self.name}={self.default_from}"
        if self.required:
            return self.name
        return f"{self.name}={self.default}"


@dataclass(frozen=True)
class Arity:
    """How many inputs an operation takes: at least `min`, at most `max`."""

    min: int
    max: Optional[int]  # None: unbounded

    def accepts(self, count: int) -> bool:
        return count >= self.min and (self.max is None or count <= self.max)

    def describe(self) -> str:
        if self.max == self.min:
            return {0: "no inputs", 1: "one input", 2: "two inputs"}.get(self.min, f"{self.min} inputs")
        if self.max is None:
            return f"{self.min} or more inputs"
        return f"{self.min} to {self.max} inputs"


@dataclass(frozen=True)
class OpDef:
    """An operation as the registry declares it: parameters, arity, categories and summary."""

    op: Op
    params: tuple[Param, ...]
    arity: Arity
    categories: frozenset[Category]
    summary: str
    aliases: tuple[str, ...] = ()
    # Its output is weights in (0,1) or a distribution that scale another tensor (attention, SE).
    # Not a category: categories also say which operations are of the same kind (canonical diffs).
    gate: bool = False
    # Its result does not depend on the order of its inputs (hashes sort them).
    commutative: bool = False
    # f(f(a, b), c) is f(a, b, c) with the same values in the same order of operations, so a
    # backend may apply it in pieces (left-to-right sums and products, concatenation on one axis).
    foldable: bool = False
    # Its result multiplies one input by another: where a gate's values are applied.
    multiplies: bool = False

    @property
    def name(self) -> str:
        return self.op.value

    def param(self, name: str) -> Optional[Param]:
        for param in self.params:
            if param.name == name:
                return param
        return None

    def signature(self) -> str:
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(p.signature() for p in self.params)})"

    def has(self, category: Category) -> bool:
        return category in self.categories


C = Category
ONE = Arity(1, 1)
TWO = Arity(2, 2)
MANY = Arity(2, None)
NONE = Arity(0, 0)


def _p(name: str, kind: ParamKind, default: object = REQUIRED, **kw) -> Param:
    return Param(name, kind, default, **kw)


def _def(op: Op, params: Iterable[Param], arity: Arity, categories: Iterable[Category], summary: str,
         aliases: tuple[str, ...] = (), gate: bool = False, commutative: bool = False, foldable: bool = False,
         multiplies: bool = False) -> OpDef:
    return OpDef(op, tuple(params), arity, frozenset(categories), summary, aliases, gate, commutative, foldable,
                 multiplies)


_SIZE, _SPATIAL, _AXIS, _AXES, _SHAPE, _PROB, _FLAG = (
    ParamKind.SIZE, ParamKind.SPATIAL, ParamKind.AXIS, ParamKind.AXES, ParamKind.SHAPE, ParamKind.PROBABILITY,
    ParamKind.FLAG)

REGISTRY: dict[Op, OpDef] = {d.op: d for d in [
    _def(Op.INPUT, (), NONE, [C.TERMINAL, C.SOURCE], "The block's input, shape (B,C,H,W)."),
    _def(Op.INPUT1, (), NONE, [C.TERMINAL, C.SOURCE], "First input of a two-input cell (the cell two back)."),
    _def(Op.INPUT2, (), NONE, [C.TERMINAL, C.SOURCE], "Second input of a two-input cell (the previous cell)."),
    _def(Op.OUTPUT, (), ONE, [C.TERMINAL, C.SINK], "The block's output; exactly one incoming edge."),
    _def(Op.CONV2D, (_p("out_channels", _SIZE), _p("kernel_size", _SPATIAL), _p("stride", _SPATIAL, 1),
                     _p("dilation", _SPATIAL, 1), _p("groups", _SIZE, 1), _p("bias", _FLAG, 1)), ONE, [C.LEARNABLE],
         "2-D convolution with 'same' padding: output (B,out_channels,ceil(H/stride),ceil(W/stride)); "
         "in and out channels must be divisible by groups; bias=0 leaves out the bias (as before a BN)."),
    _def(Op.LINEAR, (_p("out_channels", _SIZE),), ONE, [C.LEARNABLE],
         "Fully connected layer on the last axis, which becomes out_channels."),
    _def(Op.AVG_POOL2D, (_p("kernel_size", _SPATIAL), _p("stride", _SPATIAL, default_from="kernel_size")),
         ONE, [C.POOLING], "Average pooling with 'same' padding: (B,C,ceil(H/stride),ceil(W/stride))."),
    _def(Op.MAX_POOL2D, (_p("kernel_size", _SPATIAL), _p("stride", _SPATIAL, default_from="kernel_size")),
         ONE, [C.POOLING], "Max pooling with 'same' padding: (B,C,ceil(H/stride),ceil(W/stride))."),
    _def(Op.ADAPTIVE_AVG_POOL2D, (_p("output_size", _SPATIAL),), ONE, [C.POOLING],
         "Average pooling to a fixed spatial size: (B,C,output_size,output_size)."),
    _def(Op.ADAPTIVE_MAX_POOL2D, (_p("output_size", _SPATIAL),), ONE, [C.POOLING],
         "Max pooling to a fixed spatial size: (B,C,output_size,output_size)."),
    _def(Op.RELU, (), ONE, [C.ACTIVATION, C.SHAPE_PRESERVING], "Rectified linear unit, element-wise."),
    _def(Op.GELU, (), ONE, [C.ACTIVATION, C.SHAPE_PRESERVING], "Gaussian error linear unit, element-wise."),
    _def(Op.SIGMOID, (), ONE, [C.ACTIVATION, C.SHAPE_PRESERVING], "Logistic sigmoid, element-wise; used for gates.",
         gate=True),
    _def(Op.BN, (), ONE, [C.LEARNABLE, C.NORMALIZATION, C.SHAPE_PRESERVING],
         "Batch normalisation over axis 1 of a 4-d (B,C,H,W) tensor."),
    _def(Op.LN, (), ONE, [C.LEARNABLE, C.NORMALIZATION, C.SHAPE_PRESERVING],
         "Layer normalisation over the last axis (permute channels last first)."),
    _def(Op.ADD, (), MANY, [C.MERGE], "Element-wise sum of two or more inputs, broadcasting like PyTorch.",
         commutative=True, foldable=True),
    _def(Op.MUL, (), MANY, [C.MERGE], "Element-wise product of two or more inputs, broadcasting like PyTorch.",
         commutative=True, foldable=True, multiplies=True),
    _def(Op.MATMUL, (), TWO, [], "Matrix product of its two inputs, in the order of their edges.",
         multiplies=True),
    _def(Op.CONCAT, (_p("dim", _AXIS, 1),), MANY, [C.MERGE, C.LAYOUT],
         "Concatenation of two or more inputs along axis dim, in the order of their edges.", aliases=("Concat",),
         foldable=True),
    _def(Op.MEAN, (_p("dim", _AXES),), ONE, [C.REDUCTION], "Mean over axis dim (an axis or a tuple), keeping it as size 1."),
    _def(Op.MAX, (_p("dim", _AXES),), ONE, [C.REDUCTION], "Maximum values over axis dim (an axis or a tuple), keeping it as size 1."),
    _def(Op.SUM, (_p("dim", _AXES),), ONE, [C.REDUCTION], "Sum over axis dim (an axis or a tuple), keeping it as size 1."),
    _def(Op.SOFTMAX, (_p("dim", _AXIS),), ONE, [C.SHAPE_PRESERVING], "Softmax along axis dim.", gate=True),
    _def(Op.PERMUTE, (_p("dims", _AXIS, variadic=True),), ONE, [C.LAYOUT],
         "Reorders axes, e.g. permute(0,2,3,1) makes (B,C,H,W) channels-last."),
    _def(Op.REPEAT, (_p("sizes", _SHAPE, variadic=True),), ONE, [C.LAYOUT],
         "Tiles the tensor: repeat(1,1,2,2) doubles H and W; one size per axis."),
    _def(Op.RESHAPE, (_p("shape", _SHAPE, variadic=True),), ONE, [C.LAYOUT],
         "Reshapes keeping the element count, e.g. reshape(B,C,H*W); one size may be -1."),
    _def(Op.DROP_PATH, (_p("prob", _PROB, 0.0),), ONE, [C.REGULARIZATION, C.SHAPE_PRESERVING],
         "Stochastic depth: drops the whole sample with probability prob in training; identity in evaluation."),
    _def(Op.ZERO, (), ONE, [C.SHAPE_PRESERVING],
         "Zeros of its input's shape (NAS-Bench-201's cell whose output receives only `none` edges)."),
]}

_BY_NAME: dict[str, OpDef] = {d.name: d for d in REGISTRY.values()}
#: Every spelling of an operation, canonical names and aliases, in one dict (a name wins over an
#: alias). The parser resolves a node per node line through it.
SPELLINGS: dict[str, OpDef] = {**{alias: d for d in REGISTRY.values() for alias in d.aliases}, **_BY_NAME}


def lookup(name: str) -> Optional[OpDef]:
    """The operation spelled `name`, by canonical name or alias."""
    return SPELLINGS.get(name)


def all_names() -> list[str]:
    return list(_BY_NAME)


def _having(category: Category) -> frozenset[Op]:
    return frozenset(op for op, d in REGISTRY.items() if category in d.categories)


def _where(test) -> frozenset[Op]:
    return frozenset(op for op, d in REGISTRY.items() if test(d))


def in_order(ops: Iterable[Op]) -> tuple[Op, ...]:
    """`ops` in registry order: a set's own order depends on the string hash seed, and random
    choices over operations must not."""
    wanted = frozenset(ops)
    return tuple(op for op in REGISTRY if op in wanted)


class Group:
    """Sets of operations derived from categories, so passes query sets instead of listing names."""

    TERMINAL = _having(C.TERMINAL)
    SOURCE = _having(C.SOURCE)
    SINK = _having(C.SINK)
    LEARNABLE = _having(C.LEARNABLE)
    ACTIVATION = _having(C.ACTIVATION)
    NORMALIZATION = _having(C.NORMALIZATION)
    POOLING = _having(C.POOLING)
    MERGE = _having(C.MERGE)
    REDUCTION = _having(C.REDUCTION)
    LAYOUT = _having(C.LAYOUT)
    SHAPE_PRESERVING = _having(C.SHAPE_PRESERVING)
    REGULARIZATION = _having(C.REGULARIZATION)
    GATE = _where(lambda d: d.gate)
    #: Activations of hidden units, not gates: mutations swap them for each other and NASWOT
    #: reads its binary codes off their inputs.
    HIDDEN_ACTIVATION = ACTIVATION - GATE
    #: Operations with two or more operands, whose edge order the drawings number.
    MULTI_INPUT = _where(lambda d: d.arity.min >= 2)
    #: Pooling over a kernel window (not to a fixed output size).
    WINDOW_POOLING = _where(lambda d: C.POOLING in d.categories and d.param("kernel_size") is not None)
    COMPUTE = frozenset(REGISTRY) - TERMINAL  # everything a backend must lower
    #: Operations whose result does not depend on input order: canonical hashing sorts their inputs.
    COMMUTATIVE = _where(lambda d: d.commutative)
    #: Operations taking more than one input whose order matters: every one not declared
    #: commutative, so a new multi-input operation keeps its edge order in hashes by default.
    ORDERED_INPUT = _where(lambda d: (d.arity.max is None or d.arity.max > 1) and not d.commutative)
    #: Operations taking any number of inputs.
    VARIADIC = _where(lambda d: d.arity.max is None)
    #: Operations a backend may apply in pieces: f(f(a, b), c) is f(a, b, c).
    FOLDABLE = _where(lambda d: d.foldable)
    #: Operations that multiply one input by another: where a gate's values are applied.
    GATE_CONSUMER = _where(lambda d: d.multiplies)
    #: Merges computing element by element, whose output has the (broadcast) shape of their inputs
    #: (not concatenation, which is a layout move).
    ELEMENTWISE_MERGE = MERGE - LAYOUT
    #: Layers whose weights mix features (convolutions, fully connected), not normalisations.
    WEIGHT_LAYER = LEARNABLE - NORMALIZATION
    #: Operations sliding a kernel window over H and W (convolutions and window pooling).
    WINDOWED = _where(lambda d: d.param("kernel_size") is not None)


def reference_text() -> str:
    """The operation reference shown to LLMs, generated from the registry."""
    lines = [
        "Operations (one node per line `ID:OP` or `ID:OP(args)`; edges `a->b` or `a,b->c`, "
        "inputs of multi-input operations in edge order).",
        "Sizes may use B (batch), C (block input channels), dim (block output channels), "
        "H and W (not in layer parameters); operators + - * / // and parentheses.",
    ]
    for d in REGISTRY.values():
        lines.append(f"- {d.signature()} [{d.arity.describe()}]: {d.summary}")
    return "\n".join(lines)
