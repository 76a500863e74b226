"""Several searches side by side: best-found accuracy against trials, one curve per run.

`nader-search report RUN1 RUN2 ...` writes one self-contained HTML page: the best validation
accuracy found after each trial of each run (a step curve, coloured by strategy, with the mean of
each strategy's runs drawn thick), and a table of the same at a few trial counts, mean and
spread over the runs of each strategy. The drawing is SVG made here, on the server side: the
page has no script at all. `benchmarks/strategies.py` writes the same page for its runs.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from nader.inputs.writes import write_file

from .load import load_run
from .render import _env, _static, content_security_policy

FINISHED = ("ok", "diverged", "failed")
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


@dataclass
class Curve:
    """One run: after trial k (finishing order, the root is trial 1; failed trials count), the best
    validation accuracy so far and the test accuracy of that architecture."""

    run: str
    strategy: str
    valid: List[Optional[float]] = field(default_factory=list)
    test: List[Optional[float]] = field(default_factory=list)

    @property
    def trials(self) -> int:
        return len(self.valid)


FIDELITY_LABELS = {"successive-halving": "sh", "hyperband": "hb"}


def curve_of(run, archs) -> Curve:
    done = sorted((a for a in archs if a.status in FINISHED and a.finished is not None),
                  key=lambda a: (a.finished, int(a.id)))
    fidelity = (run.config or {}).get("fidelity")  # multi-fidelity runs are told apart: rea+sh, rea+hb
    out = Curve(run.name, (run.strategy or "?") + (f"+{FIDELITY_LABELS.get(fidelity, fidelity)}" if fidelity else ""))
    best = None
    for a in done:  # the best by the highest rung, then accuracy (as `nader-search best`)
        if a.status == "ok" and a.valid_acc is not None and (best is None or a.rank_key() < best.rank_key()):
            best = a
        out.valid.append(best.valid_acc if best else None)
        out.test.append(best.test_acc if best else None)
    return out


def load_curves(run_dirs: Sequence) -> List[Curve]:
    curves = []
    for d in run_dirs:
        run, archs = load_run(Path(d))
        curves.append(curve_of(run, archs))
    return curves


def checkpoints(trials: int, count: int = 4) -> List[int]:
    """A few trial counts to tabulate: 1/count, 2/count, ... of `trials`, and `trials` itself."""
    if trials <= 0:
        return []
    return sorted({max(1, round(trials * k / count)) for k in range(1, count + 1)})


def at(values: List[Optional[float]], trial: int) -> Optional[float]:
    """The value after `trial` trials (the last one when the run has fewer)."""
    return values[min(trial, len(values)) - 1] if values else None


def mean_spread(values: List[Optional[float]]) -> tuple[Optional[float], Optional[float], int]:
    xs = [v for v in values if v is not None]
    if not xs:
        return None, None, 0
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0), len(xs)


def by_strategy(curves: List[Curve]) -> Dict[str, List[Curve]]:
    out: Dict[str, List[Curve]] = {}
    for c in curves:
        out.setdefault(c.strategy, []).append(c)
    return out


def table_rows(curves: List[Curve], points: Sequence[int]) -> List[dict]:
    """Per strategy and trial count: mean and spread (sample standard deviation) over its runs."""
    rows = []
    for strategy, group in by_strategy(curves).items():
        for trial in points:
            v = mean_spread([at(c.valid, trial) for c in group])
            t = mean_spread([at(c.test, trial) for c in group])
            rows.append({"strategy": strategy, "trial": trial, "runs": len(group), "valid": v[0], "valid_sd": v[1],
                         "test": t[0], "test_sd": t[1]})
    return rows


def text_table(curves: List[Curve], points: Optional[Sequence[int]] = None) -> str:
    """The table as plain text (what `benchmarks/strategies.py` prints)."""
    points = points or checkpoints(max((c.trials for c in curves), default=0))
    num = lambda m, s: "-" if m is None else f"{m:6.2f} ± {s:4.2f}"  # noqa: E731
    lines = [f"{'strategy':<10} {'runs':>4} {'trials':>6}   {'best valid %':>14}   {'its test %':>14}"]
    for r in table_rows(curves, points):
        lines.append(f"{r['strategy']:<10} {r['runs']:>4} {r['trial']:>6}   {num(r['valid'], r['valid_sd']):>14}   "
                     f"{num(r['test'], r['test_sd']):>14}")
    return "\n".join(lines)


def _svg(curves: List[Curve], colour: Dict[str, str], width: int = 720, height: int = 360) -> dict:
    """Polylines in SVG coordinates (the template writes them; no number comes from a user)."""
    pad_l, pad_r, pad_t, pad_b = 56, 16, 16, 40
    values = [v for c in curves for v in c.valid if v is not None]
    trials = max((c.trials for c in curves), default=1)
    lo, hi = (min(values), max(values)) if values else (0.0, 100.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    x = lambda k: pad_l + (k - 1) / max(1, trials - 1) * (width - pad_l - pad_r)  # noqa: E731
    y = lambda v: pad_t + (hi - v) / (hi - lo) * (height - pad_t - pad_b)  # noqa: E731

    def steps(values) -> str:
        pts, last = [], None
        for k, v in enumerate(values, 1):
            if v is None:
                continue
            if last is not None:
                pts.append(f"{x(k):.1f},{y(last):.1f}")
            pts.append(f"{x(k):.1f},{y(v):.1f}")
            last = v
        return " ".join(pts)

    lines = [{"points": steps(c.valid), "colour": colour[c.strategy], "label": c.run, "thick": False}
             for c in curves]
    for strategy, group in by_strategy(curves).items():
        n = max(c.trials for c in group)
        mean = [mean_spread([at(c.valid, k) for c in group])[0] for k in range(1, n + 1)]
        lines.append({"points": steps(mean), "colour": colour[strategy], "label": f"{strategy} (mean)", "thick": True})
    yticks = [lo + (hi - lo) * i / 4 for i in range(5)]
    xticks = sorted({1, *checkpoints(trials)})
    return {"width": width, "height": height, "lines": lines, "left": pad_l, "bottom": height - pad_b,
            "right": width - pad_r, "top": pad_t,
            "yticks": [{"y": round(y(v), 1), "label": f"{v:.1f}"} for v in yticks],
            "xticks": [{"x": round(x(k), 1), "label": str(k)} for k in xticks]}


def render_compare(curves: List[Curve], *, title: str = "Search strategies compared", notes: Sequence[str] = (),
                   generated: Optional[float] = None) -> str:
    strategies = list(by_strategy(curves))
    colour = {s: COLOURS[i % len(COLOURS)] for i, s in enumerate(strategies)}
    points = checkpoints(max((c.trials for c in curves), default=0))
    # The legend's colours as classes: the policy admits our <style> by hash, never a style= attribute.
    css = _static("report.css") + "".join(f".colour-{i} {{ color: {c}; }}\n" for i, c in enumerate(COLOURS))
    return _env().get_template("compare.html.j2").render(
        title=title, notes=list(notes), curves=curves, rows=table_rows(curves, points), svg=_svg(curves, colour),
        legend=[{"strategy": s, "colour_class": f"colour-{i % len(COLOURS)}", "runs": len(by_strategy(curves)[s])}
                for i, s in enumerate(strategies)],
        css=css, csp=content_security_policy(styles=[css]),
        generated=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(generated or time.time())))


def write_compare(run_dirs: Sequence, output: Path, **kwargs) -> int:
    html = render_compare(load_curves(run_dirs), **kwargs).encode("utf-8")
    write_file(output, html, what="report")
    return len(html)
