"""The `nadc lsp` server: protocol messages in, `nader.compiler.editor` answers out.

Each open or change schedules an analysis of the document on one worker thread, so the message
loop keeps answering while it runs and analyses never run at the same time (the parser's caches
are shared). A result is published only if the document is still at the version it analysed:
a stale one is dropped and the newest text analysed instead. Requests (hover, completion, ...)
reuse the analysis of the current version, or wait for one on the same thread.

Positions: the compiler counts characters from 1; the protocol counts lines from 0 and, by
default, UTF-16 code units; pygls's position codec converts between them.
"""
from __future__ import annotations

import asyncio
import difflib
import logging
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional
from urllib.parse import unquote

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from nader import __version__
from nader.compiler.codes import code_table
from nader.compiler.editor import Analysis, analyze_document, completions, definition, folding_ranges, hover, references
from nader.compiler.editor import quick_fixes, rename_edits, symbols
from nader.compiler.passes import SQUARE, Limits
from nader.compiler.repair import repair_text
from nader.compiler.repair.config import FixConfigError, fix_config_for
from nader.dsl.diagnostics import Diagnostic, Edit, Fix, Severity
from nader.dsl.format import format_source
from nader.dsl.span import Span

log = logging.getLogger("nadc.lsp")

_KINDS = {"operation": T.CompletionItemKind.Function, "parameter": T.CompletionItemKind.Property,
          "symbol": T.CompletionItemKind.Constant, "node": T.CompletionItemKind.Variable}
#: The kind of the whole-file repair: editors run it on save when asked (`source.fixAll`).
FIX_ALL = "source.fixAll.nadc"
_SEVERITY = {Severity.ERROR: T.DiagnosticSeverity.Error, Severity.WARNING: T.DiagnosticSeverity.Warning}


class State:
    """The server's documents: the last analysis of each and whether one is running."""

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nadc-analysis")
        self.results: dict[str, tuple[Optional[int], Analysis]] = {}
        self.busy: set[str] = set()
        self.explain_url: Optional[str] = None  # a template with `{code}`, from initializationOptions
        self._explained: dict[str, str] = {}


server = LanguageServer("nadc", __version__)
state = State()


def _path(uri: str) -> str:
    path = to_fs_path(uri)
    return path if path else "<stdin>"  # an unsaved buffer: configuration from the working directory


def _open(ls: LanguageServer, uri: str):
    """The open document of `uri`, or None once it is closed."""
    return ls.workspace.text_documents.get(unquote(uri))


async def _analysis(ls: LanguageServer, uri: str) -> tuple[Optional[int], Analysis]:
    """The analysis of the document's current version, computed on the worker thread if missing."""
    doc = ls.workspace.get_text_document(uri)
    cached = state.results.get(uri)
    if cached is not None and cached[0] == doc.version:
        return cached
    version, text = doc.version, doc.source
    analysis = await asyncio.get_running_loop().run_in_executor(state.executor, analyze_document, text, _path(uri))
    return version, analysis


async def refresh(ls: LanguageServer, uri: str) -> None:
    """Analyse the document and publish its diagnostics; while one analysis runs, later changes wait
    for it and the newest version is analysed next (results of older ones are dropped)."""
    if uri in state.busy:
        return  # the running loop below sees the newer version
    state.busy.add(uri)
    try:
        while _open(ls, uri) is not None:
            version, analysis = await _analysis(ls, uri)
            doc = _open(ls, uri)
            if doc is None:
                return  # closed meanwhile
            if doc.version != version:
                continue  # stale: changed while analysed
            state.results[uri] = (version, analysis)
            ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=[_diagnostic(ls, uri, analysis, d) for d in analysis.diagnostics]))
            if analysis.config_error:
                ls.window_log_message(T.LogMessageParams(T.MessageType.Warning, analysis.config_error))
            return
    except Exception as error:  # noqa: BLE001 - a bug must not end the server; the editor is told
        log.exception("analysis failed")
        ls.window_show_message(T.ShowMessageParams(T.MessageType.Error,
                                                   f"nadc: internal error analysing {uri}: {type(error).__name__}: {error}"))
    finally:
        state.busy.discard(uri)


