"""The prelude of every file `--emit torch` writes: the helpers the generated forward passes call.

It is `torch_support.py`'s text from its marker on, read as text, not imported, so the emitters
(`network_source.py`) get it without importing torch; `nadc` builds no module to write source.
"""
from __future__ import annotations

from pathlib import Path

MARKER = "# --- standalone source starts here ---\n"


def _standalone_source() -> str:
    text = (Path(__file__).parent / "torch_support.py").read_text(encoding="utf-8")
    return text.split(MARKER, 1)[1]


SOURCE_PRELUDE = _standalone_source()
