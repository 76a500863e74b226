"""Front end of the block language: op registry, IR, parser, formatter, extraction.

The names below load their module on first use, so importing one submodule (say
`nader.dsl.diagnostics`) does not import the parser and Lark: `nadc` starts faster.
"""
from nader import lazy_exports

_EXPORTS = {
    "Code": "diagnostics", "Diagnostic": "diagnostics", "Severity": "diagnostics",
    "Extraction": "extract", "extract_blocks": "extract",
    "format_program": "format",
    "DEFAULT_LIMITS": "limits", "InputLimits": "limits",
    "Arg": "ir", "Block": "ir", "Edge": "ir", "Node": "ir", "Program": "ir", "Role": "ir",
    "REGISTRY": "ops", "Group": "ops", "Op": "ops", "OpDef": "ops", "lookup": "ops", "reference_text": "ops",
    "ParseResult": "parser", "parse": "parser", "parse_file": "block_files",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
