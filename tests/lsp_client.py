"""Helpers for tests that talk to `nadc lsp` through pytest-lsp: starting it, opening documents and
waiting for the diagnostics of one version, applying the edits it returns."""
from __future__ import annotations

import sys
from pathlib import Path

import asyncio

from lsprotocol import types as T
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, default_converter, register_lsp_features

from conftest import REPO_ROOT


def server_command() -> list[str]:
    """`nadc lsp`, the installed program beside this Python (the package's own entry point otherwise)."""
    nadc = Path(sys.executable).with_name("nadc")
    if nadc.exists():
        return [str(nadc), "lsp"]
    return [sys.executable, "-c", "from nader.compiler.cli import main; main()", "lsp"]


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


def make_client() -> LanguageClient:
    """pytest-lsp's test client that also keeps every publishDiagnostics it gets, in order
    (`wait_for_notification` wakes once for several that arrive together)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []

    def on_publish(client: LanguageClient, params: T.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: on_publish})
    return client


async def published(client, uri: str, version=None) -> list[T.Diagnostic]:
    """The diagnostics the server publishes for `uri` at `version` (any version: None); waits for them,
    consuming what it looked through."""
    while True:
        while client.published:
            params = client.published.pop(0)
            if params.uri == uri and (version is None or params.version == version):
                return params.diagnostics
        await asyncio.sleep(0.005)


async def open_doc(client, path: Path, text: str, version: int = 1) -> list[T.Diagnostic]:
    """Open `text` as the document at `path` and return its diagnostics."""
    uri = uri_of(path)
    client.text_document_did_open(T.DidOpenTextDocumentParams(T.TextDocumentItem(uri, "nad", version, text)))
    return await published(client, uri, version)


async def change_doc(client, path: Path, text: str, version: int) -> list[T.Diagnostic]:
    """Replace the document's whole text and return the new version's diagnostics."""
    uri = uri_of(path)
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        T.VersionedTextDocumentIdentifier(version, uri), [T.TextDocumentContentChangeWholeDocument(text)]))
    return await published(client, uri, version)


def close_doc(client, path: Path) -> None:
    client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri_of(path))))


def apply_edits(text: str, edits: list[T.TextEdit]) -> str:
    """`text` with protocol edits applied (ASCII text: characters are code units)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(p: T.Position) -> int:
        return starts[p.line] + p.character if p.line < len(starts) else len(text)

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
    return text


EXAMPLE = REPO_ROOT / "examples" / "resnet_basic.nad"
