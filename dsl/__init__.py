"""Front end of the block language: op registry, IR, parser, formatter, extraction."""
from .diagnostics import Code, Diagnostic, Severity, code_table
from .ir import Arg, Block, Edge, Node, Program, Role
from .ops import REGISTRY, Group, Op, OpDef, lookup, reference_text
from .parser import ParseResult, parse, parse_file

__all__ = [
    "Arg", "Block", "Code", "Diagnostic", "Edge", "Group", "Node", "Op", "OpDef", "ParseResult", "Program",
    "REGISTRY", "Role", "Severity", "code_table", "lookup", "parse", "parse_file", "reference_text",
]
