"""The worked example `nadc explain NAME` shows: the operator run on a ResNet basic block, the base
block of the shipped example (`nader.examples`), so the block is written once."""
from __future__ import annotations

import difflib
from importlib import resources
from typing import Optional

from nader.dsl.format import format_block
from nader.dsl.parser import parse

from .base import MutationOperator
from .errors import CannotApply

#: The shipped example (`nadc examples resnet_basic.nad`), whose base block the worked examples mutate.
EXAMPLE = "resnet_basic.nad"


def example(op: MutationOperator) -> Optional[str]:
    """The operator's first site on EXAMPLE's base block and the line diff it makes, or None if it has none."""
    block = parse(resources.files("nader.examples").joinpath(EXAMPLE).read_text(encoding="utf-8")).program.blocks[0]
    for site in op.candidates(block):
        try:
            mutant = op.apply(block, site)
        except CannotApply:
            continue
        diff = difflib.unified_diff(format_block(block).splitlines(), format_block(mutant).splitlines(),
                                    "ResNetBasic", "mutant", n=0, lineterm="")
        return f"{site}\n" + "\n".join(line for line in diff if not line.startswith("@@"))
    return None
