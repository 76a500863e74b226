"""add-residual: a shortcut from an earlier node added to a later node's output."""
from __future__ import annotations

from nader.dsl.ir import Block
from nader.dsl.ops import Group, Op

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import rewrite


class AddResidual(MutationOperator):
    name = "add-residual"
    draw_order = 30
    summary = "Add a residual connection: node `to` becomes Add(to, from) for an earlier node `from`."
    arguments = ("from", "to")
    requires = ("two nodes, one upstream of the other and not its direct input, with equal shapes "
                "and no shortcut between them yet")
    doc = """
    ## What it does
    Adds the output of an upstream node `from` to the output of node `to` (`Add(to, from)`,
    ResNet's identity shortcut); every former consumer of `to` reads the sum. `from` must be an
    ancestor of `to` (so no cycle forms), not one of its direct inputs, and of exactly the same
    shape for all sizes. Pairs that already have a shortcut (`to` feeds an `Add` or `Mul`
    that `from` also feeds) are skipped.
    ```
    from -> ... -> to -> consumers     becomes     from -> ... -> to -> Add(to, from) -> consumers
    ```
    ## Arguments
    `from`: the shortcut's source; `to`: the node whose output receives it.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        block = facts.block
        ancestors = facts.ancestors
        out = []
        for to in facts.order:
            if facts.nodes[to].op in Group.TERMINAL:
                continue
            direct = set(block.inputs_of(to))
            merged_with = {s for c in block.consumers_of(to) if facts.nodes[c].op in Group.MERGE
                           for s in block.inputs_of(c)}
            for source in facts.order:
                if (source in ancestors[to] and source not in direct and source not in merged_with
                        and facts.shape(source) == facts.shape(to)):
                    out.append({"from": source, "to": to})
        return out

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        source, to = args["from"], args["to"]
        if source not in facts.ancestors[to]:
            raise CannotApply(f"node {source} is not upstream of node {to}")

        def shortcut(rw, node, inputs):  # its consumers read the sum
            rw.keep(node, inputs)
            return rw.add(Op.ADD, [to, source])

        return rewrite(facts.block, {to: shortcut})
