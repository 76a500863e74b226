"""What reaches the user besides artifacts: diagnostics (concise, full with source line, caret and help, or
JSON) and a network's notes."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Tuple, Union

from nader.dsl.diagnostics import Diagnostic, sort_key

FORMATS = ("full", "concise", "json")


def render_concise(diagnostics: Iterable[Diagnostic]) -> str:
    """`path:line:col: error[NAD104] message`, one line each."""
    return "".join(
        f"{d.file or '-'}:{d.span.line}:{d.span.col}: {d.level}[{d.code.code}] {d.message}\n"
        for d in sorted(diagnostics, key=sort_key))


def _caret_line(text: str, col: int, end_col: int) -> str:
    width = max(end_col - col, 1) if end_col > col else 1
    prefix = "".join(ch if ch == "\t" else " " for ch in text[: max(col - 1, 0)])
    return prefix + "^" * width


def render_full(diagnostics: Iterable[Diagnostic], sources: Mapping[str, str]) -> str:
    """The source line under each diagnostic, a caret under the span, and the help."""
    out: list[str] = []
    for d in sorted(diagnostics, key=sort_key):
        source = sources.get(d.file or "", "") or ""
        lines = source.split("\n") if source else []  # a file not read (NAD100, NAD122): nothing to quote
        out.append(f"{d.level}[{d.code.code}]: {d.message}")
        where = f"{d.file or '-'}:{d.span.line}:{d.span.col}"
        if d.block:
            where += f" (block {d.block})"
        gutter = " " * len(str(max([d.span.line] + [l.span.line for l in d.secondary])))
        out.append(f"{gutter}--> {where}")
        if 1 <= d.span.line <= len(lines):
            text = lines[d.span.line - 1].rstrip("\r")
            out.append(f"{gutter} |")
            out.append(f"{str(d.span.line).rjust(len(gutter))} | {text}")
            out.append(f"{gutter} | {_caret_line(text, d.span.col, d.span.end_col)}")
        for label in d.secondary:
            if 1 <= label.span.line <= len(lines):
                text = lines[label.span.line - 1].rstrip("\r")
                out.append(f"{str(label.span.line).rjust(len(gutter))} | {text}")
                out.append(f"{gutter} | {_caret_line(text, label.span.col, label.span.end_col).replace('^', '-')} {label.message}")
        if d.help:
            out.append(f"{gutter} = help: {d.help}")
        if d.fix is not None and d.fix.message:
            out.append(f"{gutter} = fix ({d.fix.safety}, {d.fix.kind}): {d.fix.message}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    """A JSON array with one object per diagnostic."""
    return json.dumps([d.to_json() for d in sorted(diagnostics, key=sort_key)], indent=2) + "\n"


def render_diagnostics(diagnostics: list[Diagnostic], fmt: str, sources: Mapping[str, str]) -> str:
    if fmt == "concise":
        return render_concise(diagnostics)
    if fmt == "json":
        return render_json(diagnostics)
    return render_full(diagnostics, sources)


def note_lines(path: str, info: dict, recorded: Optional[dict] = None) -> list[str]:
    """A network's notes (a standard block standing in for a missing one, ...), one line each, for
    the command to print on stderr; with the file's network line (`recorded`), a warning when the
    network has other widths than it records."""
    lines = [f"{path}: note: {note}" for note in info.get("notes", ())]
    warning = widths_warning(path, recorded, info)
    return lines + ([warning] if warning else [])


@dataclass(frozen=True)
class Emitted:
    """What an emitter returns when it has notes for the user besides its artifact: the command
    prints the notes (on stderr) and writes the output."""

    output: Union[str, bytes]
    notes: Tuple[str, ...] = ()


def widths_warning(path: str, recorded: Optional[dict], built: dict) -> Optional[str]:
    """A warning line when the network `built` (`analyze`'s figures) has other widths than the
    network line `recorded` (`read_header`) names; None when they agree or nothing is recorded."""
    widths = recorded.get("widths") if recorded else None
    if not widths or tuple(built.get("widths") or ()) == tuple(widths):
        return None
    text = ",".join(map(str, widths))
    depths = ",".join(map(str, recorded["depths"])) if recorded.get("depths") else None
    where = ", ".join(f"{k} {v}" for k, v in (("skeleton", recorded.get("skeleton")), ("dataset", recorded.get("dataset")),
                                              ("depths", depths)) if v)
    again = f"--network {recorded['skeleton']}" + (f" --dataset {recorded['dataset']}" if recorded.get("dataset") else "")
    return (f"{path}: warning: this network has widths {','.join(map(str, built['widths']))} ({built.get('skeleton')} "
            f"on {built.get('dataset')}), not the widths {text} its network line records ({where}); to rebuild the "
            f"network it was searched as, leave --network and --widths out or give {again} --widths {text}"
            + (f" --depths {depths}" if depths else ""))
