"""`nader-search report`: the HTML it writes, and the page in a real headless Chromium.

The browser tests skip cleanly when no Chromium is installed (`apt-get install chromium`).
"""
from __future__ import annotations

import base64
import hashlib
import importlib
import json
import random
import re
from pathlib import Path

import pytest

from browser import Browser, find_chromium
from nader.search.report import ReportArch, Run, render_report
from nader.search.report.compare import COLOURS, Curve, render_compare
from nader.search.report.render import pareto_ids

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "examples" / "resnet_basic.nad").read_text()
EVIL = "<script>window.__pwned=1</script>\"'><img src=x onerror=\"window.__pwned=1\">"
render_module = importlib.import_module("nader.search.report.render")  # the package exports `render_report`, the function
compare_module = importlib.import_module("nader.search.report.compare")
needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed")


def make_run(n: int = 30, seed: int = 0, evil: bool = False, payload: str = EVIL) -> tuple[Run, list[ReportArch]]:
    """A search tree of `n` architectures with every status, as a search records them; `evil`
    puts `payload` in the run's name and in each record's text, operator, plan, error and diagnostic."""
    rng = random.Random(seed)
    t0 = 1_700_000_000.0
    archs = []
    statuses = ["ok", "invalid", "duplicate", "failed", "over-budget", "diverged"]
    for i in range(n):
        status = "ok" if i == 0 else rng.choices(statuses, [10, 2, 1, 1, 1, 1])[0]
        text = EXAMPLE.replace("ResNetBasic", f"Arch{i}")
        if evil:
            text = f"# {payload}\n" + text
        a = ReportArch(id=str(i), parent=None if i == 0 else str(rng.randrange(i)), status=status, text=text,
                 change={"operator": payload if evil else "insert_se", "args": {"after": "5"},
                         "plan": payload if evil else "add SE"},
                 created=t0 + 10 * i, finished=t0 + 10 * i + 9)
        if status == "ok":
            a.valid_acc, a.test_acc = 50 + 40 * rng.random(), 50 + 40 * rng.random()
            a.params, a.flops, a.seconds = rng.randrange(10**5, 2 * 10**6), rng.randrange(10**7, 3 * 10**8), 9.0
        elif status == "invalid":
            a.diagnostics = [{"code": rng.choice(["NAD301", "NAD204"]), "line": 3, "severity": "error",
                              "message": payload if evil else "shape mismatch"}]
        elif status in ("failed", "diverged"):
            a.error_kind, a.error = ("oom" if status == "failed" else "nan"), payload if evil else "CUDA out of memory"
        elif status == "duplicate":
            a.duplicate_of = "0"
        archs.append(a)
    return Run(name=(payload if evil else "demo"), dataset="digits", preset="quick", strategy="rea", started=t0), archs


def test_pareto_front_keeps_only_undominated_points():
    points = [("a", 10, 50.0), ("b", 20, 40.0), ("c", 30, 70.0), ("d", 30, 60.0), ("e", 5, 30.0)]
    assert pareto_ids(points) == ["e", "a", "c"]


def test_report_is_self_contained_and_escapes_untrusted_text():
    run, archs = make_run(12, evil=True)
    html = render_report(run, archs)
    # nothing is fetched from anywhere: no src/href to a host, a CSP that forbids it
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "default-src 'none'" in html
    # the only <script> elements are ours: the data block, d3 and the report script
    assert html.count("<script") == 3
    assert "window.__pwned" not in html.replace("window.__pwned=1", "")  # the payload appears only escaped
    assert "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html  # in the title, the summary, the top list


def test_report_summarises_statuses_failures_and_the_best():
    run, archs = make_run(40)
    html = render_report(run, archs)
    best = max((a for a in archs if a.status == "ok"), key=lambda a: a.valid_acc)
    assert f"{best.valid_acc:.2f}% (#{best.id})" in html
    invalid_codes = {d["code"] for a in archs if a.status == "invalid" for d in a.diagnostics}
    for code in invalid_codes:
        assert f'<td class="mono">{code}</td>' in html
    assert '<td class="mono">oom</td>' in html and '<td class="mono">nan</td>' in html
    assert html.count('class="top-arch"') == min(10, sum(a.status == "ok" for a in archs))


