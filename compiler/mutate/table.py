"""The one table of mutation operators, in a fixed order (the order random choices draw from)."""
from __future__ import annotations

from .base import MutationOperator
from .operators.add_branch import AddBranch
from .operators.add_residual import AddResidual
from .operators.change_conv import ChangeConv
from .operators.delete_node import DeleteNode
from .operators.insert_bottleneck import InsertBottleneck
from .operators.insert_channel_attention import InsertChannelAttention
from .operators.insert_se import InsertSqueezeExcitation
from .operators.resize_conv import ResizeConv
from .operators.separable_conv import SeparableConv
from .operators.swap_activation import SwapActivation
from .operators.swap_normalization import SwapNormalization

OPERATORS: dict[str, MutationOperator] = {op.name: op for op in [
    InsertSqueezeExcitation(),
    InsertChannelAttention(),
    AddResidual(),
    AddBranch(),
    ChangeConv(),
    SeparableConv(),
    SwapActivation(),
    SwapNormalization(),
    InsertBottleneck(),
    ResizeConv(),
    DeleteNode(),
]}


def find_operator(name: str) -> MutationOperator | None:
    return OPERATORS.get(name.strip().lower())


def reference_table() -> str:
    """The operators as a markdown table (docs/mutations.md holds a copy; a test keeps them in step)."""
    rows = ["| operator | what it does | arguments |", "|---|---|---|"]
    for op in OPERATORS.values():
        rows.append(f"| `{op.name}` | {op.summary} | {', '.join(f'`{a}`' for a in op.arguments)} |")
    return "\n".join(rows)
