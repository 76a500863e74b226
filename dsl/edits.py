"""Edit replies: an LLM's answer as edits of the parent block instead of the block restated.

A small model asked for a whole block restates the parent and often never stops: Gemma 3 270M
on llama.cpp's server ran every reply to `max_tokens`, repeating the parent's edges (issue 28).
An edit reply names only what changes, so it is short, and bounded by construction: the grammar
(`nadc grammar --reply edits`) allows at most `EDITS_PER_REPLY` edit lines, and this parser
refuses more. The form, one edit a line after an optional header that names the new block:

    ##ResNetWide##
    add 9:Conv2d(out_channels=C,kernel_size=1)
    connect 4->9
    disconnect 4->5
    connect 9->5
    replace 3:BN
    remove 6
    insert 10:BN after 2

* `add ID:OP` a new node (the id must be new); `remove ID` a node and every edge at it;
* `insert ID:OP after A` a new node between A and A's consumers: A feeds it, and it feeds what
  A fed, in A's argument positions (one line for the most common change, which a small model
  otherwise writes as `add` and leaves unconnected);
* `replace ID:OP` a node's operation or parameters (its edges stay);
* `connect A,B->C` edges (appended after C's present inputs); `disconnect A->C` one edge.

`apply_edits` applies them in order to the parent's text and gives the new block's text, or
located problems (line and columns of the reply) for edits that cannot apply: an unknown node,
an id already taken, an edge that is or is not there. Whether the new block is valid is the
compiler's to say (nader.compiler.edit_reply); this floor needs no shapes. Nothing is evaluated,
and the reply's size and lines are checked against the input limits before it is read. A list
marker (`- `, `1. `) or inline-code quotes around an edit line are taken off, as small models
write them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from .format import node_text
from .ir import node_id
from .limits import DEFAULT_LIMITS, InputLimits, line_problem, text_problem, text_size
from .parser import parse

#: The most edit lines one reply may hold (the grammar's bound too): enough to rewrite a block of
#: NADER's sizes, far too few to restate a block node by node and edge by edge.
EDITS_PER_REPLY = 24
#: The bound where the model's profile says it is small (`small = true`; grammar and prompt): Gemma
#: 3 270M never ended an edit reply on its own, so the bound is where it stops, and every edit past
#: the few the plan needs is noise. 8 is room for the NAD benchmark's micro requests (1 to 3 edits)
#: and a squeeze-and-excitation gate (7: six inserts and a connect).
SMALL_EDITS_PER_REPLY = 8
VERBS = ("add", "remove", "replace", "insert", "connect", "disconnect")

_ID = r"[A-Za-z0-9_]+"
_HEADER = re.compile(r"^#{2,}\s*([A-Za-z0-9_.\- ]*?)\s*#{2,}$")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
# What small models put around an edit line: a list marker (`- `, `* `, `1. `) and inline code quotes.
_MARKER = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+")
_FORMS = {
    "add": re.compile(rf"^({_ID})\s*:\s*(\S.*)$"),
    "replace": re.compile(rf"^({_ID})\s*:\s*(\S.*)$"),
    "remove": re.compile(rf"^({_ID})$"),
    "insert": re.compile(rf"^({_ID})\s*:\s*(\S.*?)\s+after\s+({_ID})$"),
    "connect": re.compile(rf"^({_ID}(?:\s*,\s*{_ID})*)\s*->\s*({_ID})$"),
    "disconnect": re.compile(rf"^({_ID})\s*->\s*({_ID})$"),
}
_USAGE = {"add": "add ID:OP", "replace": "replace ID:OP", "remove": "remove ID", "insert": "insert ID:OP after A",
          "connect": "connect A,B->C", "disconnect": "disconnect A->C"}


@dataclass(frozen=True)
class EditProblem:
    """An edit that cannot apply: where in the reply (1-based line, columns end-exclusive), what, how to fix."""

    code: str  # edit-syntax | edit-unknown-node | edit-duplicate-node | edit-unknown-edge | edit-duplicate-edge ...
    line: int
    col: int
    end_col: int
    message: str
    help: str = ""

    def to_json(self) -> dict:
        return {"code": self.code, "line": self.line, "col": self.col, "end_col": self.end_col,
                "message": self.message, "help": self.help}


@dataclass(frozen=True)
class BlockEdit:
    verb: str
    line: int  # in the reply
    args: tuple[str, ...]  # add/replace: (id, op text); insert: (id, op text, after); remove: (id,);
    # (dis)connect: (*sources, target)


@dataclass
class EditReply:
    """A parsed edit reply: the new block's name (None: the parent's), the edits, and problems."""

    name: Optional[str] = None
    edits: list[BlockEdit] = field(default_factory=list)
    problems: list[EditProblem] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the reply's lines, for quoting


@dataclass
class Applied:
    """The parent with the edits applied: `text` the new block (None when an edit could not apply).
    With `skip=True`, `text` is the block the edits that could apply make, and `problems` the edits
    left out (the compiler's repair starts from it: nader.compiler.reply_repair)."""

    text: Optional[str]
    reply: EditReply
    problems: list[EditProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.text is not None


def _problem(code: str, line: int, raw: str, message: str, help: str = "") -> EditProblem:
    start = len(raw) - len(raw.lstrip()) + 1
    return EditProblem(code, line, start, max(start + 1, len(raw.rstrip()) + 1), message, help)


def _body_lines(text: str) -> list[tuple[int, str]]:
    """The reply's lines with their numbers; inside the first fence only, when it has one."""
    lines = list(enumerate(text.splitlines(), 1))
    opened = next((i for i, (_, raw) in enumerate(lines) if _FENCE.match(raw.strip())), None)
    if opened is None:
        return lines
    closed = next((i for i in range(opened + 1, len(lines)) if _FENCE.match(lines[i][1].strip())), len(lines))
    return lines[opened + 1:closed]


def parse_edits(text: str, limits: InputLimits = DEFAULT_LIMITS) -> EditReply:
    """The edits of a reply. Blank and `#` comment lines are skipped; a header (`##Name##`) before the
    first edit names the new block; anything else that is not an edit is a problem (`edit-syntax`)."""
    out = EditReply()
    too_big = text_problem(text_size(text), limits)
    if too_big is not None:
        out.problems.append(EditProblem("edit-too-large", 1, 1, 2, too_big.message, too_big.help))
        return out
    out.lines = text.splitlines()
    for number, raw in _body_lines(text):
        line = raw.strip()
        if not line:
            continue
        bad = line_problem(raw, limits)
        if bad is not None:
            out.problems.append(EditProblem("edit-line-too-long", number, bad.cols.col, bad.cols.end_col,
                                            bad.message, bad.help))
            continue
        header = _HEADER.match(line)
        if header:
            if out.edits or out.name is not None:
                out.problems.append(_problem("edit-syntax", number, raw, "a header after the first edit",
                                             "write one header (`##Name##`) first, then the edits"))
            elif header.group(1).strip():
                out.name = header.group(1).strip().replace(" ", "_")
            continue
        if line.startswith("#"):
            continue
        line = _MARKER.sub("", line, count=1).strip()
        if len(line) > 1 and line[0] == line[-1] == "`":
            line = line.strip("`").strip()
        verb, _, rest = line.partition(" ")
        verb = verb.lower()
        form = _FORMS.get(verb)
        match = form.match(rest.strip()) if form else None
        if match is None:
            usage = f"write `{_USAGE[verb]}`" if verb in _USAGE else \
                f"each line is one edit: {', '.join(f'`{u}`' for u in _USAGE.values())}"
            out.problems.append(_problem("edit-syntax", number, raw, f"not an edit: `{line[:60]}`", usage))
            continue
        if len(out.edits) == EDITS_PER_REPLY:
            out.problems.append(_problem("edit-too-many", number, raw, f"more than {EDITS_PER_REPLY} edits",
                                         "write only the changes the plan needs, not the whole block"))
            break
        if verb in ("add", "replace"):
            args = (match.group(1), match.group(2).strip())
        elif verb == "insert":
            args = (match.group(1), match.group(2).strip(), match.group(3))
        elif verb == "remove":
            args = (match.group(1),)
        else:
            args = (*(s.strip() for s in match.group(1).split(",")), match.group(2))
        out.edits.append(BlockEdit(verb, number, args))
    if not out.edits and not out.problems:
        out.problems.append(EditProblem("edit-empty", 1, 1, 2, "the reply holds no edit",
                                        f"write one edit a line: {', '.join(f'`{u}`' for u in _USAGE.values())}"))
    return out


def apply_edits(parent_text: str, reply_text: str, limits: InputLimits = DEFAULT_LIMITS, *,
                skip: bool = False, keep: Optional[int] = None) -> Applied:
    """The parent block (the first block of `parent_text`) with the reply's edits applied in order.
    With `skip`, an edit that cannot apply (or a line that is no edit) is left out, and the others apply.
    With `keep` (and `skip`), only the first `keep` edits are read: each later one is left out as
    `edit-left-out`, and the lines after the last kept edit are not judged (the compiler's repair
    cuts a reply's tail so, nader.compiler.reply_repair)."""
    reply = parse_edits(reply_text, limits)
    if keep is not None and skip and keep < len(reply.edits):
        cut = reply.edits[keep].line
        left = [_problem("edit-left-out", e.line, reply.lines[e.line - 1], "left out with every edit after it",
                         "write only the edits the plan needs: the block the edits before it make can be repaired")
                for e in reply.edits[keep:]]
        reply = EditReply(reply.name, reply.edits[:keep], [p for p in reply.problems if p.line < cut] + left,
                          reply.lines)
    if reply.problems and not (skip and reply.edits):
        return Applied(None, reply, list(reply.problems))
    parent = parse(parent_text).program.blocks[0]
    nodes = {n.id: node_text(n) for n in parent.nodes}
    edges = [(s, e.target) for e in parent.edges for s in e.sources]
    problems: list[EditProblem] = []

    def known(token: str, edit: BlockEdit) -> bool:
        if node_id(token) in nodes:
            return True
        problems.append(_problem("edit-unknown-node", edit.line, reply.lines[edit.line - 1],
                                 f"no node `{token}` in the block at this edit",
                                 f"nodes are {', '.join(map(str, nodes))}; `add` a node before using it"))
        return False

    for edit in reply.edits:
        raw = reply.lines[edit.line - 1]
        ids = [node_id(a) for a in (edit.args[:1] if edit.verb in ("add", "replace", "insert") else edit.args)]
        if edit.verb == "insert":
            after = node_id(edit.args[2])
            if ids[0] in nodes:
                problems.append(_problem("edit-duplicate-node", edit.line, raw, f"node `{edit.args[0]}` is already "
                                         "in the block", f"use a new id (e.g. {_free(nodes)})"))
            elif known(edit.args[2], edit):
                nodes[ids[0]] = f"{edit.args[0]}:{edit.args[1]}"
                edges = [(ids[0], t) if s == after else (s, t) for s, t in edges] + [(after, ids[0])]
        elif edit.verb == "add":
            if ids[0] in nodes:
                problems.append(_problem("edit-duplicate-node", edit.line, raw, f"node `{edit.args[0]}` is already "
                                         "in the block", f"use a new id (e.g. {_free(nodes)}), or `replace` it"))
            else:
                nodes[ids[0]] = f"{edit.args[0]}:{edit.args[1]}"
        elif edit.verb == "replace":
            if known(edit.args[0], edit):
                nodes[ids[0]] = f"{edit.args[0]}:{edit.args[1]}"
        elif edit.verb == "remove":
            if known(edit.args[0], edit):
                del nodes[ids[0]]
                edges = [(s, t) for s, t in edges if ids[0] not in (s, t)]
        elif all([known(a, edit) for a in edit.args]):
            *sources, target = ids
            for source in sources:
                there = (source, target) in edges
                if edit.verb == "connect" and there:
                    problems.append(_problem("edit-duplicate-edge", edit.line, raw, f"edge {source}->{target} is "
                                             "already in the block", "leave it out, or `disconnect` it first"))
                elif edit.verb == "connect":
                    edges.append((source, target))
                elif not there:
                    problems.append(_problem("edit-unknown-edge", edit.line, raw, f"no edge {source}->{target} in "
                                             "the block at this edit", "`disconnect` only an edge the block has"))
                else:
                    edges.remove((source, target))
    if problems and not skip:
        return Applied(None, reply, problems)
    name = reply.name or parent.name
    text = "\n".join([f"##{name}##", *nodes.values(), *(f"{s}->{t}" for s, t in edges)]) + "\n"
    return Applied(text, reply, [*reply.problems, *problems])


def _free(nodes) -> int:
    return max((i for i in nodes if isinstance(i, int)), default=-1) + 1


def problems_feedback(applied: Applied, most: int = 5) -> str:
    """The problems for an LLM: line, the edit quoted, code, message, help (as the compiler's feedback)."""
    out = []
    for p in applied.problems[:most]:
        quoted = applied.reply.lines[p.line - 1].strip() if 1 <= p.line <= len(applied.reply.lines) else ""
        out.append(f"- line {p.line}" + (f" `{quoted[:80]}`" if quoted else "") + f": error[{p.code}] {p.message}")
        if p.help:
            out.append(f"  help: {p.help}")
    if len(applied.problems) > most:
        out.append(f"- and {len(applied.problems) - most} more")
    return "\n".join(out)
