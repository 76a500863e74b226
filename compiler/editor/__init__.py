"""What an editor asks of a block file, answered from the compiler's own passes.

`nadc lsp` (compiler/commands/lsp_server.py) speaks the Language Server Protocol and turns these
answers into its messages; everything that knows the language lives here, below the command line,
so the server holds no second copy of a check and other front ends (tests, scripts) can ask the
same questions. Positions are the compiler's: 1-based lines, 1-based character columns, end
columns exclusive.
"""
from .actions import fix_title, format_runs, quick_fixes, repaired
from .analysis import Analysis, analyze_document, analyze_file
from .complete import Completion, completions
from .hover import explain_file, hover
from .navigate import RenameRefused, Symbol, definition, folding_ranges, references, rename_edits, symbols

__all__ = ["Analysis", "Completion", "RenameRefused", "Symbol", "analyze_document", "analyze_file", "completions",
           "definition", "explain_file", "fix_title", "folding_ranges", "format_runs", "hover", "quick_fixes", "references",
           "rename_edits", "repaired", "symbols"]
