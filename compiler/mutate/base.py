"""The operator interface: sites, the facts operators read, and the checks every mutant passes."""
from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Optional

from nader.compiler.passes.canonical import canonical_hash, node_label
from nader.compiler.passes.shapes import Shape
from nader.compiler.passes.symbolic import Poly
from nader.compiler.passes.verify import BlockReport, verify_block
from nader.dsl.expr import constant_int
from nader.dsl.ir import Block, Node, Role
from nader.dsl.ops import Group

from .errors import CannotApply, MutationError
from .rewrite import NodeId


@dataclass(frozen=True)
class Site:
    """Where and how an operator applies: JSON-serialisable arguments that replay the rewrite exactly."""

    operator: str
    args: dict = field(hash=False)

    def __str__(self) -> str:
        return f"{self.operator}({', '.join(f'{k}={v}' for k, v in self.args.items())})"


# -- what operators know about the parent ----------------------------------------------------

@dataclass
class BlockFacts:
    """The verified parent: its role, every node's symbolic shape, a topological order."""

    block: Block
    role: Role
    report: BlockReport
    order: list[NodeId]
    nodes: dict[NodeId, Node]

    @property
    def ok(self) -> bool:
        return self.report.ok

    def shape(self, node_id: NodeId) -> Shape:
        return self.report.shapes.shapes[node_id]  # type: ignore[union-attr]

    def channels(self, node_id: NodeId) -> Optional[Poly]:
        """The channel count of a 4-d (B,X,H,W) output whose X a layer can learn over (`k*C` or a number)."""
        shape = self.shape(node_id)
        if len(shape) != 4 or not shape[1].free_symbols() <= {"C"}:
            return None
        for axis in shape[2:]:  # spatial: H, W (H alone in the square domain) or a stride of them
            if len(axis.free_symbols()) != 1 or not axis.free_symbols() <= {"H", "W"}:
                return None
        return shape[1]

    def groups(self, node_id: NodeId) -> Optional[Poly]:
        """A `Conv2d`'s groups as the verifier resolved them."""
        return self.report.shapes.facts.get(node_id, {}).get("groups")  # type: ignore[union-attr]

    def compute_nodes(self) -> list[Node]:
        """Non-terminal nodes, in topological order."""
        return [self.nodes[i] for i in self.order if self.nodes[i].op not in Group.TERMINAL]

    def single_input(self, node_id: NodeId) -> Optional[NodeId]:
        inputs = self.block.inputs_of(node_id)
        return inputs[0] if len(inputs) == 1 else None

    @cached_property
    def ancestors(self) -> dict[NodeId, set]:
        """Every node's ancestors."""
        result: dict[NodeId, set] = {}
        for node_id in self.order:
            seen: set = set()
            for s in self.block.inputs_of(node_id):
                seen.add(s)
                seen |= result.get(s, set())
            result[node_id] = seen
        return result


def block_facts(block: Block, role: Optional[Role] = None, report: Optional[BlockReport] = None) -> BlockFacts:
    """The verifier's view of `block` in `role` (default: the role its header implies), computed once.

    `report`: the block's verification in that role, where the caller already has it.
    """
    role = role or block.inferred_role()

    def compute(b: Block) -> BlockFacts:
        checked = report if report is not None and report.role is role else verify_block(b, role=role)
        return BlockFacts(b, role, checked, b.topological_order() or [], dict(b.node_map()))

    return block.analysis(f"mutate.facts:{role.value}", compute)


_LABELS: dict[tuple, str] = {}


def _label(node: Node) -> str:
    key = (node.op_name, node.args)
    label = _LABELS.get(key)
    if label is None:
        if len(_LABELS) > 65_536:
            _LABELS.clear()
        label = _LABELS[key] = node_label(node)
    return label


def _shape_of_graph(block: Block) -> tuple[Counter, int]:
    return Counter(_label(n) for n in block.node_map().values()), sum(len(e.sources) for e in block.edges)


def differs(parent: Block, mutant: Block) -> bool:
    """Whether the two blocks differ as canonical forms (`nadc hash`).

    Blocks with different multisets of node labels or different edge counts differ; only when
    those agree does it take the canonical hashes, which cost far more on large cells.
    """
    if parent.analysis("mutate.graph-shape", _shape_of_graph) != _shape_of_graph(mutant):
        return True
    return canonical_hash(mutant) != parent.analysis("mutate.canonical-hash", canonical_hash)


def kernel_is_one(node: Node) -> bool:
    return constant_int(node.params["kernel_size"]) == 1


def first_error(report: BlockReport) -> str:
    errors = [d for d in report.diagnostics if d.is_error]
    if errors:
        return f"{errors[0].code.code} {errors[0].message}"
    return "it has no valid shapes"


# -- the operator interface -----------------------------------------------------------------------

class MutationOperator:
    """One graph rewrite. Subclasses set the class attributes and implement `sites` and `rewrite`.

    * `name`: the key in `OPERATORS` and the `nadc explain` topic (kebab-case);
    * `summary`: one line; `doc`: what it does, its arguments, and when it cannot apply;
    * `requires`: what a block must contain, the reason given when `candidates` is empty;
    * `arguments`: the keys a site's `args` may hold;
    * `draw_order`: its place in `OPERATORS`, the order random choices draw from (then by name).
    """

    name: ClassVar[str]
    draw_order: ClassVar[int] = 1000
    summary: ClassVar[str]
    arguments: ClassVar[tuple[str, ...]]
    requires: ClassVar[str]
    doc: ClassVar[str]

    # -- what subclasses implement ------------------------------------------------------
    def sites(self, facts: BlockFacts) -> list[dict[str, Any]]:
        """The argument dicts of every place this operator could apply, in a fixed order."""
        raise NotImplementedError

    def rewrite(self, facts: BlockFacts, args: dict[str, Any]) -> Block:
        """The rewritten block (unverified). Raise CannotApply when the arguments do not fit the block."""
        raise NotImplementedError

    # -- what callers use ---------------------------------------------------------------
    def candidates(self, block: Block, role: Optional[Role] = None) -> list[Site]:
        """Every site where this operator may apply, in a fixed order; empty when it cannot apply."""
        facts = block_facts(block, role)
        if not facts.ok:
            return []
        return [Site(self.name, args) for args in self.sites(facts)]

    def apply(self, block: Block, site: Site, role: Optional[Role] = None) -> Block:
        """The mutant at `site`, verified in the block's role and different from `block`; else CannotApply."""
        if site.operator != self.name:
            raise CannotApply(f"the site is for `{site.operator}`, not `{self.name}`")
        facts = block_facts(block, role)
        if not facts.ok:
            raise MutationError(f"the parent block `{block.name}` does not verify: {first_error(facts.report)}")
        try:
            mutant = self.rewrite(facts, dict(site.args))
        except (KeyError, TypeError, ValueError) as error:  # arguments naming nodes the block lacks, or ill-typed
            raise CannotApply(f"{site} does not fit block `{block.name}`: {error!r}") from None
        report = verify_block(mutant, role=facts.role)
        if not report.ok:
            raise CannotApply(f"{site} gives a block that does not verify: {first_error(report)}")
        if not differs(block, mutant):
            raise CannotApply(f"{site} gives a block equal to its parent")
        return mutant

    def explain(self) -> str:
        """The `nadc explain NAME` page."""
        return (f"# {self.name}\n\n{self.summary}\n\n{textwrap.dedent(self.doc).strip()}\n\n"
                f"## When it cannot apply\nIt needs {self.requires}.\n")

    def __repr__(self) -> str:
        return f"<mutation {self.name}>"
