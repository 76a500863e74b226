"""Writes benchmarks/data/repair_corpus/: failing blocks that reproduce each error class of issue 28.

GPT-4o's failures in NADER's runs (issue 28's table) fall into a few classes: a one-input
operation fed several branches, a merge fed one, torch habits in arguments, shapes that do not
add or concatenate, ill-typed values, edges out of `output`, outputs that break the role's
contract, syntax slips, `reshape` without the batch axis. Each case here is one of the valid
blocks below (written for this corpus, in NADER's style) with one such mistake made by a text
edit, the way a model makes it. `manifest.json` says, for each file, the template, the edit,
the class and the code the verifier reports. The edits are deterministic: running this again
writes the same files. `benchmarks/repair.py` repairs them.

    .venv/bin/python benchmarks/repair_corpus.py   # rewrites the folder
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

OUT = HERE / "data" / "repair_corpus"

TEMPLATES = {
    "resnet_basic": """##ResNetBasic##
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
""",
    "resnet_bottleneck": """##ResNetBottleneck##
0:input
1:output
2:Conv2d(out_channels=C/4,kernel_size=1,stride=1)
3:BN
4:ReLU
5:Conv2d(out_channels=C/4,kernel_size=3,stride=1)
6:BN
7:ReLU
8:Conv2d(out_channels=C,kernel_size=1,stride=1)
9:BN
10:Add
11:ReLU
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
9->10
0->10
10->11
11->1
""",
    "mobilenet_inverted": """##MobileNetInverted##
0:input
1:output
2:Conv2d(out_channels=C*4,kernel_size=1,stride=1)
3:BN
4:ReLU
5:Conv2d(out_channels=C*4,kernel_size=3,stride=1,groups=C*4)
6:BN
7:ReLU
8:Conv2d(out_channels=C,kernel_size=1,stride=1)
9:BN
10:Add
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
9->10
0->10
10->1
""",
    "convnext": """##ConvNeXt##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=7,stride=1,groups=C)
3:permute(0,2,3,1)
4:LN
5:Linear(out_channels=C*4)
6:GELU
7:Linear(out_channels=C)
8:permute(0,3,1,2)
9:Add
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
0->9
9->1
""",
    "se_block": """##SEBlock##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=1)
3:BN
4:ReLU
5:AdaptiveAvgPool2d(output_size=1)
6:reshape(B,C)
7:Linear(out_channels=C/4)
8:ReLU
9:Linear(out_channels=C)
10:Sigmoid
11:reshape(B,C,1,1)
12:Mul
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
9->10
10->11
4->12
11->12
12->1
""",
    "inception": """##Inception##
