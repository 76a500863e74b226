"""NAS-Bench-201's cell space in the block language, and back.

A NAS-Bench-201 cell is a DAG of 4 nodes: node 0 is the cell's input, node 3 its output, and
node j is the sum of one operation applied to each earlier node i (6 edges). The operations are
``none`` (no edge), ``skip_connect`` (identity), ``nor_conv_1x1`` and ``nor_conv_3x3``
(ReLU, convolution without bias, BN) and ``avg_pool_3x3`` (stride 1). A cell is written as

    |nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|

node 1's edges, then node 2's, then node 3's, each ``op~source``. 5^6 = 15,625 strings.

As a block: ``skip_connect`` is an edge, a convolution is ``ReLU -> Conv2d(out_channels=C,
kernel_size=k,bias=0) -> BN``, the pool is ``AvgPool2d(kernel_size=3,stride=1)``, and a node with
two or more incoming operations is an ``Add`` (one with a single operation is that operation).
The header comment records the benchmark string.

**Operations that cannot affect the output are not in the block.** NB201 builds every edge of
the string; our blocks hold what reaches the output. Two kinds of operation are left out:

* operations on a node whose inputs are all ``none`` (NB201 feeds them a zero tensor; a
  convolution there outputs its BN's bias, a learned constant; pools and skips output zero);
* operations on a node that nothing downstream reads (dead in NB201 too).

So for cells with such operations our network differs from NB201's (no learned constant, fewer
parameters); :func:`effective` gives the string of what the block computes. 9,444 strings have
no such operation. 341 strings have an output that is zero for every input (node 3 receives
only ``none`` or zero nodes; NB201 trains them to chance accuracy); their block is one ``Zero``
operation, and the header comment says which of them it is.

**Back.** :func:`cell_of_block` decodes a block's graph into a string of a cell that computes the
same thing, and checks that by converting that string again and comparing canonical forms
(``nader.compiler.passes.canonical.equivalent``). Several strings can denote one graph
(``skip_connect`` chains, node order): the one with the fewest operations is returned (ties by
text), or the one the header comment names, so every representable string converts there and
back to itself.

:func:`parse_cell_reply` reads the cell an LLM names (GENIUS's `op_list = [...]` encoding, or a
string); :func:`op_list_text` writes a cell in that encoding.

:func:`architecture` adds NAS-Bench-201's stem (3x3 convolution without bias, BN) and its
residual reduction block; on the ``nas-bench-201`` skeleton (the nb201 skeleton plus NB201's
BN-ReLU before pooling) at widths 16, 32, 64 the network has NAS-Bench-201's parameter count.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from nader.compiler.network import build_network
from nader.compiler.passes.canonical import canonical_hash, canonical_params
from nader.dsl import parse
from nader.dsl.format import format_block_lines

OPS: Tuple[str, ...] = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
EDGES: Tuple[Tuple[int, int], ...] = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))  # (node, source)
SPACE_SIZE = len(OPS) ** len(EDGES)
SKELETON = "nas-bench-201"
WIDTHS = (16, 32, 64)  # NAS-Bench-201's C = 16, stages at C, 2C, 4C
DEPTHS = (5, 5, 5)  # N = 5 cells per stage
RESNET = "|nor_conv_3x3~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|skip_connect~2|"
COMMENT_TAG = "nas-bench-201:"

_CONV_KERNEL = {"nor_conv_1x1": 1, "nor_conv_3x3": 3}
_STRING = re.compile(r"\|([a-z0-9_]+)~(\d)\|(?:\+)?")


class NotInSpace(ValueError):
    """A string or block that is not a cell of NAS-Bench-201's space; the message says why."""


