"""What an editor asks of a block file, answered from the compiler's own passes.

`nadc lsp` (compiler/commands/lsp_server.py) speaks the Language Server Protocol and turns these
answers into its messages; everything that knows the language lives here, below the command line,
so the server holds no second copy of a check and other front ends (tests, scripts) can ask the
same questions. Positions are the compiler's: 1-based lines, 1-based character columns, end
columns exclusive.
"""
from .actions import quick_fixes
from .analysis import Analysis, analyze_document
from .complete import Completion, completions
from .hover import hover
from .navigate import Symbol, definition, folding_ranges, references, rename_edits, symbols

__all__ = ["Analysis", "Completion", "Symbol", "analyze_document", "completions", "definition", "folding_ranges", "hover",
           "quick_fixes", "references", "rename_edits", "symbols"]
