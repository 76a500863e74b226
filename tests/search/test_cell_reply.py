"""GENIUS's cell reply for small models (issue 39): the cell grammar (`nadc grammar --reply cell`)
is derived from the space's operations and edges, bounded, and every reply it allows names a cell;
the prompt asks for the cell first where the profile says the model is small, and the grammar
goes out in the profile's grammar field, in every reply of a conversation, repairs included."""
from __future__ import annotations

import itertools
import random

import pytest

from conftest import run_nadc
from llm_fixtures import server  # noqa: F401 (fixture)
from loopback import reply
from nader.agents.genius import BOUNDED_CELL_PROMPT, CELL_PROMPT, CellReply, Genius
from nader.agents.llm.profiles import ModelProfile
from nader.agents.prompts import render
from nader.compiler import grammar_export as gx
from nader.search.spaces import cell_reply as R
from nader.search.spaces import nb201 as S
from nb201_table import nb201_table  # noqa: F401 (fixture)
from test_grammar_export import Sampler, _cheapest

CELL = CellReply(tuple(R.OP_TEXT[op] for op in S.OPS), R.REASON_WORDS, lambda tried: R.reply_grammar("gbnf", tried))


class CellSampler(Sampler):
    def __init__(self, seed: int, exclude=()):
        self.g = R.reply_rules(exclude)
        self.cost = _cheapest(self.g)
        self.rng = random.Random(seed)


_SAMPLER = CellSampler(39)  # one sampler: a new one per sample would draw the same text
SAMPLES = [_SAMPLER.sample() for _ in range(300)]


def test_every_reply_the_cell_grammar_allows_names_a_cell_and_is_bounded():
    bound = R.REASON_WORDS * (R.WORD_CHARS + 1) + len("op_list = []\n") + 3 * len(S.EDGES)
    firsts = set()
    for text in SAMPLES:
        assert len(text) <= bound, text
        cell = S.parse_cell_reply(text)
        assert S.op_list_text(cell) in text
        firsts.add(text.startswith("op_list"))
    assert firsts == {True, False}  # both orders: reasoning first, and the cell first


def language(g: dict, e=None) -> set:
    """Every op_list line the rules allow (the language is finite), as tuples of ids."""
    e = gx.Ref("op-list-line") if e is None else e
    if isinstance(e, gx.Lit):
        return {e.text}
    if isinstance(e, gx.Ref):
        return language(g, g[e.name])
    if isinstance(e, gx.Alt):
        return set().union(*(language(g, i) for i in e.items))
    assert isinstance(e, gx.Seq), e
    out = {""}
    for item in e.items:
        out = {a + b for a in out for b in language(g, item)}
    return out


def _ids(lines: set) -> set:
    return {tuple(int(i) for i in line.removeprefix("op_list = [").removesuffix("]\n").split(", ")) for line in lines}


def test_the_grammar_derives_ids_and_edges_from_the_space():
    g = R.reply_rules()
    ops = g["cell-op"].items
    assert [g[ref.name] for ref in ops] == [gx.Lit(str(i)) for i in range(len(S.OPS))]
    assert [ref.name for ref in ops] == [gx.rule_name(f"cell-op-{op}") for op in S.OPS]
    assert _ids(language(g)) == set(itertools.product(range(len(S.OPS)), repeat=len(S.EDGES)))


def test_the_grammar_leaves_out_the_cells_tried_and_only_them():
    tried = [S.RESNET, "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|none~1|skip_connect~2|",
             "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"]
    left = {tuple(S.OPS.index(op) for op in S.CellStructure.parse(c).ops) for c in tried}
    allowed = _ids(language(R.reply_rules(tried)))
    assert allowed == set(itertools.product(range(len(S.OPS)), repeat=len(S.EDGES))) - left
    sampler = CellSampler(5, tried)
    # every continuation of a prefix tried (GENIUS on Gemma walked the last id through all five):
    # the prefix goes, and no rule is left without an alternative
    walked = [(1, 2, 3, 4, 0, i) for i in range(len(S.OPS))] + [(1, 2, 3, 4, j, i) for j in range(1, len(S.OPS))
                                                                for i in range(len(S.OPS))]
    cells = [S.CellStructure(tuple(S.OPS[i] for i in ids)) for ids in walked]
    g = R.reply_rules(cells)
    assert all(not isinstance(body, gx.Alt) or body.items for body in g.values())
    assert _ids(language(g)) == set(itertools.product(range(len(S.OPS)), repeat=len(S.EDGES))) - set(walked)
    assert "::= \n" not in R.reply_grammar("gbnf", cells) + "\n"
    everything = [S.CellStructure(tuple(S.OPS[i] for i in ids))
                  for ids in itertools.product(range(len(S.OPS)), repeat=len(S.EDGES))]
    assert R.reply_rules(everything) == R.reply_rules()  # all tried: nothing left out
    for _ in range(200):
        assert S.parse_cell_reply(sampler.sample()) not in {S.CellStructure.parse(c) for c in tried}


@pytest.fixture(scope="module")
def lark_cell():
    import lark

    return lark.Lark(R.reply_grammar("lark"))


@pytest.mark.parametrize("text", [
    "op_list = [3, 3, 1, 0, 3, 5]\n",  # an id outside the space
    "op_list = [3, 3, 1, 0, 3]\n",  # five edges
    "Convolutions help.\n",  # no cell
    "op_list = [3, 3, 1, 0, 3, 2]\nop_list = [1, 1, 1, 1, 1, 1]\n",  # the reasoning line is never an op_list
    " ".join(["word"] * (R.REASON_WORDS + 1)) + "\nop_list = [3, 3, 1, 0, 3, 2]\n",  # too many words
    "x" * (R.WORD_CHARS + 1) + "\nop_list = [3, 3, 1, 0, 3, 2]\n",  # a word too long
    "Why.\nMore why.\nop_list = [3, 3, 1, 0, 3, 2]\n",  # two reasoning lines
])
def test_the_cell_grammar_refuses_what_is_no_bounded_cell_reply(lark_cell, text):
    import lark

    with pytest.raises(lark.exceptions.LarkError):
        lark_cell.parse(text)


