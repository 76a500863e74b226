"""Fix hints that fix: every machine-applicable fix, applied, removes its diagnostic and adds no syntax error.

Diagnostics come from the front end and the verifier (the only producers of fixes). For each
diagnostic that carries a fix, the fix is applied to the text and the text is checked again:

* the diagnostic is gone: fewer diagnostics with its code and message than before;
* no new syntax error: the syntax diagnostics after are a sub-multiset of those before
  (compared by code and message, since an inserted line moves the lines below it).

Inputs: the golden fixtures, a list of typical slips (one per fixable code at least), and
random mutations of generated blocks.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strategies import sound_blocks, with_named_ids
from text_strategies import mutated, mutated_texts
from nader.compiler.codes import code_table
from nader.compiler.passes.verify import verify_program
from nader.dsl.diagnostics import Diagnostic, Fix, FixAvailability, apply_fix
from nader.dsl.format import format_block
from nader.dsl.parse_codes import SYNTAX_CODES
from nader.dsl.parser import parse

GOLDEN = Path(__file__).resolve().parent / "golden"

CLEAN = "##A##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3)\n3:BN\n0->2\n2->3\n3->1\n"

#: Typical slips, each a whole file; together they reach every code that can carry a fix.
SLIPS = [
    CLEAN.replace("0->2", "0-2"),
    CLEAN.replace("0->2", "0 2"),
    CLEAN.replace("0->2", "0=>2  # wire"),
    CLEAN.replace("0->2", "0\u21922"),
    CLEAN.replace("0->2", "0<-2"),  # reversed: advice only
    CLEAN.replace("3:BN", "3 BN"),
    CLEAN.replace("3:BN", "3BN"),
    CLEAN.replace("3:BN", "conv1 BN").replace("->3", "->conv1").replace("3->", "conv1->"),
    CLEAN.replace("3:BN", "b-n:BN"),
    CLEAN.replace("kernel_size=3)", "kernel_size=3"),
    CLEAN.replace("kernel_size=3)", "kernel_size=(1,3)"),  # adding one `)` is not enough: advice
    CLEAN.replace("3:BN", "3:BN)"),
    CLEAN.replace("Conv2d", "Conv2D"),
    CLEAN.replace("Conv2d", "Konvolution"),  # nothing close: advice
    CLEAN.replace("kernel_size=3", "kernel_size=3,group=1"),
    CLEAN.replace("kernel_size=3", "kernel_size=3,groups=1,group=1"),  # `groups` is given: advice
    CLEAN.replace("out_channels=C", "out_channels=c"),
    CLEAN.replace("##A##", "##A"),
    CLEAN.replace("##A##", "##Bad name!##"),
    CLEAN.replace("##A##", "###A###"),
    CLEAN.replace("3:BN", "3:Concat"),
    "```\n" + CLEAN + "```\n",
    "```text\n" + CLEAN + "2:ReLU ```\n",
    CLEAN.replace("##A##\n", ""),
    CLEAN.replace("3:BN", "2:BN"),
    CLEAN.replace("1:output\n", ""),
    CLEAN.replace("0:input\n", ""),
    CLEAN.replace("0:input", "0:input1"),
    "0 2\n" + CLEAN,  # mended, it would sit above the first header: advice
    "0:input\n##A\n1:output\n0->1\n",  # mended, the header would leave line 1 above it: advice
    "##A##\n0:input\n1:output\n2:ReLU\n0->2\n2->1",  # no final newline; NAD204 appends after it
]


def diagnostics_of(text: str) -> list[Diagnostic]:
    parsed = parse(text, "input.nad")
    reports, file_level = verify_program(parsed)
    found = list(file_level)
    for report in reports:
        found += report.diagnostics
    return found


def _key(d: Diagnostic) -> tuple[str, str]:
    return (d.code.code, d.message)


def check_fixes(text: str) -> list[str]:
    """Applies each fix of `text`'s diagnostics in turn; returns the codes fixed."""
    before = diagnostics_of(text)
    counts = Counter(_key(d) for d in before)
    syntax = Counter(_key(d) for d in before if d.code in SYNTAX_CODES)
    fixed = []
    for d in before:
        if d.fix is None:
            continue
        after_text = apply_fix(text, d.fix)
        assert after_text != text, d
        after = diagnostics_of(after_text)
        assert Counter(_key(a) for a in after)[_key(d)] < counts[_key(d)], (
            f"fix of {d.code} `{d.message}` did not remove it\n--- before\n{text}\n--- after\n{after_text}")
        new_syntax = Counter(_key(a) for a in after if a.code in SYNTAX_CODES) - (syntax - Counter([_key(d)]))
        assert not new_syntax, (f"fix of {d.code} `{d.message}` brought {dict(new_syntax)}"
                                f"\n--- before\n{text}\n--- after\n{after_text}")
        fixed.append(d.code.code)
    return fixed


