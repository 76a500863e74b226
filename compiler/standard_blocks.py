"""The skeletons' standard stems and downsample blocks, written in the block language.

An architecture file may hold its base block alone; the skeleton's standard stem and downsample
block (or DARTS reduction cell) then fill in (`architecture.py`). They are block-language text, so
they are parsed and verified like any block, and docs/networks.md describes them.
"""
from __future__ import annotations

from dataclasses import dataclass

from nader.dsl.ir import Block
from nader.dsl.parser import parse


@dataclass(frozen=True)
class StandardBlock:
    """A block a skeleton uses where the file has none; `@` in the text stands for the base block's name."""

    text: str
    summary: str

    def block(self, base_name: str, origin: str) -> Block:
        parsed = parse(self.text.replace("@", base_name), origin)
        assert parsed.ok and len(parsed.program.blocks) == 1, parsed.diagnostics  # fixed text, tested
        return parsed.program.blocks[0]


_CONV_BN_STEM = StandardBlock("""##@_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3,stride=1)
3:BN
0->2
2->3
3->1
""", "a 3x3 Conv2d and BN")

STANDARD_BLOCKS: dict[str, dict[str, StandardBlock]] = {
    # NAS-Bench-201's stem and its ResNetBasicblock with stride 2 (ReLU-Conv-BN twice; shortcut
    # AvgPool2d(2) and a 1x1 conv).
    "nb201": {
        "stem": _CONV_BN_STEM,
        "downsample": StandardBlock("""##@_downsample##
0:input
1:output
2:ReLU
3:Conv2d(out_channels=dim,kernel_size=3,stride=2)
4:BN
5:ReLU
6:Conv2d(out_channels=dim,kernel_size=3,stride=1)
7:BN
8:AvgPool2d(kernel_size=2,stride=2)
9:Conv2d(out_channels=dim,kernel_size=1,stride=1)
10:Add
0->2
2->3
3->4
4->5
5->6
6->7
0->8
8->9
7->10
9->10
10->1
""", "NAS-Bench-201's residual block with stride 2 (ReLU-Conv-BN twice, shortcut AvgPool2d and 1x1 Conv2d)"),
    },
    # ResNet's stem (7x7 stride-2 Conv2d, BN, ReLU, 3x3 stride-2 max pooling: stride 4) and its
    # basic block with stride 2 and a projection shortcut.
    "imagenet": {
        "stem": StandardBlock("""##@_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=7,stride=2)
3:BN
4:ReLU
5:MaxPool2d(kernel_size=3,stride=2)
0->2
2->3
3->4
4->5
5->1
""", "ResNet's stem: 7x7 stride-2 Conv2d, BN, ReLU, 3x3 stride-2 MaxPool2d"),
        "downsample": StandardBlock("""##@_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3,stride=2)
3:BN
4:ReLU
5:Conv2d(out_channels=dim,kernel_size=3,stride=1)
6:BN
7:Conv2d(out_channels=dim,kernel_size=1,stride=2)
8:BN
9:Add
10:ReLU
0->2
2->3
3->4
4->5
5->6
0->7
7->8
6->9
8->9
9->10
10->1
""", "ResNet's basic block with stride 2 and a 1x1 stride-2 Conv2d + BN shortcut"),
    },
    # DARTS' stem and the reduction cell of DARTS (V2): 3x3 stride-2 max pooling of both inputs,
    # four sums, their concatenation brought back to the cell's width (ReLU, 1x1 Conv2d, BN).
    "darts": {
        "stem": _CONV_BN_STEM,
        "downsample": StandardBlock("""##@_downsample##
0:input1
1:input2
2:output
3:MaxPool2d(kernel_size=3,stride=2)
4:MaxPool2d(kernel_size=3,stride=2)
5:Add
6:Add
7:Add
8:Add
9:concat(dim=1)
10:ReLU
11:Conv2d(out_channels=dim,kernel_size=1,stride=1)
12:BN
0->3
1->4
3,4->5
5,4->6
3,5->7
5,4->8
5,6,7,8->9
9->10
10->11
11->12
12->2
""", "the reduction cell of DARTS (V2): max pooling of both inputs, four sums, concat, ReLU-Conv-BN"),
    },
}
# NAS-Bench-201's own network is the nb201 skeleton with a BN-ReLU before pooling: same blocks.
STANDARD_BLOCKS["nas-bench-201"] = STANDARD_BLOCKS["nb201"]


__all__ = ["STANDARD_BLOCKS", "StandardBlock"]
