"""`nadc grammar`: the grammar for constrained decoding only derives text the front end accepts.

The grammar is a promise to an LLM server: whatever a sampler constrained by it writes, nadc
parses without a syntax error. The samples here are drawn by walking the generated rules (the
one rule set all three formats are rendered from) with a seeded random walk of bounded depth,
and each one goes through the real parser.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_nadc
from nader.compiler.grammar_export import FORMATS, ROOT, Alt, Chars, Lit, Ref, Rep, Seq, op_rule, render_grammar, rules
from nader.dsl.ops import REGISTRY
from nader.dsl.parser import parse

MAX_DEPTH = 14
# Characters a negated class may draw from: punctuation the language uses, quotes, non-ASCII.
_POOL = " \t#-_.,:;()=+*/'\"\\[]^{}aZ09é中→"


def _cheapest(g: dict):
    """The least depth each rule needs to finish (a fixed point), so a deep walk can wind down."""
    depth = {name: float("inf") for name in g}

    def cost(e) -> float:
        if isinstance(e, (Lit, Chars)):
            return 0
        if isinstance(e, Ref):
            return depth[e.name] + 1
        if isinstance(e, Seq):
            return max(cost(i) for i in e.items)
        if isinstance(e, Alt):
            return min(cost(i) for i in e.items)
        return 0 if e.min == 0 else cost(e.item)

    changed = True
    while changed:
        changed = False
        for name, body in g.items():
            value = cost(body)
            if value < depth[name]:
                depth[name], changed = value, True
    assert all(v < float("inf") for v in depth.values()), "a rule that can never finish"
    return cost


class Sampler:
    def __init__(self, seed: int, reply: bool = False, parent=None, **kwargs):
        self.g = rules(reply, parent, **kwargs)
        self.cost = _cheapest(self.g)
        self.rng = random.Random(seed)

    def sample(self, e=None, depth: int = 0) -> str:
        e = Ref(ROOT) if e is None else e
        rng = self.rng
        if isinstance(e, Lit):
            return e.text
        if isinstance(e, Chars):
            return self._char(e)
        if isinstance(e, Ref):
            return self.sample(self.g[e.name], depth + 1)
        if isinstance(e, Seq):
            return "".join(self.sample(i, depth) for i in e.items)
        if isinstance(e, Alt):
            items = e.items
            if depth > MAX_DEPTH:
                least = min(self.cost(i) for i in items)
                items = [i for i in items if self.cost(i) == least]
            return self.sample(rng.choice(items), depth)
        count = e.min if depth > MAX_DEPTH else e.min + rng.choice((0, 0, 1, 1, 2, 3))
        if e.max is not None:
            count = min(count, e.max)
        return "".join(self.sample(e.item, depth) for _ in range(count))

    def _char(self, c: Chars) -> str:
        inside = [chr(code) for a, b in c.ranges for code in range(ord(a), ord(b) + 1)]
        if c.negated:
            return self.rng.choice([ch for ch in _POOL if ch not in inside])
        return self.rng.choice(inside)


_FILES, _LINES = Sampler(2026), Sampler(23)
SAMPLES = [_FILES.sample() for _ in range(300)]
# Whole files hold few node lines, so node lines are also drawn alone, in blocks of 40.
NODE_LINES = [_LINES.sample(Ref("node-line")) for _ in range(1200)]
NODE_BLOCKS = [f"##B{i}##\n" + "\n".join(NODE_LINES[i:i + 40]) + "\n" for i in range(0, len(NODE_LINES), 40)]
_REPLY_SAMPLER = Sampler(7, reply=True)  # one sampler: a new one per sample would draw the same text
REPLIES = [_REPLY_SAMPLER.sample() for _ in range(200)]
NODE = re.compile(r"^[A-Za-z0-9_]+:([A-Za-z0-9]+)(?:\((.*)\))?", re.M)


def _nad1xx(text: str) -> list[str]:
    return [f"{d.code.code} {d.message}" for d in parse(text).diagnostics if d.code.code.startswith("NAD1")]


def test_every_sample_of_the_grammar_parses_without_front_end_diagnostics():
    for text in SAMPLES + NODE_BLOCKS:
        problems = _nad1xx(text)
        assert not problems, f"{text!r}: {problems}"
        lines = text.split("\n")
        blocks = parse(text).program.blocks
        assert len(blocks) == sum(1 for line in lines if line.startswith("##")), text
        assert sum(len(b.nodes) for b in blocks) == sum(1 for line in lines if NODE.match(line)), text


def test_every_sample_is_a_program_of_the_compilers_own_grammar():
    """The line forms agree with grammar/nad.lark, not only with the front end's fast path."""
    from nader.dsl.parser import grammar_parser

    program = grammar_parser()
    for text in SAMPLES + NODE_BLOCKS:
        program.parse(text, start="program")


def test_samples_reach_every_operation_and_parameter():
    """The walk is not stuck in a corner: every operation and every keyword parameter shows up."""
    seen_ops, seen_params = set(), set()
    for text in SAMPLES + NODE_BLOCKS:
        for op, args in NODE.findall(text):
            seen_ops.add(op)
            seen_params |= {(op, name) for name in re.findall(r"([A-Za-z_]+)=", args)}
    assert seen_ops == {d.name for d in REGISTRY.values()}
    keywords = {(d.name, p.name) for d in REGISTRY.values() for p in d.params if not p.variadic}
    assert seen_params == keywords


