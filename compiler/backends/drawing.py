"""Drawings of blocks: Graphviz DOT text (`--emit dot`) and SVG by our own layout (`--emit svg`).

Nodes show their id, operation and parameters as written (as NADER's pictures do); edges
carry the inferred symbolic shape of the tensor they move, e.g. `(B,C,H,W)`; edges into
operations whose operand order matters (`concat`, `multiply`, `Add`, `Mul`) are numbered
`#1`, `#2`, ... in edge order. Terminals are drawn as ellipses, nodes the verifier
reports an error on are outlined in red with the diagnostic code, and dead nodes (NAD206,
dropped when compiled) are dashed and grey. Blocks that fail
verification are still drawn, with the shapes that could be inferred; only a cycle (NAD203),
which a layered SVG cannot draw, is refused with its diagnostic (exit 1).

The DOT text is written here, with every identifier and label quoted and escaped; render it
with Graphviz (`dot -Tsvg`) for its layout. `--emit svg` needs no Graphviz: `svg.py` lays the
same labels out itself.
"""
from __future__ import annotations

from typing import Optional

from nader.compiler.passes.contract import SQUARE, Domain
from nader.compiler.passes.shapes import shape_str
from nader.compiler.passes.structure import dead_nodes
from nader.compiler.passes.verify import BlockReport, verify_block
from nader.dsl.ir import Block, Node, Role
from nader.dsl.ops import Category, Group

# Fill colours by the registry's groups (first match wins), in the spirit of NADER's figures: a new
# operation is coloured by the categories it is registered with.
_STYLE = (
    (Group.SOURCE, "#dbe9f6"),
    (Group.SINK, "#dbe9f6"),
    (Group.NORMALIZATION, "#e2f0d9"),
    (Group.LEARNABLE, "#fde9d9"),
    (Group.ACTIVATION | Group.GATE, "#fff2cc"),
    (Group.POOLING, "#e4dff0"),
    (Group.MULTI_INPUT, "#f2f2f2"),
    (Group.REDUCTION, "#ddebf7"),
    (Group.LAYOUT, "#ededed"),
    (Group.REGULARIZATION, "#ffffff"),
)
_UNGROUPED_FILL = "#d9d9d9"  # an operation in none of those groups (Zero)
_DEFAULT_FILL = "#ffffff"  # an unknown operation
_ERROR_COLOR = "#c00000"
_DEAD_COLOR = "#808080"
# Operations whose operands are numbered on their incoming edges.
ORDERED = Group.MULTI_INPUT


def quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, line breaks as `\\n`.

    Graphviz reads `\\N`, `\\G`, `\\l`, ... inside labels as escapes, so every backslash of the
    text is doubled; control characters other than line breaks are dropped.
    """
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r" or (ord(ch) < 32 and ch != "\t") or ord(ch) == 127:
            continue
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _attrs(**attrs: object) -> str:
    return "[" + ", ".join(f"{k}={quote(str(v))}" for k, v in attrs.items() if v is not None) + "]"


def node_caption(node: Node) -> str:
    """`id: Op` and the arguments as written: one per line (`out_channels=C`), or inline for
    operations taking a list (`reshape(B,C,H*W)`)."""
    head = f"{node.id}: {node.op_name}"
    if not node.args:
        return head
    d = node.opdef
    if d is not None and any(p.variadic for p in d.params):
        return f"{head}({','.join(str(a) for a in node.args)})"  # permute(0,2,3,1), reshape(B,C,H*W)
    return head + "\n" + "\n".join(str(a) for a in node.args)


def _fill(node: Node) -> str:
    d = node.opdef
    if d is None:
        return _DEFAULT_FILL
    for group, color in _STYLE:
        if d.op in group:
            return color
    return _UNGROUPED_FILL


def _error_codes(report: BlockReport) -> dict[int, list[str]]:
    """Error codes per node, matched by source line."""
    by_line: dict[int, list[str]] = {}
    for d in report.diagnostics:
        if d.is_error and d.span.line:
            by_line.setdefault(d.span.line, []).append(d.code.code)
    result: dict[int, list[str]] = {}
    for node in report.block.nodes:
        codes = by_line.get(node.span.line)
        if codes:
            result[node.id] = codes
    return result


def block_dot(report: BlockReport, prefix: str = "", indent: str = "  ") -> list[str]:
    """The statements of one block (nodes then edges), node ids prefixed with `prefix`."""
    block = report.block
    shapes = report.shapes.shapes if report.shapes is not None else {}
    facts = report.shapes.facts if report.shapes is not None else {}
    errors = _error_codes(report)
    dead = set(dead_nodes(block))
    lines = []
    seen: set[int] = set()
    for node in block.nodes:
        if node.id in seen:
            continue  # a duplicated id (NAD2xx) is drawn once
        seen.add(node.id)
        label = node_caption(node)
        attrs: dict[str, object] = {"label": label, "fillcolor": _fill(node)}
        if node.opdef is not None and node.opdef.has(Category.TERMINAL):
            attrs.update(shape="ellipse", style="filled,bold", fontname="Helvetica-Bold")
            if node.op in Group.SOURCE and node.id in shapes:
                attrs["label"] = f"{label}\n{shape_str(shapes[node.id])}"
            if node.op in Group.SINK and report.shapes is not None:
                attrs["label"] = f"{label}\n{shape_str(report.shapes.contract.output)}"
        if node.id in facts and facts[node.id].get("swapped"):
            attrs["label"] = f"{attrs['label']}\n(computed as #2 x #1)"
        if node.id in dead:
            attrs.update(style="rounded,filled,dashed", fontcolor=_DEAD_COLOR, color=_DEAD_COLOR)
            attrs["label"] = f"{attrs['label']}\n(dead: dropped)"
        if node.id in errors:
            attrs.update(color=_ERROR_COLOR, penwidth="2", fontcolor=_ERROR_COLOR)
            attrs["label"] = f"{attrs['label']}\n{' '.join(dict.fromkeys(errors[node.id]))}"
        lines.append(f"{indent}{quote(prefix + str(node.id))} {_attrs(**attrs)};")
    nodes = block.node_map()
    operand_index: dict[int, int] = {}
    for source, target, _, _ in block.wires():
        attrs = {}
        shape = shapes.get(source)
        text = shape_str(shape) if shape is not None else None
        target_node = nodes.get(target)
        if target_node is not None and target_node.op in ORDERED:
            operand_index[target] = operand_index.get(target, 0) + 1
            number = f"#{operand_index[target]}"
            text = f"{number} {text}" if text else number
        attrs["label"] = text
        lines.append(f"{indent}{quote(prefix + str(source))} -> {quote(prefix + str(target))} {_attrs(**attrs)};")
    return lines


def program_dot(reports: list[BlockReport], title: str = "nader") -> str:
    """One `digraph` with a cluster per block."""
    lines = [f"digraph {quote(title)} {{",
             '  graph [rankdir="TB", fontname="Helvetica", nodesep="0.3", ranksep="0.35"];',
             '  node [shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11"];',
             '  edge [fontname="Helvetica", fontsize="9", color="#555555"];']
    for index, report in enumerate(reports):
        role = report.role
        extra = []
        if report.shapes is not None and report.shapes.constraints:
            extra.append("requires " + ", ".join(report.constraints))
        if not report.ok:
            extra.append("does not verify")
        label = f"{report.block.name} ({role})" + "".join(f"\n{e}" for e in extra)
        lines.append(f"  subgraph {quote(f'cluster_{index}')} {{")
        lines.append(f"    graph {_attrs(label=label, labelloc='t', style='rounded', color='#999999')};")
        lines.extend(block_dot(report, prefix=f"b{index}_" if len(reports) > 1 else "", indent="    "))
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw_block(block: Block, *, role: Optional[Role] = None, stem_stride: int = 1, domain: Domain = SQUARE) -> str:
    """The DOT text of one block."""
    return program_dot([verify_block(block, role=role, stem_stride=stem_stride, domain=domain)], block.name)


def _reports(parsed, options) -> list[BlockReport]:
    return [verify_block(b, role=options.role, stem_stride=options.stem_stride, file=parsed.program.path,
                         domain=options.domain) for b in parsed.program.blocks]


def emit_dot(parsed, options) -> str:
    """`nadc FILE --emit dot`: Graphviz DOT text, one cluster per block."""
    return program_dot(_reports(parsed, options), parsed.program.path)
