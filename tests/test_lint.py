"""`nadc lint`: the NAD4xx rules, suppression, configuration, front-end warnings, hooks.

The per-rule golden fixtures live in tests/golden/NAD4xx*/ and are run by
tests/test_diagnostics_golden.py (see tests/golden/README.md); this file tests
the rules' logic case by case, the engine and the command.
"""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT, run_nadc, shared_dir
from strategies import blocks, program_texts
from text_strategies import mutated_texts
from nader.compiler.cli import COMMANDS
from nader.compiler.codes import code_table
from nader.compiler.lint import engine
from nader.compiler.lint.config import LintConfigError, lintable_codes, resolve_selectors, selection_for
from nader.compiler.lint.engine import Finding, LintContext, Rule, all_rules, lint_block, lint_parsed, suppressions
from nader.compiler.lint.rules import MODULES
from nader.dsl.diagnostics import Code, Severity
from nader.dsl.format import format_block, renumber
from nader.dsl.ir import Role
from nader.compiler.passes.verify import verify_block
from nader.dsl.parser import parse
from nader.dsl.span import Span

HEAD = "##T##\n0:input\n1:output\n"


def codes_of(text: str, **kw) -> list[str]:
    """Codes lint reports on `text` (everything selected, no config)."""
    result = parse(textwrap.dedent(text))
    return [d.code.code for d in sorted(lint_parsed(result, lambda d: True, **kw).diagnostics,
                                        key=lambda d: (d.span.line, d.code.code))]


def block_text(nodes: str, edges: str) -> str:
    return HEAD + textwrap.dedent(nodes).strip() + "\n" + textwrap.dedent(edges).strip() + "\n"


# -- the rule modules ------------------------------------------------------------------

def test_one_rule_per_module_with_documented_code():
    rules = all_rules()
    assert len(rules) == len(MODULES) >= 6
    assert sorted(r.module.rsplit(".", 1)[1] for r in rules.values()) == sorted(MODULES)
    table = code_table()
    for code, r in rules.items():
        # NAD4xx, or a verifier warning lint reports with the verifier's own check (NAD206).
        assert (re.fullmatch(r"NAD4\d\d", code) or code == "NAD206") and table[code] is r.code
        assert r.code.severity is Severity.WARNING
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix"):
            assert heading in r.code.doc, (code, heading)
        run = run_nadc(["explain", code])
        assert run.code == 0 and f"# {code} ({r.code.name})" in run.stdout and "Why is this bad?" in run.stdout


def test_every_lint_code_has_a_golden_fixture():
    golden = REPO_ROOT / "tests" / "golden"
    for code in all_rules():
        cases = [p for p in golden.glob(f"{code}*") if (p / "args.txt").exists()]
        lint_cases = [c for c in cases if (c / "args.txt").read_text().split()[0] == "lint"]
        assert any(code in (c / "concise.txt").read_text() for c in lint_cases if (c / "concise.txt").exists()), code
        if code.startswith("NAD4"):  # a verifier warning lint reports too (NAD206) has verify cases as well
            assert lint_cases == cases, code


# -- NAD401 / NAD402 ------------------------------------------------------------------------

@pytest.mark.parametrize("first,second,expected", [
    ("BN", "BN", ["NAD401"]), ("BN", "LN", ["NAD401"]), ("LN", "BN", ["NAD401"]),
    ("ReLU", "ReLU", ["NAD402"]), ("ReLU", "Sigmoid", ["NAD402", "NAD403"]), ("GELU", "ReLU", ["NAD402"]),
    ("BN", "ReLU", []), ("ReLU", "BN", []), ("Conv2d(out_channels=C,kernel_size=1)", "BN", []),
])
def test_consecutive_pairs(first, second, expected):
    text = block_text(f"2:{first}\n3:{second}", "0->2\n2->3\n3->1")
    assert codes_of(text) == expected


