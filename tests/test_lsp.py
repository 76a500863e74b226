"""`nadc lsp` against a real client: pytest-lsp starts `nadc lsp` as a subprocess and speaks the
protocol to it. Diagnostics are compared with what `nadc verify` and `nadc lint` print for the
same file; the other features with the registry and the verifier's shapes."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the `lsp` extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed")

from lsprotocol import types as T  # noqa: E402
from pytest_lsp import ClientServerConfig  # noqa: E402

from conftest import REPO_ROOT, run_nadc  # noqa: E402
from lsp_client import (EXAMPLE, apply_edits, change_doc, close_doc, make_client, open_doc, published,  # noqa: E402
                        server_command, uri_of)  # noqa: E402
from nader.dsl.ops import all_names  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")



def _utf8(path: Path) -> bool:
    try:
        path.read_text(encoding="utf-8")
        return True
    except UnicodeDecodeError:  # NAD100's: an editor shows such a file decoded, not as the compiler reads it
        return False


GOLDEN = [p for p in sorted((REPO_ROOT / "tests" / "golden").glob("*/input.nad")) if _utf8(p)]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command(), client_factory=make_client), scope="module")
async def client(lsp_client: pytest_lsp.LanguageClient):
    await lsp_client.initialize_session(T.InitializeParams(capabilities=T.ClientCapabilities(),
                                                           root_uri=REPO_ROOT.as_uri()))
    yield
    await lsp_client.shutdown_session()


def _key(d: T.Diagnostic) -> tuple:
    r = d.range
    related = tuple((i.location.range.start.line, i.location.range.start.character, i.message)
                    for i in d.related_information or ())
    return (d.code, r.start.line, r.start.character, r.end.line, r.end.character,
            "error" if d.severity == T.DiagnosticSeverity.Error else "warning", related)


def _cli_key(d: dict) -> tuple:
    related = tuple((r["line"] - 1, r["col"] - 1, r["message"]) for r in d["related"])
    return (d["code"], max(d["line"] - 1, 0), max(d["col"] - 1, 0), max(d["end_line"] - 1, 0),
            max(d["end_col"] - 1, 0), d["severity"], related)


def _cli_diagnostics(path: Path) -> set:
    """`nadc verify --format json` and `nadc lint --format json` of `path`, as keys."""
    verified = json.loads(run_nadc(["verify", str(path), "--format", "json"]).stdout)
    linted = json.loads(run_nadc(["lint", str(path), "--format", "json"]).stdout)["diagnostics"]
    return {_cli_key(d) for obj in verified for d in obj["diagnostics"]} | {_cli_key(d) for d in linted}


def _cli_fixes(path: Path) -> int:
    """How many of `nadc verify --format json`'s and `nadc lint`'s own diagnostics carry a fix."""
    verified = json.loads(run_nadc(["verify", str(path), "--format", "json"]).stdout)
    keys = {_cli_key(d): bool(d["fix"]) for obj in verified for d in obj["diagnostics"]}
    for d in json.loads(run_nadc(["lint", str(path), "--format", "json"]).stdout)["diagnostics"]:
        keys.setdefault(_cli_key(d), bool(d["fix"]))
    return sum(keys.values())


@pytest.mark.parametrize("path", [EXAMPLE, *GOLDEN], ids=lambda p: p.parent.name)
async def test_diagnostics_are_verify_and_lint_s(client, path: Path):
    diagnostics = await open_doc(client, path, path.read_text(encoding="utf-8"))
    close_doc(client, path)
    assert {_key(d) for d in diagnostics} == _cli_diagnostics(path)
    assert sum(bool(d.data["fix"]) for d in diagnostics) == _cli_fixes(path)
    assert all(d.source == "nadc" and d.code_description is not None for d in diagnostics)


async def test_open_change_close(client, tmp_path):
    path = tmp_path / "block.nad"
    broken = EXAMPLE.read_text().replace("2:Conv2d(out_channels=C", "2:Conv2D(out_channels=C", 1)
    first = await open_doc(client, path, broken)
    assert [d.code for d in first] == ["NAD104"]
    assert first[0].range.start == T.Position(4, 2)  # line 5, after `2:`
    assert "explain" in first[0].code_description.href or first[0].code_description.href.endswith("NAD104.md")
    client.text_document_did_change(T.DidChangeTextDocumentParams(  # an incremental change: the typo only
        T.VersionedTextDocumentIdentifier(2, uri_of(path)),
        [T.TextDocumentContentChangePartial(T.Range(T.Position(4, 2), T.Position(4, 8)), "Conv2d")]))
    assert list(await published(client, uri_of(path), 2)) == []
    assert [d.code for d in await change_doc(client, path, broken, 3)] == ["NAD104"]
    close_doc(client, path)
    assert list(await published(client, uri_of(path))) == []


async def test_quick_changes_publish_in_order_and_end_with_the_last(client, tmp_path):
    path = tmp_path / "quick.nad"
    text = EXAMPLE.read_text()
    await open_doc(client, path, text)
    uri = uri_of(path)
    for version in range(2, 13):  # sent without waiting: versions changed while analysed are dropped
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            T.VersionedTextDocumentIdentifier(version, uri),
            [T.TextDocumentContentChangeWholeDocument(text.replace("4:ReLU", f"4:Relu{version}", 1))]))
    seen = []
    while not seen or seen[-1].version != 12:
        seen.append(await _next_publish(client, uri))
    versions = [p.version for p in seen]
    assert versions == sorted(set(versions)), versions  # never an older version after a newer one
    assert [(d.code, d.range.start.line) for d in seen[-1].diagnostics] == [("NAD104", 6)]
    assert "Relu12" in seen[-1].diagnostics[0].message
    close_doc(client, path)


async def _next_publish(client, uri: str) -> T.PublishDiagnosticsParams:
    while True:
        while client.published:
            params = client.published.pop(0)
            if params.uri == uri:
                return params
        await asyncio.sleep(0.005)


def _text(hover: T.Hover) -> str:
    return hover.contents.value


async def test_hover_shows_the_operation_and_the_inferred_shape(client):
    await open_doc(client, EXAMPLE, EXAMPLE.read_text())
    lines = EXAMPLE.read_text().split("\n")
    pool = next(k for k, line in enumerate(lines) if line.startswith("7:AvgPool2d"))
    hover = await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri_of(EXAMPLE)),
                                                                 T.Position(pool, 4)))
    text = _text(hover)
    assert "**AvgPool2d**" in text and "kernel_size" in text
    assert "shape: `(B,C,H/2,H/2)`" in text or "shape: `(B,C,ceil(H/2),ceil(H/2))`" in text, text
    edge = next(k for k, line in enumerate(lines) if line == "7->8")
    hover = await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri_of(EXAMPLE)),
                                                                 T.Position(edge, 0)))
    assert "`7` → `8`" in _text(hover)
    close_doc(client, EXAMPLE)


async def _complete(client, path: Path, text: str, line: int, character: int) -> list[T.CompletionItem]:
    await open_doc(client, path, text)
    found = await client.text_document_completion_async(T.CompletionParams(
        T.TextDocumentIdentifier(uri_of(path)), T.Position(line, character)))
    close_doc(client, path)
    return found.items


async def test_completion_of_operations_parameters_symbols_and_ids(client, tmp_path):
    path = tmp_path / "complete.nad"
    head = "##B##\n0:input\n1:output\n2:Conv2d(out_channels=C,"
    items = await _complete(client, path, head + "\n", 3, len("2:Conv2d(out_channels=C,"))
    params = {i.label for i in items if i.kind == T.CompletionItemKind.Property}
    assert params == {"kernel_size", "stride", "dilation", "groups", "bias"}
    assert next(i for i in items if i.label == "stride").detail == "spatial, default 1"
    items = await _complete(client, path, "##B##\n0:input\n1:output\n2:Con\n", 3, 5)
    assert {i.label for i in items} == set(all_names())
    items = await _complete(client, path, head + "kernel_size=3)\n0->\n", 4, 3)
    assert {i.label for i in items} == {"0", "1", "2"}
    items = await _complete(client, path, "##B##\n0:input\n2:Conv2d(out_channels=\n", 2, len("2:Conv2d(out_channels="))
    assert {i.label for i in items} == {"C", "dim"}


async def test_formatting_gives_what_nadc_fmt_writes(client, tmp_path):
    path = tmp_path / "fmt.nad"
    text = "# a comment\n#ResNet#\n0:input\n1:output\n2:BN()\n3:Concat  # join\n0->2\n2,0->3\n3->1"
    path.write_text(text)
    await open_doc(client, path, text)
    edits = await client.text_document_formatting_async(T.DocumentFormattingParams(
        T.TextDocumentIdentifier(uri_of(path)), T.FormattingOptions(4, True)))
    assert edits
    assert apply_edits(text, edits) == run_nadc(["fmt", str(path)]).stdout
    ranged = await client.text_document_range_formatting_async(T.DocumentRangeFormattingParams(
        T.TextDocumentIdentifier(uri_of(path)), T.Range(T.Position(4, 0), T.Position(4, 5)), T.FormattingOptions(4, True)))
    assert apply_edits(text, ranged) == text.replace("2:BN()", "2:BN")
    close_doc(client, path)


async def test_a_code_action_applied_makes_its_diagnostic_go_away(client, tmp_path):
    path = tmp_path / "fix.nad"
    text = EXAMPLE.read_text().replace("4:ReLU\n", "4:Relu\n", 1)
    diagnostics = await open_doc(client, path, text)
    (typo,) = [d for d in diagnostics if d.code == "NAD104"]
    shown = await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri_of(path)),
                                                                  typo.range.start))
    assert _text(shown).startswith("**NAD104** (unknown-operation, error)") and "(safe)" in _text(shown)
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        T.TextDocumentIdentifier(uri_of(path)), typo.range, T.CodeActionContext([typo])))
    (action,) = [a for a in actions if a.diagnostics and a.diagnostics[0].code == "NAD104"]
    assert action.kind == T.CodeActionKind.QuickFix
    fixed = apply_edits(text, action.edit.changes[uri_of(path)])
    after = await change_doc(client, path, fixed, 2)
    assert "NAD104" not in {d.code for d in after}
    close_doc(client, path)


async def test_other_verified_repairs_are_quick_fixes_of_their_own(client, tmp_path):
    """Narrow the conv, or add a 1x1 one: both offered, the diagnostic's own fix first (issue 39)."""
    path = tmp_path / "narrow.nad"
    text = (REPO_ROOT / "tests" / "fixtures" / "repair_classes" / "u-narrow-width.nad").read_text()
    diagnostics = await open_doc(client, path, text)
    (error,) = [d for d in diagnostics if d.code == "NAD301"]
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        T.TextDocumentIdentifier(uri_of(path)), error.range, T.CodeActionContext([error])))
    titles = [a.title for a in actions if a.diagnostics and a.diagnostics[0].code == "NAD301"]
    assert "set `out_channels` of node 5 to `C`" in titles[0] and any("1x1 `Conv2d`" in t for t in titles[1:])
    for action in actions:
        fixed = apply_edits(text, action.edit.changes[uri_of(path)])
        assert run_nadc(["verify", "-"], stdin=fixed).stdout != run_nadc(["verify", "-"], stdin=text).stdout
    close_doc(client, path)


