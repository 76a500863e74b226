"""`nadc verify`: structure and shape checks of every block, for every size of a domain."""
from __future__ import annotations

import gc
import json

import click

from nader.compiler.commands.common import load
from nader.compiler.reporting import FORMATS, render
from nader.dsl.ir import Role


@click.command("verify")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--role", type=click.Choice([r.value for r in Role]), default=None,
              help="Verify every block in this role instead of the one its header implies.")
@click.option("--stem-stride", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Stride of stems: 1 for NAS-Bench-201, 4 for ImageNet-style networks.")
@click.option("--domain", default="square", show_default=True, metavar="square|any|N",
              help="Input sizes the verdict holds for: square maps (H = W) at any size, as networks feed them; "
                   "`any` H and W with one set of weights; or one resolution N (N x N).")
@click.option("--max-elements", type=click.IntRange(1), default=None,
              help="Largest tensor (elements per sample at C=64, H=W=32) a block may produce.")
@click.option("--shapes", "with_shapes", is_flag=True,
              help="Also print every node's inferred shape (JSON: a `shapes` object per block).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="full", show_default=True)
def verify_cmd(files, role, stem_stride, domain, max_elements, with_shapes, fmt):
    """Verify the blocks in FILEs: structure (NAD2xx) and shapes (NAD3xx) for every size of the domain.

    JSON output is a list with one object per block: file, block, role, domain, ok, diagnostics,
    constraints (conditions on the widths and sizes, e.g. `C % 4 == 0`, `H % 2 == 0`) and, with
    --shapes, shapes (live node id -> shape). Problems of a whole file (unreadable, no block,
    duplicate block names) come as an object whose block is null.
    Exit status 1 when any block has an error.
    """
    from nader.compiler.passes import parse_domain

    try:
        domain = parse_domain(domain)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--domain") from None
    # Parsing and verifying create no reference cycles, so the cyclic collector would only rescan
    # the growing IR again and again (a quarter of the run over 1,000 files).
    collecting = gc.isenabled()
    gc.disable()
    try:
        failed = _verify(files, Role(role) if role else None, stem_stride, domain, max_elements, with_shapes, fmt)
    finally:
        if collecting:
            gc.enable()
    raise SystemExit(1 if failed else 0)


def _verify(files, role, stem_stride, domain, max_elements, with_shapes, fmt) -> bool:
    """Print the report; whether any block or file has an error."""
    from nader.compiler.passes import Limits, verify_program
    from nader.compiler.passes.shapes import shape_str

    limits = Limits(max_elements=max_elements) if max_elements else Limits()
    results = load(files)
    objects, diagnostics, summary = [], [], []
    failed = False
    for parsed in results:
        reports, file_level = verify_program(parsed, role=role, stem_stride=stem_stride, limits=limits,
                                             domain=domain)
        if not parsed.program.blocks or file_level:
            # Nothing to verify (unreadable, empty or no parsable block), or problems of the whole file.
            obj = {"file": parsed.program.path, "block": None, "role": None, "domain": str(domain),
                   "ok": False if parsed.program.blocks else not any(d.is_error for d in file_level),
                   "diagnostics": [d.to_json() for d in file_level], "constraints": []}
            if with_shapes:
                obj["shapes"] = {}
            objects.append(obj)
        diagnostics.extend(file_level)
        failed |= any(d.is_error for d in file_level)
        for report in reports:
            diagnostics.extend(report.diagnostics)
            failed |= not report.ok
            if fmt == "json":
                objects.append(report.to_json(shapes=with_shapes))
                continue
            constraints = f"; constraints: {', '.join(report.constraints)}" if report.constraints else ""
            verdict = "ok" if report.ok else "error"
            summary.append(f"{report.file}:{report.block.span.line}: {report.block.name} ({report.role}): {verdict}{constraints}")
            if with_shapes and report.shapes is not None:
                summary.extend(f"  {node_id}: {shape_str(shape)}" for node_id, shape in report.shapes.shapes.items())
    if fmt == "json":
        click.echo(json.dumps(objects, separators=(",", ":")))  # compact: the C encoder, several times faster
    else:
        text = render(diagnostics, fmt, {r.program.path: r.source for r in results})
        if text:
            click.echo(text, nl=False)
        click.echo("\n".join(summary))
    return failed
