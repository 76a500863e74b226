"""The `nadc lsp` server: protocol messages in, `nader.compiler.editor` answers out.

Each open or change schedules an analysis of the document on one worker thread, so the message
loop keeps answering while it runs and analyses never run at the same time (the parser's caches
are shared). A result is published only if the document is still at the version it analysed:
a stale one is dropped and the newest text analysed instead. Requests (hover, completion, ...)
reuse the analysis of the current version, or wait for one on the same thread.
Messages reach pygls only through `lsp_transport.py` (strict frames, envelope, lifecycle); here
they are typed by lsprotocol (params that do not fit get -32602), and a request the server
declines gets -32803 with the reason, a bug -32603 with one line, never a traceback.
Positions: the compiler counts characters from 1; the protocol counts lines from 0 and, by
default, UTF-16 code units; pygls's position codec converts between them.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import typing
from concurrent.futures import ThreadPoolExecutor
from typing import Optional
from urllib.parse import unquote

import cattrs
from lsprotocol import types as T
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.uris import to_fs_path

from nader import __version__
from nader.compiler.editor import Analysis, RenameRefused, analyze_document, analyze_file, completions, definition
from nader.compiler.editor import explain_file, fix_title, folding_ranges, format_runs, hover, quick_fixes, references
from nader.compiler.editor import rename_edits, repaired, symbols
from nader.dsl.diagnostics import Diagnostic, Fix, Severity
from nader.dsl.span import Span
from nader.inputs import InputError

from . import lsp_transport as wire

log = logging.getLogger("nadc.lsp")

_KINDS = {"operation": T.CompletionItemKind.Function, "parameter": T.CompletionItemKind.Property,
          "symbol": T.CompletionItemKind.Constant, "node": T.CompletionItemKind.Variable}
#: The kind of the whole-file repair: editors run it on save when asked (`source.fixAll`).
FIX_ALL = "source.fixAll.nadc"
_SEVERITY = {Severity.ERROR: T.DiagnosticSeverity.Error, Severity.WARNING: T.DiagnosticSeverity.Warning}
#: The most characters the open documents hold together: past it, the document that grew is
#: dropped (as if closed) and the editor told, so no client can make the server's memory grow
#: without bound by opening documents.
MAX_OPEN_TEXT = 64 << 20


class State:
    """The server's documents: the last analysis of each and whether one is running."""

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nadc-analysis")
        self.results: dict[str, tuple[Optional[int], Analysis]] = {}
        self.busy: set[str] = set()
        self.explain_url: Optional[str] = None  # a template with `{code}`, from initializationOptions
        self.sizes: dict[str, int] = {}  # characters of each open document
        self.open_text = 0


class Refused(Exception):
    """A request the server declines, with the reason the editor shows (-32803, RequestFailed)."""


class _Protocol(LanguageServerProtocol):
    def _send_response(self, msg_id, result=None, error=None):
        # pygls puts the traceback of an unexpected error in `data`: it stays in the log, one line
        if error is not None and error.data is not None:
            error = T.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)

    def forget_finished(self) -> None:
        """pygls keeps the future of each notification's handlers in `_request_futures`, and only a
        request's answer takes one out: without this, every keystroke's didChange stayed (two
        futures each). A finished one is answered or needs no answer."""
        for key in [key for key, future in self._request_futures.items() if future.done()]:
            del self._request_futures[key]


CONVERTER = default_converter()
for _kind in (str, int, float, bool):
    CONVERTER.register_structure_hook(_kind, wire.exactly(_kind))
server = LanguageServer("nadc", __version__, protocol_cls=_Protocol, converter_factory=lambda: CONVERTER)
state = State()


def _answers(handler):
    """A request handler whose failures are the spec's errors: `Refused` -32803 with its reason,
    anything else -32603 with one line (the log has the same line, no traceback)."""

    @functools.wraps(handler)
    async def answered(ls, params):
        try:
            return await handler(ls, params)
        except (Refused, InputError) as refusal:
            raise JsonRpcException(str(refusal), code=wire.REQUEST_FAILED) from None
        except JsonRpcException:
            raise
        except Exception as error:  # noqa: BLE001 - answered as the spec's error, never a traceback
            log.error("internal error in %s: %s: %s", handler.__name__, type(error).__name__, error)
            raise JsonRpcInternalError(f"nadc: internal error: {type(error).__name__}: {error}"[:500]) from None
    return answered


def _path(uri: str) -> str:
    try:
        path = to_fs_path(uri)
    except Exception:  # noqa: BLE001 - a URI pygls cannot take apart is no file
        path = None
    return path if path else "<stdin>"  # an unsaved buffer: configuration from the working directory