@dataclass(frozen=True)
class CellStructure:
    """One cell of the space: the operation on each of the 6 edges, in the string's order (see
    EDGES). NAS-Bench-201's API calls it that too; a DARTS network's `Cell` is the module built
    from a `##Cell##` block (`compiler/backends/torch_support.py`)."""

    ops: Tuple[str, ...]

    def __post_init__(self):
        if len(self.ops) != len(EDGES) or any(op not in OPS for op in self.ops):
            raise NotInSpace(f"a NAS-Bench-201 cell has 6 operations from {', '.join(OPS)}; got {self.ops}")

    @classmethod
    def parse(cls, text: str) -> "CellStructure":
        """Read ``|op~i|+|op~i|op~i|+|op~i|op~i|op~i|`` strictly (sources must be 0, 0 1, 0 1 2)."""
        text = (text or "").strip()
        groups = text.split("+")
        if len(groups) != 3:
            raise NotInSpace(f"{text!r}: a NAS-Bench-201 string has 3 node groups joined by '+', "
                             f"e.g. {RESNET}")
        ops: List[str] = []
        for node, group in enumerate(groups, 1):
            items = group.strip("|").split("|") if group.strip("|") else []
            if not (group.startswith("|") and group.endswith("|")) or len(items) != node:
                raise NotInSpace(f"{text!r}: node {node} needs {node} entries `|op~source|`, got {group!r}")
            for source, item in enumerate(items):
                op, sep, src = item.partition("~")
                if not sep or src != str(source):
                    raise NotInSpace(f"{text!r}: entry {item!r} of node {node} must read `op~{source}`")
                if op not in OPS:
                    raise NotInSpace(f"{text!r}: unknown operation {op!r}; NAS-Bench-201's are {', '.join(OPS)}")
                ops.append(op)
        return cls(tuple(ops))

    def __str__(self) -> str:
        parts = []
        for node in (1, 2, 3):
            parts.append("|" + "|".join(f"{op}~{src}" for (n, src), op in zip(EDGES, self.ops) if n == node) + "|")
        return "+".join(parts)

    def incoming(self, node: int) -> List[Tuple[int, str]]:
        return [(src, op) for (n, src), op in zip(EDGES, self.ops) if n == node]

    def zero_nodes(self) -> set:
        """Nodes whose value is zero for every input: all their inputs are `none` or zero nodes."""
        zero: set = set()
        for node in (1, 2, 3):
            if all(op == "none" or src in zero for src, op in self.incoming(node)):
                zero.add(node)
        return zero

    def effective(self) -> "CellStructure":
        """The cell with every operation that cannot affect the output replaced by `none`."""
        zero = self.zero_nodes()
        live = {3}
        for node in (3, 2, 1):
            if node in live:
                live.update(src for src, op in self.incoming(node) if op != "none" and src not in zero)
        return CellStructure(tuple(op if (op != "none" and src not in zero and n in live) else "none"
                          for (n, src), op in zip(EDGES, self.ops)))


ZERO = CellStructure(("none",) * len(EDGES))


def all_cells() -> Iterator[CellStructure]:
    """The 15,625 cells of the space (in product order, not NAS-Bench-201's index order)."""
    for ops in itertools.product(OPS, repeat=len(EDGES)):
        yield CellStructure(ops)


def as_cell(cell) -> CellStructure:
    return cell if isinstance(cell, CellStructure) else CellStructure.parse(str(cell))


# -- to the block language ---------------------------------------------------------------------

def cell_block(cell, name: str = "NB201Cell") -> str:
    """The base block of a cell (text in canonical form, header comment naming the string)."""
    cell = as_cell(cell)
    if 3 in cell.zero_nodes():  # node 3 receives only `none` or zero nodes: NB201 outputs zeros
        return "\n".join([f"##{name}##  # {COMMENT_TAG} {cell}", "0:input", "1:output", "2:Zero", "0->2", "2->1"]) + "\n"
    eff = cell.effective()
    nodes: List[str] = ["0:input", "1:output"]
    edges: List[str] = []
    value: Dict[int, int] = {0: 0}  # NB201 node -> block node id holding its value
    next_id = 2

    def new(op: str) -> int:
        nonlocal next_id
        nodes.append(f"{next_id}:{op}")
        next_id += 1
        return next_id - 1

    for node in (1, 2, 3):
        terms = []
        for src, op in eff.incoming(node):
            if op == "none":
                continue
            x = value[src]
            if op == "skip_connect":
                terms.append(x)
            elif op == "avg_pool_3x3":
                pool = new("AvgPool2d(kernel_size=3,stride=1)")
                edges.append(f"{x}->{pool}")
                terms.append(pool)
            else:
                relu = new("ReLU")
                conv = new(f"Conv2d(out_channels=C,kernel_size={_CONV_KERNEL[op]},bias=0)")
                bn = new("BN")
                edges += [f"{x}->{relu}", f"{relu}->{conv}", f"{conv}->{bn}"]
                terms.append(bn)
        if not terms:
            continue  # a node nothing reads, or a zero node (no live operation reads it)
        if len(terms) == 1:
            value[node] = terms[0]
        else:
            add = new("Add")
            edges.append(",".join(map(str, terms)) + f"->{add}")
            value[node] = add
    edges.append(f"{value[3]}->1")
    return "\n".join([f"##{name}##  # {COMMENT_TAG} {cell}", *nodes, *edges]) + "\n"


