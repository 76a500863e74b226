"""Any trial of a run out, in one step: `nader-search best RUN [--trial N] --emit nad|torch|onnx
[--weights] -o OUT` and `Study.export(trial, format, path, weights=...)`.

Every trial works, whoever evaluated it: the runtime's training, a table, a Python objective. The
network is the one the trial was searched as (`trial_network`: the run's skeleton, dataset and depths,
the trial's fitted widths; a training job's own where the runtime trained it), so it rebuilds at the
parameter count the search recorded.

* ``nad``: the architecture with its network line (`nader.compiler.network_header`), which
  ``nadc ARCH.nad --emit torch|onnx`` reads to build the same network from the file alone;
* ``torch``: the standalone PyTorch source of that network (`Network()`);
* ``onnx``: the ONNX model; with weights its initializers are the trained ones.

Weights come from the chosen seed (by default the one with the highest validation accuracy among
those that have weights): a training's checkpoint (`RUN/checkpoints/JOB.pt`) or what the objective
saved (`arch.save_weights(net)`, `search/weights.py`). They are loaded strictly into the rebuilt
network before anything is written, so a checkpoint that does not fit it is refused in one line
(exit 1), never written as a file that does not load; a trial without weights (a table's, an
objective's that saved none) is refused the same way. Beside the model, ``OUT.json`` states what the
network expects: input shape, classes and the normalisation its weights were trained with.

Every output is claimed first (`nader.runtime.outputs.claim`: none may be a run directory's own
file, no two one file; `claim_export`: OUT.json and OUT.pt are replaced only where they are an earlier
export's to the same OUT) and all are written together or none (`write_files`): a full disk leaves
each as it was.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from nader.compiler.backends.network_source import network_source
from nader.compiler.backends.onnx import OnnxLoweringError, build_for_export, check_model, network_to_onnx
from nader.compiler.network import BUILDER
from nader.dsl import parse
from nader.inputs.writes import WriteRefused, write_files
from nader.runtime.data import dataset_spec, load_dataset
from nader.runtime.jobs import Job, checkpoint_path
from nader.runtime.outputs import claim
from nader.runtime.trainer import load_checkpoint

from . import records
from .store import BaseReader
from .trial_network import PYTHON, TRAINING, evaluator_kind, network_line, network_of
from .weights import load_weights, weights_path

EMITS = ("nad", "torch", "onnx")
FORMAT = 1  # the sidecar's `nader_export`


class ExportError(Exception):
    """What stops an export, for the user (one line); `code` is the command's exit status."""
    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass
class Chosen:
    rec: dict  # the architecture's record (records.records)
    net: dict  # its network (trial_network.network_of)
    evaluator: str  # trial_network.evaluator_kind
    seed: Optional[dict] = None  # the seed whose results (and weights) are taken; None: none finished
    job: Optional[Job] = None  # that seed's training job; None: a table's or an objective's seed
    state: Optional[dict] = None  # the weights, when asked for
    source: Optional[Path] = None  # the file they came from
    saved_preprocessing: Optional[dict] = None  # what an objective's save_weights recorded


@dataclass
class Exported:
    paths: List[Path]  # the files written: the model, its weights (nad, torch), the sidecar
    notes: List[str] = field(default_factory=list)  # warnings for the user (one line each)


def outputs(emit: str, out, weights=False) -> List[Path]:
    """The files an export writes: OUT, its weights (OUT.pt, or the path `weights` names; none for
    onnx, whose initializers hold them) and its sidecar OUT.json, in that order."""
    out = Path(out)
    paths = [out]
    if weights and emit != "onnx":
        paths.append(out.with_suffix(".pt") if weights is True else Path(weights))
    return paths + [out.with_suffix(".json")]


#: A sidecar read back to tell whose it is: larger is not one of ours (ours are a few kB).
MOST_SIDECAR_BYTES = 1 << 20


