"""The worked example `nadc explain NAME` shows: the operator run on a ResNet basic block."""
from __future__ import annotations

import difflib
from typing import Optional

from nader.dsl.format import format_block
from nader.dsl.parser import parse

from .base import MutationOperator
from .errors import CannotApply

EXAMPLE = """\
##ResNetBasic##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=1)
3:BN
4:ReLU
5:Conv2d(out_channels=C,kernel_size=3,stride=1)
6:BN
7:Add
8:ReLU
0->2
2->3
3->4
4->5
5->6
6->7
0->7
7->8
8->1
"""


def example(op: MutationOperator) -> Optional[str]:
    """The operator's first site on EXAMPLE and the line diff it makes, or None if it has none."""
    block = parse(EXAMPLE).program.blocks[0]
    for site in op.candidates(block):
        try:
            mutant = op.apply(block, site)
        except CannotApply:
            continue
        diff = difflib.unified_diff(format_block(block).splitlines(), format_block(mutant).splitlines(),
                                    "ResNetBasic", "mutant", n=0, lineterm="")
        return f"{site}\n" + "\n".join(line for line in diff if not line.startswith("@@"))
    return None