# -- conversions --------------------------------------------------------------------------------

def _units(text: str) -> int:
    """The length of `text` in the negotiated position encoding (UTF-16 unless the client chose another)."""
    return server.workspace.position_codec.client_num_units(text) if not text.isascii() else len(text)


def _position(lines: list[str], line: int, col: int) -> T.Position:
    """A compiler position (1-based line and character column) in the protocol's units."""
    if line <= 0:
        return T.Position(0, 0)
    if line > len(lines):
        return T.Position(len(lines), 0)
    text = lines[line - 1]
    prefix = text[:max(col - 1, 0)]
    return T.Position(line - 1, _units(prefix))


def _range(lines: list[str], span: Span) -> T.Range:
    return T.Range(_position(lines, span.line, span.col), _position(lines, span.end_line, span.end_col))


def _from_position(lines: list[str], position: T.Position) -> tuple[int, int]:
    """A protocol position as the compiler's (line, column)."""
    if position.line >= len(lines):
        return position.line + 1, 1
    units, col = 0, 1
    for ch in lines[position.line]:
        if units >= position.character:
            break
        units += _units(ch)
        col += 1
    return position.line + 1, col


def _explain_link(code: str) -> Optional[str]:
    """A link to the code's `nadc explain` text: the configured template, else a file the server writes."""
    if state.explain_url:
        return state.explain_url.replace("{code}", code)
    if code not in state._explained:
        entry = code_table().get(code)
        if entry is None:
            return None
        folder = Path(tempfile.gettempdir()) / f"nadc-explain-{__version__}"
        try:
            folder.mkdir(exist_ok=True)
            target = folder / f"{code}.md"
            target.write_text(entry.explain(), encoding="utf-8")
        except OSError:
            return None
        state._explained[code] = target.as_uri()
    return state._explained[code]


def _diagnostic(ls: LanguageServer, uri: str, analysis: Analysis, d: Diagnostic) -> T.Diagnostic:
    lines = analysis.lines
    link = _explain_link(d.code.code)
    related = [T.DiagnosticRelatedInformation(T.Location(uri, _range(lines, label.span)), label.message)
               for label in d.secondary]
    return T.Diagnostic(
        range=_range(lines, d.span), message=d.message + (f"\nhelp: {d.help}" if d.help else ""),
        severity=_SEVERITY[d.level], code=d.code.code, source="nadc",
        code_description=T.CodeDescription(href=link) if link else None,
        related_information=related or None, data={"name": d.code.name, "fix": d.fix is not None})


def _text_edits(lines: list[str], fix: Fix) -> list[T.TextEdit]:
    return [T.TextEdit(_range(lines, e.span), e.text) for e in fix.edits]


def _fix_title(analysis: Analysis, d: Diagnostic) -> str:
    """The action's title: the fix's own message, else what its edit does; unsafe ones say so."""
    fix = d.fix
    title = getattr(fix, "message", "") or _edit_text(analysis, fix)
    unsafe = getattr(fix, "safety", "safe") == "unsafe"
    return f"{d.code.code}: {title}" + (" (unsafe: changes the architecture)" if unsafe else "")


def _edit_text(analysis: Analysis, fix: Fix) -> str:
    lines = analysis.lines
    if len(fix.edits) == 1:
        e: Edit = fix.edits[0]
        old = lines[e.span.line - 1][e.span.col - 1:e.span.end_col - 1] if e.span.line == e.span.end_line \
            and 0 < e.span.line <= len(lines) else ""
        if old and e.text:
            return f"replace `{old}` with `{e.text.strip()}`"
        if e.text:
            return f"insert `{e.text.strip()}`"
        if old:
            return f"remove `{old}`"
    return "apply the fix"


# -- features -----------------------------------------------------------------------------------