@needs_chromium
def test_report_in_a_real_browser(tmp_path):
    run, archs = make_run(30, evil=True)
    page = tmp_path / "report.html"
    page.write_text(render_report(run, archs), encoding="utf-8")
    with Browser() as browser:
        browser.open(page.as_uri())
        assert browser.problems() == []
        # one tree node per architecture
        assert browser.eval("document.querySelectorAll('#tree .tree-node').length") == len(archs)
        # a real click on a node shows that architecture's text, literally
        target = next(a for a in archs if a.status == "invalid")
        box = browser.eval(f"(() => {{ const r = document.querySelector('#tree .tree-node[data-id=\"{target.id}\"]')"
                           ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        browser.eval(f"window.scrollTo(0, 0)")
        browser.click(*box)
        assert browser.eval("document.querySelector('#details .arch-text').textContent") == target.text
        shown = browser.eval("document.querySelector('#details').textContent")
        assert target.diagnostics[0]["code"] in shown and EVIL in shown
        # the plots have their points
        ok = [a for a in archs if a.status == "ok"]
        assert browser.eval("document.querySelectorAll('#plot-params circle').length") == len(ok)
        assert browser.eval("document.querySelectorAll('#plot-flops circle').length") == len(ok)
        assert browser.eval("document.querySelectorAll('#plot-trials circle').length") == len(ok)
        # nothing injected ran, and the page made no request
        assert browser.eval("window.__pwned === undefined") is True
        assert browser.problems() == []


# ---------------------------------------------------------------- the Content-Security-Policy

def _policy(html: str) -> dict[str, list[str]]:
    content = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html).group(1)
    return {d.split()[0]: d.split()[1:] for d in content.split("; ")}


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _compare_page(payload: str = EVIL) -> str:
    return render_compare([Curve(payload, "random", [50.0, 60.0], [49.0, 58.0]), Curve("b", payload, [55.0], [54.0])],
                          title=payload, notes=[payload])


