"""An architecture's text as the agents handle it: its blocks by role, a block's name from its
header, a block renamed, a new base block given another architecture's stem and downsample blocks.
It parses but never verifies: the agents split and reassemble replies without the compiler's passes."""
from __future__ import annotations

from nader.dsl.fast_lines import header_token
from nader.dsl.format import format_block
from nader.dsl.ir import Role
from nader.dsl.parser import parse


def split_architecture(arch_text: str) -> tuple[str, str, str]:
    """The base, stem and downsample blocks of an architecture's text (by their roles), formatted."""
    by_role = _by_role(arch_text)
    missing = [r.value for r in (Role.BASE, Role.STEM, Role.DOWNSAMPLE) if r not in by_role]
    if missing:
        raise ValueError(f"the parent architecture has no {', '.join(missing)} block")
    return by_role[Role.BASE], by_role[Role.STEM], by_role[Role.DOWNSAMPLE]


def _by_role(arch_text: str) -> dict:
    by_role: dict = {}
    for block in parse(arch_text).program.blocks:
        by_role.setdefault(block.inferred_role(), format_block(block))
    return by_role


def block_name(text: str) -> str:
    """The name in a block text's `##Name##` header, a comment after it left out ("Block" without one)."""
    token = header_token(text.strip().splitlines()[0]) if text.strip() else None
    return token.strip("#").strip() or "Block" if token else "Block"


def renamed(block_text: str, name: str) -> str:
    """The block text under the header `##name##` (added when it has none)."""
    lines = block_text.strip().splitlines()
    if lines and lines[0].startswith("##"):
        lines[0] = f"##{name}##"
    else:
        lines.insert(0, f"##{name}##")
    return "\n".join(lines) + "\n"


def with_blocks_of(base_text: str, arch_text: str) -> str:
    """A new base block with another architecture's stem and downsample blocks, renamed after it
    (alone where that architecture is a base block alone: the skeleton's standard blocks serve both)."""
    by_role = _by_role(arch_text)
    if Role.STEM not in by_role and Role.DOWNSAMPLE not in by_role:
        return base_text
    _, stem, down = split_architecture(arch_text)
    name = block_name(base_text)
    return base_text.rstrip("\n") + "\n" + renamed(stem, f"{name}_stem") + renamed(down, f"{name}_downsample")