@server.feature(T.INITIALIZE)
def initialize(ls: LanguageServer, params: T.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, dict) and isinstance(options.get("explainUrl"), str):
        state.explain_url = options["explainUrl"]


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: LanguageServer, params: T.DidOpenTextDocumentParams) -> None:
    await refresh(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: LanguageServer, params: T.DidChangeTextDocumentParams) -> None:
    await refresh(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: LanguageServer, params: T.DidSaveTextDocumentParams) -> None:
    await refresh(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LanguageServer, params: T.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    state.results.pop(uri, None)
    ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(T.TEXT_DOCUMENT_HOVER)
async def on_hover(ls: LanguageServer, params: T.HoverParams) -> Optional[T.Hover]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    lines = analysis.lines
    found = hover(analysis, *_from_position(lines, params.position))
    if found is None:
        return None
    text, span = found
    return T.Hover(T.MarkupContent(T.MarkupKind.Markdown, text), _range(lines, span))


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=[":", "(", ",", "=", ">"]))
async def on_completion(ls: LanguageServer, params: T.CompletionParams) -> T.CompletionList:
    _, analysis = await _analysis(ls, params.text_document.uri)
    items = [T.CompletionItem(label=c.label, kind=_KINDS[c.kind], detail=c.detail or None,
                              documentation=T.MarkupContent(T.MarkupKind.Markdown, c.documentation)
                              if c.documentation else None, insert_text=c.insert_text)
             for c in completions(analysis, *_from_position(analysis.lines, params.position))]
    return T.CompletionList(is_incomplete=False, items=items)


def _format_edits(analysis: Analysis, only: Optional[tuple[int, int]] = None) -> Optional[list[T.TextEdit]]:
    """The edits that make the text canonical (`nadc fmt`), as changed runs of lines; with `only`
    (first, last line, 1-based), those runs that touch these lines. None when it cannot be formatted."""
    result = format_source(analysis.parsed.source, analysis.path, limits=analysis.limits)
    if not result.ok:
        return None
    old, new = analysis.parsed.source.splitlines(keepends=True), result.text.splitlines(keepends=True)
    lines = analysis.lines
    edits = []
    for tag, i1, i2, j1, j2 in _runs(old, new):
        if only is not None and (i2 < only[0] or i1 + 1 > only[1]):
            continue
        end = T.Position(i2, 0) if i2 < len(old) or not old or old[-1].endswith("\n") \
            else _position(lines, len(old), len(old[-1]) + 1)
        edits.append(T.TextEdit(T.Range(T.Position(i1, 0), end), "".join(new[j1:j2])))
    return edits


def _runs(old: list[str], new: list[str]):
    """The changed runs of lines; a run that replaces as many lines as it has, line by line, so that
    a range format touches only the lines asked for."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            yield from ((tag, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1))
        elif tag != "equal":
            yield tag, i1, i2, j1, j2


@server.feature(T.TEXT_DOCUMENT_FORMATTING)
async def on_formatting(ls: LanguageServer, params: T.DocumentFormattingParams) -> Optional[list[T.TextEdit]]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    return _format_edits(analysis)


@server.feature(T.TEXT_DOCUMENT_RANGE_FORMATTING)
async def on_range_formatting(ls: LanguageServer, params: T.DocumentRangeFormattingParams) -> Optional[list[T.TextEdit]]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    return _format_edits(analysis, (params.range.start.line + 1, params.range.end.line + 1))


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(
    code_action_kinds=[T.CodeActionKind.QuickFix, FIX_ALL]))
async def on_code_action(ls: LanguageServer, params: T.CodeActionParams) -> list[T.CodeAction]:
    """Each diagnostic's fix in the range (safe ones preferred, unsafe ones marked) and the other verified
    repairs of its errors, and `nadc fix`'s safe repair of the whole file as a fix-all action."""
    uri = params.text_document.uri
    _, analysis = await _analysis(ls, uri)
    lines = analysis.lines
    first, last = params.range.start.line + 1, params.range.end.line + 1
    wanted = params.context.only
    actions = []
    if not wanted or any(k.startswith(T.CodeActionKind.QuickFix) for k in wanted):
        # each diagnostic's fix, then the other verified repairs of each error (compiler/editor/actions.py)
        fixes = await asyncio.get_running_loop().run_in_executor(state.executor, quick_fixes, analysis, first, last)
        for d, preferred in fixes:
            actions.append(T.CodeAction(
                title=_fix_title(analysis, d), kind=T.CodeActionKind.QuickFix,
                diagnostics=[_diagnostic(ls, uri, analysis, d)], is_preferred=preferred,
                edit=T.WorkspaceEdit(changes={uri: _text_edits(lines, d.fix)})))
    if wanted and any(FIX_ALL.startswith(k) for k in wanted) and any(d.is_error for d in analysis.diagnostics):
        repaired = await asyncio.get_running_loop().run_in_executor(state.executor, _repaired, analysis)
        if repaired is not None:
            end = _position(lines, len(lines), len(lines[-1]) + 1)
            actions.append(T.CodeAction(title="nadc fix: repair the file (as `nadc fix` does)", kind=FIX_ALL,
                                        edit=T.WorkspaceEdit(changes={uri: [T.TextEdit(T.Range(T.Position(0, 0), end),
                                                                                       repaired)]})))
    return actions


