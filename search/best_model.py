"""The trained best model out of a run, in one step (`nader-search best RUN --emit nad|torch|onnx`).

Everything needed to rebuild the network comes from the run itself: the architecture's text from
the tree, and the skeleton, dataset, widths and depths from the training job of the chosen seed
(the runtime's `jobs` table, exactly what the worker built), so nothing is passed again by hand.

* ``nad``: the architecture with a network line (`nader.compiler.network_header`), which
  ``nadc ARCH.nad --emit torch|onnx`` reads to build the same network from the file alone;
* ``torch``: the standalone PyTorch source of that network (`Network()`);
* ``onnx``: the ONNX model; with ``--weights`` its initializers are the trained weights.

``--weights`` takes the checkpoint of one seed's job (`RUN/checkpoints/JOB.pt`; by default the
seed with the highest validation accuracy) and writes its ``state_dict`` next to the output
(``OUT`` with the suffix ``.pt``): it loads into the emitted ``Network`` (or into the module
``nadc --emit torch`` builds from the written ``.nad``) with strict key matching. Inputs are
normalised as in training: the run's mean and standard deviation (0..255 units) are in the
``.nad``'s first comment line.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from nader.compiler.architecture import architecture_from_program
from nader.compiler.backends.network_source import network_source
from nader.compiler.backends.onnx import OnnxLoweringError, build_for_export, check_model, network_to_onnx
from nader.compiler.datasets import dataset_info
from nader.compiler.errors import BuildError
from nader.compiler.network import BUILDER, analyze
from nader.compiler.network_header import header_line
from nader.compiler.plan import resolve_depths
from nader.compiler.skeletons import skeleton_info
from nader.dsl import parse
from nader.runtime.data import dataset_spec, load_dataset
from nader.runtime.jobs import Job, checkpoint_path
from nader.runtime.trainer import load_checkpoint

from . import records
from .store import BaseReader

EMITS = ("nad", "torch", "onnx")


class ExportError(Exception):
    """What stops an export, for the user (one line)."""
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass
class Chosen:
    rec: dict  # the architecture's record (records.records)
    seed: dict  # the seed whose job and checkpoint are used
    job: Job


def choose(reader: BaseReader, trial: Optional[int] = None, seed: Optional[int] = None,
           problems: Optional[list] = None) -> Chosen:
    """The architecture (`trial`, else the best), one of its trained seeds and that seed's job."""
    if trial is None:
        rec = records.best(reader, problems)
        if rec is None:
            raise ExportError("no architecture of this run has trained successfully yet", 1)
    else:
        rec = next((r for r in records.records(reader, problems=problems) if r["arch_id"] == trial), None)
        if rec is None:
            raise ExportError(f"the run has no architecture #{trial} (nader-search status RUN lists them)")
        if rec["status"] != "ok":
            raise ExportError(f"architecture #{trial} is {rec['status']}, not trained; choose one whose status is ok")
    ok = [s for s in rec.get("seeds", ()) if s.get("status") == "ok"]
    if seed is not None:
        ok = [s for s in ok if s.get("seed") == seed]
        if not ok:
            raise ExportError(f"architecture #{rec['arch_id']} has no trained seed {seed}; its seeds: "
                              f"{', '.join(str(s.get('seed')) for s in rec.get('seeds', ()))}")
    if not ok:
        raise ExportError(f"architecture #{rec['arch_id']} has no trained seed")
    pick = max(ok, key=lambda s: (s.get("valid_acc") if s.get("valid_acc") is not None else float("-inf"),
                                  -(s.get("seed") or 0)))
    return Chosen(rec, pick, _job(reader, rec, pick))


def _job(reader: BaseReader, rec: dict, seed: dict) -> Job:
    spec = reader.job_spec(seed["job_id"]) if seed.get("job_id") else None  # a tabular run has no jobs
    if spec is None:
        raise ExportError(f"architecture #{rec['arch_id']} was not trained in this run (its results come from a "
                          f"table), so there is no network to rebuild or weights to take; train it with "
                          f"`nader-search eval`")
    return Job.from_json(spec)


def settings(job: Job, rec: dict) -> dict:
    """Skeleton, dataset, depths, widths, classes and input size of the job's network."""
    data = dataset_info(job.dataset)
    return {"skeleton": job.skeleton, "dataset": job.dataset,
            "depths": list(resolve_depths(skeleton_info(job.skeleton), job.depths)),
            "widths": list(job.widths or rec["widths"]), "classes": data.num_classes, "input_size": data.input_size}