def claim_export(emit: str, out, weights=False) -> List[Path]:
    """`outputs`, claimed (`claim`), and refused (ExportError, one line) where writing them would lose a
    file: OUT's companions named after it (OUT.json, and OUT.pt for `weights=True`) are replaced only when
    absent or when OUT.json says they are an earlier export's to this OUT. `-o best.py` then `-o best.onnx`
    would otherwise give the ONNX model best.py's sidecar (and `nad` after `torch`, its weights)."""
    paths = outputs(emit, out, weights)
    try:
        claim(paths)
    except WriteRefused as error:
        raise ExportError(str(error)) from None
    out, sidecar_path = paths[0], paths[-1]
    implicit = [p for p in paths[1:] if p == sidecar_path or weights is True]
    existing = [p for p in implicit if p.exists()]
    if not existing:
        return paths
    owner = _sidecar_model(sidecar_path)
    if owner == out.name:
        return paths
    other = out.with_name(f"{out.stem}-{emit}{out.suffix}")
    whose = f"it belongs to the export {out.with_name(owner)} ({sidecar_path} says so)" if owner else \
        f"it exists and {sidecar_path} does not say it is an export's to {out}"
    raise ExportError(f"cannot write {existing[0]}: {whose}; give -o another name (e.g. {other}) or move it first")


def _sidecar_model(path: Path) -> Optional[str]:
    """The name of the model file an export's sidecar at `path` was written beside, or None (no sidecar, or
    a file that is not one: read as untrusted, bounded)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MOST_SIDECAR_BYTES + 1)
        record = json.loads(text) if len(text) <= MOST_SIDECAR_BYTES else None
    except (OSError, ValueError):
        return None
    model = record.get("model") if isinstance(record, dict) and record.get("nader_export") else None
    return Path(model).name if isinstance(model, str) and model else None


def _record(reader: BaseReader, trial: Optional[int], problems) -> dict:
    if trial is None:
        rec = records.best(reader, problems)
        if rec is None:
            raise ExportError("no architecture of this run has trained successfully yet; choose one with --trial N", 1)
        return rec
    rec = next((r for r in records.records(reader, problems=problems) if r["arch_id"] == trial), None)
    if rec is None:
        raise ExportError(f"the run has no architecture #{trial} (nader-search status RUN lists them)")
    return rec


def _ranked(seeds: list) -> list:
    """Seeds best first: the highest validation accuracy (a missing one last), then the lower seed."""
    def key(s):
        acc = s.get("valid_acc")
        return -(acc if isinstance(acc, (int, float)) else float("-inf")), s.get("seed") or 0
    return sorted(seeds, key=key)


def _job(reader: BaseReader, seed: Optional[dict]) -> Optional[Job]:
    spec = reader.job_spec(seed["job_id"]) if seed and seed.get("job_id") else None  # tables and objectives: none
    return Job.from_json(spec) if spec else None


def choose(reader: BaseReader, trial: Optional[int] = None, seed: Optional[int] = None,
           problems: Optional[list] = None, *, weights: bool = False, run_dir=None) -> Chosen:
    """The architecture (`trial`, else the best), its network, the seed whose results are stated and,
    with `weights`, that seed's trained weights (read from `run_dir`)."""
    rec = _record(reader, trial, problems)
    config = reader.stored_config(problems=[])
    kind = evaluator_kind(config)
    seeds = [s for s in rec.get("seeds") or () if isinstance(s, dict)]
    if seed is not None:
        seeds = [s for s in seeds if s.get("seed") == seed]
        if not seeds:
            raise ExportError(f"architecture #{rec['arch_id']} has no seed {seed}; its seeds: "
                              f"{', '.join(str(s.get('seed')) for s in rec.get('seeds') or ()) or 'none'}")
    ok = [s for s in seeds if s.get("status") == "ok"]
    ranked = _ranked(ok or seeds)
    jobs = {id(s): _job(reader, s) for s in seeds}
    chosen = Chosen(rec, {}, kind, ranked[0] if ranked else None)
    chosen.job = jobs.get(id(chosen.seed)) or next((j for j in jobs.values() if j is not None), None)
    net = network_of(config, rec, chosen.job)
    if net is None or not rec.get("text"):
        if rec["status"] == "duplicate" and rec.get("duplicate_of") is not None:
            raise ExportError(f"architecture #{rec['arch_id']} duplicates #{rec['duplicate_of']}, which was "
                              f"evaluated in its place: export #{rec['duplicate_of']}", 1)
        raise ExportError(f"architecture #{rec['arch_id']} is {rec['status']}: no network was fitted for it, so "
                          f"there is none to export; choose one that `nader-search status RUN` lists with parameters",
                          1)
    chosen.net = net
    if weights:
        _take_weights(Path(run_dir), chosen, ok, jobs)
    return chosen