@pytest.mark.parametrize("page", ["report", "compare"])
def test_policy_admits_only_the_inline_scripts_and_styles_the_page_has(page):
    html = render_report(*make_run(12, evil=True)) if page == "report" else _compare_page()
    policy = _policy(html)
    assert policy["default-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)  # the data block has a type: it never runs
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    if scripts:
        assert sorted(policy["script-src"]) == sorted({*map(_sha256, scripts), "'report-sample'"})
    else:  # default-src 'none' stands for it
        assert "script-src" not in policy
    assert sorted(policy["style-src"]) == sorted({*map(_sha256, styles), "'report-sample'"})
    assert len(scripts) == (2 if page == "report" else 0) and len(styles) == 1
    assert not re.search(r"<[^>]*\sstyle=", html)  # a style attribute would be refused


HOSTILE = EVIL + '<details open ontoggle="window.__pwned=2">x</details>'  # a handler that needs no load


def _render_unescaped(monkeypatch, make_page) -> str:
    """The page as it would be if autoescaping failed: every untrusted string written as markup."""
    env = render_module._env()
    env.autoescape = False
    monkeypatch.setattr(render_module, "_env", lambda: env)
    monkeypatch.setattr(compare_module, "_env", lambda: env)  # the compare page renders with the same environment
    html = make_page()
    assert "<script>window.__pwned=1</script>" in html and '<details open ontoggle="window.__pwned=2">' in html
    return html


def _assert_only_injected_markup_was_refused(browser, own_scripts: bool) -> None:
    assert browser.eval("window.__pwned === undefined") is True
    violations = browser.csp_violations()
    directives = {v["directive"] for v in violations}
    assert {"script-src-elem", "script-src-attr"} <= directives <= {"script-src-elem", "script-src-attr", "img-src"}
    for v in violations:  # each is a payload (its start, by 'report-sample'), never the page's own code
        if v["directive"] == "img-src":  # the injected src=x, a file: URL (reported by scheme), not a drawing
            assert v["blocked"] == "file"
        elif own_scripts:
            assert "__pwned" in v["sample"]
    assert [p for p in browser.problems() if "Content Security Policy" not in p] == []


def _tree_zooms(browser) -> bool:
    """A real wheel event over the tree changes its transform (d3's zoom, i.e. the scripts ran)."""
    before = browser.eval("document.querySelector('#tree > g').getAttribute('transform')")
    x, y = browser.eval("(() => { window.scrollTo(0, 0); const r = document.querySelector('#tree')"
                        ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    browser.call("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0, deltaY=-400)
    return browser.eval("document.querySelector('#tree > g').getAttribute('transform')") != before


def _show_details(browser, arch_id: str) -> str:
    browser.eval(f"document.querySelector('#tree .tree-node[data-id=\"{arch_id}\"]')"
                 ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    return browser.eval("document.querySelector('#details').textContent")


@needs_chromium
def test_markup_that_slipped_past_escaping_never_runs(tmp_path, monkeypatch):
    """Defence in depth: with autoescaping switched off, the hostile text in the run's name, the
    architectures' text, diagnostics and failure kinds becomes live markup. The policy refuses every
    injected script and handler, and only those: the page still works."""
    run, archs = make_run(30, evil=True, payload=HOSTILE)
    for a in archs:  # the failures table writes the kind with the template, not the script
        a.error_kind = a.error_kind and a.error_kind + HOSTILE
    page = tmp_path / "report.html"
    page.write_text(_render_unescaped(monkeypatch, lambda: render_report(run, archs)), encoding="utf-8")
    with Browser() as browser:
        browser.record_csp_violations()
        browser.open(page.as_uri())
        assert browser.eval("document.querySelectorAll('#tree .tree-node').length") == len(archs)
        assert _tree_zooms(browser)
        failed = next(a for a in archs if a.error)
        assert failed.error in _show_details(browser, failed.id)
        _assert_only_injected_markup_was_refused(browser, own_scripts=True)


@needs_chromium
def test_hostile_fields_stay_text_and_no_script_of_the_page_is_refused(tmp_path):
    run, archs = make_run(20, evil=True, payload=HOSTILE)
    page = tmp_path / "report.html"
    page.write_text(render_report(run, archs), encoding="utf-8")
    with Browser() as browser:
        browser.record_csp_violations()
        browser.open(page.as_uri())
        assert browser.csp_violations() == [] and browser.problems() == []
        assert _tree_zooms(browser)
        failed = next(a for a in archs if a.error)
        shown = _show_details(browser, failed.id)
        assert f"failure{failed.error_kind}: {HOSTILE}" in shown  # the error message, literally
        assert f'"operator": {json.dumps(HOSTILE)}' in shown  # the operator name, literally
        assert browser.eval("window.__pwned === undefined") is True
        assert browser.csp_violations() == [] and browser.problems() == []


@needs_chromium
def test_compare_page_runs_nothing_injected_and_keeps_its_colours(tmp_path, monkeypatch):
    page = tmp_path / "compare.html"
    page.write_text(_render_unescaped(monkeypatch, lambda: _compare_page(HOSTILE)), encoding="utf-8")
    with Browser() as browser:
        browser.record_csp_violations()
        browser.open(page.as_uri(), ready="document.readyState === 'complete'")
        # the hashed <style> applies: the legend's first strategy has the first colour
        red, green, blue = (int(COLOURS[0][i:i + 2], 16) for i in (1, 3, 5))
        assert browser.eval("getComputedStyle(document.querySelector('#curves p .mono')).color") == \
            f"rgb({red}, {green}, {blue})"
        _assert_only_injected_markup_was_refused(browser, own_scripts=False)
