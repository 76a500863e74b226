"""The Modifier: rewrites a base block to follow a plan, with the compiler's feedback.

One conversation per modification (prompt `modifier_implement.v1`):

1. The LLM gets the language reference (generated from the op registry), the parent's base
   block, the plan and at most five lessons from the Reflector, and answers with a block.
2. The reply is extracted (`nader.dsl.extract`) and verified as a base block. On failure the
   compiler's diagnostics go back (`modifier_repair.v1`: each error with its line quoted, code,
   message and fix hint) for up to `rounds` repairs (default 3): the immediate-feedback loop.
   A block identical to the parent (canonical hash) is sent back the same way, and so is a
   reply too long to read or one the checks raise on (`too-long`, `check-error`): a reply never
   stops a search, and the same recorded reply fails the same way on resume.
3. The new base block is assembled with the parent's stem and downsample blocks. When that
   network does not build, the LLM writes stem and downsample blocks that fit it
   (`modifier_interface.v1`), with the same feedback loop. Our verifier fixes a base block's
   interface at (B,C,H,W) -> (B,C,H,W), so this step is rare; fitting widths to the budget is
   the analytic fit's job (the search loop's checks), never another LLM call.

Every request for a base block carries the reply grammar (`nadc grammar --format gbnf --reply`:
one block; the rare stem-and-downsample request asks for two and goes without); the client sends
it only where the model's profile names the server's grammar field (`grammar = "llama.cpp" |
"vllm"`), and then the reply is a bare block, which extraction takes as it takes a fenced one.

With the model's context known (the profile's `context`) every request fits it with the reply's
`max_tokens`: the reference and the blocks are sent whole, a long plan or error is cut, lessons
that do not fit are left out, and a repair round that would overflow keeps the first prompt and
the latest reply and feedback only (`context_fit`); each text says what it left out.

Where the model's profile says `reply = "edits"` (small models, which restate a whole block until
`max_tokens`), the Modifier asks for edits of the parent instead (`modifier_edits.v2`, its repair
turn `modifier_edits_repair.v1`, grammar `nadc grammar --reply edits --parent`, which names only
the parent's node ids and gives new nodes the next free ids in order; where the profile also says
`small`, `modifier_edits.v3` and the grammar's `--most 8`, SMALL_EDITS_PER_REPLY, since such a model
writes until the bound): the compiler applies them to the parent
(nader.compiler.edit_reply) and the block they make is verified like any reply; an attempt keeps
the reply as written and, in its check, the block the edits made. Its repair leaves out the edits
that cannot apply and repairs the block the others make (nader.compiler.reply_repair).

With `repair` (the search's `--repair`), a reply whose block fails is given to the compiler's
repair (nader.compiler.reply_repair: safe and unsafe fixes, kept only when the block then verifies
and differs from the parent). `auto`: the repaired block is the result, with no further round, and
`Modification.repair` records the block as written, the diff and the codes fixed. `suggest`: the
repair goes back in the feedback turn as the proposed fix (`modifier_repair.v2`), and the LLM
decides. `off` (the library's default) sends the v1 feedback as before, so recorded runs replay.
The conversation is one loop (`_converse`) whatever the mode; the mode is a `RepairPolicy`
(`repair_policy.py`) it asks what to do with a failing reply.

The result says whether the first reply verified, how many rounds it took, and the tokens, and
holds the checked `Architecture` (`Modification.architecture`), which the search loop's checks
take as it is: the LLM's block is verified once (`check_base_block`), the architecture it makes
once more for its other blocks (`check_architecture`), and nothing again on its way to a trial.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, List, Optional

from nader.compiler import grammar_export
from nader.compiler.architecture import Architecture
from nader.compiler.block_text import block_name, renamed, split_architecture
from nader.compiler.edit_reply import check_edit_reply
from nader.compiler.passes.canonical import canonical_hash
from nader.compiler.reply_checks import Check, check_architecture, check_base_block
from nader.compiler.reply_repair import repair_edit_reply, repair_reply
from nader.dsl.edits import EDITS_PER_REPLY, SMALL_EDITS_PER_REPLY
from nader.dsl.extract import extract_blocks
from nader.dsl.ops import reference_text
from nader.dsl.parser import parse

from .context_fit import NOTE_CHARS, best_that_fit, client_room, cut_text, fit_conversation
from .llm.jsonreply import reply_too_long, with_cut_off
from .llm.profiles import REPLY_MODES, match_profile, profile_for
from .prompts import render
from .repair_policy import EDITS_REPAIR, REPAIR, RepairPolicy, Repairer, repair_policy

DEFAULT_ROUNDS = 3
IMPLEMENT = "modifier_implement.v1"
INTERFACE = "modifier_interface.v1"
EDITS = "modifier_edits.v2"
EDITS_SMALL = "modifier_edits.v3"  # the profile says `small`


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
    reply_form: str = "block"  # block | edits: what the LLM was asked to write
    repair: Optional[dict] = None  # `auto`: the compiler's repair of the last reply (ReplyRepair.record)
    suggested: int = 0  # `suggest`: feedback turns that carried the compiler's proposed fix
    base_check: Optional[Check] = field(default=None, repr=False)  # the passing check of base_text
    architecture: Optional[Architecture] = field(default=None, repr=False)  # arch_text's, checked

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
def checked_reply(check: Callable[[str], Check], text: str) -> Check:
    """`check(text)`, where a reply too long to read, or one the check raises on, fails like any
    other reply (its reason goes back to the LLM and into the record): a reply never stops a run."""
    too_long = reply_too_long(text)
    if too_long:
        return Check(False, None, f"- {too_long}: write only the block", ["too-long"])
    try:
        return check(text)
    except Exception as exc:  # noqa: BLE001 - whatever the reply does to the checks is the reply's failure
        return Check(False, None, f"- the reply could not be checked: {type(exc).__name__}: {str(exc)[:300]}",
                     ["check-error"])


UNCHECKED = frozenset({"too-long", "check-error"})


@dataclass
class Conversation:
    """One exchange with the LLM: the first prompt, how each reply is judged, and how a failing one
    is answered (`retry`, the feedback turn's template; `repairer`, the compiler's repair of it,
    where the compiler repairs such replies)."""

    messages: list[dict]  # the first prompt, rendered
    prompt: str  # its template
    check: Callable[[str], Check]
    attempts: List[Attempt]  # where the replies are kept (the Modification's)
    retry: str = REPAIR
    grammar: Optional[str] = None
    repairer: Optional[Repairer] = None


# ---------------------------------------------------------------------- the agent
class Modifier:
    """Writes blocks with an LLM client (`chat_sync`), checked by the compiler."""

    def __init__(self, client, *, rounds: int = DEFAULT_ROUNDS, skeleton: str = "nb201", dataset: str = "cifar10",
                 reply: Optional[str] = None, repair: str = "off"):
        if rounds < 1:
            raise ValueError("the Modifier needs at least one round")
        if reply is not None and reply not in REPLY_MODES:
            raise ValueError(f"reply is one of {', '.join(REPLY_MODES)}")
        self.policy: RepairPolicy = repair_policy(repair)  # ValueError for a mode it does not know
        self.reply = reply  # None: the model's profile says
        self.repair = repair
        self.client = client
        self.rounds = rounds
        self.skeleton = skeleton
        self.dataset = dataset  # the architecture check verifies at this dataset's stage sizes

    @staticmethod
    def language_reference() -> str:
        return reference_text()

    def reply_form(self) -> str:
        """`block` or `edits`: the Modifier's own setting, else the profile of the client's model."""
        if self.reply is not None:
            return self.reply
        config = getattr(self.client, "config", None)
        model = getattr(config, "model", None)
        return match_profile(model, tuple(getattr(config, "profiles", ()))).reply if model else "block"

    def _converse(self, talk: Conversation, out: Modification, arch_id: Optional[str]) -> Optional[Check]:
        """Ask, check, and send the diagnostics back until a reply passes or the rounds run out; the
        repair policy says what becomes of each failing reply (`out` records what it did)."""
        messages, turns, template = talk.messages, [], talk.prompt
        for round_ in range(1, self.rounds + 1):
            reply = self.client.chat_sync(messages, role="modifier", arch_id=arch_id, prompt=template,
                                          grammar=talk.grammar)
            result = checked_reply(talk.check, reply.text)
            talk.attempts.append(Attempt(reply.text, result, reply.prompt_tokens or 0, reply.completion_tokens or 0))
            if result.ok:
                return result
            repaired = self.policy.repair(talk.repairer, result, reply.text)
            if repaired is not None and self.policy.settles(repaired):
                out.repair = repaired.record()
                return repaired.check
            if round_ < self.rounds:
                template, extra = self.policy.turn(talk.retry, repaired, talk.repairer is not None)
                out.suggested += repaired is not None
                feedback = with_cut_off(result.feedback, reply.truncated)
                turn = render(template, feedback=feedback, round=round_, rounds=self.rounds - 1, **extra)
                turns += [{"role": "assistant", "content": reply.text}, *turn[-1:]]
                messages = fit_conversation(self.client, talk.messages, turns)
        return None

    def edit_bound(self) -> tuple[str, int]:
        """The edit prompt and the most edits a reply may hold: `modifier_edits.v3` and
        SMALL_EDITS_PER_REPLY where the model's profile says `small`, else v2 and EDITS_PER_REPLY."""
        profile = profile_for(self.client)
        return (EDITS_SMALL, SMALL_EDITS_PER_REPLY) if profile is not None and profile.small \
            else (EDITS, EDITS_PER_REPLY)

    def _implement_prompt(self, block_text: str, plan: str, experiences: List[str], name: str,
                          template: str = IMPLEMENT, most: int = EDITS_PER_REPLY) -> list[dict]:
        """`modifier_implement.v1` (or an edit prompt) sized to the model's context: the reference and
        the parent block whole, then the plan (cut when it alone would not fit), then the lessons that fit,
        best first."""
        shown = dict(reference=self.language_reference(), block=block_text.strip(), block_name=name)
        if template in (EDITS, EDITS_SMALL):
            shown["most"] = most
        if template == EDITS_SMALL:
            parent = parse(block_text).program.blocks[0]
            shown["nodes"] = ", ".join(grammar_export.op_ids(parent))
            shown["new_ids"] = ", ".join(grammar_export.new_ids(parent, most))
        experiences = list(experiences)[:5]
        room = client_room(self.client, render(template, plan="", experiences=[""] if experiences else [], **shown),
                           converse=self.rounds > 1)
        if room is not None:
            plan = cut_text(plan, room - (NOTE_CHARS if experiences else 0))
            experiences = best_that_fit(experiences, room - len(plan))
        return render(template, plan=plan, experiences=experiences, **shown)

    def write_block(self, block_text: str, plan: str, experiences: List[str] = (), *,
                    arch_id: Optional[str] = None, reject_unchanged: bool = True) -> Modification:
        """The parent's base block rewritten to follow the plan (verified as a base block)."""
        parent = parse(block_text).program.blocks[0]
        parent_hash = canonical_hash(parent) if reject_unchanged else None
        out = Modification(False, reply_form=self.reply_form())
        if out.reply_form == "edits":
            template, most = self.edit_bound()
            talk = Conversation(self._implement_prompt(block_text, plan, experiences, parent.name, template, most),
                                template, lambda text: check_edit_reply(text, block_text, parent_hash), out.attempts,
                                retry=EDITS_REPAIR, grammar=edits_grammar(block_text, most),
                                repairer=lambda _, text: repair_edit_reply(text, block_text, parent_hash))
        else:
            talk = Conversation(self._implement_prompt(block_text, plan, experiences, parent.name), IMPLEMENT,
                                lambda text: check_base_block(text, parent_hash), out.attempts,
                                grammar=block_grammar(), repairer=lambda failed, _: repair_reply(failed, parent_hash))
        result = self._converse(talk, out, arch_id)
        if result is None:
            last = out.attempts[-1].check if out.attempts else None
            out.error = "the block did not verify after {} round{}: {}".format(
                len(out.attempts), "s" if len(out.attempts) != 1 else "", ", ".join(last.codes) if last else "")
            if last is not None and set(last.codes) & UNCHECKED:  # say why: it may be a bug of ours
                out.error += f" ({last.feedback.lstrip('- ')})"
            return out
        out.ok, out.base_text, out.base_check = True, result.text, result
        return out

    def modify(self, arch_text: str, plan: str, experiences: List[str] = (), *,
               arch_id: Optional[str] = None, reject_unchanged: bool = True) -> Modification:
        """The parent architecture with its base block rewritten to follow the plan, and stem and
        downsample blocks that build with it."""
        base, stem, down = split_architecture(arch_text)
        out = self.write_block(base, plan, experiences, arch_id=arch_id, reject_unchanged=reject_unchanged)
        if not out.ok:
            return out
        name = block_name(out.base_text)
        stem = renamed(stem, f"{name}_stem")
        down = renamed(down, f"{name}_downsample")
        candidate = out.base_text + stem + down
        built = self._architecture(candidate, out)
        if built.ok:
            out.arch_text, out.architecture = candidate, built.arch
            return out
        shown = dict(reference=self.language_reference(), block=out.base_text.strip(), block_name=name,
                     stem=stem.strip(), downsample=down.strip())
        room = client_room(self.client, render(INTERFACE, error="", **shown), converse=self.rounds > 1)
        messages = render(INTERFACE, error=built.feedback if room is None else cut_text(built.feedback, room), **shown)
        talk = Conversation(messages, INTERFACE, lambda text: self._architecture(out.base_text + _extracted(text), out),
                            out.interface_attempts)  # no repairer: the compiler repairs base blocks
        fitted = self._converse(talk, out, arch_id)
        if fitted is None:
            out.ok = False
            out.error = "no stem and downsample blocks built a network with the new base block"
            return out
        out.arch_text, out.architecture = fitted.text, fitted.arch
        return out

    def _architecture(self, text: str, out: Modification) -> Check:
        """`check_architecture` of the new base block with stem and downsample blocks, on the base
        block's verdict (not verified again)."""
        return check_architecture(text, self.skeleton, self.dataset, base=out.base_check)


@lru_cache(maxsize=2)
def block_grammar(form: str = "block") -> str:
    """The GBNF grammar of a reply, as `nadc grammar --format gbnf --reply [FORM]` prints it."""
    return grammar_export.render_grammar("gbnf", reply=form)


def _extracted(reply: str) -> str:
    return extract_blocks(reply).text


@lru_cache(maxsize=16)
def edits_grammar(parent_text: str, most: int = EDITS_PER_REPLY) -> str:
    """The GBNF grammar of at most `most` edits of the parent's block, as `nadc grammar --reply edits
    --parent FILE --most N` prints it: every `replace`/`remove` names a node it has, and each `insert`
    the next free id."""
    return grammar_export.render_grammar("gbnf", reply="edits", parent=parse(parent_text).program.blocks[0],
                                         most=most)