def _open(ls: LanguageServer, uri: str):
    """The open document of `uri`, or None once it is closed."""
    return ls.workspace.text_documents.get(unquote(uri))


def _analyze_closed(uri: str) -> Analysis:
    """A document the editor has not opened, analysed from its file (`analyze_file`: a regular file
    of bounded size only, so a FIFO, /dev/stdin or /dev/zero is refused, not read)."""
    path = _path(uri) if uri.startswith("file:") else "<stdin>"
    if path == "<stdin>":
        raise Refused(f"{wire.shown_method(uri)!r} is not open and not a file: open it in the editor first")
    return analyze_file(path)  # InputError: answered as a refusal


async def _analysis(ls: LanguageServer, uri: str) -> tuple[Optional[int], Analysis]:
    """The analysis of the document's current version, computed on the worker thread if missing;
    a document not open is read from disk (`_closed_text`) each time."""
    loop = asyncio.get_running_loop()
    doc = _open(ls, uri)
    if doc is None:
        return None, await loop.run_in_executor(state.executor, _analyze_closed, uri)
    cached = state.results.get(uri)
    if cached is not None and cached[0] == doc.version:
        return cached
    version, text = doc.version, doc.source
    analysis = await loop.run_in_executor(state.executor, analyze_document, text, _path(uri))
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
        log.error("analysis of %s failed: %s: %s", uri, type(error).__name__, error)
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
    return state.explain_url.replace("{code}", code) if state.explain_url else explain_file(code)


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


# -- features -----------------------------------------------------------------------------------

@server.feature(T.INITIALIZE)
def initialize(ls: LanguageServer, params: T.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, dict) and isinstance(options.get("explainUrl"), str) and len(options["explainUrl"]) < 2048:
        state.explain_url = options["explainUrl"]
    session.initialized = True


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
async def did_edit(ls: LanguageServer, params) -> None:
    """An open, a change or a save: analyse the document again."""
    await refresh(ls, params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LanguageServer, params: T.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    state.results.pop(uri, None)
    state.open_text -= state.sizes.pop(unquote(uri), 0)
    ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(T.TEXT_DOCUMENT_HOVER)
@_answers
async def on_hover(ls: LanguageServer, params: T.HoverParams) -> Optional[T.Hover]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    lines = analysis.lines
    found = hover(analysis, *_from_position(lines, params.position))
    if found is None:
        return None
    text, span = found
    return T.Hover(T.MarkupContent(T.MarkupKind.Markdown, text), _range(lines, span))


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=[":", "(", ",", "=", ">"]))
@_answers
async def on_completion(ls: LanguageServer, params: T.CompletionParams) -> T.CompletionList:
    _, analysis = await _analysis(ls, params.text_document.uri)
    items = [T.CompletionItem(label=c.label, kind=_KINDS[c.kind], detail=c.detail or None,
                              documentation=T.MarkupContent(T.MarkupKind.Markdown, c.documentation)
                              if c.documentation else None, insert_text=c.insert_text)
             for c in completions(analysis, *_from_position(analysis.lines, params.position))]
    return T.CompletionList(is_incomplete=False, items=items)


def _format_edits(analysis: Analysis, only: Optional[tuple[int, int]] = None) -> Optional[list[T.TextEdit]]:
    """`nadc fmt`'s changed runs of lines as text edits (`format_runs`); None when it cannot format."""
    runs = format_runs(analysis, only)
    if runs is None:
        return None
    old = analysis.parsed.source.splitlines(keepends=True)
    edits = []
    for i1, i2, text in runs:
        end = T.Position(i2, 0) if i2 < len(old) or not old or old[-1].endswith("\n") \
            else _position(analysis.lines, len(old), len(old[-1]) + 1)
        edits.append(T.TextEdit(T.Range(T.Position(i1, 0), end), text))
    return edits


def _lines_of(params_range: T.Range) -> tuple[int, int]:
    """A range's first and last line, 1-based; -32602 for one that ends before it starts."""
    start, end = params_range.start, params_range.end
    if (end.line, end.character) < (start.line, start.character):
        raise JsonRpcInvalidParams("invalid params: the range ends before it starts")
    return start.line + 1, end.line + 1


@server.feature(T.TEXT_DOCUMENT_FORMATTING)
@_answers
async def on_formatting(ls: LanguageServer, params: T.DocumentFormattingParams) -> Optional[list[T.TextEdit]]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    return _format_edits(analysis)