0:input
1:output
2:Conv2d(out_channels=C/4,kernel_size=1,stride=1)
3:Conv2d(out_channels=C/4,kernel_size=3,stride=1)
4:Conv2d(out_channels=C/4,kernel_size=5,stride=1)
5:MaxPool2d(kernel_size=3,stride=1)
6:Conv2d(out_channels=C/4,kernel_size=1,stride=1)
7:concat(dim=1)
8:BN
9:ReLU
0->2
0->3
0->4
0->5
5->6
2->7
3->7
4->7
6->7
7->8
8->9
9->1
""",
}

#: The edits: (name, class, expected code, templates it applies to, old text, new text). `old` must
#: occur in the template; the first occurrence is replaced.
EDITS = [
    ("bn-two-inputs", "one-input op fed two branches (the Add left out)", "NAD207",
     ("resnet_basic",), "6->7\n0->7\n7->8\n", "6->8\n0->8\n"),
    ("relu-two-inputs", "one-input op fed two branches (the Add left out)", "NAD207",
     ("resnet_bottleneck",), "9->10\n0->10\n10->11\n", "9->11\n0->11\n"),
    ("bn-fed-twice", "one-input op fed two branches", "NAD207",
     ("mobilenet_inverted", "resnet_basic"), "2->3\n", "2->3\n0->3\n"),
    ("residual-too-early", "residual wired one node before its Add", "NAD207",
     ("resnet_basic", "resnet_bottleneck", "mobilenet_inverted"), "0->1", ""),  # placeholder, see below
    ("concat-one-input", "concat fed one branch", "NAD207",
     ("inception",), "2->7\n3->7\n4->7\n6->7\n", "6->7\n"),
    ("dead-relu", "a node left without input", "NAD207",
     ("resnet_basic", "convnext"), "1:output\n", "1:output\n20:ReLU\n"),
    ("torch-padding", "torch habit: padding=1", "NAD105",
     ("resnet_basic", "resnet_bottleneck"), "kernel_size=3,stride=1)", "kernel_size=3,stride=1,padding=1)"),
    ("torch-inplace", "torch habit: inplace=True", "NAD105",
     ("resnet_basic", "mobilenet_inverted"), "4:ReLU", "4:ReLU(inplace=True)"),
    ("kernel-typo", "misspelt parameter", "NAD105",
     ("convnext",), "kernel_size=7", "kernal_size=7"),
    ("kernel-typo", "misspelt parameter", "NAD105",
     ("inception",), "kernel_size=5", "kernal_size=5"),
    ("add-channel-mismatch", "Add of C*4 and C channels", "NAD301",
     ("mobilenet_inverted",), "8->9\n9->10", "5->9\n9->10"),
    ("add-stride-mismatch", "a strided branch added to the identity", "NAD301",
     ("resnet_basic",), "2:Conv2d(out_channels=C,kernel_size=3,stride=1)",
     "2:Conv2d(out_channels=C,kernel_size=3,stride=2)"),
    ("add-stride-mismatch", "a strided branch added to the identity", "NAD301",
     ("resnet_bottleneck",), "5:Conv2d(out_channels=C/4,kernel_size=3,stride=1)",
     "5:Conv2d(out_channels=C/4,kernel_size=3,stride=2)"),
    ("add-layout-mismatch", "channels-last tensor added to channels-first", "NAD301",
     ("convnext",), "8->9\n0->9", "8->9\n4->9"),
    ("concat-stride-mismatch", "a strided branch concatenated", "NAD302",
     ("inception",), "3:Conv2d(out_channels=C/4,kernel_size=3,stride=1)", "3:Conv2d(out_channels=C/4,kernel_size=3,stride=2)"),
    ("float-kernel", "ill-typed value: 3.0", "NAD209",
     ("resnet_basic", "resnet_bottleneck"), "kernel_size=3,", "kernel_size=3.0,"),
    ("zero-stride", "ill-typed value: stride=0", "NAD209",
     ("se_block",), "kernel_size=3,stride=1", "kernel_size=3,stride=0"),
    ("edge-out-of-output", "an edge out of output", "NAD205",
     ("resnet_basic",), "7->8\n8->1\n", "7->1\n1->8\n"),
    ("output-fed-twice", "output fed two branches", "NAD205",
     ("inception",), "7->8\n8->9\n9->1\n", "7->8\n8->9\n9->1\n0->1\n"),
    ("wide-output", "output with 5C/4 channels (base contract)", "NAD311",
     ("inception",), "6:Conv2d(out_channels=C/4,kernel_size=1,stride=1)", "6:Conv2d(out_channels=C/2,kernel_size=1,stride=1)"),
    ("wide-output", "output with 4C channels (base contract)", "NAD311",
     ("mobilenet_inverted",), "8->9\n9->10\n0->10\n10->1", "8->9\n9->10\n0->10\n5->1"),
    ("reshape-no-batch", "reshape without the batch axis", "NAD305",
     ("se_block",), "6:reshape(B,C)", "6:reshape(C)"),
    ("reshape-no-batch", "reshape without the batch axis (both)", "NAD305",
     ("se_block",), "11:reshape(B,C,1,1)", "11:reshape(1,C,1,1)"),
    ("unclosed-paren", "syntax: a `(` never closed", "NAD103",
     ("resnet_basic", "resnet_bottleneck"), "3:BN\n", "3:BN(\n"),
    ("bad-arrow", "syntax: `=>` for `->`", "NAD102",
     ("resnet_bottleneck", "se_block"), "2->3\n", "2=>3\n"),
    ("op-typo", "misspelt operation", "NAD104",
     ("resnet_basic", "mobilenet_inverted"), "3:BN", "3:BatchNorm2d"),
    ("unknown-symbol", "a size named by a word", "NAD109",
     ("resnet_basic",), "2:Conv2d(out_channels=C,", "2:Conv2d(out_channels=channels,"),
    ("list-marker", "syntax: a markdown list marker before a line", "NAD101",
     ("resnet_basic",), "3:BN\n", "- 3:BN\n"),
    ("quoted-size", "syntax: a quoted size", "NAD101",
     ("se_block",), "out_channels=C/4", "out_channels='C/4'"),
    ("semicolon", "syntax: a `;` ending a line", "NAD101",
     ("convnext",), "4->5\n", "4->5;\n"),
    ("no-output", "the output node and its edge left out", "NAD204",
     ("resnet_basic",), "1:output\n", ""),
    ("bias-false", "torch habit: bias=False", "NAD209",
     ("resnet_basic",), "5:Conv2d(out_channels=C,kernel_size=3,stride=1)", "5:Conv2d(out_channels=C,kernel_size=3,stride=1,bias=False)"),
    ("negative-width", "a width that is never positive", "NAD314",
     ("resnet_basic",), "2:Conv2d(out_channels=C,", "2:Conv2d(out_channels=C-C,"),
    ("missing-out-channels", "a required parameter left out", "NAD208",
     ("resnet_bottleneck",), "8:Conv2d(out_channels=C,kernel_size=1,stride=1)", "8:Conv2d(kernel_size=1,stride=1)"),
]


def _residual_too_early(text: str) -> str:
    """Move the identity wire `0->ADD` onto the node just before the Add (its last operand's source)."""
    lines = text.split("\n")
    add = next(l.split(":")[0] for l in lines if l.endswith(":Add"))
    skip = f"0->{add}"
    feeder = next(l.split("->")[0] for l in lines if l.endswith(f"->{add}") and l != skip)
    return text.replace(skip + "\n", f"0->{feeder}\n", 1)


def cases():
    """(file name, text, manifest entry), in a fixed order."""
    from nader.compiler.passes.verify import verify_program
    from nader.dsl.parser import parse

    for name, description, code, templates, old, new in EDITS:
        for template in templates:
            base = TEMPLATES[template]
            if name == "residual-too-early":
                text = _residual_too_early(base)
            elif name == "no-output":
                text = base.replace("1:output\n", "", 1).replace("8->1\n", "", 1)
            else:
                assert old in base, (name, template)
                text = base.replace(old, new, 1)
            reports, _ = verify_program(parse(text))
            codes = sorted({d.code.code for r in reports for d in r.diagnostics if d.is_error} |
                           {d.code.code for d in parse(text).diagnostics if d.is_error})
            assert code in codes, (name, template, codes)
            file = f"{code}-{name}-{template}.nad"
            yield file, text, {"file": file, "class": description, "code": code, "codes": codes, "template": template,
                               "edit": name, "source": "generated by benchmarks/repair_corpus.py from its template"}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.nad"):
        old.unlink()
    manifest = []
    seen = set()
    for file, text, entry in cases():
        if file in seen:
            continue
        seen.add(file)
        (OUT / file).write_text(text, encoding="utf-8")
        manifest.append(entry)
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"repair corpus: {len(manifest)} blocks in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
