"""delete-node: a node removed, its consumers reconnected to its input."""
from __future__ import annotations

from nader.dsl.ir import Block
from nader.dsl.ops import Group

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import rewrite

_MERGES = Group.ELEMENTWISE_MERGE


class DeleteNode(MutationOperator):
    name = "delete-node"
    draw_order = 110
    summary = "Delete a node and reconnect its consumers to its input (for Add/Mul: to one kept input)."
    arguments = ("node", "keep")
    requires = ("a node whose output has the shape of its input (one-input nodes) or of the input "
                "kept (Add, Mul), with another computing node left afterwards")
    doc = """
    ## What it does
    Removes `node` and gives its consumers the tensor it received:
    - a one-input node (`BN`, an activation, `DropPath`, a stride-1 pooling, a `Conv2d` that keeps
      the channel count, ...) whose output has exactly its input's shape: consumers read that input;
    - an `Add` or `Mul`: consumers read the input `keep` (of the same shape as the result);
      the other inputs lose this consumer, and whatever then leads nowhere is deleted too
      (deleting a residual `Add` removes the shortcut; deleting a gate's `Mul` removes the gate).
    Sites are skipped where a consumer already reads that input (the result would add a
    tensor to itself) or where no computing node would remain.
    ```
    u -> BN -> ReLU     becomes     u -> ReLU
    ```
    ## Arguments
    `node`: the node to delete; `keep`: for `Add`/`Mul`, the input that takes its place.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        out = []
        computing = len(facts.compute_nodes())
        for node in facts.compute_nodes():
            inputs = facts.block.inputs_of(node.id)
            if len(inputs) == 1 and computing > 1:
                if self._fits(facts, node.id, inputs[0]):
                    out.append({"node": node.id})
            elif node.op in _MERGES:
                out += [{"node": node.id, "keep": k} for k in dict.fromkeys(inputs)
                        if self._fits(facts, node.id, k) and _computes(self._bypass(facts, node.id, k))]
        return out

    @staticmethod
    def _bypass(facts: BlockFacts, node_id, keep) -> Block:
        """The block without `node_id`, its consumers reading `keep`, and what then leads nowhere."""
        return rewrite(facts.block, {node_id: lambda rw, node, inputs: keep}, prune=True)

    @staticmethod
    def _fits(facts: BlockFacts, node_id, keep) -> bool:
        if facts.shape(keep) != facts.shape(node_id):
            return False
        return not any(keep in facts.block.inputs_of(c) for c in facts.block.consumers_of(node_id))

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id = args["node"]
        node = facts.nodes[node_id]
        inputs = facts.block.inputs_of(node_id)
        if node.op in Group.TERMINAL:
            raise CannotApply(f"node {node_id} is a terminal")
        keep = args.get("keep") if node.op in _MERGES else (inputs[0] if len(inputs) == 1 else None)
        if keep not in inputs or not self._fits(facts, node_id, keep):
            raise CannotApply(f"node {node_id} cannot be bypassed by input {keep!r}")
        mutant = self._bypass(facts, node_id, keep)
        if not _computes(mutant):
            raise CannotApply(f"deleting node {node_id} leaves no computing node")
        return mutant


def _computes(block: Block) -> bool:
    return any(n.op not in Group.TERMINAL for n in block.nodes)
