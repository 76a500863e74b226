"""The structural diff of two blocks (`canonical.block_diff`) as text and as JSON.

`nadc diff` prints it; the search report and FairNAD's prompts show it too, so it lives here and
not in the command.
"""
from __future__ import annotations

from nader.compiler.passes.canonical import BlockDiff, canonical_hash
from nader.dsl.ir import Block, Node, id_sort_key


def pair_blocks(blocks_a: list[Block], blocks_b: list[Block]):
    """Blocks paired by name, then the rest in file order: (pairs, unpaired of A, unpaired of B)."""
    pairs, rest_a = [], []
    names_b = {b.name: b for b in blocks_b}
    used = set()
    for a in blocks_a:
        b = names_b.get(a.name)
        if b is not None and b.name not in used:
            pairs.append((a, b))
            used.add(b.name)
        else:
            rest_a.append(a)
    rest_b = [b for b in blocks_b if b.name not in used]
    for a, b in zip(rest_a, rest_b):
        pairs.append((a, b))
    return pairs, rest_a[len(rest_b):], rest_b[len(rest_a):]


def _operand(label: str) -> str:
    return f" (operand {int(label) + 1})" if label else ""


def _edge(s: int, t: int, label: str) -> str:
    return f"{s}->{t}{_operand(label)}"


def _bound(node: Node) -> str:
    """The operation with its bound parameters, defaults filled in: `concat(dim=1)`."""
    if not node.params:
        return node.op_name if node.opdef or not node.args else f"{node.op_name}({','.join(map(str, node.args))})"
    return f"{node.op_name}(" + ",".join(f"{k}={v}" for k, v in node.params.items()) + ")"


def _node_text(node: Node) -> str:
    return node.source_text()


def render_text(d: BlockDiff, file_a: str, file_b: str) -> str:
    out = [f"--- {file_a} ({d.a.name})", f"+++ {file_b} ({d.b.name})"]
    for c in d.changed:
        ids = str(c.a.id) if c.a.id == c.b.id else f"{c.a.id} (b: {c.b.id})"
        if c.op:
            out.append(f"~ node {ids}: {_bound(c.a)} -> {_bound(c.b)}")
            continue
        params = ", ".join(f"{name}: {old} -> {new}" for name, (old, new) in c.params.items())
        out.append(f"~ node {ids}: {c.a.op_name}  {params}")
    out += [f"- node {_node_text(n)}" for n in d.removed]
    out += [f"+ node {_node_text(n)}" for n in d.added]
    out += [f"- edge {_edge(*e)}" for e in d.edges_removed]
    out += [f"+ edge {_edge(*e)}" for e in d.edges_added]
    counts = (f"{len(d.changed)} changed, {len(d.removed)} removed, {len(d.added)} added nodes; "
              f"{len(d.edges_removed)} removed, {len(d.edges_added)} added edges")
    out.append(counts)
    return "\n".join(out) + "\n"


def _node_json(node: Node) -> dict:
    return {"id": node.id, "op": node.op_name, "line": node.span.line, "text": node.source_text(),
            "params": {k: str(v) for k, v in node.params.items()}}


def diff_json(d: BlockDiff, file_a: str, file_b: str) -> dict:
    return {
        "a": {"file": file_a, "block": d.a.name, "hash": canonical_hash(d.a)},
        "b": {"file": file_b, "block": d.b.name, "hash": canonical_hash(d.b)},
        "equal": d.equal,
        "nodes": {
            "changed": [{"a_id": c.a.id, "b_id": c.b.id, "op": c.b.op_name if c.op is None else None,
                         "op_change": list(c.op) if c.op else None,
                         "params": {k: {"old": old, "new": new} for k, (old, new) in c.params.items()}}
                        for c in d.changed],
            "removed": [_node_json(n) for n in d.removed],
            "added": [_node_json(n) for n in d.added],
        },
        "edges": {
            "removed": [{"source": s, "target": t, "operand": int(lab) if lab else None} for s, t, lab in d.edges_removed],
            "added": [{"source": s, "target": t, "operand": int(lab) if lab else None} for s, t, lab in d.edges_added],
        },
        "mapping": {str(k): v for k, v in sorted(d.mapping.items(), key=lambda kv: id_sort_key(kv[0]))},
    }
