"""Everything a proposed architecture goes through before it may train.

1. **verify**: parse and verify the whole architecture for the skeleton (base, stem and
   downsample blocks, or cells), as `build_network` would; failure: ``invalid`` with the
   compiler's diagnostics. A candidate whose strategy checked it already for this skeleton (the
   Modifier's `Architecture`, `Candidate.arch`) is taken as it is, not verified again.
2. **deduplicate**: the architecture's canonical hash (its three blocks' canonical hashes, in
   role order) against every valid architecture of the run, confirmed by an exact isomorphism
   check of each block; a match: ``duplicate`` of the earlier one. Dead nodes (NAD206) are left
   out: compiling drops them, so a block and the same block with a dead node train the same
   network.
   In a cell space (``--space nb201``) an architecture outside the space is ``invalid`` too,
   with the reason (code ``not-in-space``).
3. **fit**: the analytic width fit (`nader.compiler.fit`) to the run's budget, on the same
   network model `build_network` fits with, so the widths, parameters and FLOPs recorded are the
   ones training builds; no width fits: ``over-budget``. A cell space with fixed widths
   (NAS-Bench-201's 16, 32, 64) skips the fit and records the figures at those widths.

The outcome carries what the tree records: status, hash, diagnostics, widths, params, FLOPs and
the budget that binds.

No single reply may stall a search: the checks of one architecture run under a wall-time guard
(`CHECK_TIME_LIMIT`), and one that takes longer is ``invalid`` (code ``checks-timeout``). The
checks are pure-Python CPU work that a thread timer cannot interrupt, so the guard is a SIGALRM
interval timer; where there is none (not the main thread, no `setitimer`) the checks run unguarded.
"""
from __future__ import annotations

import dataclasses
import hashlib
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, List, Optional

from nader.compiler.architecture import Architecture, load_architecture
from nader.compiler.datasets import dataset_info
from nader.compiler.errors import BuildError
from nader.compiler.fit import fit, over_memory
from nader.compiler.network_cost import network_model
from nader.compiler.passes.canonical import canonical_hash, equivalent
from nader.compiler.passes.cost import CostError
from nader.compiler.passes.structure import dead_nodes
from nader.compiler.skeletons import skeleton_info
from nader.dsl.ir import Block

from .tree import Tree

ARCH_HASH_VERSION = "nader-search-arch-2"  # 2: blocks' hashes are canonical forms (nadc-canonical-2)
PARTS = ("base", "stem", "downsample")
CHECK_TIME_LIMIT = 10.0  # seconds the checks of one architecture may take


class ChecksTimedOut(Exception):
    """Raised inside the checks when the wall-time guard fires."""


@contextmanager
def wall_time_guard(seconds: Optional[float]) -> Iterator[None]:
    """Raise `ChecksTimedOut` in the guarded code after `seconds` of wall time (main thread only)."""
    if not seconds or seconds <= 0 or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum, frame):
        raise ChecksTimedOut()

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # an alarm landing between the two must not leave our handler installed
            signal.signal(signal.SIGALRM, previous)


@dataclass
class Checked:
    status: str  # "proposed" (passed every check) | "invalid" | "duplicate" | "over-budget"
    hash: Optional[str] = None
    duplicate_of: Optional[int] = None
    diagnostics: Optional[dict] = None
    widths: Optional[List[int]] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    binding: Optional[str] = None
    arch: Any = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "proposed"

    def columns(self) -> dict:
        return {"status": self.status, "hash": self.hash, "duplicate_of": self.duplicate_of,
                "diagnostics": self.diagnostics, "widths": self.widths, "params": self.params, "flops": self.flops,
                "binding": self.binding}


def live_block(block: Block) -> Block:
    """The block without its dead nodes and the edges into them: what compiling builds."""
    dead = set(dead_nodes(block))
    if not dead:
        return block
    return dataclasses.replace(block, nodes=tuple(n for n in block.nodes if n.id not in dead),
                               edges=tuple(e for e in block.edges if e.target not in dead))


def arch_hash(arch: Architecture) -> str:
    parts = "\n".join(f"{p}:{canonical_hash(live_block(arch.block(p)))}" for p in PARTS)
    return hashlib.sha256(f"{ARCH_HASH_VERSION}\n{parts}".encode()).hexdigest()


def arch_hash_of_text(text: str, skeleton: str) -> Optional[str]:
    try:
        return arch_hash(load_architecture(text, skeleton))
    except BuildError:
        return None


