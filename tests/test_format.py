"""The canonical form (`nader.dsl.format`, `nadc fmt`) and the language reference.

Properties: formatting round-trips every program the strategies generate and
every NADER block (IR equality ignores spans), is idempotent, maps noisy
spellings to the canonical text, and `--renumber` keeps the graph up to a
renaming of the ids.
"""
from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT, run_nadc
from nader.dsl import parse
from nader.dsl.format import duplicate_ids, format_program, format_source, id_map, renumber
from nader.dsl.ir import Block
from nader.dsl.ops import Op, reference_text
from strategies import blocks, programs, sound_blocks
from text_strategies import compat_texts, mutated_texts, noisy

# Generating a program takes many draws; these counts keep the file near 20 s.
MANY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fmt(text: str, **options) -> str:
    result = format_source(text, **options)
    assert result.ok, (result.error, [d.message for d in result.diagnostics])
    return result.text


# -- round trip ------------------------------------------------------------------

@MANY
@given(programs(unknown_ops=True, wild_args=True))
def test_parse_of_format_is_identity_and_format_is_idempotent(program):
    text = format_program(program)
    result = parse(text)
    assert result.syntax_ok, [d.message for d in result.diagnostics]
    assert result.program == program
    assert format_program(result.program) == text
    assert fmt(text) == text
    _assert_canonical_layout(text)


def _assert_canonical_layout(text: str) -> None:
    assert text.endswith("\n") and "\r" not in text
    assert "\n\n" not in text  # no blank lines anywhere
    for line in text.splitlines():
        if not line.startswith("#"):
            code = line.split("  #")[0]
            assert " " not in code or code.startswith("##"), line
            assert not re.match(r"^#{3,}", line)


@SOME
@given(sound_blocks())
def test_sound_blocks_round_trip_and_verify(block):
    """The shared `sound_blocks` strategy keeps its promise: every block it makes verifies."""
    from nader.compiler.passes.verify import verify_block

    parsed = parse(format_program(_program(block)))
    assert parsed.program.blocks == (block,)
    report = verify_block(parsed.program.blocks[0])
    assert report.ok, [d.message for d in report.diagnostics]


def _program(block: Block):
    from nader.dsl.ir import Program

    return Program((block,))


# -- noise ------------------------------------------------------------------------

@SOME
@given(programs(unknown_ops=True).map(format_program).flatmap(lambda text: st.tuples(st.just(text), noisy(text))))
def test_noisy_spellings_format_to_the_canonical_text(pair):
    canonical, spelled = pair
    assert fmt(spelled) == canonical


def test_crlf_trailing_blanks_tabs_and_extra_hashes():
    source = ("###Block###  \r\n"
              "\t0:input\t\r\n"
              "1 : output   \r\n"
              "2:Conv2d( out_channels = C*2 ,\tkernel_size=(1, 3) )   # wide  \r\n"
              "\r\n"
              "3:Concat(dim=1)\r\n"
              "4:BN()\r\n"
              "  # then\r\n"
              "0 , 2 -> 3\r\n"
              "0->2\r\n"
              "3->4\r\n"
              "4->1")
    assert fmt(source) == textwrap.dedent("""\
        ##Block##
        0:input
        1:output
        2:Conv2d(out_channels=C*2,kernel_size=(1,3))  # wide
        3:concat(dim=1)
        4:BN
        # then
        0,2->3
        0->2
        3->4
        4->1
        """)


def test_expressions_print_with_minimal_parentheses():
    source = "##E##\n2:reshape(((B)),(C)*(H*W),-(1),dim-(C-1),(C/2)/2,C/(2/1),-(-1),1.50,2e3)\n"
    assert fmt(source) == "##E##\n2:reshape(B,C*(H*W),-1,dim-(C-1),C/2/2,C/(2/1),--1,1.5,2000.0)\n"


def test_comments_keep_their_places():
    source = textwrap.dedent("""\
        # about the file
        ##A##   # the header
        # before input
        0:input
        1:output  # sink
        0->1
        # last words
        """)
    assert fmt(source) == source.replace("##A##   #", "##A##  #")


def test_blocks_follow_each_other_without_blank_lines():
    source = "##A##\n0:input\n1:output\n0->1\n\n\n##B##\n0:input\n1:output\n0->1\n"
    assert fmt(source) == source.replace("\n\n\n", "\n")


def test_file_without_header_gets_one_named_after_the_file():
    result = format_source("0:input\n1:output\n0->1\n", "some dir/my+block.txt")
    assert result.text == "##my_block##\n0:input\n1:output\n0->1\n"


def test_unknown_operations_and_parameters_are_formatted_as_written():
    source = "##U##\n2:Conv3d( k = 3 )\n3:Conv2d(kernal_size=3)\n"
    assert fmt(source) == "##U##\n2:Conv3d(k=3)\n3:Conv2d(kernal_size=3)\n"


@pytest.mark.parametrize("source", [
    "##A##\n2:Conv2d(out_channels=C,,kernel_size=3)\n",
    "##A##\n0-2\n",
    "```\n##A##\n0:input\n```\n",
    "##A##\n2:Conv2d(out_channels=C\n",
    "",
])
def test_syntax_errors_are_refused(source):
    result = format_source(source)
    assert not result.ok and result.text is None
    assert result.diagnostics and all(d.is_error for d in result.diagnostics)


