"""Blocks and architectures the ONNX tests export, and how they run a model (tests/test_onnx*.py)."""
from __future__ import annotations

TOLERANCE = 1e-4  # max |onnx - torch| on the same weights


def ort_session(model):
    """A single-threaded onnxruntime session of `model` (the tests skip without onnxruntime)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def dims(value_info) -> list:
    """A graph value's dimensions: ints, or the names of symbolic ones."""
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


# Blocks that together use every operation, with the stem stride they are verified at.
BLOCKS = {
"pools_gates": ("""##PoolsGates##
0:input
1:output
2:AdaptiveAvgPool2d(output_size=(3,2))
3:AdaptiveMaxPool2d(output_size=1)
4:mean(dim=(2,3))
5:Add
6:Sigmoid
7:Mul
8:max(dim=1)
9:AdaptiveMaxPool2d(output_size=(1,2))
10:sum(dim=(-1,-2))
11:AdaptiveAvgPool2d(output_size=1)
12:Add
0->2
0->3
2->4
3->5
4->5
3->5
5->6
0->7
6->7
6->7
7->8
0->9
9->10
0->11
7->12
8->12
10->12
11->12
12->1
""", 1),
"padding": ("""##Padding##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=2,stride=1)
3:Conv2d(out_channels=C,kernel_size=(1,4),stride=1)
4:AvgPool2d(kernel_size=2,stride=1)
5:MaxPool2d(kernel_size=4,stride=1)
6:Conv2d(out_channels=C,kernel_size=2,stride=1,dilation=3,groups=C)
7:concat(dim=-3)
8:Conv2d(out_channels=C,kernel_size=1)
9:AvgPool2d(kernel_size=(3,2),stride=1)
10:GELU
11:DropPath(prob=0.3)
12:Zero
13:Add
0->2
0->3
0->4
0->5
0->6
2->7
3->7
4->7
5->7
6->7
9->7
0->9
7->8
8->10
10->11
8->12
11->13
12->13
13->1
""", 1),
"strided": ("""##Strided_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=4,stride=2)
3:AvgPool2d(kernel_size=3,stride=2)
4:MaxPool2d(kernel_size=2,stride=2)
5:concat(dim=1)
6:Add
7:Conv2d(out_channels=C,kernel_size=(2,3),stride=(2,2),dilation=(1,2))
8:AvgPool2d(kernel_size=4,stride=2)
9:concat(dim=1)
10:Add
0->2
0->3
0->4
3->5
4->5
2->6
5->6
0->7
0->8
7->9
8->9
6->10
9->10
10->1
""", 1),
"stem3": ("""##Odd_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=4,stride=3)
3:AvgPool2d(kernel_size=2,stride=3)
4:MaxPool2d(kernel_size=5,stride=3)
5:Conv2d(out_channels=dim,kernel_size=1)
6:Add
7:ReLU
8:Conv2d(out_channels=dim,kernel_size=1)
0->2
0->3
0->4
3->5
4->8
2->6
5->6
8->6
6->7
7->1
""", 3),
"layout": ("""##Layout##
0:input
1:output
2:mean(dim=1)
3:repeat(1,C,1,1)
4:reshape(B,C,-1)
5:softmax(dim=2)
6:reshape(B,C,H*W//W,-1)
7:repeat(2,1,1,1,1)
8:sum(dim=0)
9:reshape(B,C,H,W)
10:Mul
11:repeat(1,1,H,1)
12:mean(dim=2)
13:Add
14:reshape(B*H,C/2,2*W)
15:permute(0,-1,1)
16:reshape(B,H,2,W,C/2)
17:permute(0,2,4,1,3)
18:reshape(B,C,H,W)
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
0->10
9->10
0->11
11->12
10->13
12->13
13->14
14->15
15->16
16->17
17->18
18->1
""", 1),
"attention": ("""##Attention##
0:input
1:output
2:reshape(B,C,H*W)
3:permute(0,2,1)
4:LN
5:Linear(out_channels=C)
6:Linear(out_channels=C)
7:permute(0,2,1)
8:multiply
9:softmax(dim=-1)
10:GELU
11:multiply
12:permute(0,2,1)
13:reshape(B,C,H,W)
14:Add
0->2
2->3
3->4
4->5
4->6
6->7
5->8
7->8
8->9
4->10
10->11
9->11
11->12
12->13
13->14
0->14
14->1
""", 1),
"squeeze_excite": ("""##SqueezeExcite##
0:input
1:output
2:AdaptiveAvgPool2d(output_size=1)
3:reshape(B,C)
4:Linear(out_channels=C/4)
5:ReLU
6:Linear(out_channels=C)
7:Sigmoid
8:reshape(B,C,1,1)
9:Mul
10:BN
0->2
2->3
3->4
4->5
5->6
6->7
7->8
0->9
8->9
9->10
10->1
""", 1),
"cell": ("""##MixCell##
0:input1
1:input2
2:output
3:Conv2d(out_channels=C,kernel_size=3)
4:BN
5:ReLU
6:Mul
7:concat(dim=1)
8:Conv2d(out_channels=C,kernel_size=1,groups=C/2)
9:permute(0,2,3,1)
10:Linear(out_channels=C)
11:permute(0,3,1,2)
0->3
3->4
4->5
5->6
1->6
6->7
1->7
7->8
8->9
9->10
10->11
11->2
""", 1),
}


