"""What a fix kind declares: `FixKind`, and the kinds the front end attaches itself (`BUILT_IN`).

Apart from the kind modules' package, so that a kind module imports its declaration type without
importing the package that discovers it (that would be an import circle).
"""
from __future__ import annotations

import textwrap

from nader.dsl.diagnostics import SAFE


class FixKind:
    """A kind of repair: its stable name, safety, the diagnostic codes it answers and its doc.

    A plain class, not a dataclass: `nadc verify` loads it on the first failing file, and making a
    dataclass costs as much as the rest of this module (about 1 ms, generating its methods)."""

    __slots__ = ("name", "safety", "codes", "summary", "doc", "order")

    def __init__(self, name: str, safety: str, codes: tuple[str, ...], summary: str, doc: str, order: int = 50):
        self.name = name  # "merge-inputs-add"
        self.safety = safety  # "safe" | "unsafe"
        self.codes = codes  # ("NAD207",); ("*",): any error
        self.summary = summary  # one line
        self.doc = doc  # markdown: what it does, when it applies, an example
        self.order = order  # ties between equally good candidates go to the lower order

    def _fields(self) -> tuple:
        return self.name, self.safety, self.codes, self.summary, self.doc, self.order

    def __eq__(self, other) -> bool:
        return type(other) is FixKind and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"FixKind({self.name!r}, {self.safety!r}, {self.codes!r})"

    @property
    def answers(self) -> str:
        return "any error" if self.codes == ("*",) else ", ".join(self.codes)

    def explain(self) -> str:
        return (f"# {self.name} ({self.safety} fix)\n\nAnswers: {self.answers}. {self.summary}\n\n"
                f"{textwrap.dedent(self.doc).strip()}\n")


#: Kinds the front end and the structure pass attach to their own diagnostics (not discovered:
#: their fix is computed where the diagnostic is); documented here so `nadc explain` knows them all.
BUILT_IN = (
    FixKind("close-parameter-name", SAFE, ("NAD105",), "Replace a misspelt parameter name by the one it is close to.",
            "`Conv2d(kernel_sise=3)` becomes `Conv2d(kernel_size=3)`, when one name is close enough.", 1),
    FixKind("close-operation-name", SAFE, ("NAD104",), "Replace a misspelt operation by the one it is close to.",
            "`2:Conv2D(...)`, `3:Relu` become `2:Conv2d(...)`, `3:ReLU`, when one name is close enough.", 1),
    FixKind("close-symbol", SAFE, ("NAD109",), "Replace a misspelt size symbol by the one it is close to.",
            "`AvgPool2d(kernel_size=H1)` becomes `AvgPool2d(kernel_size=H)`, when one symbol is close enough.", 1),
    FixKind("edge-arrow", SAFE, ("NAD102",), "Write an edge's arrow as `->`.", "`0-2`, `0=>2` and `0→2` become `0->2`.", 1),
    FixKind("close-parenthesis", SAFE, ("NAD103",), "Close a `(` at the end of its line.", "`2:Conv2d(out_channels=C` gets its `)`.", 1),
    FixKind("remove-unmatched-parenthesis", SAFE, ("NAD101",), "Delete a `)` that closes nothing.", "`3:ReLU)` becomes `3:ReLU`.", 1),
    FixKind("delete-fence", SAFE, ("NAD108",), "Empty a line that holds only a markdown fence.", "A line ```` ``` ```` is emptied.", 1),
    FixKind("add-header", SAFE, ("NAD111",), "Insert a `##Name##` header named after the file.", "A headerless `resnet.nad` gets `##resnet##`.", 1),
    FixKind("header", SAFE, ("NAD112", "NAD116"), "Rewrite a malformed header as `##Name##`.", "`##Block#` and `###Block###` become `##Block##`.", 1),
    FixKind("node-id", SAFE, ("NAD113",), "Drop characters a node id may not hold.", "`2-a:ReLU` becomes `2a:ReLU`.", 1),
    FixKind("missing-colon", SAFE, ("NAD114",), "Insert the `:` after a node's id.", "`2 Conv2d(...)` becomes `2:Conv2d(...)`.", 1),
    FixKind("canonical-operation-name", SAFE, ("NAD115",), "Spell an operation by its canonical name.", "`Conv` becomes `Conv2d`.", 1),
    FixKind("fresh-id", SAFE, ("NAD201",), "Give the second of two nodes sharing an id an unused id.",
            "The second `2:ReLU` becomes `5:ReLU`; edges naming `2` keep meaning the first.", 1),
    FixKind("add-terminal", "unsafe", ("NAD204",), "Add a missing `input` or `output` node.",
            "A block without `output` gets `N:output`; it still needs an edge into it.", 60),
    FixKind("drop-edit", "unsafe", ("edit-unknown-node", "edit-duplicate-node", "edit-unknown-edge",
                                    "edit-duplicate-edge", "edit-syntax", "edit-too-many", "edit-line-too-long",
                                    "edit-left-out"),
            "Leave out an edit of an LLM's edit reply that cannot apply; the others apply.", """
    An edit reply (`reply = "edits"`, nader.dsl.edits) whose edits do not all apply is repaired
    from the block the others make of the parent (nader.compiler.reply_repair), which is then
    repaired like any block. `replace 3x3:BN` (no node `3x3`) is left out and `replace 4:GELU`
    applies. Where no repair makes that block verify, the reply's last edits are left out too
    (`edit-left-out`), the longest beginning that repairs first. Unsafe: the edit left out was part
    of what the model meant.""", 70),
)