async def test_definition_references_rename_symbols_and_folding(client):
    text = EXAMPLE.read_text()
    await open_doc(client, EXAMPLE, text)
    doc = T.TextDocumentIdentifier(uri_of(EXAMPLE))
    lines = text.split("\n")
    use = lines.index("2->3")  # in the first block
    found = await client.text_document_definition_async(T.DefinitionParams(doc, T.Position(use, 0)))
    assert [loc.range.start for loc in found] == [T.Position(lines.index("2:Conv2d(out_channels=C,kernel_size=3,stride=1)"), 0)]
    refs = await client.text_document_references_async(T.ReferenceParams(
        context=T.ReferenceContext(include_declaration=True), text_document=doc, position=T.Position(use, 0)))
    assert sorted(lines[r.range.start.line] for r in refs) == ["0->2", "2->3", "2:Conv2d(out_channels=C,kernel_size=3,stride=1)"]
    renamed = await client.text_document_rename_async(T.RenameParams(doc, T.Position(use, 0), "conv"))
    new_text = apply_edits(text, renamed.changes[doc.uri])
    assert "0->conv\nconv->3" in new_text and "conv:Conv2d(out_channels=C" in new_text
    assert run_nadc(["verify", "-"], stdin=new_text).code == 0
    with pytest.raises(Exception, match="has a node `3` already"):  # the server answers with an error
        await client.text_document_rename_async(T.RenameParams(doc, T.Position(use, 0), "3"))
    outline = await client.text_document_document_symbol_async(T.DocumentSymbolParams(doc))
    assert [s.name for s in outline] == ["ResNetBasic", "ResNetBasic_stem", "ResNetBasic_downsample"]
    assert [c.name for c in outline[1].children] == ["0", "1", "2", "3"]
    folds = await client.text_document_folding_range_async(T.FoldingRangeParams(doc))
    assert [(f.start_line, f.end_line) for f in folds] == [(s.range.start.line, s.range.end.line) for s in outline]
    close_doc(client, EXAMPLE)