def stem_block(name: str = "NB201Cell") -> str:
    """NAS-Bench-201's stem: a 3x3 convolution without bias and BN."""
    return (f"##{name}_stem##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=3,bias=0)\n3:BN\n"
            "0->2\n2->3\n3->1\n")


def downsample_block(name: str = "NB201Cell") -> str:
    """NAS-Bench-201's reduction block (its ResNetBasicblock, stride 2): ReLU-conv3x3(s2)-BN,
    ReLU-conv3x3-BN, plus a 2x2 average pool and 1x1 convolution on the shortcut; no final ReLU."""
    return (f"##{name}_downsample##\n0:input\n1:output\n2:ReLU\n3:Conv2d(out_channels=dim,kernel_size=3,stride=2,bias=0)\n"
            "4:BN\n5:ReLU\n6:Conv2d(out_channels=dim,kernel_size=3,bias=0)\n7:BN\n8:AvgPool2d(kernel_size=2,stride=2)\n"
            "9:Conv2d(out_channels=dim,kernel_size=1,bias=0)\n10:Add\n"
            "0->2\n2->3\n3->4\n4->5\n5->6\n6->7\n0->8\n8->9\n7,9->10\n10->1\n")


def architecture(cell, name: str = "NB201Cell") -> str:
    """An architecture file: the cell as base block, with NAS-Bench-201's stem and reduction block."""
    return cell_block(cell, name) + stem_block(name) + downsample_block(name)


def build(cell, dataset: str = "cifar10"):
    """NAS-Bench-201's network for a cell: ``(module, info)`` from the network builder."""
    return build_network(architecture(cell), SKELETON, dataset, widths=list(WIDTHS), depths=list(DEPTHS))


# -- back from the block language --------------------------------------------------------------

def _parse_block(text: str, role_hint: Optional[str] = None):
    result = parse(text, "<nb201>")
    if not result.ok or result.program is None or not result.program.blocks:
        first = next((d for d in result.diagnostics), None)
        raise NotInSpace(f"the text does not parse: {first}")
    blocks = result.program.blocks
    base = [b for b in blocks if not re.search(r"_(stem|downsample|reduction)$", b.name)]
    if len(base) != 1:
        raise NotInSpace(f"expected one base block (the cell), found {len(base)}")
    return base[0]


def cell_of_text(text: str) -> CellStructure:
    """The cell of an architecture or block text (its base block)."""
    return cell_of_block(_parse_block(text))


def _recorded(block) -> Optional[CellStructure]:
    comment = (block.header_comment or "").lstrip("#").strip()
    if comment.startswith(COMMENT_TAG):
        try:
            return CellStructure.parse(comment[len(COMMENT_TAG):].strip())
        except NotInSpace:
            return None
    return None


