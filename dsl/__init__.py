"""Front end of the block language: op registry, IR, parser, formatter, extraction."""
from .diagnostics import Code, Diagnostic, Severity, code_table
from .extract import Extraction, extract_blocks
from .format import format_program
from .ir import Arg, Block, Edge, Node, Program, Role
from .ops import REGISTRY, Group, Op, OpDef, lookup, reference_text
from .parser import ParseResult, parse, parse_file

__all__ = [
    "Arg", "Block", "Code", "Diagnostic", "Edge", "Group", "Node", "Op", "OpDef", "ParseResult", "Program",
    "REGISTRY", "Role", "Severity", "code_table", "lookup", "parse", "parse_file", "reference_text",
    "Extraction", "extract_blocks", "format_program",
]
