"""The compiler's verdict on an LLM's reply: a base block (`check_base_block`) or a whole
architecture (`check_architecture`), with the feedback that goes back to the LLM when it fails.

This sits above the architecture, its datasets, plan and network model (it builds on all of them),
so none of them has to reach up for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from nader.compiler.architecture import Architecture, load_architecture
from nader.compiler.datasets import dataset_info
from nader.compiler.errors import BuildError
from nader.compiler.network_cost import network_model
from nader.compiler.passes.canonical import canonical_hash
from nader.compiler.passes.verify import BlockReport, verify_block
from nader.compiler.plan import resolve_depths
from nader.compiler.skeletons import skeleton_info
from nader.dsl.extract import extract_blocks
from nader.dsl.format import format_block
from nader.dsl.ir import Role
from nader.dsl.parser import parse

MAX_FEEDBACK_ERRORS = 8  # diagnostics quoted back to an LLM per reply


@dataclass
class Check:
    """A text judged by the compiler: `feedback` is what goes back to an LLM when not ok.

    A passing check keeps the verdict it reached, for the next check to build on rather than verify
    again: a base block's `report`, an architecture's `arch` (what the search loop trains)."""

    ok: bool
    text: Optional[str] = None  # the block(s) as extracted, when any
    feedback: str = ""
    codes: list[str] = field(default_factory=list)
    report: Optional[BlockReport] = field(default=None, repr=False)  # check_base_block's, when ok
    arch: Optional[Architecture] = field(default=None, repr=False)  # check_architecture's, when ok


def render_feedback(diagnostics, text: str) -> str:
    """The compiler's concise diagnostics for an LLM: line, the line quoted, code, message, help."""
    lines = text.splitlines()
    errors = [d for d in diagnostics if d.is_error]
    out = []
    for d in errors[:MAX_FEEDBACK_ERRORS]:
        quoted = f" `{lines[d.span.line - 1].strip()}`" if 1 <= d.span.line <= len(lines) else ""
        where = f"line {d.span.line}{quoted}" if d.span.line else "the block"
        out.append(f"- {where}: error[{d.code.code}] {d.message}")
        if d.help:
            out.append(f"  help: {d.help}")
    if len(errors) > len(out):
        out.append(f"- and {len(errors) - MAX_FEEDBACK_ERRORS} more errors")
    return "\n".join(out)


def check_base_block(reply: str, parent_hash: Optional[str] = None) -> Check:
    """Extract the base block from a reply and verify it as a base block.

    The reply's first block with a base role is taken (a stem or downsample block the LLM added
    is ignored); diagnostics quote the lines of the extracted text. With `parent_hash`, a block
    whose canonical hash is the parent's is refused (`unchanged`).
    """
    extraction = extract_blocks(reply)
    if extraction.problems:  # past an input limit (NAD118-NAD122): nothing of the reply was read
        return Check(False, None, render_feedback(extraction.problems, ""),
                     sorted({d.code.code for d in extraction.problems}))
    if not extraction:
        return Check(False, None, "- no block found in the reply: write the block (header `##Name##`, nodes, "
                                  "edges) in one fenced code block", ["no-block"])
    parsed = parse(extraction.text)
    blocks = parsed.program.blocks
    file_errors = [d for d in parsed.diagnostics if d.is_error and d.block is None]
    if not blocks or file_errors:
        errors = file_errors or [d for d in parsed.diagnostics if d.is_error]
        return Check(False, extraction.text, render_feedback(errors, extraction.text) or "- no block could be read",
                     sorted({d.code.code for d in errors}) or ["no-block"])
    block = next((b for b in blocks if b.inferred_role() is Role.BASE), blocks[0])
    front_end = tuple(d for d in parsed.diagnostics if d.block == block.name)
    report = verify_block(block, role=Role.BASE, front_end=front_end)
    if not report.ok:
        errors = [d for d in report.diagnostics if d.is_error]
        return Check(False, extraction.text, render_feedback(errors, extraction.text)
                     or "- the block has no valid shapes", sorted({d.code.code for d in errors}))
    if parent_hash is not None and canonical_hash(block) == parent_hash:
        return Check(False, extraction.text, "- the block is the same graph as the current block: apply the plan",
                     ["unchanged"])
    return Check(True, format_block(block), report=report)


def check_architecture(text: str, skeleton: str, dataset: str = "cifar10", *, base: Optional[Check] = None) -> Check:
    """Whether a whole architecture (base, stem, downsample) builds for the skeleton: every block
    verifies at the resolutions the dataset's network feeds it (the search checks its own dataset's).

    `base`: the passing `check_base_block` of the base block `text` holds (formatted, as the check
    gives it), whose verdict then serves (`load_architecture`'s `verified`). A passing check holds
    the `Architecture`, ready for the search loop's checks."""
    try:
        arch = load_architecture(text, skeleton, verified=(base.report,) if base is not None and base.report else ())
        skel, data = skeleton_info(skeleton), dataset_info(dataset)
        network_model(arch, skel, resolve_depths(skel, None), data.input_size, data.num_classes)
    except BuildError as exc:
        diagnostics = getattr(exc, "diagnostics", None) or []
        feedback = render_feedback(diagnostics, text) if diagnostics else f"- {exc}"
        return Check(False, text, f"{exc}\n{feedback}" if diagnostics else feedback,
                     sorted({d.code.code for d in diagnostics}) or ["build"])
    return Check(True, text, arch=arch)
