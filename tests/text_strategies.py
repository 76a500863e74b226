"""Hypothesis strategies at the level of text: noise that keeps a program's meaning, random edits
that break it, and the NADER corpus's blocks (the graph-level strategies are in strategies.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import strategies as st

from strategies import program_texts
from nader.dsl.ops import REGISTRY, all_names


# -- text-level noise and mutations ------------------------------------------------

_ALIASES = {d.name: d.aliases[0] for d in REGISTRY.values() if d.aliases}
_NO_ARGS = {d.name for d in REGISTRY.values() if not d.params}
_BLANKS = st.sampled_from(["", " ", "\t", "  ", " \t "])


def _spaced(draw, code: str) -> str:
    """Blanks around punctuation that never occurs inside a token (`-`, `/`, `+` can: `->`, `//`, `1e-5`)."""
    pieces = re.split(r"([:(),=*])", code)
    return "".join(p if k % 2 == 0 else draw(_BLANKS) + p + draw(_BLANKS) for k, p in enumerate(pieces))


@st.composite
def noisy(draw, text: str) -> str:
    """`text` (canonical) respelled without changing its meaning; see the module docstring."""
    out: list[str] = []
    for line in text.split("\n")[:-1]:
        if draw(st.integers(0, 5)) == 0:
            out.append(draw(_BLANKS))  # a blank line
        if line.startswith("#") and not line.startswith("##"):  # a comment line
            out.append(draw(_BLANKS) + line + draw(_BLANKS))
            continue
        if line.startswith("##"):
            name, tail = re.match(r"^##([^#]*)##(.*)$", line).groups()
            extra = "#" * draw(st.integers(0, 2))
            code = f"{extra}##{draw(_BLANKS)}{name}{draw(_BLANKS)}##{extra}"
            comment = tail.strip()
            gap = draw(st.sampled_from([" ", "\t", "   "]))  # `##X### c` would not be a comment
        else:
            code, sep, rest = line.partition("#")
            code, comment = code.rstrip(), sep + rest
            match = re.match(r"^(\d+):([A-Za-z_][A-Za-z0-9_]*)(.*)$", code)
            if match:
                node_id, op, args = match.groups()
                if op in _ALIASES and draw(st.booleans()):
                    op = _ALIASES[op]
                if op in _NO_ARGS and not args and draw(st.booleans()):
                    args = "()"
                code = f"{node_id}:{op}{args}"
            code = _spaced(draw, code)
            gap = draw(_BLANKS)
        out.append(draw(_BLANKS) + code + (gap + comment if comment else "") + draw(_BLANKS))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    result = ending.join(out)
    return result + (ending if draw(st.booleans()) else "")


_SIGNIFICANT = "#:()->,=*/+ 0123456789abcCdimHWB\t`~"
_EDIT_CHARS = st.sampled_from(_SIGNIFICANT) | st.characters()


@st.composite
def mutated(draw, text: str) -> str:
    """`text` with one to three random edits; may or may not still parse."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            lines = [""]
        k = draw(st.integers(0, len(lines) - 1))
        line = lines[k]
        kind = draw(st.sampled_from([
            "delete_line", "duplicate_line", "swap_lines", "delete_char", "insert_char", "replace_char",
            "arrow", "op_name", "number", "paren", "header", "fence", "prose", "crlf", "blank"]))
        if kind == "delete_line":
            del lines[k]
        elif kind == "duplicate_line":
            lines.insert(k, line)
        elif kind == "swap_lines":
            j = draw(st.integers(0, len(lines) - 1))
            lines[k], lines[j] = lines[j], lines[k]
        elif kind in ("delete_char", "replace_char", "insert_char"):
            at = draw(st.integers(0, len(line)))
            ch = draw(_EDIT_CHARS)
            if kind == "insert_char":
                lines[k] = line[:at] + ch + line[at:]
            elif at < len(line):
                lines[k] = line[:at] + ("" if kind == "delete_char" else ch) + line[at + 1:]
        elif kind == "arrow":
            lines[k] = line.replace("->", draw(st.sampled_from(["-", ">", "=>", " ", "-->", "<-", "->>"])), 1)
        elif kind == "op_name":
            new = draw(st.sampled_from(all_names() + ["Conv2D", "conv2d", "Relu", "Identity", "Concat", "x"]))
            lines[k] = re.sub(r"(?<=:)[A-Za-z_][A-Za-z0-9_]*", new, line, count=1)
        elif kind == "number":
            lines[k] = re.sub(r"\d+", str(draw(st.integers(0, 10**6))), line, count=1)
        elif kind == "paren":
            lines[k] = draw(st.sampled_from([line.replace(")", "", 1), line.replace("(", "", 1), line + ")",
                                             line.replace(",", ",,", 1), line.replace("=", "", 1)]))
        elif kind == "header":
            lines[k] = draw(st.sampled_from(["##", "###X###", "##Bad name!##", "##X", "####", "## X ##",
                                             "#" + line, line.lstrip("#")]))
        elif kind == "fence":
            lines.insert(k, draw(st.sampled_from(["```", "```text", "~~~"])))
        elif kind == "prose":
            lines.insert(k, draw(st.sampled_from(["Here is the block:", "Note: 2 is a conv", "1. first",
                                                  "x = 1", "a:ReLU", "2 ReLU", "0 2"])))
        elif kind == "crlf":
            lines[k] = line + "\r"
        else:
            lines.insert(k, draw(_BLANKS))
    return "\n".join(lines)


def mutated_texts(**options):
    """A program's canonical text with random edits (see `mutated`)."""
    return program_texts(**options).flatmap(mutated)


# -- the NADER corpus --------------------------------------------------------------

def compat_texts(root: Path) -> list[tuple[str, str]]:
    """(where, text) for every block file and every block in the fail-to-success log under `root`."""
    found = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((root / "blocks").glob("*.txt"))]
    log = root / "fail2success_log.json"
    if log.is_file():
        def walk(value, where: str) -> None:
            if isinstance(value, dict):
                for key, item in value.items():
                    walk(item, f"{where}/{key}")
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    walk(item, f"{where}[{index}]")
            elif isinstance(value, str) and value.lstrip().startswith("##") and "\n" in value:
                found.append((where, value))

        walk(json.loads(log.read_text(encoding="utf-8")), log.name)
    return found