def test_the_cell_grammar_accepts_both_orders_and_its_samples(lark_cell):
    lark_cell.parse("More 3x3 convolutions deepen every path.\nop_list = [3, 3, 1, 0, 3, 2]\n")
    lark_cell.parse("op_list = [3, 3, 1, 0, 3, 2]\nMore 3x3 convolutions deepen every path.\n")
    lark_cell.parse("op_list = [3, 3, 1, 0, 3, 2]\n")
    for text in SAMPLES[:40]:
        lark_cell.parse(text)


def test_nadc_grammar_reply_cell_prints_the_spaces_grammar():
    out = run_nadc(["grammar", "--reply", "cell"])
    assert out.code == 0 and out.stdout == R.reply_grammar("gbnf")
    assert 'cell-op-nor-conv-three-x-three ::= "3"' in out.stdout
    assert run_nadc(["grammar", "--reply", "cell", "--format", "lark"]).stdout == R.reply_grammar("lark")


def _prompt(**inputs) -> str:
    return render(BOUNDED_CELL_PROMPT, dataset="cifar100", history=[], iteration=1, iterations=10,
                  operations=CELL.operations, reason_words=R.REASON_WORDS, **inputs)[-1]["content"]


def test_the_small_models_prompt_asks_for_the_cell_first():
    first, last = _prompt(cell_first=True), _prompt(cell_first=False)
    for text in (first, last):
        for i, op in enumerate(S.OPS):  # the operations listed by id, from the space
            assert f"{i}: {R.OP_TEXT[op]}" in text
        assert "operation id from 0 to 4" in text and f"at most {R.REASON_WORDS} words" in text
    assert first.index("op_list = [a, b") < first.index("why it should surpass")
    assert last.index("why it should surpass") < last.index("op_list = [a, b")


class Client:
    """A chat client whose model has `profile`; records what it was sent."""

    def __init__(self, profile: ModelProfile, replies):
        self.config = type("Config", (), {"model": "small-model", "profiles": (profile,)})()
        self.replies, self.sent = list(replies), []

    def chat_sync(self, messages, **kwargs):
        self.sent.append((messages, kwargs))
        return type("Reply", (), {"text": self.replies.pop(0), "truncated": False})()

    def window(self):
        return None, 4096


@pytest.mark.parametrize("small, grammar, prompt, first", [
    (True, "llama.cpp", BOUNDED_CELL_PROMPT, True),
    (True, "none", BOUNDED_CELL_PROMPT, True),
    (False, "vllm", BOUNDED_CELL_PROMPT, False),
    (False, "none", CELL_PROMPT, None),
])
def test_the_profile_chooses_the_prompt_and_every_reply_carries_the_grammar(small, grammar, prompt, first):
    client = Client(ModelProfile("small-model", small=small, grammar=grammar),
                    ["op_list = [3, 3]", "op_list = [3, 3, 1, 0, 3, 2]\nDeeper paths.\n"])
    genius = Genius(client, repairs=1, iterations=10, dataset="cifar100", skeleton="nas-bench-201", cell_reply=CELL)
    answer = genius.answer([], 1, S.check_cell_reply, cells=True, arch_id="1")
    assert answer.text is not None and S.cell_of_text(answer.text) == S.CellStructure.parse(
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|skip_connect~1|+|none~0|nor_conv_3x3~1|nor_conv_1x1~2|")
    (messages, first_call), (_, repair_call) = client.sent
    assert first_call["prompt"] == prompt and repair_call["prompt"] == "genius_repair.v1"
    assert first_call["grammar"] == repair_call["grammar"] == (R.reply_grammar("gbnf") if first is not None else None)
    text = messages[-1]["content"]
    if first is not None:
        assert (text.index("op_list = [a, b") < text.index("why it should surpass")) is first


def test_a_genius_run_sends_the_cell_grammar_in_the_llama_cpp_field(server, tmp_path, request):
    pytest.importorskip("nats_bench.api_utils")
    table = request.getfixturevalue("nb201_table")
    proposals = iter(["op_list = [3, 3, 3, 1, 3, 3]\nDeep.\n", "op_list = [3, 3, 2, 1, 3, 3]\nWider.\n"])
    server.responder = lambda body: reply(next(proposals))
    config = tmp_path / "nader.toml"
    config.write_text('[llm.profiles."local-model"]\nsmall = true\ngrammar = "llama.cpp"\n', encoding="utf-8")
    from nader.search.session import run_search

    run = run_search({"space": "nb201", "dataset": "cifar10", "evaluator": f"nats-bench:{table}",
                      "preset": "nb201-12", "seeds": [777], "strategy": "genius", "run_dir": str(tmp_path / "run"),
                      "strategy_options": {"llm_base_url": server.base_url, "llm_model": "local-model",
                                           "llm_config": str(config), "iterations": 2}})
    assert run.stop.code == "iterations" and run.trials == 3
    first = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
    # each request's grammar leaves out the cells tried before it: the root, then the first proposal too
    assert [body["grammar"] for body in server.chat_requests] == [R.reply_grammar("gbnf", [S.RESNET]),
                                                                  R.reply_grammar("gbnf", [S.RESNET, first])]
    prompt = server.chat_requests[0]["messages"][-1]["content"]
    assert prompt.index("op_list = [a, b") < prompt.index("why it should surpass")
