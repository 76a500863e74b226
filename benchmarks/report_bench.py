"""Report at scale: size of the HTML for a 2,000-architecture search, its render time, and its
load time and responsiveness in headless Chromium.

The tree is made of real architecture texts (the bundled example, each carrying its own comment
so no two are the same) with statuses and metrics drawn at random: the report's cost depends
on the number of architectures and the text it embeds, not on how they were trained.

    python benchmarks/report_bench.py [--archs 2000]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import Browser, find_chromium  # noqa: E402
from test_report import make_run  # noqa: E402

from nader.search.report import render_report  # noqa: E402

TARGET_MB = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--archs", type=int, default=2000)
    args = parser.parse_args()
    run, archs = make_run(args.archs, seed=1)
    start = time.perf_counter()
    html = render_report(run, archs)
    render_s = time.perf_counter() - start
    size_mb = len(html.encode("utf-8")) / 1e6
    line = (f"report: {args.archs} architectures -> {size_mb:.2f} MB (target < {TARGET_MB:.0f} MB "
            f"{'met' if size_mb < TARGET_MB else 'MISSED'}), rendered in {render_s:.2f} s")
    if find_chromium() is None:
        print(line + "; load time not measured: chromium is not installed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(html, encoding="utf-8")
        with Browser() as browser:
            loads = [browser.open(page.as_uri()) for _ in range(3)]  # each a fresh navigation
            nodes = browser.eval("document.querySelectorAll('#tree .tree-node').length")
            clicks = []
            for ident in ("1", str(args.archs // 2), str(args.archs - 1)):
                clicks.append(browser.eval(
                    f"(() => {{ const t = performance.now(); document.querySelector('#tree .tree-node[data-id=\"{ident}\"]')"
                    ".dispatchEvent(new MouseEvent('click', {bubbles: true})); document.body.offsetHeight;"
                    " return performance.now() - t; })()"))
            zoom = browser.eval(
                "(() => { const t = performance.now(); const s = d3.select('#tree');"
                " for (let i = 0; i < 10; i++) s.call(d3.zoom().on('zoom', (e) => d3.select('#tree > g').attr('transform', e.transform)).scaleBy, 1.1);"
                " document.body.offsetHeight; return (performance.now() - t) / 10; })()")
            problems = browser.problems()
    print(f"{line}; loads in {statistics.median(loads):.2f} s in headless Chromium (median of 3 navigations), "
          f"{nodes} tree nodes drawn, a click shows details in {max(clicks):.1f} ms (worst of 3), "
          f"a zoom step redraws in {zoom:.1f} ms" + (f"; PAGE PROBLEMS: {problems[:3]}" if problems else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
