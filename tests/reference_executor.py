"""An independent reference executor for differential tests of the verifier.

It runs a block's IR directly with torch, creating each layer lazily from the
tensor that actually reaches it, and evaluates expressions with the sizes of
the real input. It never consults shape inference, so comparing its outcome
with `nadc verify`'s verdict tests the verifier against execution.

It executes what a compiled block executes: the nodes on a path to `output`
(dead nodes are dropped; every node must still be well-formed). Weights are
created once and reused for every run of one `ReferenceBlock`, as in a network:
at a second batch size (the last, smaller batch; evaluation), and, for the `any`
domain, at every resolution. For the square domain a network builds each block
for its stage's resolution: each size is then a run of its own.
"""
from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass, field
from fractions import Fraction

import torch
import torch.nn.functional as F
from torch import nn

from nader.dsl.expr import TupleValue, evaluate_expr
from nader.dsl.ir import Block, Role
from nader.dsl.ops import Op


class Failure(Exception):
    pass


def _value(expr, env) -> int:
    v = evaluate_expr(expr, env)
    if isinstance(v, float) or Fraction(v).denominator != 1:
        raise Failure(f"size {expr} = {v} is not an integer")
    return int(v)


def _pair(value, env) -> tuple[int, int]:
    if isinstance(value, TupleValue):
        items = [_value(i, env) for i in value.items]
        if len(items) == 1:
            items = items * 2
        return items[0], items[1]
    v = _value(value, env)
    return v, v


def _axes(value, env) -> tuple[int, ...]:
    items = value.items if isinstance(value, TupleValue) else (value,)
    return tuple(_value(i, env) for i in items)