def _text(path: Path):
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:  # NAD100's fixture is not text
        return None


GOLDEN_TEXTS = {f"{p.parent.name}/{p.name}": text for p in sorted(GOLDEN.glob("*/*.nad"))
                if (text := _text(p)) is not None}


@pytest.mark.parametrize("name", sorted(GOLDEN_TEXTS))
def test_fixes_fix_the_golden_fixtures(name: str):
    check_fixes(GOLDEN_TEXTS[name])


def test_every_code_that_declares_fixes_has_one_exercised():
    """Each code that says it carries fixes does, on the fixtures and slips: the test above is not vacuous."""
    fixed = set()
    for text in list(GOLDEN_TEXTS.values()) + SLIPS:
        fixed.update(check_fixes(text))
    declared = {c for c, entry in code_table().items() if entry.fix is not FixAvailability.NEVER}
    assert declared == fixed, f"declared but never exercised: {declared - fixed}; undeclared: {fixed - declared}"


@pytest.mark.parametrize("text", SLIPS)
def test_fixes_fix_typical_slips(text: str):
    check_fixes(text)


# Help text that proposes text to write must come with the fix that writes it.
_PROPOSES = re.compile(r"\b(write|did you mean|add a node|add) `")


def _check_declarations(diagnostics: list[Diagnostic]) -> None:
    for d in diagnostics:
        if d.code.fix is FixAvailability.NEVER:
            assert d.fix is None, d
        if d.code.fix is FixAvailability.ALWAYS:
            assert d.fix is not None, d
        if d.help and _PROPOSES.search(d.help):
            assert d.fix is not None, f"{d.code}: help `{d.help}` proposes text but carries no fix"


def test_fixes_follow_the_code_table_on_slips_and_fixtures():
    for text in list(GOLDEN_TEXTS.values()) + SLIPS:
        _check_declarations(diagnostics_of(text))


def test_advice_where_a_fix_would_not_be_certain():
    by_text = {text: diagnostics_of(text) for text in SLIPS}
    reversed_edge = next(d for d in by_text[CLEAN.replace("0->2", "0<-2")] if d.code.code == "NAD102")
    assert reversed_edge.fix is None and "`" in reversed_edge.help and "write `" not in reversed_edge.help
    above_header = next(d for d in by_text["0 2\n" + CLEAN] if d.code.code == "NAD102")
    assert above_header.fix is None
    unknown = next(d for d in by_text[CLEAN.replace("Conv2d", "Konvolution")] if d.code.code == "NAD104")
    assert unknown.fix is None


def test_a_fix_is_an_edit_of_the_reported_line():
    (d,) = parse(CLEAN.replace("0->2", "0-2")).diagnostics
    assert d.fix.edits == Fix.replace(d.fix.edits[0].span, "->").edits and d.fix.edits[0].span.line == d.span.line
    assert apply_fix(CLEAN.replace("0->2", "0-2"), d.fix) == CLEAN
    assert d.to_json()["fix"] == {"kind": "edge-arrow", "safety": "safe", "message": "replace `-` with `->`",
                                  "edits": [{"line": 6, "col": 2, "end_line": 6, "end_col": 3, "text": "->"}]}


def test_a_json_fix_applies_as_read_back():
    """`apply_fix(text, Fix.from_json(diag["fix"]))` (issue 30, point 5), through JSON text."""
    broken = CLEAN.replace("0->2", "0-2").replace("kernel_size", "kernel_sise")
    diags = [d for d in parse(broken).diagnostics if d.fix is not None]
    assert len(diags) == 2
    text = broken
    for d in sorted(diags, key=lambda d: d.span, reverse=True):
        text = apply_fix(text, Fix.from_json(json.loads(json.dumps(d.to_json()))["fix"]))
    assert text == CLEAN
    assert Fix.from_json(diags[0].fix.to_json()) == diags[0].fix


@pytest.mark.parametrize("bad", [{}, {"edits": [{"line": 1}]}, {"edits": [{"line": 0, "col": 1, "end_line": 1,
                                 "end_col": 1, "text": ""}]}, {"edits": [], "safety": "maybe"}, {"edits": 3}])
def test_a_malformed_json_fix_is_refused(bad):
    with pytest.raises(ValueError):
        Fix.from_json(bad)


FIX_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@FIX_SETTINGS
@given(mutated_texts(max_blocks=2))
def test_fixes_fix_mutated_blocks(text):
    diagnostics = diagnostics_of(text)
    _check_declarations(diagnostics)
    check_fixes(text)


@FIX_SETTINGS
@given(sound_blocks(max_steps=5).flatmap(lambda b: st.one_of(st.just(b), with_named_ids(b)))
       .map(format_block).flatmap(mutated))
def test_fixes_fix_mutated_sound_blocks(text):
    _check_declarations(diagnostics_of(text))
    check_fixes(text)