def test_consecutive_pair_reported_once_per_pair_and_at_the_second_node():
    text = block_text("2:ReLU\n3:ReLU\n4:Add", "0->2\n2,2->3\n2,3->4\n4->1")  # parallel edges 2->3
    result = lint_parsed(parse(text), lambda d: True)
    (d,) = result.diagnostics
    assert d.code.code == "NAD402" and d.span.line == 5 and "node 3" in d.message and "node 2" in d.message
    assert d.secondary and d.secondary[0].span.line == 4


def test_activation_pair_through_a_layer_is_fine():
    text = block_text("2:ReLU\n3:Conv2d(out_channels=C,kernel_size=1)\n4:ReLU", "0->2\n2->3\n3->4\n4->1")
    assert codes_of(text) == []


# -- NAD403 ----------------------------------------------------------------------------------

SE = """
2:AdaptiveAvgPool2d(output_size=1)
3:reshape(B,C)
4:Linear(out_channels=C)
5:Sigmoid
6:{between}
7:{gate}
"""


@pytest.mark.parametrize("between,gate,flagged", [
    ("reshape(B,C,1,1)", "Mul", False),
    ("DropPath(prob=0.1)", "Mul", False),
    ("permute(0,1)", "multiply", False),
    ("reshape(B,C,1,1)", "Add", True),
    ("Linear(out_channels=C)", "Mul", True),  # mixed by a layer first: an activation, not a gate
])
def test_sigmoid_gate(between, gate, flagged):
    text = block_text(SE.format(between=between, gate=gate), "0->2\n2->3\n3->4\n4->5\n5->6\n0,6->7\n7->1")
    assert ("NAD403" in codes_of(text)) == flagged


def test_sigmoid_through_concat_and_repeat_reaches_the_gate():
    text = block_text("2:Sigmoid\n3:Sigmoid\n4:concat(dim=1)\n5:repeat(1,1,1,1)\n6:Mul",
                      "0->2\n0->3\n2,3->4\n4->5\n0,5->6\n6->1")
    assert codes_of(text) == []


def test_sigmoid_into_output_is_flagged_but_an_unused_one_is_a_dead_node():
    assert codes_of(block_text("2:Sigmoid", "0->2\n2->1")) == ["NAD403"]
    assert codes_of(block_text("2:ReLU\n3:Sigmoid", "0->2\n0->3\n2->1")) == ["NAD206"]


# -- NAD206 (the verifier's dead-node warning) ----------------------------------------------------

def test_dead_nodes_are_reported_by_lint_as_by_verify():
    text = block_text("2:ReLU\n3:Conv2d(out_channels=C,kernel_size=3)\n4:BN", "0->2\n0->3\n3->4\n2->1")
    result = lint_parsed(parse(text), lambda d: True)
    (d,) = result.diagnostics
    assert d.code.code == "NAD206" and d.span.line == 5 and "3 (`Conv2d`), 4 (`BN`)" in d.message
    assert "drops them" in d.message
    verified = [x for x in verify_block(parse(text).program.blocks[0]).diagnostics if x.code.code == "NAD206"]
    assert [(x.span, x.message) for x in verified] == [(d.span, d.message)]
    # A lint code like the others: selectable, ignorable, suppressible on its line.
    assert codes_of(text) == ["NAD206"]
    assert not lint_parsed(parse(text), lambda d: d.code.code != "NAD206").diagnostics
    run = run_nadc(["lint", "-", "--ignore", "dead-node"], stdin=text)
    assert run.code == 0, run.stdout
    suppressed = text.replace("3:Conv2d(out_channels=C,kernel_size=3)", "3:Conv2d(out_channels=C,kernel_size=3) # nadc: ignore[NAD206]")
    assert codes_of(suppressed) == []


def test_swish_is_a_gate():
    assert codes_of(block_text("2:Sigmoid\n3:Mul", "0->2\n0,2->3\n3->1")) == []


# -- NAD404 / NAD405 -------------------------------------------------------------------------

