"""The checks of one read line: a header's name, a node's operation, parameters and symbols.

Both readers (the fast path and the grammar's parser) hand their raw pieces (`RawHeader`,
`RawNode`) to these checks, which build the line's record (`HeaderLine`, `NodeLine`) and add the
problems they find (NAD104-NAD107, NAD109, NAD112, NAD115, NAD116). They see one line alone, so
their results are interned with it (nader.dsl.parser).
"""
from __future__ import annotations

import difflib
import re
from typing import NamedTuple, Optional

from .expr import SIZE_SYMBOLS, BinOp, Neg, Num, Sym, TupleValue, Value, symbols_in
from .fast_lines import RawHeader, RawNode
from .ir import Arg, NodeId, default_value
from .ops import OpDef, Param, all_names, lookup
from .parse_codes import (DUPLICATE_PARAMETER, EXTRA_HASHES, HEADER_NAME, MALFORMED_HEADER, MISPLACED_POSITIONAL,
                          OPERATION_ALIAS, UNKNOWN_OPERATION, UNKNOWN_PARAMETER, UNKNOWN_SYMBOL, Problem)
from .span import ColSpan

# `tuple.__new__(Cls, ...)` builds a NamedTuple without its Python-level __new__ (hot path).
_new_tuple = tuple.__new__


# The records of a read line are NamedTuples: cheap to build, and built once per distinct line.

class HeaderLine(NamedTuple):
    name: str
    hashes: int
    cols: ColSpan


class NodeLine(NamedTuple):
    id: NodeId
    op_name: str  # canonical when known
    args: tuple[Arg, ...]
    params: dict
    cols: ColSpan
    id_cols: ColSpan
    op_cols: ColSpan


