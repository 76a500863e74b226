"""The front end's diagnostic codes (NAD1xx), their documentation, and what both readers share.

Both readers of a line (the fast path in nader.dsl.fast_lines with the checks in
nader.dsl.parser, and the grammar's parser in nader.dsl.lark_parser) report their
problems with these codes, as a `Problem` of the line; the advice for a problem
whose fix does not apply and the lexical classes their checks use live here too, so
neither module reaches into the other's private names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .diagnostics import Code, FixAvailability, Severity, define_code
from .span import ColSpan

E, W = Severity.ERROR, Severity.WARNING
SOMETIMES, ALWAYS = FixAvailability.SOMETIMES, FixAvailability.ALWAYS

UNREADABLE_FILE = define_code("NAD100", "unreadable-file", E, "The file cannot be read as UTF-8 text.", """
    ## What it does
    Reports a block file that does not exist, cannot be opened, or is not UTF-8 text.
    ## Fix
    Check the path; save the file as UTF-8.
""")
INVALID_SYNTAX = define_code("NAD101", "invalid-syntax", E, "A line is not a header, node, edge or comment.", """
    ## What it does
    Reports a line the grammar does not accept and names what was expected there.
    ## Why is this bad?
    Every line must be a header `##Name##`, a node `ID:OP(args)`, an edge `a->b`, a comment or blank.
    ## Example
    ```
    2:Conv2d(out_channels=C,,kernel_size=3)
    ```
    ## Fix
    Write one of the four line forms; the message says which token was unexpected. An unmatched `)`
    whose removal makes the line parse comes with that fix.
""", SOMETIMES)
INVALID_ARROW = define_code("NAD102", "invalid-edge-arrow", E, "An edge line lacks the `->` arrow.", """
    ## What it does
    Reports edge lines written with something other than `->` between the ids (`0-2`, `0>2`, `0 2`, `0=>2`).
    ## Example
    ```
    0-2
    ```
    ## Fix
    Write `0->2`; several sources are written `0,1->2`. The diagnostic carries the fix when the
    arrow can only mean `->` (not for `<-`).
""", SOMETIMES)
UNCLOSED_PAREN = define_code("NAD103", "unclosed-parenthesis", E, "A `(` is never closed.", """
    ## What it does
    Reports an opening parenthesis without its `)` on the same line.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=3
    ```
    ## Fix
    Close the argument list on the same line: every construct of the language fits on one line.
    When one `)` at the end of the line makes it parse, the diagnostic carries that fix.
""", SOMETIMES)
UNKNOWN_OPERATION = define_code("NAD104", "unknown-operation", E, "The operation is not in the registry.", """
    ## What it does
    Reports a node whose operation name is not one of the language's operations. Names are case-sensitive.
    ## Example
    ```
    2:Conv2D(out_channels=C,kernel_size=3)
    ```
    ## Fix
    Use a registered name (`nadc explain ops` lists them); the help line suggests the closest one,
    and the diagnostic carries the fix that writes it.
""", SOMETIMES)
UNKNOWN_PARAMETER = define_code("NAD105", "unknown-parameter", E, "The operation has no parameter of that name.", """
    ## What it does
    Reports a keyword argument that the operation does not declare.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=3,group=4)
    ```
    ## Fix
    Use a declared parameter name (here `groups`), or remove the argument.
""", SOMETIMES)
DUPLICATE_PARAMETER = define_code("NAD106", "duplicate-parameter", E, "A parameter is given twice.", """
    ## What it does
    Reports a node that sets the same parameter twice, by keyword or by position and keyword.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=3,kernel_size=1)
    ```
    ## Fix
    Keep one of the two.
""")
MISPLACED_POSITIONAL = define_code("NAD107", "misplaced-positional-argument", E, "Positional argument after a keyword, or too many.", """
    ## What it does
    Reports positional arguments after keyword ones, and more positional arguments than the operation has parameters.
    ## Example
    ```
    2:concat(dim=1,2)
    ```
    ## Fix
    Put positional arguments first, or name them.
""")
MARKDOWN_FENCE = define_code("NAD108", "markdown-fence", E, "A markdown code fence inside a block file.", """
    ## What it does
    Reports lines like ```` ``` ```` that LLM replies wrap blocks in.
    ## Why is this bad?
    The compiler is strict: it does not guess which lines of a reply are the block.
    ## Fix
    Delete the fence lines (the fix empties a line that holds only a fence), or extract the blocks
    from the reply with `nader.dsl.extract_blocks`.