def test_backward_edges_between_operations_only():
    assert codes_of(block_text("2:BN\n3:ReLU", "0->3\n3->2\n2->1")) == ["NAD404"]
    # input numbered above the nodes, output numbered 1: terminals are exempt
    assert codes_of("##T##\n1:output\n2:ReLU\n9:input\n9->2\n2->1\n") == []
    # the DARTS convention: 0,1 inputs, 2 output
    assert codes_of("##T##\n0:input1\n1:input2\n2:output\n3:Add\n0,1->3\n3->2\n") == []


def test_backward_edge_reported_once_per_line_at_the_source():
    text = block_text("2:ReLU\n3:ReLU\n4:ReLU\n5:Add", "0->5\n5->3\n5->4\n3,4->2\n2->1")
    result = lint_parsed(parse(text), lambda d: d.code.code == "NAD404")
    assert [(d.span.line, d.span.col) for d in result.diagnostics] == [(9, 1), (10, 1), (11, 1)]


def test_cycles_are_left_to_verify():
    assert "NAD404" not in codes_of(block_text("2:ReLU\n3:ReLU", "0->2\n3->2\n2->3\n3->1"))


def test_unsorted_node_lines_once_per_block():
    text = block_text("4:ReLU\n2:Conv2d(out_channels=C,kernel_size=3)\n3:BN\n5:Conv2d(out_channels=C,kernel_size=1)",
                      "0->2\n2->3\n3->4\n4->5\n5->1")
    result = lint_parsed(parse(text), lambda d: True)
    assert [(d.code.code, d.span.line) for d in result.diagnostics] == [("NAD405", 5)]
    assert codes_of("##T##\n1:output\n0:input\n2:ReLU\n0->2\n2->1\n") == ["NAD405"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks(with_comments=False))
def test_renumbering_fixes_order_findings(block):
    """The help of NAD404/NAD405 is right: `nadc fmt --renumber` leaves neither."""
    text = format_block(renumber(block))
    assert not {"NAD404", "NAD405"} & set(codes_of(text))


# -- NAD406 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("node,flagged", [
    ("DropPath", True), ("DropPath(prob=0)", True), ("DropPath(prob=0.0)", True), ("DropPath(0)", True),
    ("DropPath(prob=0.2)", False), ("DropPath(.3)", False),
])
def test_redundant_droppath(node, flagged):
    assert (codes_of(block_text(f"2:{node}", "0->2\n2->1")) == ["NAD406"]) == flagged


# -- front-end diagnostics -------------------------------------------------------------------

def test_front_end_warnings_are_lint_findings():
    text = "###T###\n0:input\n1:output\n2:Concat(dim=1)\n0,0->2\n2->1\n"
    assert codes_of(text) == ["NAD116", "NAD115"]
    run = run_nadc(["lint", "-", "--format", "concise", "--ignore", "NAD116"], stdin=text)
    assert run.code == 1 and "NAD115" in run.stdout and "NAD116" not in run.stdout
    run = run_nadc(["lint", "-", "--format", "concise", "--ignore", "NAD1"], stdin=text)
    assert (run.code, run.stdout) == (0, "")


def test_front_end_errors_always_shown_and_rules_skipped_on_syntax_errors():
    text = "##T##\n0:input\n1:output\n2:ReLU\n3:ReLU\n0->2\n2->3\n3-1\n"
    assert codes_of(text) == ["NAD102"]  # no NAD402: the rules do not run on a broken file
    run = run_nadc(["lint", "-", "--format", "concise", "--select", "NAD402"], stdin=text)
    assert run.code == 1 and "NAD102" in run.stdout
    # unknown operations are not syntax errors: the rules still run
    assert codes_of(block_text("2:Relu\n3:ReLU\n4:ReLU", "0->2\n2->3\n3->4\n4->1")) == ["NAD104", "NAD402"]


# -- suppression ---------------------------------------------------------------------------

