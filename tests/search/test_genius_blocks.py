"""GENIUS and the Modifier read a block's name from its header whatever follows it (a comment),
and GENIUS accepts a root made of a base block alone, as walk and REA do (issue 30, points 16-17)."""
from __future__ import annotations

import pytest

from nader.agents.genius import Genius
from nader.compiler.block_text import block_name, split_architecture
from search_helpers import ROOT_TEXT, WIDE


@pytest.mark.parametrize("header,name", [("##B1##", "B1"), ("##B1##  # note", "B1"), ("  ##B1##\t#note ## x", "B1"),
                                         ("###B1###", "B1"), ("0:input", "Block"), ("", "Block")])
def test_block_name_reads_the_header_alone(header, name):
    assert block_name(header + "\n0:input\n1:output\n0->1\n") == name


def _genius() -> Genius:
    return Genius(None, repairs=0, iterations=1, dataset="digits", skeleton="nb201")


def _base_only(text: str) -> str:
    return split_architecture(text)[0]


@pytest.mark.parametrize("root", ["whole", "base only"])
@pytest.mark.parametrize("comment", ["", "  # a wider residual block"])
def test_genius_accepts_a_commented_header_and_a_root_with_only_a_base_block(root, comment):
    root_text = ROOT_TEXT if root == "whole" else _base_only(ROOT_TEXT)
    proposal = WIDE.replace("##Wide##", "##Wide##" + comment, 1)
    text, feedback = _genius().block_check(root_text)(f"```\n{proposal}```")
    assert text is not None, feedback
    assert text.startswith("##Wide##")
    if root == "whole":
        assert "##Wide_stem##" in text and "##Wide_downsample##" in text
    else:
        assert "_stem##" not in text  # the skeleton's standard stem and downsample, as the root had
