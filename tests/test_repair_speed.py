"""What makes `nadc verify`'s repairs cheap must not change them (issue 39, point 3).

A candidate is verified as a graph where it rewrites whole lines (compiler/repair/region.py): the
verdict must be the one its text gets, parsed and verified whole, on every candidate of mutated
blocks and of the committed corpora. A stem is tried only at the strides its output can meet: the
same report as trying every stride. What a process remembers (candidates verified, lines read) does
not change a result; the search is bounded by lines verified; `nadc verify` loads the suggestions,
not the repair loop.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from strategies import sound_blocks
from text_strategies import mutated, mutated_texts
from nader.compiler.passes.verify import STEM_STRIDES, verify_block, verify_program, verify_stem
from nader.compiler.repair import region, suggest
from nader.compiler.repair.search import error_candidates
from nader.compiler.repair.edit import EditorFix
from nader.dsl.diagnostics import Fix, apply_fix
from nader.dsl.format import format_block
from nader.dsl.ir import Role
from nader.dsl.parser import _clear_caches, parse, read_in_block

ROOT = Path(__file__).resolve().parent.parent
CORPORA = sorted([*(ROOT / "benchmarks" / "data" / "repair_corpus").glob("*.nad"),
                  *(ROOT / "benchmarks" / "data" / "repair_corpus_gemma" / "tuning").glob("*.nad"),
                  *(ROOT / "benchmarks" / "data" / "repair_corpus_gemma_families" / "tuning").glob("*.nad"),
                  *(ROOT / "tests" / "fixtures" / "repair_classes").glob("*.nad")])
BOTH = frozenset({"safe", "unsafe"})
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def both_ways(text: str, **options) -> tuple[int, int, int]:
    """Every candidate of every error of `text`, verified as a graph and from its text, and an editor's also
    from its change (`EditorFix`) and as a plain `Fix` of its edits: (candidates, graphs, changes); fails
    where the verdicts differ."""
    options.setdefault("stem_stride", None)
    parsed = parse(text)
    reports, file_level = verify_program(parsed, **options)
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    seen = graphs = changes = 0
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        as_graph = region.BlockRegion(lines, starts[index], starts[index + 1], report, options, file_level)
        as_text = region.BlockRegion(lines, starts[index], starts[index + 1], report, options)
        assert not as_text.as_graph
        as_graph._from_change = _counted(as_graph._from_change, built := [])
        for d in report.diagnostics:
            if not d.is_error:
                continue
            for _, fix in error_candidates(lines, [(report, d)], BOTH, frozenset()):
                region._VERIFIED.clear()
                graph = _verdict(as_graph, fix)
                region._VERIFIED.clear()
                assert graph == _verdict(as_text, fix), (fix, text)
                if type(fix) is EditorFix:
                    region._VERIFIED.clear()
                    plain = Fix(fix.edits, fix.kind, fix.safety, fix.message)
                    assert graph == _verdict(as_graph, plain) and plain == fix, (fix, text)
                seen += 1
                graphs += as_graph.as_graph and as_graph._line_changes(fix) is not None
        changes += sum(built)
    return seen, graphs, changes


def _counted(from_change, built: list):
    """`BlockRegion._from_change`, noting in `built` whether it built the candidate (rather than leave it to its text)."""
    def counted(change):
        found = from_change(change)
        built.append(found is not region._TEXT)
        return found
    return counted


def _verdict(block_region, fix):
    try:
        return block_region.after(fix)
    except (IndexError, ValueError) as error:
        return type(error)


@SETTINGS
@given(mutated_texts(max_blocks=2))
def test_a_candidate_verified_as_a_graph_gets_the_verdict_of_its_text(text):
    both_ways(text)


@SETTINGS
@given(sound_blocks(max_steps=6).map(format_block).flatmap(mutated))
@example("1:Conv2d\n2:BN\n0->2\n2->1\n")  # no header: the first line's change may not drop its NAD111
def test_a_candidate_of_a_damaged_sound_block_gets_the_verdict_of_its_text(text):
    both_ways(text)


def test_the_corpora_candidates_get_the_verdict_of_their_text():
    seen = graphs = changes = 0
    for path in CORPORA:
        found = both_ways(path.read_text(encoding="utf-8"))
        seen, graphs, changes = seen + found[0], graphs + found[1], changes + found[2]
    # the comparison sees the graph path, and mostly it; many are built from an editor's change
    assert seen > 500 and graphs > 0.8 * seen and changes > 0.4 * seen


def test_a_candidate_applied_to_a_blocks_lines_is_the_text_apply_fix_makes():
    for path in CORPORA[:40]:
        text = path.read_text(encoding="utf-8")
        reports, file_level = verify_program(parse(text), stem_stride=None)
        lines = text.split("\n")
        starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
        for index, report in enumerate(reports):
            if report.ok:
                continue
            block = region.BlockRegion(lines, starts[index], starts[index + 1], report, {}, file_level)
            for d in report.diagnostics:
                for _, fix in error_candidates(lines, [(report, d)], BOTH, frozenset()) if d.is_error else ():
                    whole = apply_fix(text, fix).split("\n")
                    end = starts[index + 1] - 1 + len(whole) - len(lines)
                    expected = "\n".join(whole[starts[index] - 1:end]) + ("\n" if end < len(whole) else "")
                    assert block._applied(fix) == expected


def _read_as_parse_reads(line: str) -> bool:
    """Whether `read_in_block` gives the nodes and edges (every field, spans too) `parse` gives for the line
    alone in a block, where it gives any; whether it read the line."""
    read = read_in_block(line)
    if read is None:
        return False
    parsed = parse(f"##B##\n{line}\n", "<line>")
    (block,) = parsed.program.blocks
    assert not parsed.diagnostics
    for mine, its in zip((*read[0], *read[1]), (*block.nodes, *block.edges), strict=True):
        named = [f for f in type(its).__dataclass_fields__ if not f.startswith("_")]
        assert type(mine) is type(its) and all(getattr(mine, f) == getattr(its, f) for f in named), line
    return True


def test_a_line_a_candidate_writes_is_read_as_the_parser_reads_it_in_a_block():
    lines = {line for path in CORPORA for line in path.read_text(encoding="utf-8").split("\n") if "\r" not in line}
    lines |= {"9:Add  # merged", "3->9 # wire", "2:Conv2d(out_channels=C,kernal_size=3)", "0->2->3", "##X##", "", "# c"}
    read = 0
    for line in sorted(lines):
        read += _read_as_parse_reads(line)  # the line met before (interned) ...
        _clear_caches()
        read += _read_as_parse_reads(line)  # ... and met for the first time
    assert 0 < read < 2 * len(lines)  # some lines read directly, others left to the parser


def _same_fields(mine, its) -> bool:
    named = [f for f in type(its).__dataclass_fields__ if not f.startswith("_")]
    return type(mine) is type(its) and all(getattr(mine, f) == getattr(its, f) for f in named)


def test_a_node_or_edge_built_from_a_change_is_the_one_its_line_reads_as():
    """region.py builds an editor's new and changed edges from their sources and target, and its node lines
    from their op text (read once whatever the id): each as `read_in_block` reads the line the editor writes."""
    built = 0
    for path in CORPORA[:60]:
        for block in parse(path.read_text(encoding="utf-8")).program.blocks:
            for node in block.nodes:
                for node_id in (node.id, 7, 12345, "conv_1"):
                    op_text = node.source_text().partition(":")[2]
                    line = f"{node_id}:{op_text}" + (f"  {node.comment}" if node.comment else "")
                    read = read_in_block(line)
                    mine = region._node(node_id, op_text, node.comment, len(line))
                    assert (mine is None) == (read is None), line
                    built += mine is not None and _same_fields(mine, read[0][0])
            for edge in block.edges:
                for sources in (edge.sources, (*edge.sources, 123), ("a_1",)):
                    line = f"{','.join(map(str, sources))}->{edge.target}" + (f"  {edge.comment}" if edge.comment else "")
                    (read,) = read_in_block(line)[1]
                    assert _same_fields(region._edge(sources, edge.target, edge.comment), read), line
                    built += 1
    assert built > 1000


@SETTINGS
@given(st.text(alphabet="0123456789abC:->,()=_ #\t.*/", max_size=40))
def test_a_random_line_is_read_as_the_parser_reads_it_in_a_block(line):
    _read_as_parse_reads(line)


def every_stride(block, **options):
    """verify_stem as it was: the preferred stride, then each other one until one verifies."""
    first = verify_block(block, role=Role.STEM, stem_stride=1, **options)
    if first.ok or first.shapes is None:
        return first
    for stride in STEM_STRIDES[1:]:
        report = verify_block(block, role=Role.STEM, stem_stride=stride, **options)
        if report.ok:
            return report
    return first


def stems() -> list[str]:
    """Stems with outputs at strides 1, 2, 4 and none, channels right and wrong, and errors before output."""
    head = "##S_stem##\n0:input\n1:output\n"
    out = []
    for stride in (1, 2, 4, 3):
        for width in ("dim", "2*dim"):
            body = f"2:Conv2d(out_channels={width},kernel_size=3,stride={stride})\n0->2\n2->1\n"
            out.append(head + body)
            out.append(head + body.replace("2->1", "3:Add\n2->3\n0->3\n3->1"))  # 3 channels and dim: NAD301
    out.append(head + "2:Conv2d(out_channels=dim,kernel_size=3,stride=2)\n3:MaxPool2d(kernel_size=3,stride=2)\n"
               "0->2\n2->3\n3->1\n")
    return out


@pytest.mark.parametrize("text", stems())
def test_a_stem_is_tried_only_at_the_strides_its_output_can_meet(text):
    (block,) = parse(text).program.blocks
    fast, slow = verify_stem(block), every_stride(block)
    assert (fast.ok, fast.stem_stride, [d.message for d in fast.diagnostics]) == \
        (slow.ok, slow.stem_stride, [d.message for d in slow.diagnostics])


def fixes(text: str) -> list:
    parsed = parse(text)
    reports, file_level = verify_program(parsed, stem_stride=None)
    suggest.suggest_fixes(text, reports, file_level, stem_stride=None)
    return [(d.code.code, d.fix) for r in reports for d in r.diagnostics]


def test_what_a_process_remembers_changes_no_suggestion():
    texts = [p.read_text(encoding="utf-8") for p in CORPORA[:30]]
    region._VERIFIED.clear()
    region._READ.clear()
    region._OPS.clear()
    region._EDGES.clear()
    cold = [fixes(t) for t in texts]
    warm = [fixes(t) for t in reversed(texts)][::-1]  # every candidate seen before, in another order
    assert warm == cold and any(f for found in cold for _, f in found)


def test_the_search_is_bounded_by_the_lines_it_verifies(monkeypatch):
    """A block with more errors than the budget's lines can serve: the search stops at the budget."""
    text = "##B##\n0:input\n1:output\n" + "".join(f"{i}:BN\n0->{i}\n2->{i}\n" for i in range(2, 10)) + "9->1\n"
    verified = []
    after = region.BlockRegion.after
    monkeypatch.setattr(region.BlockRegion, "after", lambda self, fix: verified.append(self.end - self.start)
                        or after(self, fix))
    monkeypatch.setattr(suggest, "MOST_SUGGESTION_WORK", 100)
    fixes(text)
    assert verified and sum(verified) <= 100 < sum(verified) + verified[0] * 2