def _keywords_of(e) -> set[str]:
    """The names written before `=` in an operation's rule."""
    if isinstance(e, Seq):
        items = e.items
        found = {a.text for a, b in zip(items, items[1:]) if isinstance(a, Lit) and b == Lit("=")}
        return found.union(*(_keywords_of(i) for i in items))
    if isinstance(e, Alt):
        return set().union(*(_keywords_of(i) for i in e.items))
    if isinstance(e, Rep):
        return _keywords_of(e.item)
    return set()


def test_each_operation_rule_allows_exactly_its_declared_keywords():
    g = rules()
    gbnf = render_grammar("gbnf")
    for d in REGISTRY.values():
        assert f'"{d.name}"' in gbnf
        rule = g[op_rule(d)]
        assert _keywords_of(rule) == {p.name for p in d.params if not p.variadic}, d.name


@pytest.fixture(scope="module")
def lark_parser():
    import lark

    return lark.Lark(render_grammar("lark"))


@pytest.mark.parametrize("line", [
    "0:Conv2d(foo=1)",
    "0:Linear(kernel_size=3)",  # a parameter of another operation
    "0:Conv2d(out_channels=C,kernel_size=3,out_channels=C)",  # twice
    "0:Conv2d(kernel_size=3)",  # out_channels is required
    "0:Conv(out_channels=C,kernel_size=3)",  # not an operation
    "0:Conv2d(out_channels=H,kernel_size=3)",  # channels do not depend on H
    "0:ReLU()",
    "0-1",
    "0:permute(dims=1)",
])
def test_the_lark_grammar_rejects_what_the_registry_does_not_declare(lark_parser, line):
    import lark

    with pytest.raises(lark.exceptions.LarkError):
        lark_parser.parse(f"##A##\n{line}\n")


def test_the_lark_grammar_accepts_the_examples_and_samples(lark_parser):
    examples = sorted((REPO_ROOT / "examples").glob("*.nad"))
    assert examples
    for path in examples:
        lark_parser.parse(Path(path).read_text())
    for text in SAMPLES[:25]:
        lark_parser.parse(text)


def test_the_gbnf_text_is_well_formed():
    rule_line = re.compile(r"^([a-z-]+) +::= (.+)$")  # letters and dashes: what every reader takes
    defined, referenced = [], set()
    for line in render_grammar("gbnf").splitlines():
        if line.startswith("#"):
            continue
        match = rule_line.match(line)
        assert match, line
        defined.append(match.group(1))
        # Names outside string literals and character classes (with their escapes) are references.
        body = re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', " ", match.group(2))
        assert body.count("(") == body.count(")"), line
        assert not re.search(r"[^a-z\- ()|*+?]", body), line
        assert not re.search(r"[*+?]{2}", body), line
        referenced |= set(re.findall(r"[a-z-]+", body))
    assert "root" in defined
    assert len(defined) == len(set(defined))
    assert referenced <= set(defined)


@pytest.mark.parametrize("fmt", FORMATS)
def test_nadc_grammar_prints_each_format(fmt):
    run = run_nadc(["grammar", "--format", fmt])
    assert run.code == 0 and run.stdout == render_grammar(fmt)
    assert "Conv2d" in run.stdout and "out_channels" in run.stdout
    reply = run_nadc(["grammar", "--format", fmt, "--reply"])
    assert reply.code == 0 and reply.stdout == render_grammar(fmt, reply=True) != run.stdout


def test_every_reply_sample_parses_and_is_all_blocks_of_nodes_and_edges(lark_parser):
    """The reply grammar is a subset of the language's: one block, no comment, no blank line, a
    line under the header, and each sample parses with the full grammar and the front end."""
    for text in REPLIES:
        assert not _nad1xx(text), text
        lines = text.split("\n")
        assert lines[-1] == "" and all(lines[:-1]), text
        assert all(line.startswith("##") or NODE.match(line) or "->" in line for line in lines[:-1]), text
        assert "#" not in text.replace("##", ""), text
        (block,) = parse(text).program.blocks
        assert block.nodes or block.edges, text
        lark_parser.parse(text)


def test_the_reply_grammar_refuses_comments_blank_lines_and_a_second_block():
    import lark

    reply = lark.Lark(render_grammar("lark", reply=True))
    reply.parse("##A##\n0:input\n1:output\n0->1\n")
    for text in ("##A##\n# a comment\n0->1\n", "##A##\n\n0->1\n", "##A##\n0->1  # why\n", "##A##\n",
                 "##A##\n0->1\n##B##\n0->1\n", "##A block##\n0->1\n"):
        with pytest.raises(lark.exceptions.LarkError):
            reply.parse(text)


def test_nadc_grammar_rejects_an_unknown_format():
    run = run_nadc(["grammar", "--format", "yaml"])
    assert run.code == 2 and "yaml" in run.stderr
