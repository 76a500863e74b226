"""`nader-search report`: one self-contained HTML file showing a search (see docs/report.md)."""
from .model import Arch, Run
from .render import render

__all__ = ["Arch", "Run", "render"]
