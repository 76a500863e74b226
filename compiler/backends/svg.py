"""SVG drawings of blocks with our own layered layout (no Graphviz needed).

The labels, colours and error marks are the DOT drawing's (`drawing.py`); only the layout is
ours: nodes are put in layers by their longest path from a source, ordered within a layer by
the mean position of their predecessors (one downward sweep), and edges are cubic curves
labelled with the shape they carry. Every text is XML-escaped, so a block's names and
comments cannot inject markup into the page that shows the drawing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Hashable

from nader.compiler.backends.errors import DiagnosedError
from nader.compiler.passes.shapes import shape_str
from nader.compiler.passes.structure_codes import CYCLE
from nader.compiler.passes.verify import BlockReport
from nader.dsl.ops import Category, Group

from .drawing import ORDERED, _ERROR_COLOR, _error_codes, _fill, _reports, node_caption

FONT_PX = 11
CHAR_W = 6.6  # mean advance of an 11 px sans-serif glyph
LINE_H = 14
PAD_X, PAD_Y = 10, 6
GAP_X, GAP_Y = 18, 42
MARGIN = 12


@dataclass
class _Box:
    lines: list[str]
    fill: str
    terminal: bool
    error: bool
    x: float = 0.0  # centre
    y: float = 0.0  # top
    w: float = 0.0
    h: float = 0.0


def _layers(ids: list[Hashable], edges: list[tuple[Hashable, Hashable]]) -> dict[Hashable, int]:
    """Longest-path layer of each node, without recursion (a chain of any length); the edges that
    close a cycle (NAD203) are cut where a depth-first walk from the nodes in order meets them."""
    succs: dict[Hashable, list[Hashable]] = {i: [] for i in ids}
    for s, t in edges:
        if s in succs and t in succs:
            succs[s].append(t)
    # a depth-first order with back edges dropped: what remains is acyclic, in topological order
    state: dict[Hashable, int] = {}  # 1 on the path, 2 done
    order: list[Hashable] = []
    kept: dict[Hashable, list[Hashable]] = {i: [] for i in ids}
    for root in ids:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(succs[root]))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                order.append(node)
                stack.pop()
            elif state.get(child) != 1:  # an edge back onto the path closes a cycle: cut it
                kept[child].append(node)
                if child not in state:
                    state[child] = 1
                    stack.append((child, iter(succs[child])))
    layer: dict[Hashable, int] = {}
    for node in reversed(order):
        layer[node] = 1 + max((layer[p] for p in kept[node]), default=-1)
    return layer


def _boxes(report: BlockReport) -> dict[Hashable, _Box]:
    shapes = report.shapes.shapes if report.shapes is not None else {}
    errors = _error_codes(report)
    boxes: dict[Hashable, _Box] = {}
    for node in report.block.nodes:
        if node.id in boxes:
            continue  # a duplicated id (NAD2xx) is drawn once
        lines = node_caption(node).split("\n")
        terminal = node.opdef is not None and node.opdef.has(Category.TERMINAL)
        if terminal and node.op in Group.SOURCE and node.id in shapes:
            lines.append(shape_str(shapes[node.id]))
        if terminal and node.op in Group.SINK and report.shapes is not None:
            lines.append(shape_str(report.shapes.contract.output))
        if node.id in errors:
            lines.append(" ".join(dict.fromkeys(errors[node.id])))
        box = _Box(lines, _fill(node), terminal, node.id in errors)
        box.w = max(len(line) for line in lines) * CHAR_W + 2 * PAD_X
        box.h = len(lines) * LINE_H + 2 * PAD_Y
        boxes[node.id] = box
    return boxes


def _place(boxes: dict[Hashable, _Box], edges: list[tuple[Hashable, Hashable]],
           layer: dict[Hashable, int]) -> tuple[float, float]:
    ids = list(boxes)
    rows: dict[int, list[Hashable]] = {}
    for node in ids:
        rows.setdefault(layer[node], []).append(node)
    preds: dict[Hashable, list[Hashable]] = {i: [] for i in ids}
    for s, t in edges:
        if s in boxes and t in boxes:
            preds[t].append(s)
    y = float(MARGIN)
    widths = []
    for index in sorted(rows):
        row = rows[index]
        if index:  # order by the mean x of the predecessors already placed (barycentre sweep)
            at = {n: k for k, n in enumerate(row)}  # `row.index` inside the sort sees an empty list

            def key(n, at=at):
                xs = [boxes[p].x for p in preds[n] if layer.get(p, index) < index]
                return sum(xs) / len(xs) if xs else float(at[n])
            row.sort(key=key)
        x = float(MARGIN)
        height = max(boxes[n].h for n in row)
        for n in row:
            box = boxes[n]
            box.x, box.y = x + box.w / 2, y + (height - box.h) / 2
            x += box.w + GAP_X
        widths.append(x - GAP_X + MARGIN)
        y += height + GAP_Y
    width = max(widths, default=2 * MARGIN)
    for index in sorted(rows):  # centre every row on the widest
        row = rows[index]
        used = widths[sorted(rows).index(index)]
        shift = (width - used) / 2
        for n in row:
            boxes[n].x += shift
    return width, y - GAP_Y + MARGIN


def _text(box: _Box) -> list[str]:
    out = []
    top = box.y + PAD_Y + LINE_H - 3
    for i, line in enumerate(box.lines):
        weight = ' font-weight="bold"' if box.terminal and i == 0 else ""
        out.append(f'<text x="{box.x:.1f}" y="{top + i * LINE_H:.1f}" text-anchor="middle"{weight}>'
                   f"{escape(line)}</text>")
    return out


def block_svg(report: BlockReport) -> str:
    """One standalone `<svg>` element drawing the block of `report`."""
    boxes = _boxes(report)
    shapes = report.shapes.shapes if report.shapes is not None else {}
    nodes = report.block.node_map()
    wires = [(s, t) for s, t, _, _ in report.block.wires()]
    layer = _layers(list(boxes), wires)
    width, height = _place(boxes, wires, layer)
    lane = width  # long edges (skipping layers) run down lanes right of the drawing
    title = f"{report.block.name} ({report.role})" + ("" if report.ok else " - does not verify")
    parts = []
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="WIDTH" height="{height + 18:.0f}" '
             f'viewBox="0 -18 WIDTH {height + 18:.0f}" font-family="Helvetica, Arial, sans-serif" '
             f'font-size="{FONT_PX}" class="nad-block">',
             f"<title>{escape(title)}</title>",
             '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" '
             'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>',
             f'<text x="{MARGIN}" y="-4" font-weight="bold">{escape(title)}</text>']
    operand: dict[Hashable, int] = {}
    for s, t in wires:
        if s not in boxes or t not in boxes:
            continue
        a, b = boxes[s], boxes[t]
        x1, y1, x2, y2 = a.x, a.y + a.h, b.x, b.y
        if y2 <= y1:  # back edge (a cycle)
            y2 = b.y + b.h
        mid = (y1 + y2) / 2
        if abs(layer[t] - layer[s]) > 1:  # skips layers: go round the boxes in between, in a lane
            x = lane
            lane += 14
            d = (f"M{x1:.1f},{y1:.1f} C{x:.1f},{y1:.1f} {x:.1f},{y1:.1f} {x:.1f},{y1 + GAP_Y / 2:.1f} "
                 f"L{x:.1f},{y2 - GAP_Y / 2:.1f} C{x:.1f},{y2:.1f} {x:.1f},{y2 - 4:.1f} {x2:.1f},{y2:.1f}")
            x1 = x2 = x - 4
        else:
            d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
        parts.append(f'<path d="{d}" fill="none" stroke="#555" marker-end="url(#arrow)"/>')
        label = shape_str(shapes[s]) if s in shapes else ""
        target = nodes.get(t)
        if target is not None and target.op in ORDERED:
            operand[t] = operand.get(t, 0) + 1
            label = f"#{operand[t]} {label}".strip()
        if label:
            parts.append(f'<text x="{(x1 + x2) / 2 + 4:.1f}" y="{mid + 3:.1f}" font-size="9" fill="#555">'
                         f"{escape(label)}</text>")
    for box in boxes.values():
        stroke = _ERROR_COLOR if box.error else "#333"
        width_px = 2 if box.error or box.terminal else 1
        if box.terminal:
            parts.append(f'<ellipse cx="{box.x:.1f}" cy="{box.y + box.h / 2:.1f}" rx="{box.w / 2 + 4:.1f}" '
                         f'ry="{box.h / 2:.1f}" fill="{box.fill}" stroke="{stroke}" stroke-width="{width_px}"/>')
        else:
            parts.append(f'<rect x="{box.x - box.w / 2:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
                         f'height="{box.h:.1f}" rx="5" fill="{box.fill}" stroke="{stroke}" '
                         f'stroke-width="{width_px}"/>')
        parts.extend(_text(box))
    parts.append("</svg>")
    width = max(width, lane + 90 if lane > width else width)  # room for the lanes' shape labels
    head[0] = head[0].replace("WIDTH", f"{width:.0f}")
    return "\n".join(head + parts)


def emit_svg(parsed, options) -> str:
    """`nadc FILE --emit svg`: every block drawn by our own layout (`svg.py`), stacked in one document."""
    reports = _reports(parsed, options)
    cycles = [d for r in reports for d in r.diagnostics if d.code is CYCLE]
    if cycles:  # a layered drawing has no top for a cycle: the structural diagnostic instead
        raise DiagnosedError("a cycle cannot be drawn in layers", [d for r in reports for d in r.diagnostics
                                                                    if d.is_error])
    drawings = [block_svg(report) for report in reports]
    return stack_svgs(drawings)


def stack_svgs(drawings: list[str], gap: int = 16) -> str:
    """One SVG document holding standalone `<svg>` drawings one below the other."""
    sizes = [(float(re.search(r'width="([\d.]+)"', d)[1]), float(re.search(r'height="([\d.]+)"', d)[1]))
             for d in drawings]
    width = max((w for w, _ in sizes), default=0.0)
    height = sum(h for _, h in sizes) + gap * max(len(sizes) - 1, 0)
    body, y = [], 0.0
    for drawing, (_, h) in zip(drawings, sizes):
        body.append(f'<g transform="translate(0,{y:.0f})">{drawing}</g>')
        y += h + gap
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}">\n'
            + "\n".join(body) + "\n</svg>\n")
