"""The Modifier: rewrites a base block to follow a plan, with the compiler's feedback.

One conversation per modification (prompt `modifier_implement.v1`):

1. The LLM gets the language reference (generated from the op registry), the parent's base
   block, the plan and at most five lessons from the Reflector, and answers with a block.
2. The reply is extracted (`nader.dsl.extract`) and verified as a base block. On failure the
   compiler's diagnostics go back (`modifier_repair.v1`: each error with its line quoted, code,
   message and fix hint) for up to `rounds` repairs (default 3): the immediate-feedback loop.
   A block identical to the parent (canonical hash) is sent back the same way.
3. The new base block is assembled with the parent's stem and downsample blocks. When that
   network does not build, the LLM writes stem and downsample blocks that fit it
   (`modifier_interface.v1`), with the same feedback loop. Our verifier fixes a base block's
   interface at (B,C,H,W) -> (B,C,H,W), so this step is rare; fitting widths to the budget is
   the analytic fit's job (the search loop's checks), never another LLM call.

The result says whether the first reply verified, how many rounds it took, and the tokens.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional

from nader.dsl.extract import extract_blocks
from nader.dsl.format import format_block
from nader.dsl.ir import Role

from .prompts import render

DEFAULT_ROUNDS = 3
IMPLEMENT = "modifier_implement.v1"
REPAIR = "modifier_repair.v1"
INTERFACE = "modifier_interface.v1"
MAX_FEEDBACK_ERRORS = 8


@dataclass
class Check:
    """A reply judged by the compiler."""

    ok: bool
    text: Optional[str] = None  # the block(s) as extracted, when any
    feedback: str = ""  # what goes back to the LLM when not ok
    codes: List[str] = field(default_factory=list)


@dataclass
class Attempt:
    reply: str
    check: Check
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Modification:
    """What the Modifier made of a plan."""

    ok: bool
    base_text: Optional[str] = None  # the new base block
    arch_text: Optional[str] = None  # base, stem and downsample blocks (None for a bare block)
    attempts: List[Attempt] = field(default_factory=list)
    interface_attempts: List[Attempt] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def first_ok(self) -> bool:
        return bool(self.attempts) and self.attempts[0].check.ok

    @property
    def rounds(self) -> int:
        return len(self.attempts) + len(self.interface_attempts)

    @property
    def tokens(self) -> tuple[int, int]:
        every = self.attempts + self.interface_attempts
        return sum(a.prompt_tokens for a in every), sum(a.completion_tokens for a in every)

    @property
    def repaired_from(self) -> Optional[Attempt]:
        """The first failing attempt when a later one succeeded (a repair)."""
        if self.ok and self.attempts and not self.attempts[0].check.ok:
            return self.attempts[0]
        return None


# ---------------------------------------------------------------------- compiler feedback
def _quote(lines: list[str], line: int) -> str:
    return f" `{lines[line - 1].strip()}`" if 1 <= line <= len(lines) else ""


def render_feedback(diagnostics, text: str) -> str:
    """The compiler's concise diagnostics for an LLM: line, the line quoted, code, message, help."""
    lines = text.splitlines()
    errors = [d for d in diagnostics if d.is_error]
    out = []
    for d in errors[:MAX_FEEDBACK_ERRORS]:
        where = f"line {d.span.line}{_quote(lines, d.span.line)}" if d.span.line else "the block"
        out.append(f"- {where}: error[{d.code.code}] {d.message}")
        if d.help:
            out.append(f"  help: {d.help}")
    if len(errors) > len(out):
        out.append(f"- and {len(errors) - MAX_FEEDBACK_ERRORS} more errors")
    return "\n".join(out)


def check_base_block(reply: str, parent_hash: Optional[str] = None) -> Check:
    """Extract the base block from a reply and verify it as a base block.

    The reply's first block with a base role is taken (a stem or downsample block the LLM added
    is ignored); diagnostics quote the lines of the extracted text.
    """
    from nader.compiler.passes.canonical import canonical_hash
    from nader.compiler.passes.verify import verify_block
    from nader.dsl.parser import parse

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
    return Check(True, format_block(block))


def check_architecture(text: str, skeleton: str, dataset: str = "cifar10") -> Check:
    """Whether a whole architecture (base, stem, downsample) builds for the skeleton: every block
    verifies at the resolutions the dataset's network feeds it (the search checks its own dataset's)."""
    from nader.compiler.network import (BuildError, dataset_info, load_architecture, network_model, resolve_depths,
                                        skeleton_info)

    try:
        arch = load_architecture(text, skeleton)
        skel, data = skeleton_info(skeleton), dataset_info(dataset)
        network_model(arch, skel, resolve_depths(skel, None), data.input_size, data.num_classes)
    except BuildError as exc:
        diagnostics = getattr(exc, "diagnostics", None) or []
        feedback = render_feedback(diagnostics, text) if diagnostics else f"- {exc}"
        return Check(False, text, f"{exc}\n{feedback}" if diagnostics else feedback,
                     sorted({d.code.code for d in diagnostics}) or ["build"])
    return Check(True, text)


