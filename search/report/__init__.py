"""`nader-search report`: one self-contained HTML file showing a search (see docs/report.md)."""
from .model import ReportArch, Run
from .render import render_report

__all__ = ["ReportArch", "Run", "render"]