def _term(block, nid: int) -> Optional[Tuple[str, int]]:
    """(operation, source block node) when `nid` ends one NB201 operation, else None."""
    node = block.node(nid)
    ins = block.inputs_of(nid)
    if node is None or len(ins) != 1:
        return None
    name = node.op_name
    if name == "AvgPool2d" and _params(node) == {"kernel_size": 3, "stride": 1}:
        return "avg_pool_3x3", ins[0]
    if name != "BN":
        return None
    conv = block.node(ins[0])
    if conv is None or conv.op_name != "Conv2d" or len(block.inputs_of(conv.id)) != 1:
        return None
    p = _params(conv)
    k = p.get("kernel_size")
    if p != {"out_channels": "C", "kernel_size": k, "stride": 1, "dilation": 1, "groups": 1, "bias": 0} or k not in (1, 3):
        return None
    relu = block.node(block.inputs_of(conv.id)[0])
    if relu is None or relu.op_name != "ReLU" or len(block.inputs_of(relu.id)) != 1:
        return None
    return ("nor_conv_1x1" if k == 1 else "nor_conv_3x3"), block.inputs_of(relu.id)[0]


def _params(node) -> dict:
    out = {}
    for k, v in canonical_params(node).items():
        out[k] = int(v) if v.lstrip("-").isdigit() else v
    return out


def _candidates(block) -> Iterator[CellStructure]:
    """Strings that may denote the block, from assignments of block nodes to NB201 nodes 1 and 2."""
    ids = [n.id for n in block.nodes]
    ops = {n.id: n.op_name for n in block.nodes}
    inp = next((i for i in ids if ops[i] == "input"), None)
    out = next((i for i in ids if ops[i] == "output"), None)
    if inp is None or out is None or len(block.inputs_of(out)) != 1:
        return
    last = block.inputs_of(out)[0]
    order = block.topological_order() or ids
    rank = {nid: k for k, nid in enumerate(order)}
    # nodes 1 and 2 on inner block nodes first, then on the input (a node that is a skip of the
    # input), then unused, so that the decoded string reads like the graph
    inner = [i for i in order if ops[i] not in ("input", "output")]
    for v1, v2 in itertools.product(inner + [inp, None], repeat=2):
        value = {0: inp, 1: v1, 2: v2, 3: last}
        if any(value[a] is not None and value[b] is not None and rank[value[a]] > rank[value[b]]
               for a, b in ((0, 1), (1, 2), (0, 2), (1, 3), (2, 3))):
            continue
        cell = _decode(block, value)
        if cell is not None:
            yield cell


def _decode(block, value: Dict[int, Optional[int]]) -> Optional[CellStructure]:
    ops = {edge: "none" for edge in EDGES}
    for node in (1, 2, 3):
        v = value[node]
        if v is None:
            continue
        same = any(value[src] == v for src in range(node))  # node = skip of an earlier node
        atoms = block.inputs_of(v) if block.node(v).op_name == "Add" and not same else [v]
        used = set()
        for atom in atoms:
            match = None
            for src in range(node - 1, -1, -1):  # the nearest node first: skip chains read naturally
                if src in used or value[src] is None:
                    continue
                if atom == value[src]:
                    match = (src, "skip_connect")
                    break
                term = _term(block, atom)
                if term is not None and term[1] == value[src]:
                    match = (src, term[0])
                    break
            if match is None:
                return None
            used.add(match[0])
            ops[(node, match[0])] = match[1]
    return CellStructure(tuple(ops[e] for e in EDGES))


def cell_of_block(block) -> CellStructure:
    """The NAS-Bench-201 cell a block computes; raises NotInSpace when it is not a cell of the space."""
    sources = [str(op) for op in block.input_ops]
    if sources != ["input"]:
        raise NotInSpace(f"block `{block.name}` has inputs {sources or 'none'}; a NAS-Bench-201 cell has one, `input`")
    recorded = _recorded(block)
    if recorded is not None:
        # the recorded cell's own block: as generated (same lines), or any isomorphic graph
        own_text = cell_block(recorded)
        lines = format_block_lines(block)
        if lines[1:] == own_text.splitlines()[1:] or canonical_hash(_parse_block(own_text)) == canonical_hash(block):
            return recorded
    target = canonical_hash(block)
    if target == _hash_of(ZERO):  # every zero-output cell has this block; the simplest string names it
        return ZERO
    allowed = {"input", "output", "ReLU", "Conv2d", "BN", "AvgPool2d", "Add"}
    stray = sorted({n.op_name for n in block.nodes} - allowed)
    if stray:
        raise NotInSpace(f"block `{block.name}` uses {', '.join(stray)}; a NAS-Bench-201 cell has only "
                         f"skip connections, ReLU-Conv(1x1 or 3x3, no bias)-BN, 3x3 average pooling and Add")
    counts = _op_counts(block)
    plausible = {c for c in _candidates(block) if 3 not in c.zero_nodes() and _cell_counts(c.effective()) == counts}
    # the simplest reading first: fewest operations (skip connections count), then by text
    for cell in sorted(plausible, key=lambda c: (len(EDGES) - c.ops.count("none"), str(c))):
        if _hash_of(cell) == target:
            return cell
    raise NotInSpace(f"block `{block.name}` is not a cell of NAS-Bench-201's space: no assignment of its nodes to "
                     f"the cell's 4 nodes with one operation per edge gives the same graph")


