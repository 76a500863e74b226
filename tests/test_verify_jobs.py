"""`nadc verify --format json --jobs N` prints the same bytes and exit status for any N."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import sound_blocks
from text_strategies import mutated_texts

from nader.compiler.commands.forked import MAX_ITEMS
from nader.compiler.commands import verify as verify_command
from nader.compiler.commands.verify import FILES_PER_RUN, _runs
from nader.dsl.format import format_block


def test_runs_cover_every_file_once_in_order():
    for count in [0, 1, 7, 8, 9, 100, MAX_ITEMS * FILES_PER_RUN + 5]:
        for processes in range(1, 4):
            runs = _runs(count, processes)
            covered = [i for start, size in runs for i in range(start, start + size)]
            assert covered == list(range(count))
            assert len(runs) <= MAX_ITEMS  # every run fits the queue
            if processes == 1:
                assert len(runs) == 1


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(sound_blocks().map(format_block), mutated_texts(max_blocks=2)), min_size=7, max_size=9))
def test_the_output_is_the_same_for_any_number_of_processes(tmp_path_factory, monkeypatch, nadc, texts):
    monkeypatch.setattr(verify_command, "FILES_PER_RUN", 2)  # runs of 2 files: the processes take turns
    folder = tmp_path_factory.mktemp("jobs")
    paths = []
    for k, text in enumerate(texts):
        path = folder / f"b{k}.nad"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    paths.insert(3, str(folder / "missing.nad"))  # an unreadable file keeps its place
    runs = [nadc(["verify", "--format", "json", "--jobs", str(jobs), *paths]) for jobs in (1, 2, 3)]
    assert runs[0].code in (0, 1) and json.loads(runs[0].stdout)
    assert [o["file"] for o in json.loads(runs[0].stdout)][0] == paths[0]
    for run in runs[1:]:
        assert run.code == runs[0].code
        assert run.stdout == runs[0].stdout