# ---------------------------------------------------------------------- the agent
class Modifier:
    """Writes blocks with an LLM client (`chat_sync`), checked by the compiler."""

    def __init__(self, client, *, rounds: int = DEFAULT_ROUNDS, skeleton: str = "nb201", dataset: str = "cifar10"):
        if rounds < 1:
            raise ValueError("the Modifier needs at least one round")
        self.client = client
        self.rounds = rounds
        self.skeleton = skeleton
        self.dataset = dataset  # the architecture check verifies at this dataset's stage sizes

    @staticmethod
    def language_reference() -> str:
        from nader.dsl.ops import reference_text

        return reference_text()

    def _converse(self, messages: list[dict], check: Callable[[str], Check], *, prompt: str,
                  arch_id: Optional[str], attempts: List[Attempt]) -> Optional[Check]:
        """Ask, check, and send the diagnostics back until a reply passes or the rounds run out."""
        for round_ in range(1, self.rounds + 1):
            reply = self.client.chat_sync(messages, role="modifier", arch_id=arch_id,
                                          prompt=prompt if round_ == 1 else REPAIR)
            result = check(reply.text)
            attempts.append(Attempt(reply.text, result, reply.prompt_tokens or 0, reply.completion_tokens or 0))
            if result.ok:
                return result
            if round_ < self.rounds:
                messages = [*messages, {"role": "assistant", "content": reply.text},
                            *render(REPAIR, feedback=result.feedback, round=round_, rounds=self.rounds - 1)[-1:]]
        return None

    def write_block(self, block_text: str, plan: str, experiences: List[str] = (), *,
                    arch_id: Optional[str] = None, reject_unchanged: bool = True) -> Modification:
        """The parent's base block rewritten to follow the plan (verified as a base block)."""
        from nader.compiler.passes.canonical import canonical_hash
        from nader.dsl.parser import parse

        parent = parse(block_text).program.blocks[0]
        parent_hash = canonical_hash(parent) if reject_unchanged else None
        messages = render(IMPLEMENT, reference=self.language_reference(), block=block_text.strip(), plan=plan,
                          experiences=list(experiences)[:5], block_name=parent.name)
        out = Modification(False)
        result = self._converse(messages, lambda text: check_base_block(text, parent_hash), prompt=IMPLEMENT,
                                arch_id=arch_id, attempts=out.attempts)
        if result is None:
            last = out.attempts[-1].check if out.attempts else None
            out.error = "the block did not verify after {} round{}: {}".format(
                len(out.attempts), "s" if len(out.attempts) != 1 else "", ", ".join(last.codes) if last else "")
            return out
        out.ok, out.base_text = True, result.text
        return out

    def modify(self, arch_text: str, plan: str, experiences: List[str] = (), *,
               arch_id: Optional[str] = None, reject_unchanged: bool = True) -> Modification:
        """The parent architecture with its base block rewritten to follow the plan, and stem and
        downsample blocks that build with it."""
        base, stem, down = split_architecture(arch_text)
        out = self.write_block(base, plan, experiences, arch_id=arch_id, reject_unchanged=reject_unchanged)
        if not out.ok:
            return out
        name = _block_name(out.base_text)
        stem = _renamed(stem, f"{name}_stem")
        down = _renamed(down, f"{name}_downsample")
        candidate = out.base_text + stem + down
        built = check_architecture(candidate, self.skeleton, self.dataset)
        if built.ok:
            out.arch_text = candidate
            return out
        messages = render(INTERFACE, reference=self.language_reference(), block=out.base_text.strip(), block_name=name,
                          stem=stem.strip(), downsample=down.strip(), error=built.feedback)
        fitted = self._converse(messages, lambda text: check_architecture(out.base_text + _extracted(text),
                                                                           self.skeleton, self.dataset),
                                prompt=INTERFACE, arch_id=arch_id, attempts=out.interface_attempts)
        if fitted is None:
            out.ok = False
            out.error = "no stem and downsample blocks built a network with the new base block"
            return out
        out.arch_text = fitted.text
        return out


def split_architecture(arch_text: str) -> tuple[str, str, str]:
    """The base, stem and downsample blocks of an architecture's text (by their roles)."""
    from nader.dsl.parser import parse

    blocks = parse(arch_text).program.blocks
    by_role = {}
    for block in blocks:
        by_role.setdefault(block.inferred_role(), format_block(block))
    missing = [r.value for r in (Role.BASE, Role.STEM, Role.DOWNSAMPLE) if r not in by_role]
    if missing:
        raise ValueError(f"the parent architecture has no {', '.join(missing)} block")
    return by_role[Role.BASE], by_role[Role.STEM], by_role[Role.DOWNSAMPLE]


def _extracted(reply: str) -> str:
    return extract_blocks(reply).text


def _block_name(text: str) -> str:
    first = text.splitlines()[0].strip()
    return first.strip("#") if first.startswith("##") else "Block"


def _renamed(block_text: str, name: str) -> str:
    lines = block_text.strip().splitlines()
    if lines and lines[0].startswith("##"):
        lines[0] = f"##{name}##"
    else:
        lines.insert(0, f"##{name}##")
    return "\n".join(lines) + "\n"