def _take_weights(run_dir: Path, chosen: Chosen, ok: list, jobs: dict) -> None:
    """The weights of the best ok seed that has them, or ExportError (1) saying why there are none."""
    rec, arch = chosen.rec, f"architecture #{chosen.rec['arch_id']}"
    if not ok:
        raise ExportError(f"{arch} is {rec['status']}: no seed of it finished successfully, so it has no trained "
                          f"weights; export it without --weights", 1)
    if chosen.evaluator == "table":
        raise ExportError(f"{arch} was looked up in a table, not trained in this run, so it has no weights; export "
                          f"it without --weights (the network is the one searched), or train it with "
                          f"`nader-search eval`", 1)
    reasons = []
    for s in _ranked(ok):
        found = _seed_weights(run_dir, chosen, s, jobs.get(id(s)), reasons)
        if found is not None:
            chosen.seed, chosen.state, chosen.source = s, found[0], found[1]
            chosen.job = jobs.get(id(s)) or chosen.job
            return
    raise ExportError(reasons[0], 1)


def _seed_weights(run_dir: Path, chosen: Chosen, seed: dict, job: Optional[Job], reasons: list) -> Optional[tuple]:
    """(state_dict, its file) of one seed, or None with the reason appended to `reasons`."""
    arch = f"architecture #{chosen.rec['arch_id']} seed {seed.get('seed')}"
    if seed.get("job_id"):
        if job is not None and job.builder != BUILDER:
            reasons.append(f"{arch} was built by {job.builder}, not nadc's network builder; its weights do not fit "
                           f"the emitted network")
            return None
        path = checkpoint_path(run_dir, seed["job_id"])
        ck = load_checkpoint(path)
        if ck is None or not isinstance(ck.get("model"), dict):
            reasons.append(f"no readable checkpoint {path} for {arch}; train it again (`nader-search eval`) to get "
                           f"its weights")
            return None
        return ck["model"], path
    if chosen.evaluator == PYTHON:
        path = weights_path(run_dir, chosen.rec["arch_id"], seed.get("seed") or 0)
        saved = load_weights(path)
        if saved is None:
            reasons.append(f"{arch} has no weights: its objective saved none (call arch.save_weights(net) in the "
                           f"objective; docs/api.md)" + (f"; {path} is unreadable" if path.exists() else ""))
            return None
        chosen.saved_preprocessing = saved.get("preprocessing")
        return saved["model"], path
    reasons.append(f"{arch} was evaluated by {chosen.evaluator}, which left no weights in the run")
    return None


def normalisation(dataset: str) -> Optional[tuple]:
    """(mean, std) in 0..255 units the runtime normalises `dataset`'s inputs with (digits: measured)."""
    try:
        spec = dataset_spec(dataset)
        if spec.mean is None:  # measured on the training split (digits: small, in memory)
            spec = load_dataset(dataset) if spec.name == "digits" else None
    except Exception:  # noqa: BLE001 - a statement only: a dataset that cannot be read leaves it unstated
        return None
    return None if spec is None else (list(spec.mean), list(spec.std))


