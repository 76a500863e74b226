"""`nadc FILE... --emit ...`: the default command.

Emitters are looked up in `EMITTERS` (name -> "module:function") and imported
only when used, so the front end never imports torch or onnx. An emitter is
called as `emit(parsed, options)` and returns text or bytes, or an `Emitted` (`reporting.py`)
carrying notes that this command prints on stderr; it raises
`EmitError` (`backends/errors.py`) for problems that are the user's to fix.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from dataclasses import dataclass
from typing import Optional

import click

from nader.compiler.backends.errors import DiagnosedError, EmitError
from nader.compiler.commands.common import (DEPTHS, DOMAIN, FORMAT, INPUT_SIZE, ROLE, STEM_STRIDE, WIDTHS, exit_status,
                                            load, report)
from nader.compiler.reporting import Emitted
from nader.compiler.passes.contract import SQUARE, Domain
from nader.dsl.ir import Program, Role
from nader.dsl.parser import ParseResult
from nader.inputs.cli import options as setting_options
from nader.inputs.settings import Choice, Integer, Path, Setting, Text

EMITTERS = {
    "ir": "nader.compiler.commands.compile:emit_ir",
    "json": "nader.compiler.commands.compile:emit_json",
    "torch": "nader.compiler.backends.network_source:emit_torch",
    "onnx": "nader.compiler.backends.onnx:emit_onnx",
    "dot": "nader.compiler.backends.drawing:emit_dot",
    "svg": "nader.compiler.backends.svg:emit_svg",
}


@dataclass(frozen=True)
class EmitOptions:
    role: Optional[Role] = None
    stem_stride: int = 1
    network: Optional[str] = None  # skeleton name: emit a whole network
    dataset: Optional[str] = None
    widths: Optional[tuple[int, ...]] = None
    depths: Optional[tuple[int, ...]] = None
    input_size: Optional[int] = None
    in_channels: Optional[int] = None  # block-level emitters: input width to build at
    out_path: Optional[str] = None
    domain: Domain = SQUARE  # block-level emitters: the input sizes blocks are verified for
    recorded: Optional[dict] = None  # the file's network line (`read_header`): a network at other widths is warned of


def program_json(program: Program) -> dict:
    blocks = []
    for b in program.blocks:
        blocks.append({
            "name": b.name,
            "role": b.inferred_role().value,
            "line": b.span.line,
            "nodes": [{"id": n.id, "op": n.op_name, "line": n.span.line,
                       "args": [{"name": a.name, "value": str(a.value)} for a in n.args],
                       "params": {k: str(v) for k, v in n.params.items()}} for n in b.nodes],
            "edges": [{"sources": list(e.sources), "target": e.target, "line": e.span.line} for e in b.edges],
        })
    return {"file": program.path, "blocks": blocks}


def emit_ir(parsed: ParseResult, options: EmitOptions) -> str:
    return str(parsed.program) + "\n"


def emit_json(parsed: ParseResult, options: EmitOptions) -> str:
    return json.dumps(program_json(parsed.program), indent=2) + "\n"


def _tuple(values):
    return tuple(values) if values else None


@click.command("compile")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@setting_options(Setting("--emit", Choice(list(EMITTERS), case_sensitive=True), "What to produce.", default="ir"),
         Setting(("-o", "--output"), Path("file"), "Write to this file instead of standard output (required for onnx).",
                 name="out_path"),
         ROLE.but(help="Override the blocks' roles."),
         STEM_STRIDE.but(default=1, shown_default=None),
         Setting("--network", Text(), "Emit a whole network on this skeleton (nb201, nas-bench-201, imagenet, darts).",
                 shown_default="the file's `# nadc-network:` line, if any"),
         Setting("--dataset", Text(), "Dataset preset of the network (cifar10, cifar100, imagenet16-120, ...)."),
         WIDTHS, DEPTHS, INPUT_SIZE,
         Setting("--in-channels", Integer(1), "Block input width for block-level emitters."),
         DOMAIN.but(help="Input sizes blocks are verified for (block-level emitters; see `nadc verify --help`)."),
         FORMAT)
def compile_cmd(files, emit, out_path, role, stem_stride, network, dataset, widths, depths, input_size, in_channels,
                domain, fmt):
    """Parse FILEs and emit IR (readable dump), JSON, PyTorch source, ONNX or a drawing."""
    options = EmitOptions(Role(role) if role else None, stem_stride, network, dataset, _tuple(widths), _tuple(depths),
                          input_size, in_channels, out_path, domain)
    results = load(files)
    diagnostics = [d for r in results for d in r.diagnostics]

    def report_all(more: list = ()) -> None:
        # stdout is the artifact: diagnostics go to stderr in every format, JSON included (one document).
        report(diagnostics + list(more), fmt, results, err=True)

    if exit_status(diagnostics):
        report_all()
        raise SystemExit(1)
    module, function = EMITTERS[emit].split(":")
    emitter = getattr(importlib.import_module(module), function)
    outputs = []
    try:
        for parsed in results:
            output = emitter(parsed, _with_header(parsed, options, emit))
            if isinstance(output, Emitted):
                for note in output.notes:
                    click.echo(note, err=True)
                output = output.output
            outputs.append(output)
    except DiagnosedError as error:
        _echo_notes(error)
        report_all(error.diagnostics)
        raise SystemExit(1)
    except EmitError as error:
        _echo_notes(error)
        report_all(error.diagnostics)
        click.echo(f"nadc: error: {error}", err=True)
        raise SystemExit(1)
    report_all()
    if emit == "json":
        outputs = [json.dumps([json.loads(o) for o in outputs], indent=2) + "\n"]
    _write(outputs, out_path)
    raise SystemExit(0)


def _echo_notes(error: EmitError) -> None:
    """The notes an emitter gave before it failed (an `EmitError`'s `notes`), on stderr."""
    for note in getattr(error, "notes", ()):
        click.echo(note, err=True)


def _with_header(parsed: ParseResult, options: EmitOptions, emit: str) -> EmitOptions:
    """The options with the file's network line (`# nadc-network: ...`, written by `nader-search
    best`) filling what no flag gave: torch and onnx then build the whole network. The line is kept
    (`recorded`), so a network built at other widths than it records is warned of."""
    from nader.compiler.network_header import HeaderError, read_header

    if emit not in ("torch", "onnx"):
        return options
    try:
        header = read_header(parsed.source)
    except HeaderError as error:
        raise EmitError(f"{parsed.program.path}: {error}") from None
    if header is None:
        return options
    if options.network and options.network != header["skeleton"]:  # another skeleton: its own fit, warned of
        return dataclasses.replace(options, recorded=header)
    if "classes" in header and header.get("dataset"):
        from nader.compiler.errors import BuildError
        from nader.compiler.datasets import dataset_info

        try:
            classes = dataset_info(header["dataset"]).num_classes
        except BuildError as error:
            raise EmitError(f"{parsed.program.path}: the network line: {error}", error.diagnostics) from None
        if classes != header["classes"]:
            raise EmitError(f"{parsed.program.path}: the network line says classes={header['classes']} but "
                            f"{header['dataset']} has {classes}; correct the line or give --dataset")
    return dataclasses.replace(
        options, network=header["skeleton"], dataset=options.dataset or header.get("dataset"),
        widths=options.widths or header.get("widths"), depths=options.depths or header.get("depths"),
        input_size=options.input_size or header.get("input_size"), recorded=header)


def _write(outputs: list, out_path: Optional[str]) -> None:
    binary = any(isinstance(o, bytes) for o in outputs)
    if binary and len(outputs) > 1:
        raise click.UsageError("binary output (onnx) takes one input file")
    if out_path and out_path != "-":
        from nader.inputs.writes import WriteRefused, write_file
        from nader.runtime.outputs import claim

        try:  # not a run directory's own file; written whole or not at all
            claim([out_path])
            write_file(out_path, outputs[0] if binary else "".join(outputs), what="output")
        except WriteRefused as error:
            click.echo(f"nadc: error: {error}", err=True)
            raise SystemExit(2) from None
        return
    if binary:
        if sys.stdout.isatty():
            raise click.UsageError("refusing to write binary ONNX to a terminal; use -o FILE")
        sys.stdout.buffer.write(outputs[0])
        return
    click.echo("\n".join(o.rstrip("\n") for o in outputs))