@server.feature(T.TEXT_DOCUMENT_RANGE_FORMATTING)
@_answers
async def on_range_formatting(ls: LanguageServer, params: T.DocumentRangeFormattingParams) -> Optional[list[T.TextEdit]]:
    lines = _lines_of(params.range)
    _, analysis = await _analysis(ls, params.text_document.uri)
    return _format_edits(analysis, lines)


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(
    code_action_kinds=[T.CodeActionKind.QuickFix, FIX_ALL]))
@_answers
async def on_code_action(ls: LanguageServer, params: T.CodeActionParams) -> list[T.CodeAction]:
    """Each diagnostic's fix in the range (safe ones preferred, unsafe ones marked) and the other verified
    repairs of its errors, and `nadc fix`'s safe repair of the whole file as a fix-all action."""
    uri = params.text_document.uri
    first, last = _lines_of(params.range)
    _, analysis = await _analysis(ls, uri)
    lines = analysis.lines
    wanted = params.context.only
    actions = []
    if not wanted or any(k.startswith(T.CodeActionKind.QuickFix) for k in wanted):
        # each diagnostic's fix, then the other verified repairs of each error (compiler/editor/actions.py)
        fixes = await asyncio.get_running_loop().run_in_executor(state.executor, quick_fixes, analysis, first, last)
        for d, preferred in fixes:
            actions.append(T.CodeAction(
                title=fix_title(analysis, d), kind=T.CodeActionKind.QuickFix,
                diagnostics=[_diagnostic(ls, uri, analysis, d)], is_preferred=preferred,
                edit=T.WorkspaceEdit(changes={uri: _text_edits(lines, d.fix)})))
    if wanted and any(FIX_ALL.startswith(k) for k in wanted) and any(d.is_error for d in analysis.diagnostics):
        text = await asyncio.get_running_loop().run_in_executor(state.executor, repaired, analysis)
        if text is not None:
            end = _position(lines, len(lines), len(lines[-1]) + 1)
            actions.append(T.CodeAction(title="nadc fix: repair the file (as `nadc fix` does)", kind=FIX_ALL,
                                        edit=T.WorkspaceEdit(changes={uri: [T.TextEdit(T.Range(T.Position(0, 0), end),
                                                                                       text)]})))
    return actions


def _locations(uri: str, analysis: Analysis, spans: list[Span]) -> list[T.Location]:
    return [T.Location(uri, _range(analysis.lines, s)) for s in spans]


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
@_answers
async def on_definition(ls: LanguageServer, params: T.DefinitionParams) -> list[T.Location]:
    uri = params.text_document.uri
    _, analysis = await _analysis(ls, uri)
    return _locations(uri, analysis, definition(analysis, *_from_position(analysis.lines, params.position)))


@server.feature(T.TEXT_DOCUMENT_REFERENCES)
@_answers
async def on_references(ls: LanguageServer, params: T.ReferenceParams) -> list[T.Location]:
    uri = params.text_document.uri
    _, analysis = await _analysis(ls, uri)
    spans = references(analysis, *_from_position(analysis.lines, params.position),
                       include_declaration=params.context.include_declaration)
    return _locations(uri, analysis, spans)


@server.feature(T.TEXT_DOCUMENT_RENAME)
@_answers
async def on_rename(ls: LanguageServer, params: T.RenameParams) -> Optional[T.WorkspaceEdit]:
    """The edits that rename a node id in its block; a name that is not a node id the block's lines
    can hold, or a position with no id, is refused (-32803, with the reason)."""
    uri = params.text_document.uri
    _, analysis = await _analysis(ls, uri)
    try:
        edits = rename_edits(analysis, *_from_position(analysis.lines, params.position), params.new_name)
    except RenameRefused as refusal:
        raise Refused(str(refusal)) from None
    return T.WorkspaceEdit(changes={uri: [T.TextEdit(_range(analysis.lines, s), text) for s, text in edits]})


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@_answers
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
@_answers
async def on_folding(ls: LanguageServer, params: T.FoldingRangeParams) -> list[T.FoldingRange]:
    _, analysis = await _analysis(ls, params.text_document.uri)
    return [T.FoldingRange(start_line=a - 1, end_line=b - 1, kind=T.FoldingRangeKind.Region)
            for a, b in folding_ranges(analysis)]


# -- messages -----------------------------------------------------------------------------------

