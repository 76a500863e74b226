"""Architectures: the blocks of an architecture file, picked by role and verified for a skeleton.

An architecture file holds NADER's three blocks: the base block `X`, the stem `X_stem` and
the downsample block `X_downsample` (or a DARTS cell pair, `X` and the reduction cell
`X_downsample`, plus `X_stem`). A file may hold the base block alone: the skeleton's standard
stem and downsample block (`standard_blocks.py`) fill in, and a note says so. The skeletons
themselves are `skeletons.py`.

Each block is verified in the square domain, where verdicts hold for every square input.
A network asks for each block at the resolution of its stage (`Architecture.report_at`):
the square verdict serves where it holds at that size; otherwise the block is verified at
the concrete resolution, so a block that runs at the sizes the network feeds it builds, and
one that does not is reported with the stage's sizes.

A verdict already reached may be handed in (`verified`): the Modifier verifies the LLM's base block
alone, then the architecture it makes with the parent's stem and downsample block, and the loop
trains that `Architecture`, so the LLM's block is verified once on its way to a trial.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from nader.compiler.errors import BuildError
from nader.compiler.passes.contract import ANY, SQUARE, fixed
from nader.compiler.passes.cost import block_cost
from nader.compiler.passes.verify import BlockReport, verify_block, verify_stem
from nader.compiler.skeletons import Skeleton, skeleton_info
from nader.compiler.standard_blocks import STANDARD_BLOCKS
from nader.dsl.diagnostics import Diagnostic
from nader.dsl.ir import Block, Program, Role
from nader.dsl.parser import parse


@dataclass
class Architecture:
    """The three blocks of an architecture file, verified in the square domain."""

    path: str
    base: Block
    stem: Block
    downsample: Block
    reports: dict[str, BlockReport]  # "base", "stem", "downsample": square-domain verdicts
    stem_stride: int
    cells: bool
    warnings: list[Diagnostic] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # standard blocks used, blocks verified per stage
    skeleton: Optional[str] = None  # the skeleton's name, which the verdicts are for
    _costs: dict = field(default_factory=dict, repr=False)
    _at: dict = field(default_factory=dict, repr=False)  # (part, resolution) -> BlockReport
    _any_size: Optional[bool] = field(default=None, repr=False)

    def block(self, part: str) -> Block:
        return {"base": self.base, "stem": self.stem, "downsample": self.downsample}[part]

    def report_at(self, part: str, size: Optional[int] = None) -> BlockReport:
        """The verdict that holds for `part` at input resolution `size` (None: the square verdict).

        The square verdict serves where it holds at `size` (its conditions on H met); otherwise
        the block is verified at `size` x `size`. Raises BuildError where it fails there.
        """
        square = self.reports[part]
        if size is None or (square.ok and _holds_at(square, size)):
            return square
        report = self._at.get((part, size))
        if report is None:
            report = self._at[(part, size)] = verify_block(self.block(part), role=square.role, file=square.file,
                                                           stem_stride=self.stem_stride, domain=fixed(size))
        if not report.ok:
            raise BuildError(_failure(part, report), [d for d in report.diagnostics if d.is_error])
        if not square.ok:
            note = (f"the {part} block `{square.block.name}` does not verify for every square size "
                    f"({_first_error(square)}); it is verified at the resolutions this network feeds it")
            if note not in self.notes:
                self.notes.append(note)
        return report

    def cost(self, part: str, convention: str = "torch", size: Optional[int] = None):
        report = self.report_at(part, size)
        key = (part, convention, report.domain)
        if key not in self._costs:
            self._costs[key] = block_cost(self.block(part), report.shapes, convention)
        return self._costs[key]

    def runs_at_any_size(self) -> bool:
        """Whether every block verifies in the `any` domain: one network then runs at every H and W."""
        if self._any_size is None:
            self._any_size = all(
                verify_block(self.block(part), role=report.role, stem_stride=self.stem_stride, domain=ANY).ok
                for part, report in self.reports.items())
        return self._any_size


def _holds_at(report: BlockReport, size: int) -> bool:
    """Whether the conditions of a square verdict on the resolution alone hold at H = W = size."""
    sizes = {"H": size, "W": size}
    return all(c.holds(sizes) for c in report.shapes.constraints if c.size.free_symbols() <= {"H", "W"})


def _first_error(report: BlockReport) -> str:
    errors = [d for d in report.diagnostics if d.is_error]
    return f"{errors[0].code.code} {errors[0].message}" if errors else "it has no valid shapes"


def _failure(part: str, report: BlockReport) -> str:
    errors = [d for d in report.diagnostics if d.is_error]
    detail = _describe(errors[0], report.file) if errors else "it has no valid shapes"
    more = f" (and {len(errors) - 1} more; run `nadc verify {report.file}`)" if len(errors) > 1 else ""
    where = f" at {report.domain}" if report.domain.size is not None else ""
    return f"the {part} block `{report.block.name}` does not verify{where}: {detail}{more}"


def load_architecture(arch_text: str, skeleton: Union[str, Skeleton] = "nb201", *, stem_stride: Optional[int] = None,
                      path: str = "<string>", verified: Sequence[BlockReport] = ()) -> Architecture:
    """Parse and verify an architecture for `skeleton`; raises BuildError with a readable reason.

    With `stem_stride=None` the stem's stride is the skeleton's default when the stem verifies
    with it, else the first of 1, 2, 4, 8, 16, 32 it verifies with (NADER's CIFAR-style
    ImageNet skeletons use stride-1 stems; see docs/networks.md).
    """
    skel = skeleton if isinstance(skeleton, Skeleton) else skeleton_info(skeleton)
    if not isinstance(arch_text, str):
        raise BuildError(f"the architecture must be text, not {type(arch_text).__name__}")
    parsed = parse(arch_text, path)
    return architecture_from_program(parsed.program, parsed.diagnostics, skel, stem_stride=stem_stride,
                                     verified=verified)


def architecture_from_program(program: Program, diagnostics: Sequence[Diagnostic], skeleton: Union[str, Skeleton], *,
                              stem_stride: Optional[int] = None, verified: Sequence[BlockReport] = ()) -> Architecture:
    """The architecture of a parsed file. Errors of the file and of the blocks' structure raise
    BuildError here; shape errors at the square sizes wait for `report_at` (the network's sizes).

    `verified`: square-domain verdicts already reached (`check_base_block`'s); one serves for the
    base or downsample block it was reached on (`_reused`), which is then not verified again."""
    skel = skeleton if isinstance(skeleton, Skeleton) else skeleton_info(skeleton)
    by_block: dict[Optional[str], list[Diagnostic]] = {}
    for d in diagnostics:
        by_block.setdefault(d.block, []).append(d)
    file_errors = [d for d in by_block.get(None, []) if d.is_error]
    if file_errors:
        raise BuildError(_describe(file_errors[0], program.path), file_errors)
    blocks = list(program.blocks)
    if not blocks:
        raise BuildError(f"{program.path}: the file holds no block")
    base, stem, down = _pick_blocks(blocks, skel, program.path)
    notes = []
    files = {"base": program.path, "stem": program.path, "downsample": program.path}
    standard = STANDARD_BLOCKS[skel.name]
    if stem is None:
        files["stem"] = f"<standard {skel.name} stem>"
        stem = standard["stem"].block(base.name, files["stem"])
        notes.append(f"`{base.name}` has no stem block: using the {skel.name} skeleton's standard stem, "
                     f"{standard['stem'].summary}")
    if down is None:
        files["downsample"] = f"<standard {skel.name} {'reduction cell' if skel.cells else 'downsample block'}>"
        down = standard["downsample"].block(base.name, files["downsample"])
        what = "reduction cell" if skel.cells else "downsample block"
        notes.append(f"`{base.name}` has no {what}: using the {skel.name} skeleton's standard one, "
                     f"{standard['downsample'].summary}")
    reports = {}
    for part, block, role in (("base", base, Role.CELL if skel.cells else Role.BASE),
                              ("downsample", down, Role.REDUCTION_CELL if skel.cells else Role.DOWNSAMPLE)):
        front_end = tuple(by_block.get(block.name, ())) if files[part] == program.path else ()
        reports[part] = (_reused(verified, block, role, files[part], front_end)
                         or verify_block(block, role=role, file=files[part], front_end=front_end))
    front_end = tuple(by_block.get(stem.name, ())) if files["stem"] == program.path else ()
    stem_report, stride = _verify_stem(stem, files["stem"], front_end, skel, stem_stride)
    reports["stem"] = stem_report
    for part in ("stem", "base", "downsample"):
        report = reports[part]
        if report.shapes is None:
            # Front-end and structure errors (no shapes were inferred) hold at every size; shape
            # errors may not (see report_at).
            raise BuildError(_failure(part, report), [d for d in report.diagnostics if d.is_error])
    warnings = [d for r in reports.values() for d in r.diagnostics if not d.is_error]
    return Architecture(program.path, base, stem, down, reports, stride, skel.cells, warnings, notes, skel.name)


def _reused(verified: Sequence[BlockReport], block: Block, role: Role, file: str,
            front_end: tuple) -> Optional[BlockReport]:
    """A verdict of `verified` that serves for `block` as `verify_block` would give it: reached in the
    square domain and in `role` on an equal block (IR equality ignores where the lines are, so the
    formatted copy of a verified block is equal to it), and clean: a diagnostic points at the lines
    of the text it was found in, so a verdict with warnings is reached again on this text. It takes
    `block`, `file` and this file's own front-end diagnostics of the block."""
    if any(d.is_error for d in front_end):
        return None
    for report in verified:
        if (report.ok and not report.diagnostics and report.role is role and report.domain == SQUARE
                and report.block == block):
            return dataclasses.replace(report, file=file, block=block, diagnostics=list(front_end))
    return None


def _describe(d: Diagnostic, path: str) -> str:
    return f"{d.file or path}:{d.span.line}:{d.span.col}: {d.code.code} {d.message}"


def _pick_blocks(blocks: list[Block], skel: Skeleton, path: str) -> tuple[Block, Optional[Block], Optional[Block]]:
    """The base, stem and downsample blocks (None where the file has none: the skeleton's standard one)."""
    roles = {b.name: b.inferred_role() for b in blocks}
    has_cells = any(r in (Role.CELL, Role.REDUCTION_CELL) for r in roles.values())
    if skel.cells and not has_cells:
        raise BuildError(f"{path}: the `darts` skeleton needs two-input cells (`input1`/`input2`); "
                         f"this file holds single-input blocks: use --network nb201 or imagenet")
    if not skel.cells and has_cells:
        raise BuildError(f"{path}: the file holds two-input cells (`input1`/`input2`); use the `darts` skeleton")
    base_role, down_role = (Role.CELL, Role.REDUCTION_CELL) if skel.cells else (Role.BASE, Role.DOWNSAMPLE)
    found = {part: [b for b in blocks if roles[b.name] is role]
             for part, role in (("base", base_role), ("stem", Role.STEM), ("downsample", down_role))}
    if not found["base"]:
        what = "base block `X`" if not skel.cells else "cell `X` (inputs input1, input2)"
        names = ", ".join(f"`{b.name}` ({roles[b.name]})" for b in blocks)
        raise BuildError(f"{path}: no {what} among the blocks {names}")
    if len(found["base"]) > 1:
        # Prefer the base block whose name the stem or downsample block extends (X, X_stem, X_downsample).
        others = [b.name for b in found["stem"] + found["downsample"]]
        named = [b for b in found["base"] if any(o.startswith(b.name + "_") for o in others)]
        if len(named) != 1:
            raise BuildError(f"{path}: several base blocks ({', '.join(b.name for b in found['base'])}); "
                             f"keep one, or name the stem and downsample blocks after it (X_stem, X_downsample)")
        found["base"] = named
    base = found["base"][0]
    picked: list[Optional[Block]] = []
    for part in ("stem", "downsample"):
        candidates = found[part]
        if len(candidates) > 1:
            named = [b for b in candidates if b.name.startswith(base.name + "_")]
            if len(named) != 1:
                raise BuildError(f"{path}: several {part} blocks ({', '.join(b.name for b in candidates)}); keep one")
            candidates = named
        picked.append(candidates[0] if candidates else None)
    return base, picked[0], picked[1]


def _verify_stem(stem: Block, path: str, front_end: tuple, skel: Skeleton,
                 stem_stride: Optional[int]) -> tuple[BlockReport, int]:
    if stem_stride is not None:
        if stem_stride < 1:
            raise BuildError(f"stem_stride must be a positive integer, not {stem_stride}")
        return verify_block(stem, role=Role.STEM, stem_stride=stem_stride, file=path, front_end=front_end), stem_stride
    report = verify_stem(stem, preferred=skel.stem_stride, file=path, front_end=front_end)
    return report, report.stem_stride


__all__ = ["Architecture", "architecture_from_program", "load_architecture"]