def preprocessing(chosen: Chosen, run_dir) -> Optional[dict]:
    """What the network's inputs are normalised with, and who says so; None where nothing is known."""
    if chosen.evaluator == PYTHON:
        saved = chosen.saved_preprocessing
        if saved is None and chosen.state is None and chosen.seed is not None:  # without --weights: what they state
            found = load_weights(weights_path(run_dir, chosen.rec["arch_id"], chosen.seed.get("seed") or 0))
            saved = (found or {}).get("preprocessing")
        if not saved:
            return None
        return {"mean": saved["mean"], "std": saved["std"], "units": "as the objective fed the network",
                "source": "the objective (arch.save_weights(..., mean=, std=))"}
    found = normalisation(chosen.job.dataset if chosen.job is not None else chosen.net["dataset"])
    if found is None:
        return None
    source = ("the runtime's training of this run" if chosen.evaluator == TRAINING else
              "the dataset's standard normalisation (the table's networks were trained elsewhere, as NAS-Bench-201 "
              "trains them)" if chosen.evaluator == "table" else f"the dataset's, as the runtime trains; the "
              f"{chosen.evaluator} evaluator may have used its own")
    return {"mean": found[0], "std": found[1], "units": "pixel values 0..255: x = (pixels - mean) / std per channel",
            "source": source}


def nad_text(chosen: Chosen, prep: Optional[dict]) -> str:
    """The architecture: its record's comment line, the chosen seed's line, the network line, the blocks."""
    extra = ""
    seed = chosen.seed
    if seed is not None:
        extra = (f"# seed {seed.get('seed')}{' (whose weights these are)' if chosen.state is not None else ''}: "
                 f"valid {records.number_text(seed.get('valid_acc'), '.2f')}%, "
                 f"test {records.number_text(seed.get('test_acc'), '.2f')}%")
        if prep is not None:
            extra += f"; inputs normalised by mean {prep['mean']}, std {prep['std']}"
        extra += "\n"
    return network_line(chosen.rec, chosen.net, extra)


def _build(chosen: Chosen):
    parsed = parse(chosen.rec["text"], f"arch-{chosen.rec['arch_id']}.nad")
    if not parsed.ok:
        raise ExportError("the stored architecture no longer parses: " + "; ".join(d.message for d in parsed.diagnostics))
    net = chosen.net
    try:
        return build_for_export(parsed, skeleton=net["skeleton"], dataset=net["dataset"], widths=net["widths"],
                                depths=net["depths"], input_size=net["input_size"])
    except OnnxLoweringError as error:  # a BuildError, as build_for_export reports it
        raise ExportError(f"cannot rebuild the network of architecture #{chosen.rec['arch_id']}: {error}") from None


def fit_weights(module, state, where: str) -> None:
    """Load `state` strictly into `module`, or ExportError (1) with one line saying what does not fit."""
    import torch

    if not isinstance(state, dict) or not all(isinstance(k, str) and torch.is_tensor(v) for k, v in state.items()):
        raise ExportError(f"{where} holds no state_dict (names to tensors); nothing was written", 1)
    own = module.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [f"{k}: {list(state[k].shape)} for {list(v.shape)}" for k, v in own.items()
              if k in state and state[k].shape != v.shape]
    problems = [f"{len(found)} {what} ({', '.join(found[:3])}{', ...' if len(found) > 3 else ''})"
                for what, found in (("missing", missing), ("unexpected", unexpected), ("of another shape", shapes))
                if found]
    if not problems:
        try:
            module.load_state_dict(state, strict=True)
            return
        except RuntimeError as error:
            problems = [str(error).strip().splitlines()[-1].strip()]
    raise ExportError(f"{where} does not fit the network it was trained as: {'; '.join(problems)} of "
                      f"{len(own)} tensors; nothing was written", 1)


