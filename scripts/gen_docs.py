"""Regenerate the doc tables that list what the code defines, so adding a strategy or a mutation
operator is one file and a run of this script:

    python scripts/gen_docs.py           # rewrite the generated tables in place
    python scripts/gen_docs.py --check   # exit 1 naming each out-of-date file (tests/test_doc_tables.py)

Each table lies between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in its file. Tables with
hand-written prose per row (ops, lint codes, ONNX, costs) are not generated; tests/test_doc_tables.py
checks that their names match the registries instead.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable

REPO_ROOT = Path(__file__).resolve().parent.parent


def strategy_table() -> str:
    """docs/search.md's table of search strategies, from `STRATEGIES` (their names, options and summaries)."""
    from nader.search.config import SearchConfig
    from nader.search.strategies import STRATEGIES
    from nader.search.strategies.catalog import LLM_OPTIONS

    rows = ["| strategy | options (`--option KEY=VALUE`) | what it does |", "|---|---|---|"]
    for name, cls in STRATEGIES.items():
        options = [_option(key, option) for key, option in cls.options.items() if key not in LLM_OPTIONS]
        if set(LLM_OPTIONS) <= set(cls.options):
            options.append("the LLM's (`llm_*`, `embedding_model`, `replay`; docs/llm.md)")
        default = " (default)" if name == SearchConfig.strategy else ""
        rows.append(f"| `{name}`{default} | {', '.join(options) or 'none'} | {cls.summary} |")
    return "\n".join(rows)


def _option(key: str, option) -> str:
    default = int(option.default) if isinstance(option.default, bool) else option.default
    text = f"`{key}`" if default == "" else f"`{key}={default}`"
    others = [f"`{c}`" for c in option.choices or () if c != default]
    return f"{text} ({', '.join(others)})" if others else text


def mutation_table() -> str:
    from nader.compiler.mutate.table import reference_table

    return reference_table()


def fix_table() -> str:
    """docs/language.md's table of the fix kinds of `nadc fix` (`nader.compiler.repair.all_kinds`)."""
    from nader.compiler.repair import all_kinds

    rows = ["| fix kind | safety | answers | what it does |", "|---|---|---|---|"]
    rows += [f"| `{k.name}` | {k.safety} | {k.answers} | {k.summary} |" for k in all_kinds().values()]
    return "\n".join(rows)


def proxy_table() -> str:
    """docs/search.md's table of the training-free proxies (`nader.search.proxies`, one module each)."""
    from nader.search.proxies import proxy_table as table

    return table()


#: file -> (marker name, generator)
TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "docs/search.md": ("strategies", strategy_table),
    "docs/search.md#proxies": ("proxies", proxy_table),
    "docs/mutations.md": ("mutations", mutation_table),
    "docs/language.md": ("fixes", fix_table),
}


def regenerate(text: str, marker: str, table: str) -> str:
    pattern = re.compile(rf"(<!-- {marker}:begin -->\n).*?(\n<!-- {marker}:end -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"no <!-- {marker}:begin --> ... <!-- {marker}:end --> markers")
    return pattern.sub(lambda m: m.group(1) + table + m.group(2), text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is out of date")
    args = parser.parse_args(argv)
    stale = []
    for key, (marker, generate) in TABLES.items():
        rel = key.partition("#")[0]  # "FILE#NAME": a second table in the same file
        path = REPO_ROOT / rel
        text = path.read_text(encoding="utf-8")
        try:
            new = regenerate(text, marker, generate())
        except ValueError as exc:
            print(f"{rel}: {exc}", file=sys.stderr)
            return 2
        if new != text:
            stale.append(rel)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"out of date (run python scripts/gen_docs.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    for rel in stale:
        print(f"rewrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