def _diagnostics(error: BuildError) -> dict:
    return {"message": str(error),
            "diagnostics": [{"code": d.code.code, "block": d.block, "line": d.span.line, "col": d.span.col,
                             "message": d.message} for d in getattr(error, "diagnostics", [])[:10]]}


def same_architecture(a: Architecture, b: Architecture) -> bool:
    return all(equivalent(live_block(a.block(p)), live_block(b.block(p))) for p in PARTS)


class Checker:
    """Runs the checks for one search (skeleton, dataset, depths and budget fixed)."""

    def __init__(self, skeleton: str, dataset: str, depths, budget, space=None,
                 time_limit: Optional[float] = CHECK_TIME_LIMIT):
        self.skeleton, self.dataset, self.depths, self.budget = skeleton, dataset, list(depths), budget
        self.space = space  # a cell space refuses what is outside it and fixes the widths
        self.time_limit = time_limit  # None: no guard
        self._skeleton, self._data = skeleton_info(skeleton), dataset_info(dataset)
        self._archs: dict = {}  # arch_id -> Architecture, for exact duplicate checks

    def load(self, text: str):
        return load_architecture(text, self.skeleton)

    def check(self, text: Optional[str], tree: Tree, error: Optional[str] = None,
              arch: Optional[Architecture] = None) -> Checked:
        """The checks' outcome; ``invalid`` (code ``checks-timeout``) when they outrun `time_limit`.
        `arch`: the text's Architecture where the proposer checked it already (for another skeleton,
        it is loaded again)."""
        try:
            with wall_time_guard(self.time_limit):
                return self._check(text, tree, error, arch)
        except ChecksTimedOut:
            message = f"checks took longer than {self.time_limit:g} s"
            return Checked("invalid", diagnostics={"message": message, "diagnostics": [
                {"code": "checks-timeout", "block": None, "line": None, "col": None, "message": message}]})

    def _check(self, text: Optional[str], tree: Tree, error: Optional[str] = None,
               arch: Optional[Architecture] = None) -> Checked:
        if text is None:
            return Checked("invalid", diagnostics={"message": error or "nothing was proposed", "diagnostics": []})
        if arch is None or arch.skeleton != self._skeleton.name:
            try:
                arch = self.load(text)
            except BuildError as exc:
                return Checked("invalid", diagnostics=_diagnostics(exc))
        refusal = self.space.refuse(text, arch) if self.space is not None else None
        if refusal is not None:
            return Checked("invalid", diagnostics={"message": refusal, "diagnostics": [
                {"code": "not-in-space", "block": None, "line": None, "col": None, "message": refusal}]})
        h = arch_hash(arch)
        for other in tree.by_hash.get(h, ()):
            if same_architecture(arch, self._arch(tree, other)):
                return Checked("duplicate", hash=h, duplicate_of=other)
        try:
            # The blocks verify at the network's concrete stage sizes here (square-domain shape
            # errors that only some sizes have surface now): such an architecture is invalid.
            model = network_model(arch, self._skeleton, self.depths, self._data.input_size, self._data.num_classes)
        except BuildError as exc:
            return Checked("invalid", hash=h, diagnostics=_diagnostics(exc))
        x = self.space.base_width if self.space is not None else None
        if x is not None:  # the space fixes the widths: no fit; only the memory a trial needs is checked
            figures = model.figures(x)
            if self.budget is not None and self.budget.memory is not None:
                memory = model.training_memory(x, self.budget.batch_size).total
                if memory > self.budget.memory:
                    return Checked("over-budget", hash=h, diagnostics={
                        "message": over_memory(memory, self.budget), "diagnostics": []})
            return Checked("proposed", hash=h, widths=list(model.widths(x)), params=int(figures.params),
                           flops=int(figures.flops), binding="fixed", arch=arch)
        try:
            fitted = fit(model, self.budget)
        except (BuildError, CostError) as exc:
            return Checked("over-budget", hash=h, diagnostics={"message": str(exc), "diagnostics": []})
        return Checked("proposed", hash=h, widths=list(fitted.widths), params=int(fitted.params),
                       flops=int(fitted.flops), binding=fitted.binding_text, arch=arch)

    def remember(self, arch_id: int, arch) -> None:
        if arch is not None:
            self._archs[arch_id] = arch

    def _arch(self, tree: Tree, arch_id: int):
        if arch_id not in self._archs:
            self._archs[arch_id] = self.load(tree[arch_id].text)
        return self._archs[arch_id]
