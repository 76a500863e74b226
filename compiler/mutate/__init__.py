"""Graph-rewrite mutation operators on the IR: the compiler's own way to propose new blocks.

The search loop uses three names::

    from nader.compiler.mutate import OPERATORS, mutate, apply_mutation, CannotApply

    m = mutate(parent_text, random.Random(seed))            # any operator, chosen at random
    m = mutate(parent_text, rng, operator="insert-se")      # one operator
    m.arch_text   # the whole mutant architecture (base + stem + downsample, or cells), canonical text
    m.operator    # "insert-se"
    m.args        # {"node": 4, "reduction": 4}: JSON-serialisable, recorded in the modification tree
    m.diff        # unified diff of the base block's text, parent -> mutant
    apply_mutation(parent_text, m.operator, m.args).arch_text == m.arch_text   # exact replay

`mutate` rewrites the base block (the normal cell of a DARTS architecture); the stem and
downsample blocks are kept as they are and the whole mutant is re-parsed from its printed text
and verified as an architecture, so they stay valid for the new base block. Every mutant
verifies in its role (`nadc verify`) and has a canonical hash different from its parent's.
The same `random.Random` state gives the same mutant. When nothing applies, `mutate` raises
`CannotApply` naming each operator's reason; an invalid parent or unknown operator raises
`MutationError` (CannotApply's base class).

One operator at a time, on a single `Block`:

    op = OPERATORS["add-residual"]
    sites = op.candidates(block)          # list[Site]; empty: it cannot apply (`op.requires` says why)
    mutant = op.apply(block, sites[0])    # a verified Block different from `block`, or CannotApply
    mutant, site = mutate_block(block, rng)

A `Site` is `(operator, args)`; `apply` is deterministic given the site, so randomness is only
in choosing operators and sites. Operators are small classes, one per module in `operators/`,
found there and collected in `table.OPERATORS`; each has a `summary`, a `doc` and a `requires` text, shown by
`nadc explain mutations` and `nadc explain NAME`. They rewrite blocks on the interpreter's
`Transformer` (`rewrite.Rewrite`: a rule per changed node; nodes with bound parameters, rewired
edges, fresh ids that collide with no existing id) and the formatter prints the result: no block
text is ever assembled from strings.
"""
from __future__ import annotations

from .base import BlockFacts, MutationOperator, Site, block_facts
from .engine import MAX_SITE_TRIES, Mutation, apply_mutation, load_parent, mutate, mutate_block
from .errors import CannotApply, MutationError
from .table import OPERATORS, find_operator

__all__ = ["OPERATORS", "MAX_SITE_TRIES", "BlockFacts", "CannotApply", "Mutation", "MutationError",
           "MutationOperator", "Site", "apply_mutation", "block_facts", "find_operator", "load_parent", "mutate",
           "mutate_block"]
