"""Completion from the registry: operation names after `ID:`, their parameters inside `(...)`, size
symbols where a value is written, and the block's node ids in edges."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from nader.dsl.expr import SIZE_SYMBOLS
from nader.dsl.ops import REGISTRY, OpDef, ParamKind, lookup

from .analysis import Analysis
from .hover import op_doc

_OP_POSITION = re.compile(r"^\s*[A-Za-z0-9_]+\s*:\s*[A-Za-z0-9_]*$")
_IN_ARGS = re.compile(r"^\s*[A-Za-z0-9_]+\s*:\s*([A-Za-z0-9_]+)\s*\((.*)$")
_EDGE_POSITION = re.compile(r"^[\sA-Za-z0-9_,]*(->[\sA-Za-z0-9_]*)?$")

#: What each size symbol stands for (docs/language.md); layer parameters may use C and dim only.
SYMBOL_DOCS = {"B": "batch size", "C": "channels of the block's input", "dim": "channels of the block's output",
               "H": "input height", "W": "input width"}
_PARAM_SYMBOLS = {ParamKind.SIZE: ("C", "dim"), ParamKind.SHAPE: SIZE_SYMBOLS}


@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # "operation", "parameter", "symbol" or "node"
    detail: str = ""
    documentation: str = ""
    insert_text: Optional[str] = None


def _operations() -> list[Completion]:
    out = []
    for d in REGISTRY.values():
        out.append(Completion(d.name, "operation", d.signature(), op_doc(d)))
    return out


def _parameters(d: OpDef, written: list[str]) -> list[Completion]:
    given = {w.split("=", 1)[0].strip() for w in written if "=" in w}
    out = []
    for p in d.params:
        if p.name in given or p.variadic:
            continue
        default = "required" if p.required else f"default {p.default_from or p.default}"
        out.append(Completion(p.name, "parameter", f"{p.kind.value}, {default}",
                              f"`{p.signature()}` of **{d.name}**: a {p.kind.value} parameter", f"{p.name}="))
    return out


def _symbols(names) -> list[Completion]:
    return [Completion(s, "symbol", SYMBOL_DOCS[s], f"`{s}`: {SYMBOL_DOCS[s]}") for s in names]


def _split_args(text: str) -> list[str]:
    """The arguments written so far, split at top-level commas (the last one is being typed)."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts


def completions(analysis: Analysis, line: int, col: int) -> list[Completion]:
    """What may be written at (line, col); `analysis` must be of the text being edited."""
    lines = analysis.lines
    if not 1 <= line <= len(lines):
        return []
    prefix = lines[line - 1][:col - 1].split("#", 1)[0] if "#" not in lines[line - 1][:2] else None
    if prefix is None or prefix.lstrip().startswith("##"):
        return []
    if _OP_POSITION.match(prefix):
        return _operations()
    args = _IN_ARGS.match(prefix)
    if args:
        d = lookup(args.group(1))
        if d is None or args.group(2).count(")") > args.group(2).count("("):  # unknown, or the call is closed
            return []
        written = _split_args(args.group(2))
        current = written[-1]
        if "=" in current:
            param = d.param(current.split("=", 1)[0].strip())
            return _symbols(_PARAM_SYMBOLS.get(param.kind, ())) if param else []
        return _parameters(d, written[:-1]) + _symbols(("C", "dim"))
    if ":" not in prefix and _EDGE_POSITION.match(prefix):
        block = analysis.block_at(line)
        if block is None:
            return []
        return [Completion(str(n.id), "node", n.source_text().split(":", 1)[1], "") for n in block.nodes]
    return []