def test_suppression_comments_parse():
    table = suppressions("a\n2:ReLU # nadc: ignore[NAD401, consecutive-Activation]\n3:BN  #nadc:ignore\n"
                         "4:BN # nadc: ignore[]\n5:x # nadc: ignore[NAD401] # nadc: ignore[NAD402]\n6:y # nadc\n")
    assert table == {2: frozenset({"NAD401", "consecutive-activation"}), 3: None, 4: None,
                     5: frozenset({"NAD401", "NAD402"})}


def test_suppression_applies_to_the_offending_line_only():
    text = block_text("2:ReLU  # nadc: ignore[NAD402]\n3:ReLU", "0->2\n2->3\n3->1")
    assert codes_of(text) == ["NAD402"]  # reported on line 5, the second ReLU
    text = block_text("2:ReLU\n3:ReLU  # nadc: ignore[consecutive-activation]", "0->2\n2->3\n3->1")
    assert codes_of(text) == []
    result = lint_parsed(parse(text), lambda d: True)
    assert result.suppressed == 1


def test_errors_cannot_be_suppressed():
    assert codes_of("##T##\n0:input\n1:output\n2:Frob  # nadc: ignore\n0->2\n2->1\n") == ["NAD104"]


# -- configuration ---------------------------------------------------------------------------

def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


BAD = block_text("3:BN\n2:ReLU\n4:ReLU", "0->3\n3->2\n2->4\n4->1")  # NAD404, NAD405, NAD402


def lint_codes(*argv: str, cwd=None) -> tuple[int, list[str]]:
    run = run_nadc(["lint", *argv, "--format", "json"], cwd=cwd)
    assert run.code in (0, 1, 2), run
    if run.code == 2:
        return 2, [run.stderr]
    report = json.loads(run.stdout)
    assert report["summary"]["findings"] == len(report["diagnostics"])
    return run.code, sorted(d["code"] for d in report["diagnostics"])


def test_config_is_found_walking_up_and_cli_overrides(tmp_path):
    block = write(tmp_path / "proj" / "blocks" / "deep" / "b.nad", BAD)
    assert lint_codes(str(block)) == (1, ["NAD402", "NAD404", "NAD405"])
    write(tmp_path / "proj" / "pyproject.toml", """
        [project]
        name = "x"
        [tool.nadc.lint]
        ignore = ["NAD404", "unsorted-node-lines"]
    """)
    # a pyproject.toml without the table, nearer to the file, is passed over
    write(tmp_path / "proj" / "blocks" / "pyproject.toml", "[project]\nname = 'inner'\n")
    assert lint_codes(str(block)) == (1, ["NAD402"])
    assert lint_codes(str(block), "--ignore", "NAD402") == (1, ["NAD404", "NAD405"])  # replaces the config's
    assert lint_codes(str(block), "--select", "NAD404,NAD405") == (0, [])  # config's ignore still applies
    assert lint_codes(str(block), "--select", "NAD404", "--ignore", "NAD402") == (1, ["NAD404"])
    assert lint_codes(str(block), "--isolated") == (1, ["NAD402", "NAD404", "NAD405"])
    write(tmp_path / "proj" / "blocks" / "deep" / "pyproject.toml", "[tool.nadc.lint]\nselect = ['NAD405']\n")
    assert lint_codes(str(block)) == (1, ["NAD405"])  # the nearest table wins; no merging


@pytest.mark.parametrize("config,message", [
    ("[tool.nadc.lint]\nselect = ['NAD999']\n", "`NAD999` is not a diagnostic code"),
    ("[tool.nadc.lint]\nignore = 'NAD401'\n", "must be a list of strings"),
    ("[tool.nadc.lint]\nextend = ['NAD401']\n", "unknown key `extend`"),
    ("[tool.nadc.lint\n", "invalid TOML"),
])
def test_bad_config_is_a_usage_error(tmp_path, config, message):
    block = write(tmp_path / "b.nad", BAD)
    write(tmp_path / "pyproject.toml", config)
    run = run_nadc(["lint", str(block)])
    assert run.code == 2 and message in run.stderr and "Traceback" not in run.stderr
    assert str(tmp_path / "pyproject.toml") in run.stderr or "TOML" not in message


