"""The verifier: structure checks, then symbolic shape inference in a size domain, per block."""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Optional

from nader.dsl.diagnostics import CountingSink, Diagnostic, DiagnosticSink, Label
from nader.dsl.ir import Block, Program, Role
from nader.dsl.ops import Op
from nader.dsl.parser import ParseResult

from .contract import SQUARE, Domain, contract
from .shape_codes import CONTRACT
from .shape_context import alike
from .shapes import Limits, ShapeResult, infer_shapes
from .structure import DUPLICATE_BLOCK, check_structure


_opdef_of = attrgetter("opdef")

#: The strides a stem may have when none is given: it fixes its own (1 for NAS-Bench-201 and DARTS,
#: 4 for ImageNet-style networks), and can verify with only one of them.
STEM_STRIDES = (1, 2, 4, 8, 16, 32)


@dataclass
class BlockReport:
    """The verdict on one block: its role, domain, diagnostics and, when inferred, its shapes."""

    file: str
    block: Block
    role: Role
    diagnostics: list[Diagnostic] = field(default_factory=list)
    shapes: Optional[ShapeResult] = None
    domain: Domain = SQUARE  # the input sizes the verdict holds for
    stem_stride: Optional[int] = None  # a stem's: the stride the verdict holds for

    @property
    def ok(self) -> bool:
        return self.shapes is not None and not self.shapes.failed and not any(d.is_error for d in self.diagnostics)

    @property
    def constraints(self) -> list[str]:
        """The constraints, with `X % a` dropped where `X % b` (a divides b) is also required."""
        if not self.shapes:
            return []
        cs = self.shapes.constraints
        kept = []
        for c in cs:
            implied = c.modulus and any(o is not c and o.size == c.size and o.modulus % c.modulus == 0
                                        and o.modulus != c.modulus for o in cs)
            if not implied:
                kept.append(str(c))
        return kept

    def to_json(self, shapes: bool = False) -> dict:
        """The report as `nadc verify --format json` prints it; each node's shape only when asked."""
        obj = {
            "file": self.file,
            "block": self.block.name,
            "role": self.role.value,
            "domain": str(self.domain),
            "ok": self.ok,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "constraints": self.constraints,
        }
        if self.stem_stride is not None:
            obj["stem_stride"] = self.stem_stride
        if shapes:
            obj["shapes"] = self.shape_texts()
        return obj

    def shape_texts(self) -> dict[str, list[str]]:
        """Each node's shape as text, by node id (empty when shape inference did not run)."""
        if self.shapes is None:
            return {}
        return {str(i): [str(s) for s in shape] for i, shape in self.shapes.shapes.items()}


def verify_block(block: Block, *, role: Optional[Role] = None, stem_stride: Optional[int] = 1,
                 limits: Limits = Limits(), file: str = "<string>", front_end: tuple[Diagnostic, ...] = (),
                 domain: Domain = SQUARE, counting: bool = False) -> BlockReport:
    """Verify one block for the input sizes of `domain` (square ones by default; `ANY`: every H and W).

    `front_end` carries the parser's diagnostics for this block. A stem is verified at `stem_stride`;
    with None, at the stride it has (`verify_stem`), as networks take it. `counting`: the structure
    checks' diagnostics have their codes only (`CountingSink`), for a repair's candidate.
    """
    role = role or block.inferred_role()
    if stem_stride is None:
        if role is Role.STEM:
            return verify_stem(block, limits=limits, file=file, front_end=front_end, domain=domain, counting=counting)
        stem_stride = 1  # only a stem's contract has one
    sink = CountingSink(file) if counting else DiagnosticSink(file)
    sink.items.extend(front_end)
    check_structure(block, role, sink)
    shapes = None
    # An unknown operation is the parser's error (NAD104), which a second block of the same name does
    # not carry: such a block has no shapes either way.
    if not sink.has_errors and all(map(_opdef_of, block.nodes)):
        shapes = infer_shapes(block, role, sink, stem_stride=stem_stride, limits=limits, domain=domain)
    return BlockReport(file, block, role, sink.items, shapes, domain, stem_stride if role is Role.STEM else None)


def verify_stem(block: Block, *, preferred: int = 1, **options) -> BlockReport:
    """A stem's report at the stride it has: `preferred` when it verifies with it, else the first
    of STEM_STRIDES it verifies with; the report at `preferred` when it verifies with none.
    `options` are verify_block's (limits, file, front_end, domain, counting)."""
    first = verify_block(block, role=Role.STEM, stem_stride=preferred, **options)
    if first.ok or first.shapes is None:  # no stride mends the structure or an unknown operation
        return first
    # Strides differ only in the output the contract wants: every node before `output` has the same shape
    # at each, so an error other than the output's (NAD311) is there at every stride, and a stride whose
    # output the shape fed to `output` is not fails there too.
    if any(d.is_error and d.code is not CONTRACT for d in first.diagnostics):
        return first
    fed = _fed_to_output(first)
    domain = options.get("domain", SQUARE)
    for stride in STEM_STRIDES:
        if stride != preferred and (fed is None or _fits(fed, contract(Role.STEM, stride, domain).output)):
            report = verify_block(block, role=Role.STEM, stem_stride=stride, **options)
            if report.ok:
                return report
    return first


def _fed_to_output(report: BlockReport) -> Optional[tuple]:
    """The shape of what feeds the block's one `output`, where inferred."""
    outputs = [n.id for n in report.block.nodes if n.op is Op.OUTPUT]
    fed = report.block.inputs_of(outputs[0]) if len(outputs) == 1 else []
    return report.shapes.shapes.get(fed[0]) if len(fed) == 1 and report.shapes is not None else None


def _fits(shape: tuple, wanted: tuple) -> bool:
    """Whether `output`'s rule accepts `shape` for a contract that wants `wanted`."""
    return len(shape) == len(wanted) and all(alike(a, b) is not None for a, b in zip(shape, wanted))


def verify_program(parsed: ParseResult, *, role: Optional[Role] = None, stem_stride: Optional[int] = 1,
                   limits: Limits = Limits(), domain: Domain = SQUARE) -> tuple[list[BlockReport], list[Diagnostic]]:
    """Verify every block of a parsed file; returns the reports and file-level diagnostics.

    `stem_stride=None` verifies each stem at the stride it has (`verify_stem`)."""
    program: Program = parsed.program
    by_block: dict[Optional[str], list[Diagnostic]] = {}
    for d in parsed.diagnostics:
        by_block.setdefault(d.block, []).append(d)
    file_level = list(by_block.get(None, []))
    seen: dict[str, Block] = {}
    reports = []
    # A block's lines run from its header to the next block's: by them, not by name, a block defined
    # twice gets the parser's diagnostics of its own lines (found by fuzzing: an unknown symbol in the
    # second block went unreported, then broke shape inference).
    ends = [b.span.line for b in program.blocks[1:]] + [float("inf")]
    for block, end in zip(program.blocks, ends):
        if block.name in seen:
            file_level.append(Diagnostic(DUPLICATE_BLOCK, f"block `{block.name}` is defined twice", block.header_span,
                                         "rename one of them", program.path, block.name,
                                         (Label(seen[block.name].header_span, "first defined here"),)))
        seen.setdefault(block.name, block)
        front_end = tuple(d for d in by_block.get(block.name, ()) if block.span.line <= d.span.line < end)
        reports.append(verify_block(block, role=role, stem_stride=stem_stride, limits=limits, file=program.path,
                                    front_end=front_end, domain=domain))
    return reports, file_level
