"""The runtime's settings, declared once (`nader.inputs.settings.Setting`): what `nader-search eval`
takes, and the training settings `nader-search run`, a search.toml and `create_study` take with
the same spelling, reader and help (`search/settings.py` places them in the search's table, with
their TOML keys and API keywords declared here).

Plain data: the click options are made from them by `nader.inputs.cli` in the command lines.
eval's old spellings (`--executor inprocess`, `--timeout`) still work for one release, hidden from
`--help`, with a warning.
"""
from __future__ import annotations

from nader.inputs.settings import (Choice, Custom, Duration, Flag, IntList, Integer, Path, Setting, Size, Text,
                                   output_format)

from .errors import ConfigError
from .progress import PROGRESS_MODES

EXECUTORS = ("local", "pool", "ray")
#: Old spellings of --executor and what they now mean.
OLD_EXECUTORS = {"inprocess": "local", "in-process": "local"}
#: NAS-Bench-201's names; a search selects on cifar10-valid's 25k validation half when given cifar10
DATASETS = ("digits", "cifar10", "cifar10-valid", "cifar100", "imagenet16-120")
#: seeds seed numpy's 32-bit generator
SEED_RANGE = (0, 2**32 - 1)
SKELETONS = "nb201, nas-bench-201, imagenet, darts"


def _preset(value) -> str:
    """A preset's name (quick, nb201, nb201-N, ...), checked against the presets."""
    from .presets import get_preset

    if not isinstance(value, str):
        raise ValueError(f"expected a preset's name, got {value!r}")
    try:
        get_preset(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return value


EXECUTOR = Setting("--executor", Choice(EXECUTORS, aliases=OLD_EXECUTORS),
                   "Where trials train: local (in this process), pool (worker processes), ray.",
                   default="local", toml=True, keyword=True)
#: `--progress`: rich (drawn in place), plain (one line per finished trial, for logs), off;
#: auto: rich on a terminal, plain elsewhere (`progress.resolve_progress`).
PROGRESS = Setting("--progress", Choice(PROGRESS_MODES), name="progress_mode", default="auto",
                   help="stderr while training: rich (an epoch bar per job, drawn in place), plain (one line per "
                        "finished job, for logs and batch jobs), off; auto: rich on a terminal, else plain.")
TRIAL_TIMEOUT = Setting("--trial-timeout", Duration(),
                        "Kill a trial after this long (600, 90s, 10m, 2h; pool executor).", toml=True, keyword=True)
DATASET = Setting("--dataset", Choice(DATASETS), default="digits", toml=True, keyword=True,
                  help="Dataset, by NAS-Bench-201's names: cifar10-valid trains on 25k and validates on the other "
                       "25k; cifar10 trains on all 50k and reports test. All but digits are read from --data-dir.")
DATA_DIR = Setting("--data-dir", Path("dir"), envvar="NADER_DATA_DIR", toml=True, keyword=True,
                   help="Folder with the dataset folder (e.g. cifar-10-batches-py); NAS-Bench-201's split files are "
                        "bundled, a copy here overrides them [env NADER_DATA_DIR].")
PRESET = Setting("--preset", Custom(_preset, "NAME", "a preset's name"), default="quick", toml=True, keyword=True,
                 help="Training preset: nb201 (200 epochs), nb201-12, nb201-N, quick.")
SEEDS = Setting("--seeds", IntList(*SEED_RANGE), shown_default="the preset's", toml=True, keyword=True,
                help="Comma-separated seeds: each architecture trains once per seed.")
WORKERS = Setting("--workers", Integer(1), shown_default="1 on CPU", toml=True, keyword=True,
                  help="Pool workers (on GPUs: at most this many in all) / local Ray CPUs.")
ADDRESS = Setting("--address", Text(), shown_default="a local Ray instance", toml=True, keyword=True,
                  help="Ray cluster address ('auto' or HOST:PORT).")
SKELETON = Setting("--skeleton", Text(), f"Network skeleton: {SKELETONS}.", default="nb201", toml=True,
                   keyword=True)
EPOCHS = Setting("--epochs", Integer(1), "Override the preset's epochs.", toml=True, keyword=True)
DEVICE = Setting("--device", Text(), "cpu, cuda, cuda:N.", shown_default="auto", toml=True, keyword=True)
THREADS = Setting("--threads", Integer(1), "torch threads per trial.", toml=True, keyword=True)
TRIALS_PER_GPU = Setting("--trials-per-gpu", Integer(1), toml=True, keyword=True,
                         shown_default="chosen from the first trial's measured memory, the GPU's free memory and "
                                       "the CPU cores",
                         help="Pool executor: concurrent trials on each GPU. No effect on CPU.")
BUILDER = Setting("--builder", Text(), "module:function building the network (testing).", hidden=True,
                  keyword=True)
BATCH_SIZE = Setting("--batch-size", Integer(1), "Override the preset's batch size.")
CHANCE_EPOCHS = Setting("--chance-epochs", Integer(1),
                        "Stop as diverged when still at chance level after this many epochs.")
COMPILE = Setting("--compile/--no-compile", Flag(), "torch.compile the network.", name="compile_")
#: `--repair` of every command that opens a run directory
REPAIR_STORE = Setting("--repair", Flag(), name="repair",
                       help="If RUN/runs.sqlite is damaged, copy what can still be read into RUN/runs.recovered.sqlite, "
                            "say what was recovered and what was lost, and stop (the damaged file is left as it is).")


#: `nader-search eval`'s options, in --help's order
MAX_MEMORY = Setting(
    "--max-memory", Size(), shown_default="half the RAM, or 90% of the GPU's memory",
    help="Memory a training step may take, MiB or with a unit (512M, 6G); a network over it is refused before "
         "training.")

EVAL_SETTINGS = (
    DATASET, DATA_DIR, PRESET, SEEDS, EXECUTOR, ADDRESS, WORKERS,
    Setting("--run-dir", Path("dir"), shown_default="a temporary folder",
            help="Run directory (SQLite store + checkpoints); rerunning with it resumes."),
    SKELETON, output_format("table", "json"), EPOCHS, BATCH_SIZE, CHANCE_EPOCHS, DEVICE, THREADS, COMPILE,
    TRIAL_TIMEOUT.but(old=("--timeout",)), TRIALS_PER_GPU, MAX_MEMORY, BUILDER, PROGRESS, REPAIR_STORE,
)

