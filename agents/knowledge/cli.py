"""`nader-search kb`: import, search and inspect a knowledge base of design ideas.

Embeddings: the offline local model, or - when an embedding model is configured (`--embedding-model`
or `embedding_model` in the `[llm]` section) - the endpoint's embeddings API through the LLM
client, with its calls recorded in KB/runs.sqlite (`--replay` answers them from a record).

Exit status: 0 done, 2 usage, data or configuration error (one line on stderr, no traceback;
``NADER_DEBUG=1`` shows tracebacks).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import time

import click

from nader.inputs.cli import options
from nader.inputs.settings import Integer, Setting, Text, output_format

from ..llm.options import LLM_SETTINGS
from .options import KB

_FORMAT = output_format("text", "json")
_BATCH = 512


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _guarded(action):
    """Run `action`; known errors become one line and exit 2."""
    from ..llm.errors import LLMError
    from .embedders import EmbedderUnavailable
    from .pool import PoolFormatError
    from .store import KnowledgeBaseError

    try:
        return action()
    except (KnowledgeBaseError, EmbedderUnavailable, PoolFormatError, LLMError, ValueError, OSError) as exc:
        if os.environ.get("NADER_DEBUG"):
            raise
        _fail(str(exc))


@contextlib.contextmanager
def _open_kb(kb_path, llm, progress=None):
    """The knowledge base with the configured embedder: the endpoint's when an embedding model is
    configured (the LLM client, recording in KB/runs.sqlite, watched by `progress`), else the one
    that built it."""
    from ..llm.options import config_from_options
    from .store import KnowledgeBase

    config = config_from_options(**llm)
    if not config.embedding_model:
        with KnowledgeBase.open(kb_path) as kb:
            yield kb
        return
    from ..llm import LLMClient
    from .embedders import EndpointEmbedder

    os.makedirs(kb_path, exist_ok=True)
    client = LLMClient.from_config(config, store=kb_path, replay=llm.get("replay"), role="kb")
    if progress is not None:
        client.add_observer(progress)
    try:
        with KnowledgeBase.open(kb_path, embedder=EndpointEmbedder(client)) as kb:
            yield kb
    finally:
        client.close()
        if progress is not None:
            progress.close()


@click.group("kb", context_settings={"help_option_names": ["-h", "--help"]})
def kb_group():
    """Knowledge base of design ideas: faiss index + SQLite, FairNAD attribute tags (documentation page "Knowledge base")."""


@kb_group.command("import")
@click.argument("pool_file", metavar="FILE", type=click.Path(dir_okay=False))
@options(KB, _FORMAT, *LLM_SETTINGS)
def import_command(pool_file, kb_path, fmt, **llm):
    """Import NADER's idea pool FILE (JSON list of {id, paper_id, inspiration}) into --kb.

    Untagged ideas are tagged by keyword rules; near-duplicates are merged. Importing the same
    file again adds nothing.
    """
    from ..llm.options import config_from_options
    from ..llm.progress import CallProgress
    from .pool import read_pool

    def run():
        ideas = read_pool(pool_file)
        start = time.perf_counter()
        # Embedding through an endpoint: a line per call (as `read` shows); else a counter on a terminal.
        progress = CallProgress(unit="ideas") if config_from_options(**llm).embedding_model else None
        counter = progress is None and sys.stderr.isatty()
        with _open_kb(kb_path, llm, progress) as kb:
            before = kb.stats()
            added = 0
            if progress is not None:
                progress.set_total(len(ideas))
            for offset in range(0, len(ideas), _BATCH):
                added += kb.add_ideas(ideas[offset:offset + _BATCH])
                if progress is not None:
                    progress.unit_done(len(ideas[offset:offset + _BATCH]))
                if counter:
                    click.echo(f"\r{min(offset + _BATCH, len(ideas))}/{len(ideas)} ideas", err=True, nl=False)
            if counter:
                click.echo("", err=True)
            after = kb.stats()
        report = {"file": str(pool_file), "read": len(ideas), "added": added,
                  "merged": after["merged_duplicates"] - before["merged_duplicates"],
                  "tagged_by_keywords": after["tagged_by"].get("keyword-rules", 0)
                  - before["tagged_by"].get("keyword-rules", 0),
                  "untagged": after["untagged"] - before["untagged"],
                  "ideas": after["ideas"], "seconds": round(time.perf_counter() - start, 2)}
        if fmt == "json":
            click.echo(json.dumps(report, indent=2))
        else:
            click.echo(f"{report['file']}: {report['read']} ideas read, {report['added']} added, "
                       f"{report['merged']} merged as near-duplicates; of those added, "
                       f"{report['tagged_by_keywords']} tagged by keyword rules, {report['untagged']} untagged; "
                       f"{report['ideas']} ideas in {kb_path} ({report['seconds']:.1f} s)")

    _guarded(run)


@kb_group.command("search")
@click.argument("query")
@options(KB, Setting("-k", Integer(1), "How many ideas.", default=5),
         Setting("--granularity", Text(), "Only ideas of this granularity."),
         Setting("--main-category", Text(), "Only ideas of this main category."), _FORMAT, *LLM_SETTINGS)
def search_command(query, kb_path, k, granularity, main_category, fmt, **llm):
    """The ideas of --kb most similar to QUERY, best first (cosine similarity)."""

    def run():
        if not os.path.isdir(kb_path):
            _fail(f"no knowledge base at {kb_path} (create one with: nader-search kb import FILE --kb {kb_path})")
        filters = {key: value for key, value in (("granularity", granularity), ("main_category", main_category))
                   if value is not None}
        with _open_kb(kb_path, llm) as kb:
            hits = kb.search(query, k=k, filters=filters or None)
        if fmt == "json":
            click.echo(json.dumps([{"rank": rank, "score": round(score, 4), **idea.as_dict()}
                                   for rank, (idea, score) in enumerate(hits, 1)], indent=2))
            return
        if not hits:
            click.echo("no ideas")
        for rank, (idea, score) in enumerate(hits, 1):
            path = " / ".join(t for t in (idea.granularity, idea.main_category, idea.sub_category) if t) or "untagged"
            click.echo(f"{rank}. {score:.3f}  [{path}]  (paper {idea.paper_id}, idea {idea.id})\n   {idea.text}")

    _guarded(run)


@kb_group.command("stats")
@options(KB, _FORMAT)
def stats_command(kb_path, fmt):
    """Counts of --kb: ideas, papers, merged duplicates, ideas per attribute."""
    from .store import KnowledgeBase

    def run():
        if not os.path.isdir(kb_path):
            _fail(f"no knowledge base at {kb_path}")
        with KnowledgeBase.open(kb_path) as kb:
            stats = kb.stats()
        if fmt == "json":
            click.echo(json.dumps(stats, indent=2))
            return
        click.echo(f"{stats['path']}: {stats['ideas']} ideas from {stats['papers']} papers, "
                   f"{stats['merged_duplicates']} near-duplicates merged; embeddings {stats['embedder']} "
                   f"(dimension {stats['dimension']})")
        click.echo(f"tagged: {stats['ideas'] - stats['untagged']} "
                   f"({', '.join(f'{n} by {who}' for who, n in stats['tagged_by'].items()) or 'none'}), "
                   f"untagged: {stats['untagged']}")
        for granularity, n in stats["granularity"].items():
            click.echo(f"  {granularity}: {n}")
        for main, n in stats["main_category"].items():
            click.echo(f"    {main}: {n}")

    _guarded(run)
