"""The editor files: the TextMate grammar is generated from the registry and current, and it
tokenizes the examples as a reader would; the VS Code extension's files agree with each other.

The grammar is run here by a small tokenizer with TextMate's rule for choosing a match (the
earliest match on the line, ties to the rule listed first), with Python's `re`; the grammar's
module promises regular expressions that mean the same there as in Oniguruma.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from nader.compiler.editor.textmate import SCOPE, grammar, grammar_text
from nader.dsl.ops import REGISTRY, lookup
from nader.dsl.parser import parse

VSCODE = REPO_ROOT / "editors" / "vscode"
SAMPLES = [REPO_ROOT / "examples" / "resnet_basic.nad",
           *sorted(p for p in (REPO_ROOT / "tests" / "golden").glob("NAD[1234]*/input.nad") if p.parent.name != "NAD100")]


def _compiled(rules):
    return [(re.compile(r["match"] if "match" in r else r["begin"]), r) for r in rules]


def tokenize(line: str, rules=None) -> list[tuple[str, str]]:
    """(text, scope) of each scoped token of `line`; unscoped text is left out."""
    rules = _compiled(rules if rules is not None else grammar()["patterns"])
    out, pos = [], 0
    while pos <= len(line):
        found = [(m.start(), k, m, r) for k, (rx, r) in enumerate(rules) if (m := rx.search(line, pos))]
        if not found:
            break
        _, _, m, rule = min(found, key=lambda f: (f[0], f[1]))
        if "begin" in rule:  # every begin rule ends at the end of the line
            out += tokenize(line[m.end():], rule["patterns"]) if m.end() < len(line) else []
            break
        if "captures" in rule:
            out += [(m.group(int(k)), c["name"]) for k, c in rule["captures"].items() if m.group(int(k))]
        else:
            out.append((m.group(0), rule["name"]))
        pos = m.end() if m.end() > m.start() else m.end() + 1
    return out


def test_the_grammar_is_generated_and_current():
    path = VSCODE / "syntaxes" / "nad.tmLanguage.json"
    assert path.read_text(encoding="utf-8") == grammar_text(), "run python scripts/gen_textmate.py"
    run = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "gen_textmate.py"), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert all(d.name in path.read_text() for d in REGISTRY.values())


def test_begin_rules_end_at_the_line_end():
    assert all(r["end"] == "$" for r in grammar()["patterns"] if "begin" in r)


def test_a_node_line_edge_line_header_and_comment():
    assert tokenize("2:Conv2d(out_channels=C*2,kernel_size=3)  # widen") == [
        ("2", "entity.name.variable.node.nad"), (":", "punctuation.separator.node.nad"),
        ("Conv2d", "support.function.operation.nad"), ("out_channels", "variable.parameter.nad"),
        ("C", "constant.language.size.nad"), ("*", "keyword.operator.arithmetic.nad"),
        ("2", "constant.numeric.nad"), ("kernel_size", "variable.parameter.nad"), ("3", "constant.numeric.nad"),
        ("# widen", "comment.line.number-sign.nad")]
    assert tokenize("6,8->9  # merge") == [
        ("6", "variable.other.node-id.nad"), (",", "punctuation.separator.sources.nad"),
        ("8", "variable.other.node-id.nad"), ("->", "keyword.operator.arrow.nad"), ("9", "variable.other.node-id.nad"),
        ("# merge", "comment.line.number-sign.nad")]
    assert tokenize("##ResNetBasic##") == [("##", "punctuation.definition.header.nad"),
                                           ("ResNetBasic", "entity.name.type.block.nad"),
                                           ("##", "punctuation.definition.header.nad")]
    assert tokenize("2:Conv2D(out_channels=C)")[2] == ("Conv2D", "invalid.illegal.unknown-operation.nad")


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.parent.name)
def test_the_examples_tokenize_as_the_parser_reads_them(path):
    """Every node's operation is scoped as known exactly when the registry knows it, every header's
    name as a block, every edge's ids as ids, and comments as comments."""
    text = path.read_text(encoding="utf-8")
    parsed = parse(text, str(path))
    lines = text.split("\n")
    for block in parsed.program.blocks:
        header = lines[block.header_span.line - 1]
        if header.lstrip().startswith("#"):  # a file without a header (NAD111) is one block named after it
            assert "entity.name.type.block.nad" in {s for _, s in tokenize(header)}, header
        for node in block.nodes:
            line = lines[node.span.line - 1]
            written = line[node.op_span.col - 1:node.op_span.end_col - 1]  # an alias as written, e.g. `Concat`
            tokens = tokenize(line)
            op = [t for t, s in tokens if s == "support.function.operation.nad"]
            unknown = [t for t, s in tokens if s == "invalid.illegal.unknown-operation.nad"]
            assert (op == [written] if lookup(node.op_name) else unknown == [written]), (node, tokens)
            assert tokens[0] == (str(node.id), "entity.name.variable.node.nad") or not str(node.id).isdigit()
        for edge in block.edges:
            tokens = tokenize(lines[edge.span.line - 1])
            ids = [t for t, s in tokens if s == "variable.other.node-id.nad"]
            assert ids == [str(s) for s in edge.sources] + [str(edge.target)], (edge, tokens)
    for k, line in enumerate(lines):
        if line.lstrip().startswith("#") and not line.lstrip().startswith("##"):
            assert tokenize(line) == [(line.lstrip(), "comment.line.number-sign.nad")], k


def test_the_extension_names_the_grammar_and_the_server():
    package = json.loads((VSCODE / "package.json").read_text())
    (language,) = package["contributes"]["languages"]
    (entry,) = package["contributes"]["grammars"]
    assert entry["scopeName"] == SCOPE == grammar()["scopeName"] and entry["language"] == language["id"]
    assert (VSCODE / entry["path"]).is_file() and (VSCODE / language["configuration"]).is_file()
    assert ".nad" in language["extensions"]
    assert '"lsp"' in (VSCODE / package["main"]).read_text() or "['lsp']" in (VSCODE / package["main"]).read_text()
    json.loads((VSCODE / language["configuration"]).read_text())


def test_nadc_lsp_without_the_extra_says_what_to_install():
    probe = ("import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None\n"
             "from nader.compiler.cli import main\nmain(['lsp'])\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "nader-toolchain[lsp]" in done.stderr and "Traceback" not in done.stderr
