"""Search spaces: what a search may propose, and how the offline strategies mutate within it.

| name | what an architecture is | mutation (walk, rea, tree, local) | uniform sample (random) | widths |
|---|---|---|---|---|
| `language` | any architecture of the block language (base, stem, downsample blocks) | a graph rewrite (`nader.compiler.mutate`) | none | fitted to the budget |
| `nb201` | a NAS-Bench-201 cell on NAS-Bench-201's network (`nb201.architecture`) | one of the 6 edges gets another of the 5 operations | any of the 15,625 cells | NB201's 16, 32, 64 |

A space answers the loop's and strategies' questions: the root when none is given, how to read
a root given as text, whether an architecture is inside it (`refuse` gives the reason when
not), how to mutate a parent and, where the space is finite, how to draw from it uniformly
(`sample`) and what a cell's neighbours are. Graph rewrites would leave the NB201 space, so
there a mutation changes one edge's operation, as NAS-Bench-201's REA does.
"""
from __future__ import annotations

import functools
import random
from typing import Dict, List, Optional, Tuple

from nader.compiler.architecture import load_architecture
from nader.compiler.passes.canonical import equivalent
from nader.runtime.errors import ConfigError

from ..candidate import Candidate, mutation_candidate
from . import nb201


class Space:
    name = "base"
    skeleton: Optional[str] = None  # the skeleton the space runs on (None: any)
    base_width: Optional[int] = None  # fixed base width (None: fitted to the budget)

    def default_root(self) -> Optional[str]:
        return None

    def root_text(self, text: str) -> str:
        """The architecture text of a root given as text (a file's contents)."""
        return text

    def refuse(self, text: str, arch=None) -> Optional[str]:
        """Why an architecture that verified is outside the space, or None when it is inside
        (`arch`: the text's loaded Architecture, when the caller has it)."""
        return None

    def mutate(self, parent, rng: random.Random):
        return mutation_candidate(parent, rng)

    # A finite space draws uniformly; the block language has no uniform distribution.
    uniform: bool = False

    def sample(self, rng: random.Random, seen) -> Optional[Candidate]:
        raise NotImplementedError(f"the {self.name} space has no uniform distribution")


class LanguageSpace(Space):
    name = "language"


class NB201Space(Space):
    name = "nb201"
    skeleton = nb201.SKELETON
    base_width = nb201.WIDTHS[0]

    def default_root(self) -> str:
        return nb201.architecture(nb201.RESNET)

    def root_text(self, text: str) -> str:
        """A NAS-Bench-201 string (`|op~0|+...`) becomes its architecture; block text stays as it is."""
        stripped = (text or "").strip()
        if stripped.startswith("|"):
            return nb201.architecture(nb201.CellStructure.parse(stripped))
        return text

    def cell(self, text: str) -> nb201.CellStructure:
        return nb201.cell_of_text(text)

    def refuse(self, text: str, arch=None) -> Optional[str]:
        try:
            self.cell(text)
        except nb201.NotInSpace as exc:
            return f"not a cell of the NAS-Bench-201 space: {exc}"
        arch = arch if arch is not None else load_architecture(text, self.skeleton)
        own = self._network()
        for part in ("stem", "downsample"):
            if not equivalent(arch.block(part), own.block(part)):
                return (f"not NAS-Bench-201's network: its {part} block differs from NB201's "
                        f"(the space varies the cell only)")
        return None

    def _network(self):
        """NB201's stem and reduction blocks (the same for every cell), loaded once."""
        if getattr(self, "_own", None) is None:
            self._own = load_architecture(nb201.architecture(nb201.RESNET), self.skeleton)
        return self._own

    def mutate(self, parent, rng: random.Random):
        """One edge of the parent's cell gets another operation (uniform edge, uniform new op)."""
        try:
            cell = self.cell(parent.text)
        except nb201.NotInSpace as exc:
            return Candidate(None, operator="nb201-edge", error=f"the parent is not a NAS-Bench-201 cell: {exc}")
        new, change = mutate_cell(cell, rng)
        return Candidate(nb201.architecture(new), operator="nb201-edge", change=change)

    uniform = True
    size = nb201.SPACE_SIZE

    def key(self, node) -> Optional[str]:
        """The cell string of a tree node (None outside the space): what `seen` sets hold."""
        cell = (node.change or {}).get("cell")
        if cell:
            return cell
        if not node.text:
            return None
        try:
            return str(_cell_of(node.text))
        except nb201.NotInSpace:
            return None

    def sample(self, rng: random.Random, seen) -> Optional[Candidate]:
        """A cell drawn uniformly from those whose string is not in `seen` (sampling without
        replacement when `seen` holds every cell drawn before); None when none is left."""
        left = [c for c in _ALL_STRINGS if c not in seen] if seen else _ALL_STRINGS
        if not left:
            return None
        cell = nb201.CellStructure.parse(left[rng.randrange(len(left))])
        return Candidate(nb201.architecture(cell), origin="sample", operator="nb201-uniform",
                         change={"operator": "nb201-uniform", "cell": str(cell)})

    def neighbours(self, cell: nb201.CellStructure) -> List[Tuple[nb201.CellStructure, dict]]:
        """Every cell one edge away (6 edges x 4 other operations = 24), in a fixed order."""
        out = []
        for edge, (node, source) in enumerate(nb201.EDGES):
            for op in nb201.OPS:
                if op != cell.ops[edge]:
                    ops = list(cell.ops)
                    ops[edge] = op
                    new = nb201.CellStructure(tuple(ops))
                    out.append((new, {"operator": "nb201-edge", "edge": f"{source}->{node}", "from": cell.ops[edge],
                                      "to": op, "cell": str(new)}))
        return out


_ALL_STRINGS = [str(c) for c in nb201.all_cells()]  # a fixed order, so a seed draws the same cells


def all_strings() -> List[str]:
    """Every cell string of the NAS-Bench-201 space, in a fixed order (a seed draws the same cells)."""
    return _ALL_STRINGS


@functools.lru_cache(maxsize=4096)
def _cell_of(text: str) -> nb201.CellStructure:
    return nb201.cell_of_text(text)


def mutate_cell(cell: nb201.CellStructure, rng: random.Random) -> Tuple[nb201.CellStructure, dict]:
    edge = rng.randrange(len(nb201.EDGES))
    old = cell.ops[edge]
    op = rng.choice([o for o in nb201.OPS if o != old])
    ops = list(cell.ops)
    ops[edge] = op
    new = nb201.CellStructure(tuple(ops))
    node, source = nb201.EDGES[edge]
    return new, {"operator": "nb201-edge", "edge": f"{source}->{node}", "from": old, "to": op, "cell": str(new)}


SPACES: Dict[str, Space] = {s.name: s for s in (LanguageSpace(), NB201Space())}


def get_space(name: str) -> Space:
    try:
        return SPACES[name]
    except KeyError:
        raise ConfigError(f"unknown search space {name!r}; choose one of: {', '.join(SPACES)}") from None