def header_name(name: str) -> str:
    """`name` as a header can spell it: other characters become `_` (`block` when nothing is left)."""
    if HEADER_NAME.fullmatch(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return cleaned or "block"


# `##Name##`, the header agents write: nothing to report.
_PLAIN_HEADER = re.compile(rf"##({HEADER_NAME.pattern})##")


def check_header(raw: RawHeader, problems: list[Problem]) -> Optional[HeaderLine]:
    text, cols = raw
    plain = _PLAIN_HEADER.fullmatch(text)
    if plain is not None:
        return _new_tuple(HeaderLine, (plain.group(1), 2, cols))
    left = len(text) - len(text.lstrip("#"))
    right = len(text) - len(text.rstrip("#"))
    name = text[left:len(text) - right].strip()
    if not HEADER_NAME.fullmatch(name):
        if not name:
            problems.append(Problem(MALFORMED_HEADER, cols, "header has no name", "name the block: `##Name##`"))
            return None
        what = f"name `{name}` has characters other than letters, digits, `_`, `-`, `.`, spaces"
        fixed = f"##{header_name(name)}##"
        problems.append(Problem(MALFORMED_HEADER, cols, f"header {what}", f"write `{fixed}`", (cols, fixed)))
        return None
    if left > 2 or right > 2:
        problems.append(Problem(EXTRA_HASHES, cols, f"header `{text}` uses {max(left, right)} hashes",
                                f"write `##{name}##`", (cols, f"##{name}##")))
    return _new_tuple(HeaderLine, (name, max(left, right), cols))


def _suggest(name: str, choices: list[str], cutoff: float = 0.6) -> Optional[str]:
    lowered = {c.lower(): c for c in choices}
    if name.lower() in lowered:
        return lowered[name.lower()]
    close = difflib.get_close_matches(name, choices, n=1, cutoff=cutoff)
    return close[0] if close else None


#: How close an unknown operation's name must be to one of the registry's for `did you mean` (and its
#: safe fix): at 0.6, `ZeroPad2d` became `Zero`, `MatMul` `Mul`, `GlobalAvgPool` `AvgPool2d` and
#: `Frobnicate` `concat`, each a different operation; typos (`Sigmod`, `Conv2dd`, `AvgPool`) are above 0.8.
OPERATION_CUTOFF = 0.7


def check_node(raw: RawNode, problems: list[Problem]) -> NodeLine:
    node_id, op_name, args, cols, id_cols, op_cols = raw
    operation = _operation(op_name)
    if operation is None:
        guess = _suggest(op_name, all_names(), OPERATION_CUTOFF)
        problems.append(Problem(UNKNOWN_OPERATION, op_cols, f"unknown operation `{op_name}`",
                                f"did you mean `{guess}`?" if guess else "see `nadc explain ops` for the operations",
                                (op_cols, guess) if guess else None))
    elif operation.name != op_name:
        problems.append(Problem(OPERATION_ALIAS, op_cols, f"`{op_name}` is an alias of `{operation.name}`",
                                f"write `{operation.name}`", (op_cols, operation.name)))
        op_name = operation.name
    for arg in args:
        if _has_unknown_symbol(arg.value):
            _check_symbols(arg.value, problems)
    params = _bind_to(operation, args, problems) if operation else {}
    return _new_tuple(NodeLine, (node_id, op_name, args, params, cols, id_cols, op_cols))


_SIZE_SYMBOLS = frozenset(SIZE_SYMBOLS)


def _has_unknown_symbol(value: Value) -> bool:
    """Whether `value` names anything but a size symbol (a quick walk; the rare hit is then reported in order)."""
    kind = type(value)
    if kind is Num:
        return False
    if kind is Sym:
        return value.name not in _SIZE_SYMBOLS
    if kind is BinOp:
        return _has_unknown_symbol(value.lhs) or _has_unknown_symbol(value.rhs)
    if kind is Neg:
        return _has_unknown_symbol(value.operand)
    return any(map(_has_unknown_symbol, value.items))  # a tuple


def _check_symbols(value: Value, problems: list[Problem]) -> None:
    for sym in symbols_in(value):
        if sym.name not in _SIZE_SYMBOLS:
            guess = _suggest(sym.name, list(SIZE_SYMBOLS))
            problems.append(Problem(UNKNOWN_SYMBOL, sym.span, f"unknown symbol `{sym.name}`",
                                    f"did you mean `{guess}`?" if guess else "sizes use B, C, dim, H and W",
                                    (sym.span, guess) if guess else None))


class _Operation(NamedTuple):
    """An operation with what binding arguments to it needs, derived once from its definition."""

    opdef: OpDef
    name: str  # canonical
    params: dict[str, Param]  # by name
    positional: tuple[Param, ...]  # the parameters positional arguments fill, in order
    variadic: Optional[Param]  # collects the positional arguments, if the operation has one
    # (name, parameter it defaults to, default value) per parameter; the values are shared by all nodes.
    defaults: tuple[tuple[str, Optional[str], Optional[Value]], ...]


_OPERATIONS: dict[str, _Operation] = {}  # by every spelling `lookup` knows


def _operation(op_name: str) -> Optional[_Operation]:
    operation = _OPERATIONS.get(op_name)
    if operation is None:
        opdef = lookup(op_name)
        if opdef is None:
            return None
        operation = _OPERATIONS[op_name] = _Operation(
            opdef, opdef.name, {p.name: p for p in opdef.params},
            tuple(p for p in opdef.params if not p.variadic), next((p for p in opdef.params if p.variadic), None),
            tuple((p.name, p.default_from, default_value(p.default)) for p in opdef.params))
    return operation


def bind(opdef: OpDef, args: tuple[Arg, ...], problems: list[Problem]) -> dict[str, Value]:
    """Bind arguments to the operation's parameters; fill in defaults (problems are added to `problems`)."""
    return _bind_to(_operation(opdef.name), args, problems)


def _bind_to(operation: _Operation, args: tuple[Arg, ...], problems: list[Problem]) -> dict[str, Value]:
    opdef = operation.opdef
    params: dict[str, Value] = {}
    variadic = operation.variadic
    positional_slots = operation.positional
    extra: list[Value] = []
    seen_keyword = False
    index = 0
    for arg in args:
        if arg.name is None:
            if seen_keyword:
                problems.append(Problem(MISPLACED_POSITIONAL, arg.span, "positional argument after a keyword argument",
                                        "put positional arguments first, or name this one"))
                continue
            if variadic is not None:
                extra.append(arg.value)
            elif index < len(positional_slots):
                params[positional_slots[index].name] = arg.value
                index += 1
            else:
                n = len(positional_slots)
                takes = f"takes {n} positional argument{'s' if n != 1 else ''}" if n else "takes no arguments"
                problems.append(Problem(MISPLACED_POSITIONAL, arg.span,
                                        f"`{opdef.name}` {takes}; this one is extra",
                                        f"remove it; the signature is `{opdef.signature()}`"))
            continue
        seen_keyword = True
        param = operation.params.get(arg.name)
        if param is None:
            names = [p.name for p in opdef.params]
            guess = _suggest(arg.name, names) if names else None
            if guess is not None and _gives(opdef, args, guess):
                help_text, fix = f"`{guess}` is given already; remove this argument", None
            elif guess is not None:
                help_text, fix = f"did you mean `{guess}`?", (arg.name_span, guess)
            else:
                help_text = f"`{opdef.name}` takes no parameters" if not names else f"the signature is `{opdef.signature()}`"
                fix = None
            problems.append(Problem(UNKNOWN_PARAMETER, arg.name_span,
                                    f"`{opdef.name}` has no parameter `{arg.name}`", help_text, fix))
            continue
        if param.name in params:
            problems.append(Problem(DUPLICATE_PARAMETER, arg.span, f"parameter `{param.name}` is given twice",
                                    "keep one of them"))
            continue
        params[param.name] = arg.value
    if variadic is not None and extra:
        if variadic.name in params:
            problems.append(Problem(DUPLICATE_PARAMETER, args[0].span, f"parameter `{variadic.name}` is given twice",
                                    "give the sizes either positionally or by keyword"))
        else:
            params[variadic.name] = TupleValue(tuple(extra))
    for name, default_from, default in operation.defaults:
        if name not in params:
            if default_from is not None and default_from in params:
                params[name] = params[default_from]
            elif default is not None:
                params[name] = default
    return params


def _gives(opdef: OpDef, args: tuple[Arg, ...], name: str) -> bool:
    """Whether `args` set parameter `name`, by keyword or by position."""
    if any(a.name == name for a in args):
        return True
    slots = [p.name for p in opdef.params if not p.variadic]
    positional = sum(1 for a in args if a.name is None)
    return name in slots[:positional] or (positional > 0 and any(p.variadic and p.name == name for p in opdef.params))
