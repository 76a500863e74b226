"""Extracting blocks from LLM replies (`nader.dsl.extract_blocks`)."""
from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nader.dsl import extract_blocks, parse
from nader.dsl.format import format_program
from nader.dsl.parser import parse_line
from strategies import programs
from text_strategies import mutated_texts

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

RESNET = textwrap.dedent("""\
    ##ResNetSE##
    0:input
    1:output
    2:Conv2d(out_channels=C,kernel_size=3,stride=1)
    3:BN
    4:ReLU
    5:mean(dim=(2,3))
    6:Sigmoid
    7:Mul
    0->2
    2->3
    3->4
    4->5
    5->6
    4,6->7
    7->1
    """)


def reply(text: str) -> str:
    return textwrap.dedent(text)


def test_fenced_block_with_prose_around():
    answer = reply("""\
        Here is the block:

        ```text
        ##ResNetSE##
        0:input
        1:output
        2:Conv2d(out_channels=C,kernel_size=3,stride=1)
        3:BN
        4:ReLU
        5:mean(dim=(2,3))
        6:Sigmoid
        7:Mul
        0->2
        2->3
        3->4
        4->5
        5->6
        4,6->7
        7->1
        ```

        The squeeze-and-excitation gate (nodes 5-7) reweights the channels.
        """)
    got = extract_blocks(answer)
    assert got.text == RESNET
    assert got.blocks == ["ResNetSE"]
    assert got.dropped == [(1, "Here is the block:", "prose"),
                           (22, "The squeeze-and-excitation gate (nodes 5-7) reweights the channels.", "prose")]
    assert parse(got.text).ok


def test_three_blocks_in_one_fence_with_extra_hashes():
    answer = reply("""\
        Based on the inspiration, I designed the following blocks.
        ```
        ###Gated###
        0:input
        1:output
        2:Conv2d(out_channels=C,kernel_size=3)
        0->2
        2->1
        ###Gated_stem###
        0:input
        1:output
        2:Conv2d(out_channels=dim,kernel_size=3,stride=1)
        0->2
        2->1
        ###Gated_downsample###
        0:input
        1:output
        2:Conv2d(out_channels=dim,kernel_size=2,stride=2)
        0->2
        2->1
        ```
        """)
    got = extract_blocks(answer)
    assert got.blocks == ["Gated", "Gated_stem", "Gated_downsample"]
    assert "###" not in got.text and got.text.count("##") == 6
    assert got.dropped == [(1, "Based on the inspiration, I designed the following blocks.", "prose")]
    result = parse(got.text)
    assert result.ok and not result.diagnostics


def test_several_fences_and_a_code_fence_without_blocks():
    answer = reply("""\
        **Base block**

        ```text
        ##Mix##
        0:input
        1:output
        2:Conv2d(out_channels=C,kernel_size=1)
        0->2
        2->1
        ```

        **Stem**

        ~~~
        ##Mix_stem##
        0:input
        1:output
        2:Conv2d(out_channels=dim,kernel_size=3)
        0->2
        2->1
        ~~~

        In PyTorch this would be:

        ```python
        # the 1x1 convolution
        y = conv(x)
        ```
        """)
    got = extract_blocks(answer)
    assert got.blocks == ["Mix", "Mix_stem"]
    assert parse(got.text).ok
    assert "conv(x)" not in got.text and "the 1x1" not in got.text
    assert [(d.line, d.reason) for d in got.dropped] == [
        (1, "prose"), (12, "prose"), (23, "prose"),
        (26, "in a code fence without block lines"), (27, "in a code fence without block lines")]


def test_block_without_fences():
    answer = reply("""\
        Sure. The improved block is

        ##Residual##
        0:input
        1:output
        2:ReLU
        # the skip
        3:Add
        0->2

        2,0->3
        3->1

        This keeps the shape (B,C,H,W).
        """)
    got = extract_blocks(answer)
    assert got.text == "##Residual##\n0:input\n1:output\n2:ReLU\n# the skip\n3:Add\n0->2\n2,0->3\n3->1\n"
    assert [d.line for d in got.dropped] == [1, 14]


def test_markdown_headings_and_bullets_are_prose():
    answer = reply("""\
        # Improved design
        ## Analysis
        - 1:output is the sink
        1. Replace ReLU with GELU
        ##Better##
        0:input
        1:output
        0->1
        """)
    got = extract_blocks(answer)
    assert got.text == "##Better##\n0:input\n1:output\n0->1\n"
    assert [(d.line, d.reason) for d in got.dropped] == [
        (1, "comment or markdown heading outside a block"), (2, "prose"), (3, "prose"), (4, "prose")]


def test_block_lines_in_prose_around_fenced_blocks_are_dropped():
    answer = reply("""\
        I changed
        5:ReLU
        into a GELU:
        ```
        ##B##
        0:input
        1:output
        5:GELU
        0->5
        5->1
        ```
        """)
    got = extract_blocks(answer)
    assert got.text == "##B##\n0:input\n1:output\n5:GELU\n0->5\n5->1\n"
    assert (2, "5:ReLU", "block line outside the code fences") in got.dropped