# Architectures (base block, stem, downsample block / reduction cell) for network export.
STAGED_ARCH = """##Gated##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3)
3:BN
4:ReLU
5:AdaptiveAvgPool2d(output_size=1)
6:Conv2d(out_channels=C/4,kernel_size=1)
7:ReLU
8:Conv2d(out_channels=C,kernel_size=1)
9:Sigmoid
10:Mul
11:Add
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
4->10
9->10
10->11
0->11
11->1
##Gated_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3)
3:BN
4:ReLU
0->2
2->3
3->4
4->1
##Gated_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=2,stride=2)
3:BN
4:AvgPool2d(kernel_size=3,stride=2)
5:Conv2d(out_channels=dim,kernel_size=1)
6:Add
0->2
2->3
0->4
4->5
3->6
5->6
6->1
"""

IMAGENET_STEM = """##Gated_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=4,stride=4)
3:LN
4:permute(0,2,3,1)
5:permute(0,3,1,2)
0->2
2->4
4->3
3->5
5->1
"""

DARTS_ARCH = """##Tiny##
0:input1
1:input2
2:output
3:ReLU
4:Conv2d(out_channels=C,kernel_size=3,groups=C)
5:BN
6:MaxPool2d(kernel_size=3,stride=1)
7:Add
8:concat(dim=1)
9:Conv2d(out_channels=C,kernel_size=1)
0->3
3->4
4->5
1->6
5->7
6->7
7->8
1->8
8->9
9->2
##Tiny_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3)
3:BN
0->2
2->3
3->1
##Tiny_downsample##
0:input1
1:input2
2:output
3:MaxPool2d(kernel_size=3,stride=2)
4:AvgPool2d(kernel_size=2,stride=2)
5:Add
6:Conv2d(out_channels=C,kernel_size=3,stride=2)
7:Add
0->3
1->4
3->5
4->5
1->6
5->7
6->7
7->2
"""


def _imagenet_arch() -> str:
    base, rest = STAGED_ARCH.split("##Gated_stem##")
    return base + IMAGENET_STEM + "##Gated_downsample##" + rest.split("##Gated_downsample##")[1]


NETWORKS = {
    "nb201": (lambda: STAGED_ARCH, dict(widths=(8,))),
    "nas-bench-201": (lambda: STAGED_ARCH, dict(widths=(8,), depths=(1, 1, 1))),  # with its BN-ReLU before pooling
    "imagenet": (_imagenet_arch, dict(widths=(8,), depths=(1, 1, 1, 1))),
    "darts": (lambda: DARTS_ARCH, dict(widths=(8,), depths=(1, 1, 1))),
}
