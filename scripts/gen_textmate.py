"""Write the VS Code extension's TextMate grammar from the op registry:

    python scripts/gen_textmate.py           # rewrite editors/vscode/syntaxes/nad.tmLanguage.json
    python scripts/gen_textmate.py --check   # exit 1 if it is out of date (tests/test_editors.py)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nader.compiler.editor.textmate import grammar_text

TARGET = Path(__file__).resolve().parent.parent / "editors" / "vscode" / "syntaxes" / "nad.tmLanguage.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if the grammar is out of date")
    args = parser.parse_args()
    text = grammar_text()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
    if current == text:
        return 0
    if args.check:
        print(f"{TARGET} is out of date: run python scripts/gen_textmate.py", file=sys.stderr)
        return 1
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
