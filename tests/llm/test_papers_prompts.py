"""Paper loading (text, PDF, JSON Lines), method sections, strict JSON replies and prompt templates."""
from __future__ import annotations

import json

import pytest

from conftest import shared_dir
from nader.agents.llm.jsonreply import ReplyFormatError, parse_json_object
from nader.agents.prompts import prompt_doc, prompt_names, render
from nader.agents.reader.papers import PaperError, method_section, read_papers

PAPER = """# A Gated Block for Vision Backbones

Ann Author, Bob Author

Abstract

We propose a gated convolution block that mixes channels cheaply.

## 1. Introduction

Backbones matter.

## 2. Related Work

ResNet [1] introduced residual connections.

## 3. Gated Block

### 3.1 Design

Each block multiplies a depthwise convolution branch by a sigmoid gate.

## 4. Experiments

We train on ImageNet.
"""


def minimal_pdf(lines: list[str], title: str | None = None) -> bytes:
    """A one-page PDF whose text layer holds `lines` (built by hand: no PDF writer needed)."""
    text = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(
        "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(text)} >>\nstream\n{text}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if title:
        objects.append(f"<< /Title ({title}) >>")
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    info = f" /Info {len(objects)} 0 R" if title else ""
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


# ------------------------------------------------------------------ papers
def test_text_paper_title_abstract_and_method(tmp_path):
    path = tmp_path / "gated.md"
    path.write_text(PAPER)
    (paper,) = read_papers(path)
    assert paper.title == "A Gated Block for Vision Backbones"
    assert paper.abstract == "We propose a gated convolution block that mixes channels cheaply."
    assert paper.method.startswith("## 3. Gated Block") and "sigmoid gate" in paper.method
    assert "ResNet" not in paper.method and "ImageNet" not in paper.method
    assert paper.paper_id.startswith("sha256:") and paper.source == str(path)


def test_paper_id_is_stable_across_formats(tmp_path):
    (tmp_path / "a.txt").write_text(PAPER)
    (tmp_path / "b.jsonl").write_text(json.dumps({
        "title": "A Gated Block for Vision Backbones",
        "abstract": "We propose a gated convolution block that mixes channels cheaply.", "text": "x"}) + "\n")
    (a,), (b,) = read_papers(tmp_path / "a.txt"), read_papers(tmp_path / "b.jsonl")
    assert a.paper_id == b.paper_id


def test_jsonl_papers_with_ids_and_line_numbered_errors(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "arXiv:1", "title": "T1", "abstract": "A1", "text": PAPER}) + "\n\n"
                    + json.dumps({"paper_id": 7, "title": "T2"}) + "\n")
    one, two = read_papers(path)
    assert (one.paper_id, one.title, one.abstract) == ("arXiv:1", "T1", "A1")
    assert "sigmoid gate" in one.method
    assert (two.paper_id, two.abstract, two.text) == ("7", "", "")
    path.write_text(json.dumps({"title": "ok"}) + "\n" + '{"abstract": "no title"}\n')
    with pytest.raises(PaperError, match=r"p\.jsonl:2: each line must be an object with a non-empty \"title\""):
        list(read_papers(path))
    path.write_text("{not json\n")
    with pytest.raises(PaperError, match=r"p\.jsonl:1: not JSON"):
        list(read_papers(path))


def test_pdf_paper(tmp_path):
    path = tmp_path / "paper.pdf"
    path.write_bytes(minimal_pdf(["Sparse Mixers for Vision", "Abstract", "We mix tokens sparsely.",
                                  "1. Introduction", "Intro text.", "2. Related Work", "Old work.",
                                  "3. Sparse Mixer", "The mixer routes tokens.", "4. Experiments", "Numbers."],
                                 title="Sparse Mixers for Vision"))
    (paper,) = read_papers(path)
    assert paper.title == "Sparse Mixers for Vision"
    assert paper.abstract == "We mix tokens sparsely."
    assert "routes tokens" in paper.method and "Numbers" not in paper.method and "Old work" not in paper.method


def test_unreadable_pdf_and_missing_file(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    with pytest.raises(PaperError, match="broken.pdf: not a readable PDF"):
        list(read_papers(tmp_path / "broken.pdf"))
    with pytest.raises(PaperError, match="no such file"):
        list(read_papers(tmp_path / "absent.txt"))


def test_method_section_without_headings_is_empty_and_the_full_text_stands_in(tmp_path):
    assert method_section("just one paragraph of prose\nand another") == ""
    path = tmp_path / "plain.txt"
    path.write_text("Title line\nbody text about blocks\n")
    (paper,) = read_papers(path)
    assert paper.method == paper.text


@pytest.mark.parametrize("name, starts, ends", [
    ("nader-paper.txt", "# 3. Neural Architecture Design via Multi-Agent Collaboration", "success rate of the design."),
    ("genius-paper.txt", "3. Approach", None),
    ("fairnad-paper.txt", "4 Method", None),
])
def test_method_sections_of_the_shared_papers(name, starts, ends):
    shared = shared_dir()
    if shared is None or not (shared / "papers" / name).is_file():
        pytest.skip("shared papers not present")
    (paper,) = read_papers(shared / "papers" / name)
    method = paper.method
    assert method.startswith(starts)
    assert "Related Work" not in method.splitlines()[0] and "References" not in method
    if ends:
        assert method.endswith(ends)
    assert 2_000 < len(method) < len(paper.text) / 2


# ------------------------------------------------------------------ strict JSON replies
@pytest.mark.parametrize("text", ['{"a": 1}', '  {"a": 1}\n', '```json\n{"a": 1}\n```', '```\n{"a": 1}\n```',
                                  '<think>let me see {"b": 2}</think>\n{"a": 1}'])
def test_json_reply_accepted(text):
    assert parse_json_object(text) == {"a": 1}


@pytest.mark.parametrize("text, message", [
    ('Sure! {"a": 1}', "not one JSON object"),
    ('{"a": 1} {"b": 2}', "Extra data"),
    ("[1, 2]", "a list, not an object"),
    ("", "empty"),
    ('{"a": [1, 2', "not one JSON object"),
])
def test_json_reply_refused_with_a_reason(text, message):
    with pytest.raises(ReplyFormatError, match=message):
        parse_json_object(text)


def test_truncated_reply_says_so():
    with pytest.raises(ReplyFormatError, match="cut off at the token limit"):
        parse_json_object('{"ideas": ["a', truncated=True)


# ------------------------------------------------------------------ prompt templates
def test_every_prompt_is_versioned_and_documents_its_output():
    names = prompt_names()
    assert {"reader_relevance.v1", "reader_extract.v1", "reader_tag.v1", "reply_retry.v1"} <= set(names)
    for name in names:
        doc = prompt_doc(name)
        assert doc.startswith(name + " - "), name
        assert "Output:" in doc and "Inputs:" in doc, name


def test_prompt_inputs_are_data_never_template_code():
    messages = render("reader_relevance.v1", title="{{ 7 * 7 }}", abstract="{% raw %}x{% endraw %} {{ config }}")
    (system, user) = messages
    assert system["role"] == "system" and user["role"] == "user"
    assert "Title: {{ 7 * 7 }}" in user["content"] and "49" not in user["content"]
    assert "{% raw %}x{% endraw %} {{ config }}" in user["content"]


def test_prompt_missing_input_and_unknown_prompt():
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        render("reader_relevance.v1", title="only a title")
    with pytest.raises(KeyError, match="no prompt 'reader_relevance.v9'"):
        render("reader_relevance.v9", title="t", abstract="a")
