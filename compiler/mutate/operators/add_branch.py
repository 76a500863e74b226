"""add-branch: a parallel branch beside a convolution or pooling node, summed with it."""
from __future__ import annotations

from nader.dsl.ir import Block
from nader.dsl.ops import Group, Op

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import rewrite, size_arg

#: Branch kinds; pooling branches only where the node keeps the channel count.
BRANCHES = ("conv3x3", "conv1x1", "sep_conv3x3", "avg_pool3x3", "max_pool3x3")
_BESIDE = Group.WINDOWED


class AddBranch(MutationOperator):
    name = "add-branch"
    draw_order = 40
    summary = "Add a parallel branch beside a Conv2d or pooling node; the two are summed."
    arguments = ("node", "branch")
    requires = "a Conv2d or pooling node with (B,X,H,W) input and output of the same spatial size"
    doc = """
    ## What it does
    Node `node` reads `u`; a new branch also reads `u` and computes a tensor of `node`'s shape;
    `Add(node, branch)` replaces `node` for all its consumers (an Inception- or RepVGG-style
    widening of one layer). Branches:
    - `conv3x3`, `conv1x1`: `Conv2d(out_channels=X, kernel_size=3|1)` then `BN`;
    - `sep_conv3x3`: depthwise `Conv2d(kernel_size=3, groups=Xin)`, pointwise 1x1 to `X`, `BN`;
    - `avg_pool3x3`, `max_pool3x3`: `AvgPool2d`/`MaxPool2d(kernel_size=3, stride=1)`, only where
      `node` keeps the channel count.
    ```
    u -> node -> consumers     becomes     u -> node ---+-> Add -> consumers
                                           u -> branch -+
    ```
    ## Arguments
    `node`: the node the branch runs beside; `branch`: one of the kinds above.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        out = []
        for node_id in facts.order:
            if facts.nodes[node_id].op not in _BESIDE:
                continue
            u = facts.single_input(node_id)
            if u is None:
                continue
            cin, cout = facts.channels(u), facts.channels(node_id)
            if cin is None or cout is None or facts.shape(u)[2:] != facts.shape(node_id)[2:]:
                continue
            for kind in BRANCHES:
                if kind.endswith("pool3x3") and cin != cout:
                    continue
                out.append({"node": node_id, "branch": kind})
        return out

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id, kind = args["node"], args["branch"]
        u = facts.single_input(node_id)
        cin, cout = facts.channels(u), facts.channels(node_id)
        if kind not in BRANCHES:
            raise CannotApply(f"unknown branch `{kind}`; one of: {', '.join(BRANCHES)}")

        def beside(rw, node, inputs):  # its consumers read the sum
            rw.keep(node, inputs)
            if kind in ("conv3x3", "conv1x1"):
                conv = rw.add(Op.CONV2D, [u], out_channels=size_arg(cout), kernel_size=3 if kind == "conv3x3" else 1)
                branch = rw.add(Op.BN, [conv])
            elif kind == "sep_conv3x3":
                depthwise = rw.add(Op.CONV2D, [u], out_channels=size_arg(cin), kernel_size=3, groups=size_arg(cin))
                pointwise = rw.add(Op.CONV2D, [depthwise], out_channels=size_arg(cout), kernel_size=1)
                branch = rw.add(Op.BN, [pointwise])
            else:
                pool = Op.AVG_POOL2D if kind == "avg_pool3x3" else Op.MAX_POOL2D
                branch = rw.add(pool, [u], kernel_size=3, stride=1)
            return rw.add(Op.ADD, [node_id, branch])

        return rewrite(facts.block, {node_id: beside})
