"""The diagnostic codes of the structure checks (NAD2xx), with their documentation (`nadc explain`)."""
from __future__ import annotations

from nader.dsl.diagnostics import FixAvailability, Severity, define_code

E, W = Severity.ERROR, Severity.WARNING

DUPLICATE_ID = define_code("NAD201", "duplicate-node-id", E, "Two nodes share an id.", """
    ## What it does
    Reports a node id defined twice in one block.
    ## Why is this bad?
    Edges name nodes by id; with two definitions an edge is ambiguous.
    ## Example
    ```
    2:BN
    2:ReLU
    ```
    ## Fix
    Give every node its own id (`nadc fmt --renumber` renumbers a block); the fix gives the second
    definition an unused integer id.
""", FixAvailability.ALWAYS)
UNDEFINED_NODE = define_code("NAD202", "undefined-node", E, "An edge names a node id that is not defined.", """
    ## What it does
    Reports edges whose source or target id has no node line.
    ## Example
    ```
    0:input
    1:output
    0->7
    ```
    ## Fix
    Define the node (`7:ReLU`) or correct the id in the edge.
""")
CYCLE = define_code("NAD203", "cycle", E, "The edges form a cycle.", """
    ## What it does
    Reports blocks whose edges form a directed cycle (including an edge from a node to itself).
    ## Why is this bad?
    A block is a feed-forward computation: every node is computed once from nodes before it.
    ## Fix
    Remove or redirect one edge of the cycle; the message lists the nodes on it.
""")
BAD_TERMINALS = define_code("NAD204", "wrong-terminals", E, "The input/output terminals do not fit the block's role.", """
    ## What it does
    Checks that a block has exactly one `input` (a two-input cell: exactly one `input1` and one `input2`)
    and exactly one `output`.
    ## Example
    ```
    ##Cell##
    0:input
    1:input2
    2:output
    ```
    ## Fix
    Use `input` for single-input blocks and `input1`/`input2` for cells; keep one `output`. A
    missing terminal comes with the fix that adds its node line (connecting it is left to you).
""", FixAvailability.SOMETIMES)
TERMINAL_EDGES = define_code("NAD205", "terminal-edges", E, "An input has incoming edges, or the output has outgoing ones / not exactly one input.", """
    ## What it does
    Reports edges into an input terminal, edges out of `output`, and an `output` that does not have
    exactly one incoming edge.
    ## Why is this bad?
    The output is the result of exactly one node; to combine several, add them with `Add` or `concat` first.
    ## Fix
    Route the results through a merge node whose single edge goes to `output`.
""")
DEAD_NODE = define_code("NAD206", "dead-node", W, "A node's result never reaches the output; compiling drops it.", """
    ## What it does
    Reports nodes whose result never reaches `output` (dead nodes), and inputs the block ignores.
    ## Why is this bad?
    The block runs: PyTorch would compute a dead node and ignore its result, so the verifier
    accepts the block. The backends and the cost model drop dead nodes (NADER's own cost counts
    them; see docs/semantics.md). They are usually a missing edge, or leftovers of an edit.
    ## Example
    ```
    5:ReLU
    4->5
    ```
    (and nothing consumes 5)
    ## Fix
    Connect the node's result to a consumer on the way to `output`, or delete the node.
    `nadc lint` reports this warning too.
""")
WRONG_ARITY = define_code("NAD207", "wrong-number-of-inputs", E, "An operation receives the wrong number of inputs.", """
    ## What it does
    Checks each node's incoming edges against its operation's arity: one input for layers and
    activations, two for `multiply`, two or more for `Add`, `Mul`, `concat`.
    ## Example
    ```
    4:BN
    2->4
    3->4
    ```
    ## Fix
    Merge the inputs first (`Add`, `Mul` or `concat`) and feed the merge node to the operation.
""")
MISSING_PARAMETER = define_code("NAD208", "missing-parameter", E, "A required parameter is not given.", """
    ## What it does
    Reports operations called without a required parameter, e.g. `Conv2d` without `kernel_size`.
    ## Fix
    Add the parameter; `nadc explain ops` shows every signature.
""")
ILL_TYPED_PARAMETER = define_code("NAD209", "ill-typed-parameter", E, "A parameter's value has the wrong type or range.", """
    ## What it does
    Checks parameter values: kernel sizes, strides, dilations and output sizes are positive integers
    or pairs; axes are integers; `prob` is a number in [0, 1); channel sizes are integer expressions.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=0)
    ```
    ## Fix
    Use a value of the kind the message names.
""")
SPATIAL_IN_LAYER = define_code("NAD210", "size-symbol-in-layer-parameter", E, "A layer parameter uses H, W or B.", """
    ## What it does
    Reports `H`, `W` or `B` in layer parameters (`out_channels`, `groups`, ...).
    ## Why is this bad?
    Weights cannot depend on the image size or the batch: the network must run at any resolution.
    ## Fix
    Express channel counts with `C` (input channels) and `dim` (output channels) only.
""")
DUPLICATE_BLOCK = define_code("NAD211", "duplicate-block-name", E, "Two blocks in one file share a name.", """
    ## What it does
    Reports a block name used twice in one file.
    ## Why is this bad?
    An architecture file names its base, `_stem` and `_downsample` blocks; duplicates are ambiguous.
    ## Fix
    Rename or delete one of them.
""")