def test_nadc_verify_loads_the_suggestions_not_the_repair_loop():
    code = ("import sys; from nader.compiler.commands.verify import _verify_file; from nader.dsl.parser import parse; "
            "from nader.compiler.passes import SQUARE, Limits; "
            "p = parse('##B##\\n0:input\\n1:output\\n2:BN\\n0->2\\n0->2\\n2->1\\n', 'b.nad'); "
            "reports, _ = _verify_file(p, (None, None, SQUARE, Limits(), True)); "
            "print(reports[0].diagnostics[0].fix.kind, 'nader.compiler.repair.engine' in sys.modules, "
            "'nader.compiler.repair.result' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.split() == ["drop-repeated-edges", "False", "False"], done.stderr


def test_an_editors_fix_is_the_plain_fix_of_its_edits():
    """An `EditorFix` writes its edits when read: equal to, hashed and pickled as the plain `Fix` of them."""
    import pickle

    text = (ROOT / "tests" / "fixtures" / "repair_classes").glob("*.nad").__next__().read_text(encoding="utf-8")
    found = [fix for _, fix in fixes(text) if type(fix) is EditorFix]
    assert found
    for fix in found:
        plain = Fix(fix.edits, fix.kind, fix.safety, fix.message)
        back = pickle.loads(pickle.dumps(fix))
        assert type(back) is Fix and back == plain == fix and fix == plain and hash(fix) == hash(plain)
