"""Text the report shows is readable and still safe HTML (issue 30, point 24): a change such as
`{"edge": "1->3"}` reads `1->3` on the page, not `1-\\u003e3`, and markup in it stays text."""
from __future__ import annotations

import html
import re

from nader.search.report.model import ReportArch, Run
from nader.search.report.render import render_report

TEXT = "##B##\n0:input\n1:output\n2:ReLU\n0->2\n2->1\n"


def _page(change: dict) -> str:
    arch = ReportArch(id="a1", parent=None, status="ok", text=TEXT, change=change, valid_acc=90.0, params=10, flops=10)
    return render_report(Run(name="r", strategy="s"), [arch], generated=0.0)


def _change_span(page: str) -> str:
    found = re.search(r'change: <span class="mono">(.*?)</span>', page, re.S)
    assert found, "the top architecture shows its change"
    return found.group(1)


def test_a_change_reads_as_written():
    span = _change_span(_page({"operator": "add-edge", "edge": "1->3", "note": "ü & 'q'"}))
    assert "\\u00" not in span and "\\u003e" not in span
    assert html.unescape(span) == '{"edge": "1->3", "note": "ü & \'q\'", "operator": "add-edge"}'


def test_markup_in_a_change_stays_text():
    payload = '</span><script>alert(1)</script><img src=x onerror=alert(2)>'
    page = _page({"idea": payload})
    span = _change_span(page)
    assert "<script>" not in span and "<img" not in span
    assert payload in html.unescape(span)
    assert page.count("<script>alert(1)") == 0
