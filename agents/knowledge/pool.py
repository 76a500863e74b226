"""NADER's idea-pool format: a JSON list of ``{"id", "paper_id", "inspiration"}``.

Items may also carry FairNAD tags (``granularity``, ``main_category``, ``sub_category``); NADER's
own pool has none, and the knowledge base tags those with the keyword tagger.
"""
from __future__ import annotations

from pathlib import Path

from nader.inputs import InputError, load_json, read_bounded_text

from .attributes import check_tags
from .store import Idea

TAG_KEYS = ("granularity", "main_category", "sub_category")
MAX_BYTES = 256 * 2**20  # NADER's pool of 18,000 ideas is about 10 MB
MAX_DEPTH = 8  # a list of objects of strings


class PoolFormatError(ValueError):
    """The file is not a NADER idea pool; the message names the file and the item."""


def read_pool(path: str | Path) -> list[Idea]:
    """The ideas of a NADER pool file, in file order. Raises `PoolFormatError`."""
    path = Path(path)
    try:  # a regular bounded UTF-8 file, nesting and numbers bounded (nader.inputs)
        data = load_json(read_bounded_text(path, "idea pool", max_bytes=MAX_BYTES), str(path), max_depth=MAX_DEPTH)
    except InputError as exc:
        raise PoolFormatError(str(exc)) from None
    if not isinstance(data, list):
        raise PoolFormatError(f"{path}: expected a JSON list of {{id, paper_id, inspiration}} objects, "
                              f"got {type(data).__name__}")
    ideas = []
    for position, item in enumerate(data):
        where = f"{path}: item {position}"
        if not isinstance(item, dict):
            raise PoolFormatError(f"{where}: expected an object, got {type(item).__name__}")
        text = item.get("inspiration")
        if not isinstance(text, str) or not text.strip():
            raise PoolFormatError(f"{where}: 'inspiration' must be a non-empty string")
        paper = item.get("paper_id")
        if paper is not None and not isinstance(paper, (str, int)) or isinstance(paper, bool):
            raise PoolFormatError(f"{where}: 'paper_id' must be a string or an integer")
        tags = []
        for key in TAG_KEYS:
            value = item.get(key)
            if value is not None and not isinstance(value, str):
                raise PoolFormatError(f"{where}: {key!r} must be a string")
            tags.append(value)
        problem = check_tags(*tags)
        if problem:
            raise PoolFormatError(f"{where}: {problem}")
        ideas.append(Idea(text, None if paper is None else str(paper), *tags))
    return ideas