def nad_text(chosen: Chosen, net: dict, normalisation: Optional[tuple] = None) -> str:
    """The architecture with its record's comment line, the network line, then the blocks."""
    text = records.best_text(chosen.rec)
    head, _, body = text.partition("\n")
    seed = chosen.seed
    extra = f"# seed {seed.get('seed')} (the one --weights takes): valid {records.number_text(seed.get('valid_acc'), '.2f')}%, " \
            f"test {records.number_text(seed.get('test_acc'), '.2f')}%"
    if normalisation:
        extra += f"; inputs normalised by mean {list(normalisation[0])}, std {list(normalisation[1])} (0..255 units)"
    return head + "\n" + extra + "\n" + header_line(**net) + body


def state_dict(run_dir: Path, chosen: Chosen) -> dict:
    """The trained weights of the chosen seed: its checkpoint's model state."""
    if chosen.job.builder != BUILDER:
        raise ExportError(f"architecture #{chosen.rec['arch_id']} was built by {chosen.job.builder}, not nadc's "
                          f"network builder; its weights do not fit the emitted network")
    path = checkpoint_path(run_dir, chosen.job.job_id)
    ck = load_checkpoint(path)
    if ck is None or "model" not in ck:
        raise ExportError(f"no readable checkpoint {path} for architecture #{chosen.rec['arch_id']} seed "
                          f"{chosen.seed.get('seed')}; train it again (`nader-search eval`) to get its weights")
    return ck["model"]


def normalisation(job: Job) -> Optional[tuple]:
    """(mean, std) the trainer normalised inputs with, where the dataset states it (digits: measured)."""
    try:
        spec = dataset_spec(job.dataset)
        if spec.mean is None:  # measured on the training split (digits: small, in memory)
            spec = load_dataset(job.dataset, job.data_dir) if job.dataset == "digits" else None
    except Exception:  # noqa: BLE001 - a comment only: a dataset not here leaves it out
        return None
    return None if spec is None else (tuple(spec.mean), tuple(spec.std))


def export(run_dir, reader: BaseReader, emit: str, out: Path, *, weights: bool = False, trial: Optional[int] = None,
           seed: Optional[int] = None, problems: Optional[list] = None) -> List[Path]:
    """Write the chosen architecture as `emit` to `out` (and its weights beside it); the paths written."""
    if emit not in EMITS:
        raise ExportError(f"--emit: choose one of {', '.join(EMITS)}")
    chosen = choose(reader, trial, seed, problems)
    net = settings(chosen.job, chosen.rec)
    state = state_dict(Path(run_dir), chosen) if weights else None
    written: List[Path] = []
    text = nad_text(chosen, net, normalisation(chosen.job))
    if emit == "nad":
        _put(out, text.encode("utf-8"))
    else:
        _put(out, _network(text, net, emit, state))
    written.append(out)
    if state is not None and emit != "onnx":
        import torch

        target = out.with_suffix(".pt")
        try:
            torch.save(state, target)
        except OSError as exc:
            raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
        written.append(target)
    return written


def _network(text: str, net: dict, emit: str, state) -> bytes:

    parsed = parse(text, "best.nad")
    if not parsed.ok:
        raise ExportError("the stored architecture no longer parses: " + "; ".join(d.message for d in parsed.diagnostics))
    return _torch(parsed, net) if emit == "torch" else _onnx(parsed, net, state)


def _torch(parsed, net: dict) -> bytes:
    """`nadc --emit torch`'s network source, built as the job's worker built the network."""
    try:
        arch = architecture_from_program(parsed.program, parsed.diagnostics, skeleton_info(net["skeleton"]))
        info = analyze("", net["skeleton"], net["dataset"], widths=net["widths"], depths=net["depths"],
                       input_size=net["input_size"], arch=arch)
    except BuildError as error:
        raise ExportError(f"cannot rebuild the network: {error}") from None
    plan, arch = info.pop("_plan"), info.pop("_arch")
    return network_source(arch, plan, info).encode("utf-8")


def _onnx(parsed, net: dict, state) -> bytes:

    try:
        built = build_for_export(parsed, skeleton=net["skeleton"], dataset=net["dataset"], widths=net["widths"],
                                 depths=net["depths"], input_size=net["input_size"])
        if state is not None:
            built.module.load_state_dict(state)
        info = {k: v for k, v in built.info.items() if k in ("skeleton", "dataset", "widths", "depths",
                                                             "num_classes", "input_size", "params", "flops")}
        fixed = built.info["input_size"] if not built.arch.runs_at_any_size() else None
        model = network_to_onnx(built.arch, built.plan, built.module.state_dict(), input_size=fixed, info=info,
                                name=f"{built.arch.base.name} on {built.plan.skeleton.name}")
        check_model(model)
    except (OnnxLoweringError, RuntimeError) as error:
        raise ExportError(f"cannot export to ONNX: {error}") from None
    return model.SerializeToString()


def _put(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None


__all__ = ["EMITS", "Chosen", "ExportError", "choose", "export"]
