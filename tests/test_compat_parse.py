"""Every block NADER itself wrote parses without an error diagnostic.

The corpus is the read-only `shared/nader-compat` folder (see conftest.py):
`blocks/*.txt` and every fail/success block in `fail2success_log.json`. The
exact counts are written down so that a regression which silently drops
files or blocks fails. Warnings are allowed, but their counts are pinned too
(`Concat` for `concat`, `###Name###` headers).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path


from nader.dsl.parser import grammar_parser, parse

N_BLOCK_FILES = 30
N_FILE_BLOCKS = 90  # blocks in blocks/*.txt
N_LOG_ENTRIES = 15  # fail -> success records in fail2success_log.json
N_LOG_BLOCKS = 70  # non-null block texts in them (each holds one block)
N_LOG_NULLS = 20  # null block texts (the agent left that block unchanged)
EXPECTED_WARNINGS = {"NAD115": 1, "NAD116": 8}
LOG_KEYS = {"base_block", "stem_block", "downsample+block"}


def log_blocks(compat: Path):
    """(label, text) for every non-null block text in the log, and the number of nulls."""
    data = json.loads((compat / "fail2success_log.json").read_text(encoding="utf-8"))
    found, nulls, entries = [], 0, 0
    for kind, runs in sorted(data.items()):
        for run, records in sorted((runs or {}).items()):
            for i, record in enumerate(records or []):
                entries += 1
                for side in ("fail_block", "success_block"):
                    blocks = record.get(side)
                    if blocks is None:
                        nulls += len(LOG_KEYS)
                        continue
                    assert set(blocks) <= LOG_KEYS, set(blocks)
                    for key in sorted(blocks):
                        if blocks[key] is None:
                            nulls += 1
                        else:
                            found.append((f"{kind}/{run}[{i}]/{side}/{key}", blocks[key]))
    return found, nulls, entries


def _errors(result) -> list[str]:
    return [f"{d.file}:{d.span.line}:{d.span.col}: {d.code.code} {d.message}" for d in result.diagnostics if d.is_error]


def test_block_files_parse(compat_dir):
    files = sorted((compat_dir / "blocks").glob("*.txt"))
    problems, n_blocks, warnings = [], 0, Counter()
    for path in files:
        result = parse(path.read_text(encoding="utf-8"), path.name)
        problems += _errors(result)
        n_blocks += len(result.program.blocks)
        warnings.update(d.code.code for d in result.diagnostics if not d.is_error)
        assert all(b.nodes and b.edges for b in result.program.blocks), path.name
    assert problems == []
    assert len(files) == N_BLOCK_FILES
    assert n_blocks == N_FILE_BLOCKS
    assert warnings == Counter({"NAD115": 1})


def test_logged_blocks_parse(compat_dir):
    blocks, nulls, entries = log_blocks(compat_dir)
    problems, n_blocks, warnings = [], 0, Counter()
    for label, text in blocks:
        result = parse(text, label)
        problems += _errors(result)
        assert len(result.program.blocks) == 1, label
        assert not any(d.code.code == "NAD111" for d in result.diagnostics), f"{label} lost its header"
        n_blocks += len(result.program.blocks)
        warnings.update(d.code.code for d in result.diagnostics if not d.is_error)
    assert problems == []
    assert (entries, len(blocks), nulls, n_blocks) == (N_LOG_ENTRIES, N_LOG_BLOCKS, N_LOG_NULLS, N_LOG_BLOCKS)
    assert warnings == Counter({"NAD116": 8})


def test_warning_totals(compat_dir):
    texts = [p.read_text(encoding="utf-8") for p in sorted((compat_dir / "blocks").glob("*.txt"))]
    texts += [text for _, text in log_blocks(compat_dir)[0]]
    total = Counter(d.code.code for text in texts for d in parse(text).diagnostics)
    assert dict(total) == EXPECTED_WARNINGS


def test_lark_accepts_the_whole_corpus(compat_dir):
    texts = [p.read_text(encoding="utf-8") for p in sorted((compat_dir / "blocks").glob("*.txt"))]
    texts += [text for _, text in log_blocks(compat_dir)[0]]
    parser = grammar_parser()
    for text in texts:
        parser.parse(text, start="program")


def test_corpus_header_with_spaces(compat_dir):
    """NADER's log holds `##built-in function input_stem##`; it is a stem block, not an error."""
    blocks, _, _ = log_blocks(compat_dir)
    spaced = [parse(text).program.blocks[0] for _, text in blocks if text.startswith("##built-in function")]
    assert len(spaced) == 2
    assert {b.name for b in spaced} == {"built-in function input_stem", "built-in function input_downsample"}
    assert {b.inferred_role().value for b in spaced} == {"stem", "downsample"}


def test_shared_dir_override(monkeypatch, tmp_path):
    from conftest import shared_dir

    monkeypatch.setenv("NADER_SHARED", str(tmp_path))
    assert shared_dir() is None
    (tmp_path / "nader-compat").mkdir()
    assert shared_dir() == tmp_path