def _op_counts(block) -> tuple:
    kernels = [_params(n).get("kernel_size") for n in block.nodes if n.op_name == "Conv2d"]
    return kernels.count(1), kernels.count(3), sum(n.op_name == "AvgPool2d" for n in block.nodes)


def _cell_counts(cell: CellStructure) -> tuple:
    return cell.ops.count("nor_conv_1x1"), cell.ops.count("nor_conv_3x3"), cell.ops.count("avg_pool_3x3")


def _hash_of(cell: CellStructure) -> str:
    return canonical_hash(_parse_block(cell_block(cell)))


def cell_hash(cell) -> str:
    """The canonical hash of a cell's block (equal for cells that compute the same graph)."""
    return _hash_of(as_cell(cell))


# -- a cell named in an LLM's reply ------------------------------------------------------------

_OP_LIST = re.compile(r"op_list\s*=\s*\[([^\[\]]*)\]")
_NB201_STRING = re.compile(r"\|[^\s|]+~\d\|\+\|[^\s|]+~\d\|[^\s|]+~\d\|\+\|[^\s|]+~\d\|[^\s|]+~\d\|[^\s|]+~\d\|")


def op_list_text(cell) -> str:
    """A cell as GENIUS's encoding writes it: `[a, b, c, d, e, f]`, each an index into OPS."""
    return "[" + ", ".join(str(OPS.index(op)) for op in as_cell(cell).ops) + "]"


def parse_cell_reply(reply: str) -> CellStructure:
    """The cell a reply names: its last `op_list = [...]` line (six ids 0-4 or operation names),
    else a NAS-Bench-201 string in it. Parsed strictly, never evaluated; raises NotInSpace with the reason."""
    lists = _OP_LIST.findall(reply or "")
    if lists:
        items = [item.strip().strip("'\"") for item in lists[-1].split(",") if item.strip()]
        if len(items) != len(EDGES):
            raise NotInSpace(f"op_list has {len(items)} entries; it needs 6 operation ids from 0 to 4")
        ops = []
        for item in items:
            if item.isdigit() and int(item) < len(OPS):
                ops.append(OPS[int(item)])
            elif item in OPS:
                ops.append(item)
            else:
                raise NotInSpace(f"op_list entry {item[:40]!r} is not an operation id from 0 to 4")
        return CellStructure(tuple(ops))
    strings = _NB201_STRING.findall(reply or "")
    if strings:
        return CellStructure.parse(strings[-1])
    raise NotInSpace("no line `op_list = [a, b, c, d, e, f]` with six operation ids from 0 to 4 in the reply")


def check_cell_reply(reply: str) -> Tuple[Optional[str], str]:
    """A reply checked as a cell: (the cell's architecture text, "") or (None, the reason as a
    feedback line `- ...`), the shape of the LLM roles' reply checks."""
    try:
        cell = parse_cell_reply(reply)
    except NotInSpace as exc:
        return None, f"- {exc}"
    return architecture(cell), ""


__all__ = ["CellStructure", "NotInSpace", "OPS", "EDGES", "SPACE_SIZE", "SKELETON", "WIDTHS", "DEPTHS", "RESNET", "all_cells",
           "architecture", "build", "cell_block", "cell_hash", "cell_of_block", "cell_of_text", "downsample_block",
           "stem_block", "check_cell_reply", "op_list_text", "parse_cell_reply"]
