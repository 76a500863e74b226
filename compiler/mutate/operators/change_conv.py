"""change-conv: a Conv2d's kernel size, dilation or groups."""
from __future__ import annotations

from nader.compiler.passes.symbolic import Poly, exact_quotient
from nader.dsl.expr import constant_int
from nader.dsl.ir import Block
from nader.dsl.ops import Op

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import rewrite, size_arg, with_args

KERNELS = (1, 3, 5, 7)
DILATIONS = (1, 2, 3)
GROUPS = (1, 2, 4, "depthwise")


class ChangeConv(MutationOperator):
    name = "change-conv"
    draw_order = 50
    summary = "Change one parameter of a Conv2d: kernel size, dilation or groups."
    arguments = ("node", "param", "value")
    requires = "a Conv2d"
    doc = """
    ## What it does
    Sets one parameter of the `Conv2d` `node`; everything else stays:
    - `kernel_size`: 1, 3, 5 or 7 (square). Going to 1 also resets `dilation` to 1, which means
      nothing on a 1x1 kernel;
    - `dilation`: 1, 2 or 3, on kernels larger than 1;
    - `groups`: 1, 2, 4, or `depthwise` (groups = input channels, where the output channels are
      a whole multiple of them). `groups=2` and `4` add divisibility constraints on `C`.
    The padding stays 'same', so the shape never changes.
    ## Arguments
    `node`; `param`: `kernel_size`, `dilation` or `groups`; `value`: the new value.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        out = []
        for node_id in facts.order:
            node = facts.nodes[node_id]
            if node.op is not Op.CONV2D:
                continue
            kernel = constant_int(node.params["kernel_size"])
            dilation = constant_int(node.params["dilation"])
            out += [{"node": node_id, "param": "kernel_size", "value": k} for k in KERNELS if k != kernel]
            if kernel != 1:
                out += [{"node": node_id, "param": "dilation", "value": d} for d in DILATIONS if d != dilation]
            current = facts.groups(node_id)
            for g in GROUPS:
                value = self._groups(facts, node_id, g)
                if value is not None and value != current:
                    out.append({"node": node_id, "param": "groups", "value": g})
        return out

    @staticmethod
    def _groups(facts: BlockFacts, node_id, g) -> Poly | None:
        if g != "depthwise":
            return Poly.const(g)
        cin = facts.channels(facts.single_input(node_id))
        cout = facts.channels(node_id)
        if cin is None or cout is None:
            return None
        ratio = exact_quotient(cout, cin)
        multiple = ratio.int_constant() if ratio is not None else None
        return cin if multiple is not None and multiple >= 1 else None

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id, param, value = args["node"], args["param"], args["value"]
        if facts.nodes[node_id].op is not Op.CONV2D:
            raise CannotApply(f"node {node_id} is not a Conv2d")
        if param == "kernel_size" and value in KERNELS:
            changes = {"kernel_size": value}
            if value == 1 and constant_int(facts.nodes[node_id].params["dilation"]) != 1:
                changes["dilation"] = 1
        elif param == "dilation" and value in DILATIONS:
            changes = {"dilation": value}
        elif param == "groups" and value in GROUPS:
            groups = self._groups(facts, node_id, value)
            changes = {"groups": value if value != "depthwise" else size_arg(groups)}
        else:
            raise CannotApply(f"cannot set `{param}` to {value!r}; see `nadc explain {self.name}`")
        return rewrite(facts.block, {node_id: lambda rw, node, inputs: rw.keep(node, inputs, with_args(node, **changes))})