def test_selectors():
    assert resolve_selectors(["NAD40"], "x") == frozenset(c for c in code_table() if c.startswith("NAD40"))
    assert resolve_selectors(["redundant-droppath", " nad401 "], "x") == {"NAD406", "NAD401"}
    assert "NAD101" in resolve_selectors(["ALL"], "x")
    with pytest.raises(LintConfigError):
        resolve_selectors(["NAD4x"], "x")
    default = lintable_codes()
    assert set(all_rules()) <= set(default) and {"NAD111", "NAD115", "NAD116"} <= set(default)
    assert not any(code_table()[c].severity is Severity.ERROR for c in default)


def test_stdin_config_comes_from_the_working_directory(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.nadc.lint]\nignore = ['NAD4']\n")
    run = run_nadc(["lint", "-", "--format", "concise"], cwd=tmp_path, stdin=BAD)
    assert (run.code, run.stdout) == (0, "")
    assert selection_for("-", isolated=True).select == frozenset(lintable_codes())


# -- the command ---------------------------------------------------------------------------------

def test_command_formats_and_exit_status(tmp_path):
    clean = write(tmp_path / "clean.nad", block_text("2:Conv2d(out_channels=C,kernel_size=3)\n3:BN\n4:ReLU",
                                                      "0->2\n2->3\n3->4\n4->1"))
    bad = write(tmp_path / "bad.nad", BAD)
    for fmt in ("full", "concise", "json"):
        run = run_nadc(["lint", str(clean), "--format", fmt], cwd=tmp_path)
        assert run.code == 0 and run.stderr == ""
        assert run.stdout == "" or json.loads(run.stdout)["diagnostics"] == []
    run = run_nadc(["lint", "clean.nad", "bad.nad", "--format", "concise", "--isolated"], cwd=tmp_path)
    assert run.code == 1
    assert run.stdout.splitlines() == [
        "bad.nad:5:1: warning[NAD405] node 2 is defined after node 3",
        "bad.nad:6:3: warning[NAD402] `ReLU` (node 4) directly follows `ReLU` (node 2): ReLU(ReLU(x)) adds nothing",
        "bad.nad:8:1: warning[NAD404] edge `3->2` goes from a later node to an earlier one",
    ]
    run = run_nadc(["lint", "bad.nad", "--isolated"], cwd=tmp_path)
    assert run.code == 1 and "--> bad.nad:5:1 (block T)" in run.stdout and "3 findings in 1 file" in run.stderr
    assert run_nadc(["lint"]).code == 2
    assert run_nadc(["lint", "x.nad", "--format", "xml"]).code == 2
    run = run_nadc(["lint", str(tmp_path / "missing.nad")])
    assert run.code == 1 and "NAD100" in run.stdout


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(program_texts(), mutated_texts()))
def test_lint_never_crashes(text):
    run = run_nadc(["lint", "-", "--format", "json", "--isolated"], stdin=text)
    assert run.code in (0, 1), run
    report = json.loads(run.stdout)
    assert (run.code == 1) == bool(report["diagnostics"])


# -- the rule interface --------------------------------------------------------------------------

def test_rules_needing_shapes_run_only_with_shapes(monkeypatch):
    seen = []
    fake = Code("NAD499", "fake-shape-rule", Severity.WARNING, "test", "doc")

    def check(block, ctx):
        seen.append(ctx.shapes)
        yield Finding(Span(3, 1, 3, 2), "shaped")

    monkeypatch.setitem(engine._RULES, "NAD499", Rule(fake, check, needs_shapes=True))
    result = parse(block_text("2:ReLU", "0->2\n2->1"))
    (block,) = result.program.blocks
    assert lint_block(block, LintContext("f", Role.BASE)) == [] and seen == []
    out = lint_block(block, LintContext("f", Role.BASE, shapes="SHAPES"))
    assert [d.message for d in out] == ["shaped"] and seen == ["SHAPES"]
    linted = lint_parsed(result, lambda d: True, analyze=lambda b: ("S2", []))
    assert seen[-1] == "S2" and [d.code.code for d in linted.diagnostics] == ["NAD499"]


