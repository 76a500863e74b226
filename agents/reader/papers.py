"""Papers as the Reader sees them: title, abstract, full text and the method section.

Inputs: plain text (`.txt`, `.md`, anything else), PDF (`.pdf`, text extracted with pypdf) and
JSON Lines (`.jsonl`: one object a line with `title`, `abstract`, `text`, and optionally `id`).
A paper's id is its `id` field, else `sha256:` and 16 hex digits of its title and abstract
(normalised), so the same paper has the same id whatever file it comes from.

The method section is found from the headings: the first top-level section named like a method
(method, approach, framework...), else the one after related work; it ends at the next top-level
section about experiments, results, conclusions or references. Without recognisable headings the
whole text after the abstract stands in.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Union


class PaperError(ValueError):
    """A paper file or record that cannot be read; the message names the file (and line)."""


@dataclass(frozen=True)
class Paper:
    paper_id: str
    title: str
    abstract: str
    text: str
    source: str  # file, or file:line for JSON Lines

    @property
    def method(self) -> str:
        return method_section(self.text) or self.text


_TAGS = re.compile(r"<[^>]+>")
_HEADING = re.compile(
    r"^\s*(?P<hashes>#{1,6})?\s*(?:\*\*)?\s*(?P<number>(?:\d+|[IVX]+|[A-Z]\d*)(?P<sub>(?:\.\d+)*)\.?)?\s+"
    r"(?P<title>[A-Za-z][^\n]{1,80}?)\s*(?:\*\*)?\s*$")
_METHOD = re.compile(r"\b(method|methods|methodology|approach|proposed|framework|our model)\b", re.I)
_RELATED = re.compile(r"\b(related work|background|preliminar|prior work)", re.I)
_AFTER_METHOD = re.compile(r"\b(experiment|evaluation|results|conclusion|discussion|references|acknowledg|appendix|"
                           r"limitations)", re.I)
_INTRO = re.compile(r"\bintroduction\b", re.I)
_ABSTRACT = re.compile(r"^\s*#*\s*(?:\*\*)?abstract(?:\*\*)?\s*[:.\u2014-]?\s*(?P<rest>.*)$", re.I)


def _clean(line: str) -> str:
    return " ".join(_TAGS.sub("", line).replace("*", " ").replace("#", " ").split())


def _headings(lines: list[str]) -> list[tuple[int, bool, str]]:
    """(line index, top level?, title) of the lines that look like section headings."""
    found = []
    for i, line in enumerate(lines):
        if len(line) > 120:
            continue
        m = _HEADING.match(_TAGS.sub("", line))
        if not m or not (m.group("hashes") or m.group("number")):
            continue
        title = m.group("title")
        if len(title.split()) > 12 or title.rstrip().endswith((",", ";")):
            continue
        if m.group("number"):
            top = not m.group("sub")
        else:
            top = len(m.group("hashes")) <= 2
        found.append((i, top, title))
    return found


def method_section(text: str) -> str:
    """The method section of a paper's text ('' when the headings do not show one)."""
    lines = text.splitlines()
    tops = [(i, title) for i, top, title in _headings(lines) if top and i > 0]
    intro = next((k for k, (_, title) in enumerate(tops) if _INTRO.search(title)), None)
    if intro is not None:
        tops = tops[intro + 1:]
    start = next((k for k, (_, title) in enumerate(tops) if _METHOD.search(title)
                  and not _RELATED.search(title)), None)
    if start is None:
        related = next((k for k, (_, title) in enumerate(tops) if _RELATED.search(title)), None)
        if related is not None and related + 1 < len(tops) and not _AFTER_METHOD.search(tops[related + 1][1]):
            start = related + 1
    if start is None:
        return ""
    end = next((tops[k][0] for k in range(start + 1, len(tops)) if _AFTER_METHOD.search(tops[k][1])), len(lines))
    return "\n".join(lines[tops[start][0]:end]).strip()


def _title_and_abstract(text: str) -> tuple[str, str]:
    lines = text.splitlines()
    title = next((_clean(line) for line in lines if _clean(line)), "")
    for i, line in enumerate(lines):
        m = _ABSTRACT.match(_TAGS.sub("", line))
        if not m:
            continue
        body = [m.group("rest")] if m.group("rest").strip() else []
        heads = {j for j, _, _ in _headings(lines)}
        for j in range(i + 1, len(lines)):
            if j in heads:
                break
            body.append(lines[j])
        return title, " ".join(" ".join(body).replace("*", " ").split())
    return title, ""


def paper_id_for(title: str, abstract: str) -> str:
    normal = " ".join(f"{title}\n{abstract}".lower().split())
    return "sha256:" + hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def paper_from_text(text: str, source: str, *, title: Optional[str] = None, abstract: Optional[str] = None,
                    paper_id: Optional[str] = None) -> Paper:
    found_title, found_abstract = _title_and_abstract(text)
    title = (title or found_title).strip()
    abstract = (abstract if abstract is not None else found_abstract).strip()
    if not title:
        raise PaperError(f"{source}: no title (the text is empty)")
    return Paper(str(paper_id) if paper_id not in (None, "") else paper_id_for(title, abstract), title, abstract,
                 text, source)


def _pdf_text(path: Path) -> tuple[str, Optional[str]]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        text = "\n".join(page.extract_text() or "" for page in reader.pages)
        meta_title = (reader.metadata or {}).get("/Title") if reader.metadata else None
    except (PdfReadError, OSError, ValueError, KeyError) as exc:
        raise PaperError(f"{path}: not a readable PDF ({exc})") from None
    if not text.strip():
        raise PaperError(f"{path}: the PDF has no extractable text (a scan? convert it to text first)")
    return text, (str(meta_title).strip() or None) if meta_title else None


def read_papers(path: Union[str, Path]) -> Iterator[Paper]:
    """The papers of one file (several for JSON Lines); raises PaperError for a bad file or record."""
    path = Path(path)
    if not path.is_file():
        raise PaperError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        text, meta_title = _pdf_text(path)
        yield paper_from_text(text, str(path), title=meta_title)
        return
    try:
        content = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PaperError(f"{path}: not UTF-8 text (give PDFs the .pdf suffix)") from None
    if suffix != ".jsonl":
        yield paper_from_text(content, str(path))
        return
    for number, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PaperError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("title"), str) or not record["title"].strip():
            raise PaperError(f"{where}: each line must be an object with a non-empty \"title\"")
        fields = {k: record.get(k) for k in ("abstract", "text")}
        if not all(v is None or isinstance(v, str) for v in fields.values()):
            raise PaperError(f"{where}: \"abstract\" and \"text\" must be strings")
        yield paper_from_text(fields["text"] or "", where, title=record["title"], abstract=fields["abstract"] or "",
                              paper_id=record.get("id", record.get("paper_id")))