def test_a_number_that_cannot_be_printed_is_refused_not_corrupted():
    result = format_source("##A##\n2:DropPath(prob=1e999)\n")
    assert not result.ok and "parse back" in result.error


@SOME
@given(mutated_texts())
def test_mutated_texts_never_raise(text):
    result = format_source(text)
    if result.ok:
        assert parse(result.text).program == result.parsed.program
        assert fmt(result.text) == result.text
    else:
        assert result.diagnostics or result.error


# -- NADER's own files ---------------------------------------------------------

def test_compat_blocks_keep_their_meaning(compat_dir):
    texts = compat_texts(compat_dir)
    assert len(texts) >= 30
    unchanged = 0
    for where, text in texts:
        parsed = parse(text)
        assert parsed.syntax_ok, where
        formatted = fmt(text)
        assert parse(formatted).program == parsed.program, where
        assert fmt(formatted) == formatted, where
        unchanged += formatted == text.rstrip("\n") + "\n"
        renumbered = fmt(text, renumber_ids=True)
        assert fmt(renumbered, renumber_ids=True) == renumbered, where
    # NADER's style is the canonical one: only aliases, `###X###` headers and stray blanks change.
    assert unchanged >= 0.8 * len(texts)


def test_a_nader_file_is_canonical_but_for_the_final_newline(compat_dir):
    text = (compat_dir / "blocks" / "blocks__resnet_base.txt").read_text(encoding="utf-8")
    assert fmt(text) == text.rstrip("\n") + "\n"


# -- renumbering --------------------------------------------------------------------

def _graph(block: Block, mapping=None):
    rename = (lambda i: mapping[i]) if mapping else (lambda i: i)
    nodes = {rename(n.id): (n.op_name, n.args) for n in block.nodes}
    edges = [(tuple(rename(s) for s in e.sources), rename(e.target)) for e in block.edges]
    return nodes, edges


@MANY
@given(blocks(unknown_ops=True))
def test_renumber_preserves_the_graph_up_to_renaming(block):
    mapping = id_map(block)
    new = renumber(block)
    assert collections.Counter((n.op_name, n.args) for n in new.nodes) == \
        collections.Counter((n.op_name, n.args) for n in block.nodes)
    assert _graph(new) == _graph(block, mapping)
    assert [n.id for n in new.nodes] == list(range(len(block.nodes)))
    ops = [n.op for n in new.nodes]
    sources = [op for op in ops if op in (Op.INPUT, Op.INPUT1, Op.INPUT2)]
    assert ops[:len(sources) + 1] == sorted(sources, key=lambda op: op.value) + [Op.OUTPUT]
    # The rest is numbered in a topological order.
    terminals = len(sources) + 1
    for e in new.edges:
        for s in e.sources:
            if s >= terminals and e.target >= terminals:
                assert s < e.target
    assert renumber(new) == new  # idempotent
    assert parse(format_program(_program(new))).program.blocks == (new,)


def test_renumber_example_with_comments_and_operand_order():
    source = textwrap.dedent("""\
        ##Cell##
        9:output
        # first
        7:input2
        3:input1
        5:concat(dim=1)  # join
        4:ReLU
        3->4
        7,4->5
        5->9
        """)
    assert fmt(source, renumber_ids=True) == textwrap.dedent("""\
        ##Cell##
        0:input1
        # first
        1:input2
        2:output
        3:ReLU
        4:concat(dim=1)  # join
        0->3
        1,3->4
        4->2
        """)


def test_renumber_survives_cycles_duplicates_and_undefined_ids():
    block = parse("##A##\n5:input\n6:output\n2:ReLU\n3:ReLU\n2:BN\n5->2\n2->3\n3->2\n3->6\n8->6\n").program.blocks[0]
    assert duplicate_ids(block) == [2]
    new = renumber(block)
    assert [(n.id, n.op_name) for n in new.nodes] == [(0, "input"), (1, "output"), (2, "ReLU"), (3, "ReLU"),
                                                      (4, "BN")]
    assert [e.source_text() for e in new.edges] == ["0->2", "2->3", "3->2", "3->1", "5->1"]


# -- the command ----------------------------------------------------------------------

CANONICAL = "##A##\n0:input\n1:output\n2:concat(dim=1)\n0,0->2\n2->1\n"
MESSY = "###A###\r\n0:input\r\n1:output \r\n2:Concat( dim=1 )\r\n0,0->2\r\n2->1"
CANONICAL_CRLF = CANONICAL.replace("\n", "\r\n")  # fmt keeps a file's line ends (MESSY's are CRLF)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "messy.txt").write_bytes(MESSY.encode())
    (tmp_path / "clean.txt").write_bytes(CANONICAL.encode())
    (tmp_path / "bad.txt").write_text("##B##\n0:input\n2:Conv2d(out_channels=C,,kernel_size=3)\n")
    return tmp_path