def _onnx(built) -> bytes:
    info = {k: v for k, v in built.info.items() if k in ("skeleton", "dataset", "widths", "depths", "num_classes",
                                                        "input_size", "params", "flops")}
    fixed = built.info["input_size"] if not built.arch.runs_at_any_size() else None
    try:
        model = network_to_onnx(built.arch, built.plan, built.module.state_dict(), input_size=fixed, info=info,
                                name=f"{built.arch.base.name} on {built.plan.skeleton.name}")
        check_model(model)
    except (OnnxLoweringError, RuntimeError) as error:
        raise ExportError(f"cannot export to ONNX: {error}") from None
    return model.SerializeToString()


def sidecar(chosen: Chosen, emit: str, paths: List[Path], built, prep: Optional[dict], run_dir) -> dict:
    """The export's machine-readable statement (OUT.json): what the model is and what it expects."""
    rec, seed, net = chosen.rec, chosen.seed or {}, chosen.net
    return {
        "nader_export": FORMAT, "format": emit, "model": str(paths[0]),
        "weights": (str(paths[1]) if emit != "onnx" else str(paths[0])) if chosen.state is not None else None,
        "run": str(run_dir), "arch_id": rec["arch_id"], "status": rec["status"], "evaluator": chosen.evaluator,
        "seed": seed.get("seed"), "valid_acc": seed.get("valid_acc", rec.get("valid_acc")),
        "test_acc": seed.get("test_acc", rec.get("test_acc")),
        "network": {**net, "params": built.info["params"], "flops": built.info["flops"]},
        "input": {"shape": [3, net["input_size"], net["input_size"]], "layout": "NCHW", "dtype": "float32",
                  "classes": net["classes"]},
        "preprocessing": prep,
    }


def export(run_dir, reader: BaseReader, emit: str, out, *, weights=False, trial: Optional[int] = None,
           seed: Optional[int] = None, problems: Optional[list] = None) -> Exported:
    """Write architecture `trial` (else the best) as `emit` to `out`, with its weights where asked
    (`weights`: True for OUT.pt, or a path) and its sidecar OUT.json; all or nothing."""
    if emit not in EMITS:
        raise ExportError(f"--emit: choose one of {', '.join(EMITS)}")
    paths = claim_export(emit, out, weights)
    chosen = choose(reader, trial, seed, problems, weights=bool(weights), run_dir=run_dir)
    built = _build(chosen)
    notes = []
    if chosen.state is not None:
        fit_weights(built.module, chosen.state, f"the weights file {chosen.source} of architecture "
                                                f"#{chosen.rec['arch_id']} seed {chosen.seed.get('seed')}")
    if chosen.rec.get("params") is not None and built.info["params"] != chosen.rec["params"]:
        notes.append(f"warning: the rebuilt network has {built.info['params']:,} parameters; the search recorded "
                     f"{chosen.rec['params']:,} for architecture #{chosen.rec['arch_id']}")
    prep = preprocessing(chosen, run_dir)
    if emit == "nad":
        model = nad_text(chosen, prep).encode("utf-8")
    elif emit == "torch":
        model = network_source(built.arch, built.plan, dict(built.info)).encode("utf-8")
    else:
        model = _onnx(built)
    files = [model]
    if chosen.state is not None and emit != "onnx":
        import torch

        buffer = io.BytesIO()
        torch.save(built.module.state_dict(), buffer)
        files.append(buffer.getvalue())
    files.append(json.dumps(sidecar(chosen, emit, paths, built, prep, run_dir), indent=2) + "\n")
    try:
        write_files(list(zip(paths, files)), what="export")
    except WriteRefused as error:
        raise ExportError(str(error)) from None
    return Exported(paths, notes)


__all__ = ["EMITS", "Chosen", "ExportError", "Exported", "choose", "claim_export", "export", "fit_weights", "outputs"]