#: lsprotocol's methods that are requests (the rest of its catalogue are notifications).
_REQUESTS = frozenset(m for m, types in T.METHOD_TO_TYPES.items() if types[0] in typing.get_args(T.REQUESTS))
#: pygls's own handlers the server uses (it has more, for notebooks and commands, which it does not).
_BUILTIN = frozenset({T.INITIALIZE, T.INITIALIZED, T.SHUTDOWN, T.EXIT, T.TEXT_DOCUMENT_DID_OPEN,
                      T.TEXT_DOCUMENT_DID_CHANGE, T.TEXT_DOCUMENT_DID_CLOSE, T.CANCEL_REQUEST, T.SET_TRACE,
                      T.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, T.WINDOW_WORK_DONE_PROGRESS_CANCEL})
_HANDLED = _BUILTIN | frozenset(server.protocol.fm.features)
session = wire.Session(requests=_HANDLED & _REQUESTS, notifications=_HANDLED - _REQUESTS, known_requests=_REQUESTS)


def _typed(message: wire.Message):
    """The message as lsprotocol's type for its method, or -32602 naming what does not fit."""
    data = dict(message.data)
    request_type, _, params_type, _ = T.METHOD_TO_TYPES[message.method]
    if params_type is None:
        data.pop("params", None)  # shutdown, exit: whatever is sent along is not looked at
    elif data.get("params") is None:
        data["params"] = {}  # omitted: fine for a method whose params are all optional
    try:
        return CONVERTER.structure(data, request_type)
    except Exception as error:  # noqa: BLE001 - cattrs reports a mismatch in several ways
        problems = cattrs.transform_error(error) if isinstance(error, cattrs.BaseValidationError) else [str(error)]
        where = "; ".join(re.sub(r"_([a-z])", lambda m: m.group(1).upper(), p) for p in problems[:4])
        return wire.Refusal(wire.INVALID_PARAMS, f"invalid params for {message.method}: {where}"[:500], message.id)


def _dispatch(item) -> bool:
    """Hand one item of the transport to pygls, or answer it here; False once the session ends."""
    if isinstance(item, wire.Refusal):
        log.warning("refused a message: %s", item.message)
        writer.error(item)
        return not writer.broken
    refusal = session.admit(item)
    if refusal is None and item.method != T.EXIT:
        typed = _typed(item)
        refusal = typed if isinstance(typed, wire.Refusal) else None
    if refusal is not None:
        quiet = item.kind == "notification" and item.method.startswith("$/")
        log.log(logging.DEBUG if quiet else logging.WARNING, "refused %s: %s", item.method or "a response",
                refusal.message)
        if item.kind == "request":
            writer.error(refusal)
        return not writer.broken
    if item.method == T.EXIT:
        return False
    uri = getattr(getattr(typed.params, "text_document", None), "uri", None)
    if item.method == T.TEXT_DOCUMENT_DID_CHANGE and _open(server, uri) is None:
        log.warning("refused %s: %s is not open", item.method, uri)
        return True
    server.protocol.handle_message(typed)
    if item.kind == "notification":
        server.protocol.forget_finished()
    if item.method == T.SHUTDOWN:
        session.shut_down = True
    elif item.method in (T.TEXT_DOCUMENT_DID_OPEN, T.TEXT_DOCUMENT_DID_CHANGE):
        _bound_open_text(server, uri)
    return not writer.broken


def _bound_open_text(ls: LanguageServer, uri: str) -> None:
    """Count the document's characters; past `MAX_OPEN_TEXT` in all, drop it (as if closed)."""
    doc, key = _open(ls, uri), unquote(uri)
    size = len(doc.source) if doc is not None else 0
    state.open_text += size - state.sizes.get(key, 0)
    state.sizes[key] = size
    if state.open_text > MAX_OPEN_TEXT:
        ls.workspace.remove_text_document(uri)
        state.open_text -= state.sizes.pop(key)
        state.results.pop(uri, None)
        message = f"nadc: {uri} is not analysed: the open documents hold more than {MAX_OPEN_TEXT:,} characters"
        log.warning(message)
        ls.window_show_message(T.ShowMessageParams(T.MessageType.Error, message + "; close some, then reopen it"))


writer = wire.Writer(1)


def serve(stdin: int = 0, stdout: int = 1) -> int:
    """Answer over standard input and output (file descriptors) until the editor ends the session;
    the exit status (0 after shutdown and exit, 1 when the session ended any other way, as the spec
    says)."""
    wire.configure_logging()
    writer.fd = stdout
    server.protocol.set_writer(writer)
    asyncio.run(wire.pump(wire.FrameReader(lambda n: os.read(stdin, n)), _dispatch, writer))
    state.executor.shutdown(wait=False, cancel_futures=True)
    return session.exit_code if session.exit_code is not None else (0 if session.shut_down else 1)