def test_context_helpers_and_verification_flags():
    result = parse(block_text("2:ReLU\n3:Add", "0->2\n0,2->3\n3->1"))
    (block,) = result.program.blocks
    from nader.compiler.passes.verify import verify_block
    ctx = LintContext("f", Role.BASE, block=block,
                      verification=verify_block(block, file="f").diagnostics)
    assert ctx.inputs(3) == [0, 2] and ctx.consumers(0) == [2, 3] and ctx.op(9) is None
    assert not ctx.verified("NAD2")
    broken = parse(block_text("2:ReLU\n3:ReLU", "0->2\n2->1")).program.blocks[0]
    ctx = LintContext("f", Role.BASE, block=broken, verification=verify_block(broken, file="f").diagnostics)
    assert ctx.verified("NAD206", broken.node(3)) and not ctx.verified("NAD206", broken.node(2))


# -- the corpus and the pre-commit hooks -----------------------------------------------------------

def test_corpus_lints_without_false_alarms():
    shared = shared_dir()
    if shared is None:
        pytest.skip("NADER compatibility corpus not found")
    found: dict[str, int] = {}
    for path in sorted((shared / "nader-compat" / "blocks").glob("*.txt")):
        for d in lint_parsed(parse(path.read_text(encoding="utf-8"), str(path)), lambda d: True).diagnostics:
            found[d.code.code] = found.get(d.code.code, 0) + 1
    # NADER's files: bare `DropPath` in DARTS cells (prob 0: the identity), the ResNet blocks'
    # final ReLU numbered before its Add, and one `Concat`. Its SE gates (Sigmoid -> reshape ->
    # Mul) are recognised; no activation or normalization pairs.
    assert found == {"NAD406": 29, "NAD404": 15, "NAD115": 1}


def test_pre_commit_hooks():
    yaml = pytest.importorskip("yaml")
    hooks = {h["id"]: h for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"nadc-lint", "nadc-fmt", "nadc-verify"}
    assert hooks["nadc-lint"]["entry"] == "nadc lint" and hooks["nadc-fmt"]["entry"] == "nadc fmt --check"
    assert hooks["nadc-verify"]["entry"] == "nadc verify"
    for hook in hooks.values():
        program, command = hook["entry"].split()[:2]
        assert program == "nadc" and command in COMMANDS and hook["language"] == "python"
        files = re.compile(hook["files"])
        assert files.search("blocks/resnet.nad") and not files.search("requirements.txt")
        assert not files.search("a.nad.bak")
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    assert re.search(r'^nadc = "nader\.compiler\.cli:main"', pyproject, re.M)
    run = run_nadc(["fmt", "--help"])
    assert run.code == 0 and "--check" in run.stdout


def test_a_block_that_does_not_verify_passes_lint_and_fmt_but_not_the_verify_hook(tmp_path):
    yaml = pytest.importorskip("yaml")
    hooks = {h["id"]: h for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())}
    block = tmp_path / "halves.nad"  # a base block that halves H and W: style is fine, the shapes are not
    block.write_text("##Halves##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3,stride=2)\n3:BN\n"
                     "0->2\n2->3\n3->1\n", encoding="utf-8")
    codes = {}
    for hook_id, hook in hooks.items():  # run as pre-commit does: the entry, then the staged files
        codes[hook_id] = run_nadc([*hook["entry"].split()[1:], str(block)]).code
    assert codes == {"nadc-lint": 0, "nadc-fmt": 0, "nadc-verify": 1}