def test_unfenced_whole_block_next_to_a_fenced_one_is_kept():
    answer = "```\n##A##\n0:input\n1:output\n0->1\n```\nand the stem:\n##A_stem##\n0:input\n1:output\n0->1\n"
    assert extract_blocks(answer).blocks == ["A", "A_stem"]


def test_prose_inside_a_fence_and_lines_with_trailing_prose():
    answer = reply("""\
        ```
        ##C##
        Note: node 2 is depthwise
        0:input
        1:output
        2:Conv2d(out_channels=C,kernel_size=3,groups=C)  # depthwise
        3:BN - batch norm
        0->2
        2->1
        ```
        """)
    got = extract_blocks(answer)
    assert "2:Conv2d(out_channels=C,kernel_size=3,groups=C)  # depthwise\n" in got.text
    assert [(d.line, d.text, d.reason) for d in got.dropped] == [
        (3, "Note: node 2 is depthwise", "not a block line"), (7, "3:BN - batch norm", "not a block line")]
    assert "ignored 2 lines" in got.summary() and "line 3" in got.summary()


def test_indented_fence_crlf_and_unclosed_fence():
    answer = "Steps:\r\n1. write the block\r\n   ```text\r\n   ##D##\r\n   0:input\r\n   1:output\r\n   0->1\r\n"
    got = extract_blocks(answer)
    assert got.text == "##D##\n0:input\n1:output\n0->1\n"
    assert [d.line for d in got.dropped] == [1, 2]


def test_emphasised_headers_are_unwrapped():
    answer = "**###Bold###**\n0:input\n1:output\n0->1\n`##Code##`\n0:input\n1:output\n0->1\n**Bold text**\n"
    got = extract_blocks(answer)
    assert got.blocks == ["Bold", "Code"]
    assert got.text.startswith("##Bold##\n") and "\n##Code##\n" in got.text
    assert got.dropped == [(9, "**Bold text**", "prose")]


def test_unknown_operations_are_kept_for_the_parser_to_report():
    got = extract_blocks("```\n##E##\n0:input\n1:output\n2:Conv2D(out_channels=C,kernel_size=3)\n0->2\n2->1\n```")
    assert "2:Conv2D(" in got.text
    assert any(d.code.code == "NAD104" for d in parse(got.text).diagnostics)


def test_headers_without_nodes_are_dropped():
    answer = "### Explanation ###\nWe use a conv.\n```\n##F##\n##G##\n0:input\n1:output\n0->1\n```\n"
    got = extract_blocks(answer)
    assert got.blocks == ["G"]
    assert [(d.line, d.reason) for d in got.dropped] == [
        (1, "block line outside the code fences"), (2, "prose"), (4, "header without nodes or edges")]


def test_nothing_to_extract():
    for answer in ["", "I cannot design a block for this.", "```python\nprint(1)\n```"]:
        got = extract_blocks(answer)
        assert got.text == "" and got.blocks == [] and not got
    assert extract_blocks("\n\n").dropped == []


# -- properties -----------------------------------------------------------------------

@FAST
@given(programs(max_blocks=2), st.sampled_from(["```", "```text", "~~~", "````nad"]))
def test_fenced_canonical_text_comes_back_whole(program, fence):
    text = format_program(program)
    close = fence.rstrip("nadtex") if fence[0] == "`" else fence
    answer = f"Sure! Here it is:\n{fence}\n{text}{close}\nThis should train well.\n"
    got = extract_blocks(answer)
    assert got.text == text
    assert got.blocks == [b.name for b in program.blocks]
    assert [d.line for d in got.dropped] == [1, text.count("\n") + 4]


@FAST
@given(programs(max_blocks=2, with_comments=False))
def test_unfenced_canonical_text_comes_back_whole(program):
    text = format_program(program)
    got = extract_blocks("My answer:\n" + text + "Done.")
    assert got.text == text
    assert parse(got.text).program == program


@FAST
@given(st.one_of(mutated_texts(), st.text()))
def test_extraction_never_raises_and_keeps_only_block_lines(answer):
    got = extract_blocks(answer)
    lines = answer.split("\n")
    for line in got.text.split("\n")[:-1]:
        parsed = parse_line(line)
        assert parsed.item is not None or (parsed.comment is not None and not parsed.problems), line
    for d in got.dropped:
        assert lines[d.line - 1].rstrip("\r") == d.text
    assert got.text.count("\n") + len(got.dropped) <= len(lines)


def test_prose_that_reads_as_a_named_node_is_dropped():
    answer = reply("""\
        ##A##
        0:input
        1:output
        conv_1:Conv2d(out_channels=C,kernel_size=3,stride=1)
        0->conv_1
        conv_1->1

        Answer: ReLU
        Note: BN
        """)
    got = extract_blocks(answer)
    assert got.text == "##A##\n0:input\n1:output\nconv_1:Conv2d(out_channels=C,kernel_size=3,stride=1)\n" \
                       "0->conv_1\nconv_1->1\n"
    assert [(d.line, d.reason) for d in got.dropped] == [(8, "prose (a named node that no edge mentions)"),
                                                        (9, "prose (a named node that no edge mentions)")]
