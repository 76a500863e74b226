"""Front end of the block language: op registry, IR, parser, formatter, extraction.

The names below load their module on first use, so importing one submodule (say
`nader.dsl.diagnostics`) does not import the parser and Lark: `nadc` starts faster.
"""
import importlib

_EXPORTS = {
    "Code": "diagnostics", "Diagnostic": "diagnostics", "Severity": "diagnostics",
    "Extraction": "extract", "extract_blocks": "extract",
    "format_program": "format",
    "DEFAULT_LIMITS": "limits", "InputLimits": "limits",
    "Arg": "ir", "Block": "ir", "Edge": "ir", "Node": "ir", "Program": "ir", "Role": "ir",
    "REGISTRY": "ops", "Group": "ops", "Op": "ops", "OpDef": "ops", "lookup": "ops", "reference_text": "ops",
    "ParseResult": "parser", "parse": "parser", "parse_file": "parser",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