def test_cli_prints_the_canonical_text(files):
    run = run_nadc(["fmt", "messy.txt"], cwd=files)
    assert (run.code, run.stdout, run.stderr) == (0, CANONICAL_CRLF, "")
    assert (files / "messy.txt").read_bytes() == MESSY.encode()


def test_cli_check_lists_files_that_would_change(files):
    run = run_nadc(["fmt", "--check", "messy.txt", "clean.txt"], cwd=files)
    assert run.code == 1
    assert run.stdout == "Would reformat: messy.txt\n1 file would be reformatted, 1 file already formatted\n"
    assert (files / "messy.txt").read_bytes() == MESSY.encode()
    assert run_nadc(["fmt", "--check", "clean.txt"], cwd=files) == (0, "1 file already formatted\n", "")


def test_cli_write_rewrites_only_what_changes(files):
    clean_mtime = os.stat(files / "clean.txt").st_mtime_ns
    os.utime(files / "clean.txt", ns=(clean_mtime - 10**9, clean_mtime - 10**9))
    run = run_nadc(["fmt", "--write", "messy.txt", "clean.txt"], cwd=files)
    assert (run.code, run.stdout) == (0, "1 file reformatted, 1 file left unchanged\n")
    assert (files / "messy.txt").read_bytes() == CANONICAL_CRLF.encode()
    assert os.stat(files / "clean.txt").st_mtime_ns == clean_mtime - 10**9
    assert run_nadc(["fmt", "--check", "messy.txt"], cwd=files).code == 0


def test_cli_reports_syntax_errors_and_leaves_the_file(files):
    before = (files / "bad.txt").read_bytes()
    run = run_nadc(["fmt", "--write", "bad.txt", "messy.txt"], cwd=files)
    assert run.code == 1
    assert "error[NAD101]" in run.stderr and "bad.txt:3:" in run.stderr
    assert "1 file could not be formatted" in run.stderr
    assert (files / "bad.txt").read_bytes() == before
    assert (files / "messy.txt").read_bytes() == CANONICAL_CRLF.encode()
    concise = run_nadc(["fmt", "--format", "concise", "bad.txt"], cwd=files)
    assert concise.code == 1 and concise.stderr.startswith("bad.txt:3:25: error[NAD101]")
    assert "Traceback" not in run.stderr + concise.stderr


def test_cli_reads_standard_input():
    run = run_nadc(["fmt", "-"], stdin=MESSY.replace("\r\n", "\n"))
    assert (run.code, run.stdout) == (0, CANONICAL)
    run = run_nadc(["fmt", "--check", "-"], stdin=CANONICAL)
    assert run.code == 0
    run = run_nadc(["fmt", "--renumber", "-"], stdin="##R##\n7:output\n3:input\n5:ReLU\n3->5\n5->7\n")
    assert run.stdout == "##R##\n0:input\n1:output\n2:ReLU\n0->2\n2->1\n"


@pytest.mark.parametrize("argv", [
    ["fmt"], ["fmt", "--check", "--write", "x.txt"], ["fmt", "--write", "-"], ["fmt", "--nope", "x.txt"],
])
def test_cli_usage_errors_exit_2(argv, tmp_path):
    run = run_nadc(argv, cwd=tmp_path)
    assert run.code == 2 and "Traceback" not in run.stderr and run.stderr


def test_cli_missing_file_exits_1(tmp_path):
    run = run_nadc(["fmt", "absent.txt"], cwd=tmp_path)
    assert run.code == 1 and "NAD100" in run.stderr


def test_cli_renumber_warns_about_duplicate_ids(tmp_path):
    (tmp_path / "d.txt").write_text("##D##\n0:input\n1:output\n2:ReLU\n2:BN\n0->2\n2->1\n")
    run = run_nadc(["fmt", "--renumber", "d.txt"], cwd=tmp_path)
    assert run.code == 0 and "defines node 2 more than once" in run.stderr
    assert run.stdout == "##D##\n0:input\n1:output\n2:ReLU\n3:BN\n0->2\n2->1\n"


def test_fmt_does_not_import_torch(tmp_path):
    (tmp_path / "a.txt").write_text(CANONICAL)
    script = ("import sys\nfrom nader.compiler.cli import main\n"
              "try:\n    main(['fmt', '--check', 'a.txt'])\nexcept SystemExit as done:\n    code = done.code\n"
              "print(code, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["0", "False"], out.stdout + out.stderr


# -- the language reference -------------------------------------------------------

def test_language_reference_lists_the_registry():
    """docs/language.md holds `reference_text()` verbatim between the ops markers.

    To regenerate after changing the registry, replace what lies between the
    markers with the output of
    `python -c "from nader.dsl.ops import reference_text; print(reference_text())"`
    (inside a ```text fence, as now).
    """
    doc = (REPO_ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- ops:begin -->\n(.*?)<!-- ops:end -->", doc, re.S)
    assert match, "docs/language.md lacks the <!-- ops:begin --> ... <!-- ops:end --> markers"
    assert reference_text() in match.group(1), (
        "docs/language.md is out of date with the op registry; regenerate the section between the markers "
        "with: python -c \"from nader.dsl.ops import reference_text; print(reference_text())\"")
