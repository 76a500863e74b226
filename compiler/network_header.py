"""The network line of an architecture file: how to rebuild the network it was trained as.

A comment line before the first block header, ::

    # nadc-network: skeleton=nb201 dataset=digits depths=1,1,1 widths=16,32,64 classes=10 input-size=8

names the skeleton, dataset, stage depths and widths (and, as a check, the classes and input
size) that `nader-search best --emit nad` wrote, so that ``nadc ARCH.nad --emit torch|onnx``
rebuilds the same network from the file alone, without ``--network``, ``--dataset``,
``--widths`` or ``--depths`` (flags given still win). It is a comment: the blocks, their
canonical form and their hash do not change, and ``nadc fmt`` keeps it where it is.

A network built from the file at other widths than the line records (``--network`` naming another
skeleton, ``--widths`` given, another budget's fit) is not the network the file was searched as:
`nader.compiler.reporting.widths_warning` says so, for ``nadc`` to print.
"""
from __future__ import annotations

import re
from typing import Optional

from nader.inputs.settings import int_list

PREFIX = "# nadc-network:"
_LISTS = ("widths", "depths")
_INTS = ("classes", "input-size")
KEYS = ("skeleton", "dataset", *_LISTS, *_INTS)


class HeaderError(ValueError):
    """A network line that cannot be read; the message names the line and the fix."""


def header_line(*, skeleton: str, dataset: str, depths, widths, classes: Optional[int] = None,
                input_size: Optional[int] = None) -> str:
    parts = [f"skeleton={skeleton}", f"dataset={dataset}", f"depths={','.join(map(str, depths))}",
             f"widths={','.join(map(str, widths))}"]
    if classes is not None:
        parts.append(f"classes={classes}")
    if input_size is not None:
        parts.append(f"input-size={input_size}")
    return f"{PREFIX} {' '.join(parts)}\n"


def read_header(source: str) -> Optional[dict]:
    """The network line's settings (``skeleton``, ``dataset``, ``widths``, ``depths``, ``classes``,
    ``input_size``), or None when the file has none before its first block."""
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("##"):
            return None
        if not stripped.startswith(PREFIX):
            continue
        out: dict = {}
        for item in stripped[len(PREFIX):].split():
            key, sep, value = item.partition("=")
            if not sep or key not in KEYS or not value:
                raise HeaderError(f"line {number}: the network line has {item!r}; expected KEY=VALUE with KEY one "
                                  f"of {', '.join(KEYS)}")
            if key in _LISTS or key in _INTS:
                if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", value) or (key in _INTS and "," in value):
                    raise HeaderError(f"line {number}: {key}={value} is not {'a list of positive integers' if key in _LISTS else 'a positive integer'}")
                numbers = tuple(int_list(value, key, lo=1))  # the one list parser, after the strict pattern
                out[key.replace("-", "_")] = numbers if key in _LISTS else numbers[0]
            else:
                out[key] = value
        if "skeleton" not in out:
            raise HeaderError(f"line {number}: the network line names no skeleton (skeleton=nb201, ...)")
        return out
    return None

