"""FairNAD's attribute tree as data, and the keyword tagger built on it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nader.agents.knowledge import ATTRIBUTE_TREE, ATTRIBUTE_TREES, GRANULARITIES, MAIN_CATEGORIES, check_tags, tag
from nader.agents.knowledge.tagger import RULES

LABELS = Path(__file__).resolve().parent.parent / "fixtures" / "knowledge" / "tagger_labels.json"


def test_tree_has_the_papers_counts():
    # FairNAD, Appendix B: "there were 15 main categories, 55 sub-categories" (Tables 9 and 10).
    mains = [main for mains in ATTRIBUTE_TREE.values() for main in mains]
    subs = [sub for mains in ATTRIBUTE_TREE.values() for sub_list in mains.values() for sub in sub_list]
    assert len(mains) == len(set(mains)) == 15
    assert len(subs) == 55
    assert tuple(ATTRIBUTE_TREE) == GRANULARITIES
    assert set(ATTRIBUTE_TREES) == {"performance", "efficiency"}


def test_tree_rows_from_the_tables():
    assert ATTRIBUTE_TREE["operation level"]["normalization"] == ["grn", "batch normalization", "layer normalization"]
    assert ATTRIBUTE_TREE["block and connectivity level"]["dense connectivity for feature reuse"] == []
    assert MAIN_CATEGORIES["efficient transformer"] == ("operation level", "efficiency")
    assert MAIN_CATEGORIES["layer arrangement and order"] == ("network level", "performance")
    # the paper lists these under two main categories each
    assert "grouped convolution" in ATTRIBUTE_TREE["operation level"]["feature extraction operators"]
    assert "grouped convolution" in ATTRIBUTE_TREE["operation level"]["efficient convolution"]


@pytest.mark.parametrize("tags, fragment", [
    (("network level", "normalization", None), "not a main category of 'network level'"),
    (("operation level", "normalization", "gelu"), "not a sub-category of 'normalization'"),
    (("op", None, None), "unknown granularity"),
    ((None, "normalization", None), "needs a granularity"),
    (("operation level", None, "gelu"), "needs a main category"),
])
def test_check_tags_explains(tags, fragment):
    assert fragment in check_tags(*tags)


def test_check_tags_accepts_paths_and_prefixes():
    assert check_tags(None, None, None) is None
    assert check_tags("network level", None, None) is None
    assert check_tags("network level", "dynamic computation", None) is None
    assert check_tags("network level", "dynamic computation", "stochastic depth") is None


def test_every_rule_names_a_tree_path_and_every_category_has_a_rule():
    for main, sub, _pattern in RULES:
        assert check_tags(MAIN_CATEGORIES[main][0], main, sub) is None, (main, sub)
    ruled_mains = {main for main, _, _ in RULES}
    ruled_subs = {sub for _, sub, _ in RULES}
    for mains in ATTRIBUTE_TREE.values():
        for main, subs in mains.items():
            assert main in ruled_mains, f"no rule reaches {main!r}"
            # a sub-category listed under two main categories has one rule, under one of them
            missing = [sub for sub in subs if sub not in ruled_subs]
            assert not missing, f"no rule for {missing} of {main!r}"


@pytest.mark.parametrize("text, main, sub", [
    ("Replace 3x3 convolutions by depthwise separable convolutions to cut FLOPs.",
     "efficient convolution", "depthwise separable convolution"),
    ("Compute self-attention inside shifted windows to keep the cost linear in image size.",
     "efficient transformer", "windowed attention"),
    ("Insert a squeeze-and-excitation module to reweight channels.",
     "adaptive feature recalibration", "channel attention (SE block)"),
    ("Use a hybrid of convolution layers and transformer blocks in the backbone.",
     "network structural patterns", "hybrid convolution and transformer architecture"),
    ("Add residual connections around every pair of layers.",
     "residual connections and multi-branch architectures", "residual connections"),
    ("Replace ReLU with GELU activations.", "activation", "gelu"),
])
def test_tagger_examples(text, main, sub):
    tags = tag(text)
    assert tags is not None and (tags.main_category, tags.sub_category) == (main, sub)
    assert tags.granularity == MAIN_CATEGORIES[main][0]


@pytest.mark.parametrize("text", [
    "Train with a contrastive loss between attention maps of two views.",  # a loss, not architecture
    "Apply transformer layers to point clouds for 3D detection.",  # another modality
    "Use a larger learning rate for the classifier.",  # matches no category
])
def test_tagger_leaves_out_what_fairnad_filters(text):
    assert tag(text) is None


def test_tagger_agreement_with_held_out_hand_labels(compat_dir):
    """Floors under the figures docs/knowledge.md reports (held-out labels, rules frozen first)."""
    labels = json.loads(LABELS.read_text())["held_out"]
    pool = {str(item["id"]): item["inspiration"]
            for item in json.loads((compat_dir / "inspirations.json").read_text())}
    agree = relevant = found = main_right = 0
    for idea_id, label in labels.items():
        tags = tag(pool[idea_id])
        predicted = tags.main_category if tags else None
        agree += predicted == (label[0] if label else None)
        if label:
            relevant += 1
            found += tags is not None
            main_right += predicted == label[0]
    assert len(labels) == 100 and relevant >= 10
    assert agree >= 75  # main category equal, or both untagged
    assert found / relevant >= 0.8
    assert main_right / found >= 0.7
