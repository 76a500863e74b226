"""Mutating whole architectures: pick an operator and a site, rewrite the base block, check everything."""
from __future__ import annotations

import difflib
import functools
import random
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

from nader.compiler.architecture import Architecture, architecture_from_program
from nader.compiler.errors import BuildError
from nader.dsl.format import format_block, format_program
from nader.dsl.ir import Block, Program, Role
from nader.dsl.parser import parse

from .base import MutationOperator, Site, block_facts, first_error
from .errors import CannotApply, MutationError
from .table import OPERATORS

T = TypeVar("T")

#: Sites tried per operator before `mutate` moves on to another operator.
MAX_SITE_TRIES = 8


@dataclass(frozen=True)
class Mutation:
    """A verified mutant: the whole architecture's text and how it was made."""

    arch_text: str  # base, stem and downsample blocks (or cells) in canonical form
    operator: str
    args: dict  # JSON-serialisable; `apply_mutation(parent_text, operator, args)` replays it
    diff: str  # unified diff of the base block's text, parent to mutant
    block: Block  # the new base block

    def to_json(self) -> dict[str, Any]:
        return {"operator": self.operator, "args": self.args, "diff": self.diff}


def load_parent(arch_text: str, path: str = "<parent>") -> tuple[Program, Architecture]:
    """Parse and verify an architecture (base, stem and downsample blocks, or DARTS cells).

    Cached by text: a search mutates the same parents again and again (REA's tournament
    winners, the tree's open nodes). Callers treat the result as read-only, as operators do.
    """
    return _load_parent(arch_text, path)


@functools.lru_cache(maxsize=128)
def _load_parent(arch_text: str, path: str) -> tuple[Program, Architecture]:
    parsed = parse(arch_text, path)
    cells = any(b.inferred_role() in (Role.CELL, Role.REDUCTION_CELL) for b in parsed.program.blocks)
    try:
        arch = architecture_from_program(parsed.program, parsed.diagnostics, "darts" if cells else "nb201")
    except BuildError as error:
        raise MutationError(f"the parent architecture does not load: {error}") from None
    block_facts(arch.base, _role(arch), arch.reports["base"])  # the verifier's report, reused
    return parsed.program, arch


def _role(arch: Architecture) -> Role:
    return Role.CELL if arch.cells else Role.BASE


def _operator(name: str) -> MutationOperator:
    if name not in OPERATORS:
        raise MutationError(f"unknown mutation operator `{name}`; `nadc explain mutations` lists them")
    return OPERATORS[name]


def _assemble(program: Program, arch: Architecture, mutant: Block, site: Site) -> Mutation:
    """The mutant architecture's text, checked to mean exactly the verified blocks.

    The base block was verified by `apply`, the others with the parent and are unchanged; the
    roles fix every block's input and output shapes, so they still fit together. When the
    printed text parses back to those same blocks, nothing is left to check; otherwise (comments
    that move between blocks) the architecture is loaded and verified again from its text.
    """
    blocks = tuple(mutant if b is arch.base else b for b in program.blocks)
    text = format_program(Program(blocks, program.path))
    parsed = parse(text, program.path)
    if not (parsed.ok and parsed.program.blocks == blocks):
        try:
            architecture_from_program(parsed.program, parsed.diagnostics, "darts" if arch.cells else "nb201",
                                      stem_stride=arch.stem_stride)
        except BuildError as error:
            raise CannotApply(f"{site} breaks the architecture: {error}") from None
    diff = "\n".join(difflib.unified_diff(format_block(arch.base).splitlines(), format_block(mutant).splitlines(),
                                          "parent", "mutant", n=1, lineterm=""))
    return Mutation(text, site.operator, dict(site.args), diff + "\n", mutant)


def _search(block: Block, role: Role, rng: random.Random, operator: Optional[str],
            finish: Callable[[Block, Site], T]) -> T:
    facts = block_facts(block, role)
    if not facts.ok:
        raise MutationError(f"the parent block `{block.name}` does not verify: {first_error(facts.report)}")
    names = [operator] if operator is not None else rng.sample(list(OPERATORS), len(OPERATORS))
    reasons: list[str] = []
    for name in names:
        op = _operator(name)
        sites = op.candidates(block, role)
        if not sites:
            reasons.append(f"{name}: needs {op.requires}")
            continue
        last = ""
        for site in rng.sample(sites, min(len(sites), MAX_SITE_TRIES)):
            try:
                return finish(op.apply(block, site, role), site)
            except CannotApply as error:
                last = str(error)
        reasons.append(f"{name}: {last}")
    raise CannotApply(f"no mutation applies to `{block.name}`: " + "; ".join(reasons))


def mutate(arch_text: str, rng: random.Random, operator: Optional[str] = None) -> Mutation:
    """A random verified mutant of the architecture's base block (the normal cell for DARTS cells).

    Operators are tried in a random order (only `operator` when given), each at up to
    MAX_SITE_TRIES random sites, until one gives a block that verifies, differs from its parent
    and keeps the whole architecture valid. Deterministic given `rng`'s state. Raises
    CannotApply (with every operator's reason) when nothing applies, and MutationError when the
    parent itself is invalid or `operator` is unknown.
    """
    program, arch = load_parent(arch_text)
    return _search(arch.base, _role(arch), rng, operator, lambda mutant, site: _assemble(program, arch, mutant, site))


def mutate_block(block: Block, rng: random.Random, operator: Optional[str] = None,
                 role: Optional[Role] = None) -> tuple[Block, Site]:
    """`mutate` for one block on its own (role from its header unless given): the mutant and its site."""
    return _search(block, role or block.inferred_role(), rng, operator, lambda mutant, site: (mutant, site))


def apply_mutation(arch_text: str, operator: str, args: dict) -> Mutation:
    """Replay a recorded mutation (`Mutation.operator`, `Mutation.args`) on its parent architecture."""
    program, arch = load_parent(arch_text)
    site = Site(operator, dict(args))
    return _assemble(program, arch, _operator(operator).apply(arch.base, site, _role(arch)), site)
