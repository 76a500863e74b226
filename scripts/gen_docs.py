"""Regenerate the doc tables that list what the code defines, so adding a strategy, a mutation
operator or a search setting is one declaration and a run of this script:

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


def options_table() -> str:
    """docs/search.md's table of the search's settings, from `nader.search.settings`: each flag with
    its search.toml key and `create_study` keyword (one setting, one reader), default and help."""
    from nader.search.settings import SEARCH_SETTINGS

    rows = ["| flag | search.toml key | `create_study` keyword | default | |", "|---|---|---|---|---|"]
    for s in SEARCH_SETTINGS:
        if s.hidden:
            continue
        flag = ""
        if s.long:
            value = "" if s.is_flag else " " + (s.metavar or s.kind.metavar).strip("[]")
            flag = f"`{s.long}{value}`" + "".join(f", `{old}` (old, hidden)" for old in s.old)
        toml = ", ".join(f"`{key}`" for key in ((s.toml,) if s.toml else ()) + s.old_toml)
        keyword = f"`{s.keyword}`" if s.keyword else ""
        default = s.shown() or ""
        cells = [flag, toml, keyword, f"`{default}`" if default and " " not in default else default, s.help]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def mutation_table() -> str:
    from nader.compiler.mutate.table import reference_table

    return reference_table()


def fix_table() -> str:
    """docs/language.md's table of the fix kinds of `nadc fix` (`nader.compiler.repair.all_kinds`)."""
    from nader.compiler.repair import all_kinds

    rows = ["| fix kind | safety | answers | what it does |", "|---|---|---|---|"]
    rows += [f"| `{k.name}` | {k.safety} | {k.answers} | {k.summary} |" for k in all_kinds().values()]
    return "\n".join(rows)


#: (file, marker name, generator)
TABLES: list[tuple[str, str, Callable[[], str]]] = [
    ("docs/search.md", "strategies", strategy_table),
    ("docs/search.md", "options", options_table),
    ("docs/mutations.md", "mutations", mutation_table),
    ("docs/language.md", "fixes", fix_table),
]


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
    for rel, marker, generate in TABLES:
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
