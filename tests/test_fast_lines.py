"""The front end's fast path reads exactly what the grammar's parser reads.

nader.dsl.fast_lines reads the regular line forms with regular expressions and leaves every
other line to Lark. Differential tests: for generated blocks (with integer and named ids,
respelled with blanks, damaged by random edits), near-miss lines, every fixture of the test
suite and every block of the NADER corpus, the fast path either declines a line or gives what
Lark gives (raw pieces, IR, value types, column spans, diagnostics), and a whole file parses to
the same program and diagnostics with and without it.
"""
from __future__ import annotations

from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import program_texts, programs, sound_blocks, with_named_ids
from text_strategies import compat_texts, mutated_texts, noisy

from nader.dsl import parser as parser_module
from nader.dsl.fast_lines import read_line
from nader.dsl.format import format_block, format_program
from nader.dsl.ir import Program
from nader.dsl.lark_parser import read_alone
from nader.dsl.parser import Problem, _finish, parse, parse_line

TESTS = Path(__file__).resolve().parent


def spelled(value) -> object:
    """Everything about a value, spans and value types included (IR equality ignores spans)."""
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [spelled(v) for v in value]]
    if hasattr(value, "__dataclass_fields__"):
        return [type(value).__name__, {name: spelled(getattr(value, name)) for name in value.__dataclass_fields__
                                       if name not in ("opdef", "op")}]  # derived from op_name
    if isinstance(value, dict):
        return {k: spelled(v) for k, v in value.items()}
    return [type(value).__name__, repr(value)]


def fast_line_agrees(text: str) -> bool:
    """Whether the fast path read `text`; when it did, Lark reads the same."""
    fast = read_line(text)
    if fast is None:
        return False
    lark = read_alone(text)
    assert type(lark) is not Problem, (text, lark)
    assert spelled(fast) == spelled(lark), text
    assert spelled(_finish(text, fast)) == spelled(_finish(text, lark)), text
    return True


def parse_both(text: str) -> None:
    """The file parses to the same program and diagnostics with the fast path and with Lark alone."""
    parse_line.cache_clear()
    fast = parse(text, "f.nad")
    parse_line.cache_clear()
    with mock.patch.object(parser_module, "read_line", lambda line: None):
        lark = parse(text, "f.nad")
    parse_line.cache_clear()
    assert spelled(fast.program) == spelled(lark.program), text
    assert spelled(fast.diagnostics) == spelled(lark.diagnostics), text
    for line in text.replace("\r", "").split("\n"):
        if line.strip(" \t\f"):
            fast_line_agrees(line)


@st.composite
def named_id_texts(draw) -> str:
    program = draw(programs(max_blocks=2))
    return format_program(Program(tuple(draw(with_named_ids(b)) for b in program.blocks)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(program_texts(max_blocks=2), named_id_texts(), sound_blocks().map(format_block),
                 program_texts(max_blocks=2).flatmap(noisy), mutated_texts(max_blocks=2)))
@example("##A##\n2:DropPath(1e-05)\n3:Conv2d(out_channels=-(C//2)*(2),kernel_size=((3)))\n"
         "4:reshape((B),-(1),(H)*W)  # x\n2a,conv_1 -> x_3\t# y\n")
def test_files_parse_the_same_with_and_without_the_fast_path(text):
    parse_both(text)


VALID = ["##A##", "###B_stem### # c", "## C ##", "0:input", "conv_1:BN", "2a : ReLU ( )",
         "2:Conv2d(out_channels=C,kernel_size=3,stride=1)", "6:Conv2d(out_channels=dim*2,kernel_size=(1,3),groups=C//4)",
         "7:permute(0,2,3,1)", "8:reshape(B,-1,H*W)", "9:DropPath(prob=0.2)", "9:DropPath(1e-5)", "10:Concat(dim=1)",
         "0->2", "0,1->5", "a , b->c # w", "# comment", "11:mean(dim=(2,3)) # m", "12:x((1),-(-2)-3//(4/5))",
         "13:mean(dim=( -1 , - C ))", "14:f(a*-b,- 1,-a-b)", "7->13->1", "0 , 2->3 -> c_1->4 # chain"]
TRICKY = "0123456789:,->#()=*/+ \t\f\r\v.eE_aZCdimHW`~\u0663\u00a0x"


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(VALID), st.lists(st.tuples(st.sampled_from(["insert", "delete", "replace"]),
                                                  st.integers(0, 60), st.sampled_from(TRICKY)), max_size=3))
def test_near_miss_lines_are_declined_or_read_as_lark_reads_them(line, edits):
    for kind, at, ch in edits:
        at = min(at, len(line))
        line = line[:at] + ("" if kind == "delete" else ch) + line[at + (kind != "insert"):]
    fast_line_agrees(line)


def test_the_fast_path_declines_what_the_grammar_reads_otherwise():
    for line in ("2:Conv2d(out_channels=C,,kernel_size=3)", "0-2", "2:Conv2d(out_channels=C", "2 ReLU",
                 "2:ReLU x", "##A", "##A## ##", "2:f(1.)", "2:f(.5)", "2:f(2C)", "2:f(1e)", "2:f(C/ /2)",
                 "2:f((1,2)+3)", "2:f(a=(1,(2,3)))", "0->1->", "0->1,2->3", "2:f(1)\r", "2:f(\u0663)", "", "   ",
                 "2:f(" + "-" * 60 + "1)", "###B### `# c", "##A## x", "0->1 `#"):
        assert read_line(line) is None, line


def fixture_texts() -> list[tuple[str, str]]:
    """Every block file of the test suite (golden inputs included); undecodable bytes replaced."""
    return [(str(p.relative_to(TESTS)), p.read_bytes().decode("utf-8", errors="replace"))
            for p in sorted(TESTS.rglob("*.nad"))]


def test_every_fixture_parses_the_same_with_and_without_the_fast_path():
    texts = fixture_texts()
    assert len(texts) > 20
    for _, text in texts:
        parse_both(text)


def test_the_corpus_parses_the_same_and_the_fast_path_reads_nearly_all_of_it(compat_dir):
    lines = set()
    for _, text in compat_texts(compat_dir):
        parse_both(text)
        lines.update(line for line in text.replace("\r", "").split("\n") if line.strip(" \t\f"))
    accepted = [line for line in lines if type(read_alone(line)) is not Problem]
    read = sum(fast_line_agrees(line) for line in accepted)
    assert read >= 0.95 * len(accepted), (read, len(accepted))
