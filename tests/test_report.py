"""`nader-search report`: the HTML it writes, and the page in a real headless Chromium.

The browser tests skip cleanly when no Chromium is installed (`apt-get install chromium`).
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from browser import Browser, find_chromium
from nader.search.report import Arch, Run, render
from nader.search.report.render import pareto_front

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "examples" / "resnet_basic.nad").read_text()
EVIL = "<script>window.__pwned=1</script>\"'><img src=x onerror=\"window.__pwned=1\">"
needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed")


def make_run(n: int = 30, seed: int = 0, evil: bool = False) -> tuple[Run, list[Arch]]:
    """A search tree of `n` architectures with every status, as a search records them."""
    rng = random.Random(seed)
    t0 = 1_700_000_000.0
    archs = []
    statuses = ["ok", "invalid", "duplicate", "failed", "over-budget", "diverged"]
    for i in range(n):
        status = "ok" if i == 0 else rng.choices(statuses, [10, 2, 1, 1, 1, 1])[0]
        text = EXAMPLE.replace("ResNetBasic", f"Arch{i}")
        if evil:
            text = f"# {EVIL}\n" + text
        a = Arch(id=str(i), parent=None if i == 0 else str(rng.randrange(i)), status=status, text=text,
                 change={"operator": "insert_se", "args": {"after": "5"}, "plan": EVIL if evil else "add SE"},
                 created=t0 + 10 * i, finished=t0 + 10 * i + 9)
        if status == "ok":
            a.valid_acc, a.test_acc = 50 + 40 * rng.random(), 50 + 40 * rng.random()
            a.params, a.flops, a.seconds = rng.randrange(10**5, 2 * 10**6), rng.randrange(10**7, 3 * 10**8), 9.0
        elif status == "invalid":
            a.diagnostics = [{"code": rng.choice(["NAD301", "NAD204"]), "line": 3, "severity": "error",
                              "message": EVIL if evil else "shape mismatch"}]
        elif status in ("failed", "diverged"):
            a.error_kind, a.error = ("oom" if status == "failed" else "nan"), "CUDA out of memory"
        elif status == "duplicate":
            a.duplicate_of = "0"
        archs.append(a)
    return Run(name=(EVIL if evil else "demo"), dataset="digits", preset="quick", strategy="rea", started=t0), archs


def test_pareto_front_keeps_only_undominated_points():
    points = [("a", 10, 50.0), ("b", 20, 40.0), ("c", 30, 70.0), ("d", 30, 60.0), ("e", 5, 30.0)]
    assert pareto_front(points) == ["e", "a", "c"]


def test_report_is_self_contained_and_escapes_untrusted_text():
    run, archs = make_run(12, evil=True)
    html = render(run, archs)
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
    html = render(run, archs)
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
    page.write_text(render(run, archs), encoding="utf-8")
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