@dataclass
class ReferenceBlock:
    block: Block
    role: Role
    C: int
    dim: int
    stem_stride: int = 1
    layers: dict = field(default_factory=dict)

    def contract_output(self, B: int, H: int, W: int) -> tuple[int, ...]:
        if self.role is Role.STEM:
            s = self.stem_stride
            return (B, self.dim, -(-H // s), -(-W // s))
        if self.role in (Role.DOWNSAMPLE, Role.REDUCTION_CELL):
            return (B, self.dim, -(-H // 2), -(-W // 2))
        return (B, self.dim, H, W)

    def run(self, B: int, H: int, W: int, train: bool = True) -> dict[int, torch.Tensor]:
        """Forward and backward at one size; raises Failure or a torch error when the block fails."""
        block = self.block
        order = block.topological_order()
        if order is None:
            raise Failure("cycle")
        nodes = block.node_map()
        if len(nodes) != len(block.nodes):
            raise Failure("duplicate ids")
        ids = set(nodes)
        for s, t, _, _ in block.wires():
            if s not in ids or t not in ids:
                raise Failure("undefined node")
        in_c = 3 if self.role is Role.STEM else self.C
        env = {"B": B, "C": in_c, "dim": self.dim, "H": H, "W": W}
        values: dict[int, torch.Tensor] = {}
        terminals = {Op.INPUT: 0, Op.INPUT1: 0, Op.INPUT2: 1}
        wanted = [Op.INPUT1, Op.INPUT2] if self.role in (Role.CELL, Role.REDUCTION_CELL) else [Op.INPUT]
        sources = [n for n in block.nodes if n.op in terminals]
        if sorted(n.op.value for n in sources) != sorted(o.value for o in wanted):
            raise Failure("terminals")
        outputs = [n for n in block.nodes if n.op is Op.OUTPUT]
        if len(outputs) != 1:
            raise Failure("outputs")
        for node in block.nodes:  # well-formed, dead or alive
            if node.op is None:
                raise Failure("unknown op")
            if node.op in terminals and block.inputs_of(node.id):
                raise Failure("edge into input")
            d = node.opdef
            if node.op not in terminals and node.op is not Op.OUTPUT:
                if not d.arity.accepts(len(block.inputs_of(node.id))):
                    raise Failure("arity")
                if any(p.required and p.name not in node.params for p in d.params):
                    raise Failure("missing parameter")
        live = _live(block, outputs[0].id)
        result = None
        for node_id in order:
            if node_id not in live:
                continue  # dead: dropped when compiled
            node = nodes[node_id]
            ins = [values[i] for i in block.inputs_of(node_id)]
            if node.op in terminals:
                values[node_id] = torch.randn(B, in_c, H, W, requires_grad=True)
                continue
            if node.op is Op.OUTPUT:
                if len(ins) != 1:
                    raise Failure("output fan-in")
                result = ins[0]
                continue
            out = self._apply(node, ins, env, train)
            out.retain_grad()
            values[node_id] = out
        if result is None:
            raise Failure("no output")
        for n in block.nodes:
            if n.op is Op.OUTPUT and block.consumers_of(n.id):
                raise Failure("edge out of output")
        if tuple(result.shape) != self.contract_output(B, H, W):
            raise Failure(f"output shape {tuple(result.shape)} breaks the role contract")
        (result.float() * torch.randn_like(result.float())).sum().backward()
        for node_id, tensor in values.items():
            if nodes[node_id].op not in terminals and tensor.grad is None:
                raise Failure(f"node {node_id} gets no gradient")
        return values

    def _layer(self, node, make):
        key = node.id
        if key not in self.layers:
            self.layers[key] = make()
        return self.layers[key]

    def _apply(self, node, ins, env, train):
        op, p = node.op, node.params
        x = ins[0]
        if op in (Op.CONV2D, Op.AVG_POOL2D, Op.MAX_POOL2D, Op.ADAPTIVE_AVG_POOL2D, Op.ADAPTIVE_MAX_POOL2D, Op.BN):
            if x.dim() != 4:
                raise Failure("needs 4-d")
        if op is Op.CONV2D:
            k, s, dl = _pair(p["kernel_size"], env), _pair(p["stride"], env), _pair(p["dilation"], env)
            out_c, groups = _value(p["out_channels"], env), _value(p["groups"], env)
            if min(k + s + dl) < 1 or out_c < 1 or groups < 1:
                raise Failure("bad conv parameter")
            pad = tuple((dl[i] * (k[i] - 1) + 1) // 2 for i in range(2))
            conv = self._layer(node, lambda: nn.Conv2d(x.shape[1], out_c, k, s, pad, dl, groups))
            y = conv(x)
            return y[..., : -(-x.shape[2] // s[0]), : -(-x.shape[3] // s[1])]
        if op in (Op.AVG_POOL2D, Op.MAX_POOL2D):
            k, s = _pair(p["kernel_size"], env), _pair(p["stride"], env)
            pad = (k[0] // 2, k[1] // 2)
            if op is Op.AVG_POOL2D:
                y = F.avg_pool2d(x, k, s, pad, count_include_pad=False)
            else:
                y = F.max_pool2d(x, k, s, pad)
            return y[..., : -(-x.shape[2] // s[0]), : -(-x.shape[3] // s[1])]
        if op is Op.ADAPTIVE_AVG_POOL2D:
            return F.adaptive_avg_pool2d(x, _pair(p["output_size"], env))
        if op is Op.ADAPTIVE_MAX_POOL2D:
            return F.adaptive_max_pool2d(x, _pair(p["output_size"], env))
        if op is Op.LINEAR:
            out_c = _value(p["out_channels"], env)
            if out_c < 1:
                raise Failure("bad out_channels")
            return self._layer(node, lambda: nn.Linear(x.shape[-1], out_c))(x)
        if op is Op.BN:
            return self._layer(node, lambda: nn.BatchNorm2d(x.shape[1]))(x)
        if op is Op.LN:
            return self._layer(node, lambda: nn.LayerNorm(x.shape[-1]))(x)
        if op is Op.RELU:
            return torch.relu(x)
        if op is Op.GELU:
            return F.gelu(x)
        if op is Op.SIGMOID:
            return torch.sigmoid(x)
        if op is Op.DROP_PATH:
            return x * 1  # a tensor of its own: returning x would credit x's gradient to this node
        if op is Op.ZERO:
            return torch.zeros_like(x)
        if op is Op.ADD:
            return functools.reduce(operator.add, ins)
        if op is Op.MUL:
            return functools.reduce(operator.mul, ins)
        if op is Op.MATMUL:
            try:
                return torch.matmul(ins[0], ins[1])
            except RuntimeError:
                return torch.matmul(ins[1], ins[0])  # NADER accepted the swapped order
        if op is Op.CONCAT:
            return torch.cat(ins, dim=_value(p["dim"], env))
        if op in (Op.MEAN, Op.MAX, Op.SUM):
            axes = _axes(p["dim"], env)
            fn = {Op.MEAN: torch.mean, Op.MAX: torch.amax, Op.SUM: torch.sum}[op]
            return fn(x, dim=axes, keepdim=True)
        if op is Op.SOFTMAX:
            return torch.softmax(x, dim=_value(p["dim"], env))
        if op is Op.PERMUTE:
            return x.permute(*_axes(p["dims"], env))
        if op is Op.REPEAT:
            sizes = _axes(p["sizes"], env)
            if min(sizes) < 1:
                raise Failure("repeat below 1")
            return x.repeat(*sizes)
        if op is Op.RESHAPE:
            shape = _axes(p["shape"], env)
            if any(s < 1 and s != -1 for s in shape):
                raise Failure("bad reshape size")
            return x.reshape(shape)
        raise Failure(f"no reference for {op}")


def _live(block: Block, output: int) -> set:
    """The nodes with a path to `output` (output included)."""
    live, todo = {output}, [output]
    while todo:
        for source in block.inputs_of(todo.pop()):
            if source not in live:
                live.add(source)
                todo.append(source)
    return live


ERRORS = (Failure, RuntimeError, ValueError, IndexError, TypeError, ZeroDivisionError, KeyError)
BATCHES = (2, 3)  # a second batch size with the same weights: the last batch of an epoch, evaluation


def runs(block: Block, role: Role, C: int, dim: int, sizes, stem_stride: int = 1) -> tuple[bool, str, ReferenceBlock]:
    """Whether the block runs forward and backward at every size (an int `n` is `n x n`), at both batch
    sizes, with one set of weights; returns (ok, why, the ReferenceBlock). For weights built per
    resolution (the square domain), run one size per call."""
    ref = ReferenceBlock(block, role, C, dim, stem_stride)
    for size in sizes:
        H, W = size if isinstance(size, tuple) else (size, size)
        for batch in BATCHES:
            try:
                ref.run(batch, H, W)
            except ERRORS as error:
                return False, f"B={batch}, H={H}, W={W}: {type(error).__name__}: {error}", ref
    return True, "", ref