def _repaired(analysis: Analysis) -> Optional[str]:
    """The text after `nadc fix`'s repairs (safe ones; unsafe too where `[tool.nadc.fix]` says so), or
    None when they change nothing or the configuration cannot be used."""
    try:
        config = fix_config_for(analysis.path)
    except FixConfigError:
        return None
    result = repair_text(analysis.parsed.source, unsafe=config.unsafe, disabled=config.disabled, role=None,
                         stem_stride=None, limits=Limits(), domain=SQUARE, path=analysis.path,
                         input_limits=analysis.limits)
    return result.text if result.changed else None


def _locations(uri: str, analysis: Analysis, spans: list[Span]) -> list[T.Location]:
    return [T.Location(uri, _range(analysis.lines, s)) for s in spans]


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
async def on_definition(ls: LanguageServer, params: T.DefinitionParams) -> list[T.Location]:
    uri = params.text_document.uri
    _, analysis = await _analysis(ls, uri)
    return _locations(uri, analysis, definition(analysis, *_from_position(analysis.lines, params.position)))


@server.feature(T.TEXT_DOCUMENT_REFERENCES)
async def on_references(ls: LanguageServer, params: T.ReferenceParams) -> list[T.Location]:
    uri = params.text_document.uri
    _, analysis = await _analysis(ls, uri)
    spans = references(analysis, *_from_position(analysis.lines, params.position),
                       include_declaration=params.context.include_declaration)
    return _locations(uri, analysis, spans)


@server.feature(T.TEXT_DOCUMENT_RENAME)
async def on_rename(ls: LanguageServer, params: T.RenameParams) -> Optional[T.WorkspaceEdit]:
    uri = params.text_document.uri
    _, analysis = await _analysis(ls, uri)
    edits = rename_edits(analysis, *_from_position(analysis.lines, params.position), params.new_name)
    return T.WorkspaceEdit(changes={uri: [T.TextEdit(_range(analysis.lines, s), text) for s, text in edits]})


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def on_symbols(ls: LanguageServer, params: T.DocumentSymbolParams) -> list[T.DocumentSymbol]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    lines = analysis.lines

    def convert(s) -> T.DocumentSymbol:
        return T.DocumentSymbol(name=s.name, detail=s.detail, range=_range(lines, s.span),
                                selection_range=_range(lines, s.selection),
                                kind=T.SymbolKind.Class if s.kind == "block" else T.SymbolKind.Field,
                                children=[convert(c) for c in s.children] or None)

    return [convert(s) for s in symbols(analysis)]


@server.feature(T.TEXT_DOCUMENT_FOLDING_RANGE)
async def on_folding(ls: LanguageServer, params: T.FoldingRangeParams) -> list[T.FoldingRange]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    return [T.FoldingRange(start_line=a - 1, end_line=b - 1, kind=T.FoldingRangeKind.Region)
            for a, b in folding_ranges(analysis)]


def serve() -> None:
    """Answer over standard input and output until the editor ends the session."""
    logging.basicConfig(level=logging.WARNING, format="nadc lsp: %(message)s")  # stderr: the editor's log
    server.start_io()
