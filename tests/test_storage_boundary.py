"""Only a storage touches SQL (docs/architecture.md, "The run store"), checked on the source with `ast`.

1. SQL is written (a string that starts with a statement, or a call of `execute*`) only in the
   modules of `STORAGES`, each of which owns the tables it creates.
2. A storage names only tables that a storage of its own floor or below creates: the runtime
   (floor 0) never names the search's `archs`; the schema-blind SQLite tools name none at all.
3. Outside its store package the search never reaches a store's connection, and every method it
   calls on a store is declared by `BaseStore`, so a second storage is a subclass and a new
   operation an addition there.
"""
from __future__ import annotations

import ast
import re
from functools import lru_cache

from test_imports import floor, modules

#: module or package -> what it stores; the only places SQL is written
STORAGES = {
    "nader.runtime.store": "the runtime's job store: meta, jobs, results, epochs (floor 0; `nader-search eval`)",
    "nader.runtime.integrity": "SQLite's checks of any run database (quick_check, integrity_check): schema-blind",
    "nader.runtime.recovery": "salvage of any SQLite file by its own schema (`--repair`): schema-blind",
    "nader.search.store": "the search's tables (archs, arch_seeds, sessions, rungs) and its reads of those below",
    "nader.agents.llm.record": "the LLM call record (llm_calls) in the run's database",
    "nader.agents.knowledge.store": "the knowledge base, a database file of its own",
    "nader.agents.experiences": "the Reflector's experience base (experiences) in the run's database",
}
#: storages that read any database by its own schema and so must name no table of anyone's
SCHEMA_BLIND = ("nader.runtime.integrity", "nader.runtime.recovery")
#: SQLite's own tables, which any storage may read
SQLITE_TABLES = {"sqlite_master"}

_STATEMENT = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|REPLACE|WITH|BEGIN|COMMIT|ROLLBACK|"
                        r"VACUUM|REINDEX|ATTACH)\b")
_NAMED = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE(?:\s+IF\s+NOT\s+EXISTS)?)\s+([A-Za-z_]\w*)"
                    r"|\bON\s+([A-Za-z_]\w*)\s*\(|table_info\(([A-Za-z_]\w*)\)")
_CREATED = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_]\w*)")
_EXECUTE = {"execute", "executemany", "executescript"}


def storage_of(module: str):
    return next((s for s in STORAGES if module == s or module.startswith(s + ".")), None)


def _text(node: ast.AST):
    """A string literal's text, an f-string's with `{}` for each placeholder; None for others."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


@lru_cache(maxsize=None)
def sql_of(module: str) -> tuple[tuple[int, str], ...]:
    """(line, text) of every SQL statement the module writes."""
    found = []
    for node in ast.walk(ast.parse(modules()[module].read_text(encoding="utf-8"))):
        text = _text(node)
        if text is not None and _STATEMENT.match(text) and (" " in text.strip() or text.strip() in ("COMMIT",
                                                                                                     "ROLLBACK")):
            found.append((node.lineno, text))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _EXECUTE:
            found.append((node.lineno, f"{node.func.attr}(...)"))
    return tuple(found)


def tables_named(module: str) -> set[str]:
    return {next(g for g in m.groups() if g) for _, text in sql_of(module) for m in _NAMED.finditer(text)}


def tables_created(module: str) -> set[str]:
    return {m.group(1) for _, text in sql_of(module) for m in _CREATED.finditer(text)}


def test_the_scan_finds_sql():
    assert any("archs" in text for _, text in sql_of("nader.search.store.sqlite"))
    assert {"archs", "arch_seeds", "search_sessions"} <= tables_created("nader.search.store.sqlite")
    assert tables_named("nader.search.store.reads") >= {"archs", "meta", "llm_calls", "jobs"}
    assert not sql_of("nader.search.loop")


def test_sql_is_written_only_in_storages():
    outside = [f"{m}:{line}: {text[:60]!r}" for m in modules() if storage_of(m) is None for line, text in sql_of(m)]
    assert not outside, ("SQL outside a storage (put the query in nader.search.store, or the storage that owns "
                         f"the table): {outside}")


def test_every_listed_storage_writes_sql():
    empty = [s for s in STORAGES if not any(storage_of(m) == s and sql_of(m) for m in modules())]
    assert not empty, f"STORAGES entries with no SQL: {empty}"


def test_a_storage_names_only_tables_of_its_floor_and_below():
    created: dict[str, int] = {}
    for m in modules():
        if storage_of(m):
            for table in tables_created(m):
                created[table] = min(created.get(table, 9), floor(m))
    wrong = {}
    for m in modules():
        if storage_of(m) is None:
            continue
        allowed = set(SQLITE_TABLES)
        if storage_of(m) not in SCHEMA_BLIND:
            allowed |= {t for t, f in created.items() if f <= floor(m)}
        if tables_named(m) - allowed:
            wrong[m] = sorted(tables_named(m) - allowed)
    assert not wrong, f"tables named by a storage that does not own them, or of a higher floor: {wrong}"


def test_the_runtime_does_not_know_the_search_schema():
    search_tables = tables_created("nader.search.store.sqlite")
    runtime = {t for m in modules() if m.startswith("nader.runtime.") for t in tables_named(m)}
    assert "archs" in search_tables and not runtime & search_tables


def _store_uses():
    """(module, line, attribute) of `store.X` / `self.store.X` in the search outside its store package."""
    for m, path in modules().items():
        if not m.startswith("nader.search.") or storage_of(m):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                owner = node.value
                if (isinstance(owner, ast.Name) and owner.id == "store") or \
                        (isinstance(owner, ast.Attribute) and owner.attr == "store"):
                    yield m, node.lineno, node.attr


def test_the_search_calls_a_store_only_through_its_base_class():
    from nader.search.store import BaseStore

    declared = set(dir(BaseStore)) | {a for c in BaseStore.__mro__ for a in getattr(c, "__annotations__", {})}
    uses = list(_store_uses())
    assert any(a == "record_seed" for _, _, a in uses)
    undeclared = [f"{m}:{line} store.{a}" for m, line, a in uses if a not in declared]
    assert not undeclared, f"store operations BaseStore does not declare (add them there): {undeclared}"
    conn = [f"{m}:{line}" for m, line, a in uses if a in ("conn", "_lock", "_tx")]
    assert not conn, f"the search reaches into a store's connection: {conn}"