""", SOMETIMES)
UNKNOWN_SYMBOL = define_code("NAD109", "unknown-symbol", E, "An expression uses a name that is not a size symbol.", """
    ## What it does
    Reports names in expressions other than `B` (batch), `C` (block input channels), `dim` (block output
    channels), `H` and `W` (spatial size).
    ## Example
    ```
    2:Conv2d(out_channels=c*2,kernel_size=3)
    ```
    ## Fix
    Use one of the size symbols (they are case-sensitive) or a number.
""", SOMETIMES)
BEFORE_HEADER = define_code("NAD110", "line-before-header", E, "A node or edge line before the file's first header.", """
    ## What it does
    Reports node and edge lines that come before the first `##Name##` header in a file that has headers.
    ## Fix
    Move the lines under a header, or add a header above them.
""")
MISSING_HEADER = define_code("NAD111", "missing-header", W, "The file has no `##Name##` header.", """
    ## What it does
    Warns that a file holds nodes and edges but no header; its lines form one block named after the file.
    ## Fix
    Add a header such as `##MyBlock##` as the first line.
""", ALWAYS)
MALFORMED_HEADER = define_code("NAD112", "malformed-header", E, "A header is not `##Name##`.", """
    ## What it does
    Reports lines that start with `##` but are not a header: unclosed (`##Name`), empty (`####`) or with
    other characters than letters, digits, `_`, `-`, `.` and single spaces between words in the name
    (NADER's own logs hold headers such as `##built-in function input_stem##`, so spaces are accepted).
    ## Fix
    Write `##Name##`, the name made of letters, digits, `_`, `-` or `.`; comments start with a single `#`.
""", SOMETIMES)
INVALID_ID = define_code("NAD113", "invalid-node-id", E, "A node id has characters other than letters, digits and `_`.", """
    ## What it does
    Reports node lines whose id is neither an integer nor a name of letters, digits and `_`
    (`conv-1:ReLU`, `2.a:BN`).
    ## Example
    ```
    conv-1:ReLU
    ```
    ## Fix
    Write the id with letters, digits and `_` only: `conv_1:ReLU` (`nadc fmt --renumber` numbers a block's nodes).
""", SOMETIMES)
MISSING_COLON = define_code("NAD114", "missing-colon", E, "A node line lacks the `:` after its id.", """
    ## What it does
    Reports node lines written `2 Conv2d(...)` or `2Conv2d(...)`.
    ## Fix
    Write `2:Conv2d(...)`.
""", SOMETIMES)
OPERATION_ALIAS = define_code("NAD115", "operation-alias", W, "An operation is spelled by an alias.", """
    ## What it does
    Warns about accepted but non-canonical spellings of operations found in NADER's files, such as `Concat`.
    ## Fix
    Use the canonical name (`concat`); `nadc fmt` rewrites it.
""", ALWAYS)
EXTRA_HASHES = define_code("NAD116", "header-extra-hashes", W, "A header uses more than two hashes.", """
    ## What it does
    Warns about headers such as `###Name###`, which LLMs often write.
    ## Fix
    Write `##Name##`; `nadc fmt` rewrites it.
""", ALWAYS)
EMPTY_FILE = define_code("NAD117", "no-blocks", E, "The file holds no block.", """
    ## What it does
    Reports a file with no header, node or edge line.
    ## Fix
    Write at least one block: a header, its nodes and its edges.
""")
TOO_MANY_NODES = define_code("NAD118", "too-many-nodes", E, "A block has more nodes than the limit.", """
    ## What it does
    Reports a block with more node lines than `nodes-per-block` (default 2,000; NADER's largest block has
    under 100). The file is read no further and none of its blocks is checked.
    ## Why is this bad?
    Checking a block costs more than linear time in its size; a reply holding a 100,000-node block kept a
    search busy for minutes. The limit is checked while the lines are read, before any costly work.
    ## Fix
    Split the block into smaller blocks. A block that really is this large: raise `nodes-per-block` in
    `[tool.nadc.limits]` of the pyproject.toml beside the file (docs/language.md, "Limits").
""")
TOO_MANY_INPUTS = define_code("NAD119", "too-many-inputs", E, "A node has more inputs than the limit.", """
    ## What it does
    Reports a node that more than `inputs-per-node` edges (default 512) lead into, counting each source of
    `a,b->c` and repeated edges. The file's blocks are not checked.
    ## Example
    ```
    0,0,0,0,...->7
    ```
    ## Fix
    Merge the inputs in stages (several `Add` or `concat` nodes, each taking a part). A node that really
    needs them: raise `inputs-per-node` in `[tool.nadc.limits]` of the pyproject.toml beside the file.
""")
NUMBER_TOO_LONG = define_code("NAD120", "number-too-long", E, "A number or id has more digits than the limit.", """
    ## What it does
    Reports a run of more than `digits-per-number` digits (default 32) in a line: a number, a node id or
    part of one. The line is not read.
    ## Why is this bad?
    No block needs such sizes, and converting a number of thousands of digits is slow in Python (past
    4,300 digits it is refused). The line is rejected before any number in it is converted.
    ## Example
    ```
    2:Conv2d(out_channels=100000000000000000000000000000000000,kernel_size=3)
    ```
    ## Fix
    Write a smaller number. Up to 640 digits (what Python always converts) can be allowed with
    `digits-per-number` in `[tool.nadc.limits]` of the pyproject.toml beside the file.
""")
LINE_TOO_LONG = define_code("NAD121", "line-too-long", E, "A line is longer than the limit.", """
    ## What it does
    Reports a line of more than `line-length` characters (default 4,096). The line is not read.
    ## Fix
    Shorten the line: write an edge with many sources as several edge lines (`0->7`, `1->7`, ...).
    Longer lines can be allowed with `line-length` in `[tool.nadc.limits]` of the pyproject.toml beside the file.
""")
TEXT_TOO_LARGE = define_code("NAD122", "text-too-large", E, "A file or reply is larger than the limit.", """
    ## What it does
    Reports a block file, or an LLM reply, of more than `text-bytes` bytes of UTF-8 (default 1 MiB). Nothing
    of it is read.
    ## Fix
    Split the file; blocks do not come this large. A larger file can be allowed with `text-bytes` in
    `[tool.nadc.limits]` of the pyproject.toml beside the file.
""")


# Blanks the grammar ignores (not every Unicode space); a header's name; a node id.
BLANK = " \t\f\r"
HEADER_NAME = re.compile(r"[A-Za-z0-9_.\-]+(?: [A-Za-z0-9_.\-]+)*")
ID_PATTERN = r"[A-Za-z0-9_]+"


@dataclass(frozen=True)
class Problem:
    """A diagnostic found in one line, before the line number is known.

    `fix`: the columns to replace and their replacement, when the help's
    proposal can be applied mechanically.
    """

    code: Code
    cols: ColSpan
    message: str
    help: Optional[str] = None
    fix: Optional[tuple[ColSpan, str]] = None


# The kind of the (safe) fix each front-end code's diagnostics carry (`Fix.kind`; `nadc explain KIND`).
FIX_KINDS = {
    "NAD101": "remove-unmatched-parenthesis",
    "NAD102": "edge-arrow",
    "NAD103": "close-parenthesis",
    "NAD104": "close-operation-name",
    "NAD105": "close-parameter-name",
    "NAD108": "delete-fence",
    "NAD109": "close-symbol",
    "NAD111": "add-header",
    "NAD112": "header",
    "NAD113": "node-id",
    "NAD114": "missing-colon",
    "NAD115": "canonical-operation-name",
    "NAD116": "header",
}


def fix_message(code: Code, old: str, new: str) -> str:
    """One line saying what a front-end fix does to the text `old`."""
    if not new:
        return f"delete `{old}`"
    if not old:
        return f"insert `{new}`"
    return f"replace `{old}` with `{new}`"


# Help for a syntax error whose fix is uncertain, or would not fit where the line stands.
ADVICE = {
    MARKDOWN_FENCE: "delete the fence; block files hold only headers, nodes, edges and comments",
    MALFORMED_HEADER: "write the header as `##Name##`",
    INVALID_SYNTAX: "lines are headers `##Name##`, nodes `ID:OP(args)`, edges `a->b` or `# comments`",
    UNCLOSED_PAREN: "close every `(` on the line that opens it",
    INVALID_ARROW: "write edges from source to target with `->`: `a->b`",
    INVALID_ID: "write ids as integers or names of letters, digits and `_`",
    MISSING_COLON: "write the node as `ID:OP(args)`",
}


# Codes of lines that were not read, or of files that were not: their text is not a parsed program.
SYNTAX_CODES = frozenset({INVALID_SYNTAX, INVALID_ARROW, UNCLOSED_PAREN, MARKDOWN_FENCE, BEFORE_HEADER,
                          MALFORMED_HEADER, INVALID_ID, MISSING_COLON, EMPTY_FILE, UNREADABLE_FILE,
                          TOO_MANY_NODES, TOO_MANY_INPUTS, NUMBER_TOO_LONG, LINE_TOO_LONG, TEXT_TOO_LARGE})
#: The codes of the input limits (nader.dsl.limits): the same in the compiler and in reply extraction.
LIMIT_CODES = (TOO_MANY_NODES, TOO_MANY_INPUTS, NUMBER_TOO_LONG, LINE_TOO_LONG, TEXT_TOO_LARGE)