async def test_a_hostile_file_meets_the_limits_and_the_server_lives_on(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nadc.limits]\ntext-bytes = 4000\nline-length = 200\n")
    path = tmp_path / "hostile.nad"
    huge = "##B##\n0:input\n1:output\n" + "".join(f"{k}:ReLU\n" for k in range(2, 2000))
    assert [d.code for d in await open_doc(client, path, huge)] == ["NAD122"]
    long_line = "##B##\n0:input\n1:output\n2:Conv2d(out_channels=" + "(" * 150 + "C" + ")" * 150 + ",kernel_size=3)\n"
    codes = {d.code for d in await change_doc(client, path, long_line, 2)}
    assert "NAD121" in codes
    deep = "##B##\n0:input\n1:output\n2:Conv2d(out_channels=" + "(" * 90 + "C" + ")" * 90 + ",kernel_size=3)\n"
    assert await change_doc(client, path, deep, 3) is not None  # answered, whatever it finds
    hover = await client.text_document_hover_async(T.HoverParams(T.TextDocumentIdentifier(uri_of(path)),
                                                                 T.Position(1, 0)))
    assert hover is not None and "input" in _text(hover)  # still answering
    close_doc(client, path)


async def test_code_actions_are_marked_safe_or_unsafe(client):
    path = REPO_ROOT / "tests" / "golden" / "NAD105" / "input.nad"
    text = path.read_text()
    diagnostics = await open_doc(client, path, text)
    end = T.Position(len(text.split("\n")), 0)
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        T.TextDocumentIdentifier(uri_of(path)), T.Range(T.Position(0, 0), end), T.CodeActionContext(diagnostics)))
    close_doc(client, path)
    verified = json.loads(run_nadc(["verify", str(path), "--format", "json"]).stdout)
    safety = {(d["line"] - 1, d["code"]): d["fix"]["safety"] for obj in verified for d in obj["diagnostics"] if d["fix"]}
    assert {"safe", "unsafe"} <= set(safety.values())
    shown = {}
    for a in actions:  # a diagnostic's own fix comes first, the other verified repairs after it
        shown.setdefault((a.diagnostics[0].range.start.line, a.diagnostics[0].code), a)
    assert set(shown) == set(safety)
    for key, action in shown.items():
        assert action.is_preferred == (safety[key] == "safe")
        assert ("unsafe" in action.title) == (safety[key] == "unsafe")


async def test_fix_all_repairs_as_nadc_fix_does(client, tmp_path):
    # two typos on one line, which safe fixes mend (a block they cannot make verify is left as it was)
    source = REPO_ROOT / "tests" / "fixtures" / "repair_classes" / "u-two-typos.nad"
    path = tmp_path / "fixall.nad"
    path.write_text(source.read_text())
    diagnostics = await open_doc(client, path, path.read_text())
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        T.TextDocumentIdentifier(uri_of(path)), T.Range(T.Position(0, 0), T.Position(0, 0)),
        T.CodeActionContext(diagnostics, only=["source.fixAll"])))
    (action,) = actions
    repaired = apply_edits(path.read_text(), action.edit.changes[uri_of(path)])
    close_doc(client, path)
    assert run_nadc(["fix", str(path)]).code in (0, 1)
    assert repaired == path.read_text() != source.read_text()
