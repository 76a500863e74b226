"""The training-free proxies (`nader.search.proxies`): each one's computation on networks whose
answer is known, ranks and ensembles, the scorer's seeding, settings and caches."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from nader.runtime.errors import ConfigError
from nader.search.checks import arch_hash_of_text
from nader.search.config_file import PROXIES
from nader.search.proxies import all_proxies, mean_ranks, members, module_of, needs_data, order, score_ranks
from nader.search.proxies.proxy import Inputs
from nader.search.proxy_scorer import SETTINGS, ProxyScorer, seed_of
from nader.search.spaces import nb201
from nader.search.store import ProxyCache, SearchStore

CELLS = ["|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|",
         nb201.RESNET, "|avg_pool_3x3~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"]


def _items(cells=CELLS):
    texts = [nb201.architecture(c) for c in cells]
    return [(arch_hash_of_text(t, nb201.SKELETON), t) for t in texts]


def _inputs(**kw):
    return Inputs(**{"shape": (6,), "classes": 3, "seed": 1, "batch": 7, **kw})


# ---------------------------------------------------------------------- the library


def test_every_proxy_is_discovered_declared_and_named_for_help():
    proxies = all_proxies()
    assert set(proxies) == set(PROXIES)  # `run --help` lists them without importing a proxy module
    assert {n for n, p in proxies.items() if not p.data} == {"synflow", "zen", "params", "flops"}
    for name, p in proxies.items():
        assert p.paper and p.summary and p.doc.strip() and name in p.explain()


def test_a_spec_is_one_proxy_or_an_ensemble_of_distinct_known_ones():
    assert members("synflow+zen") == ("synflow", "zen")
    assert needs_data("synflow+naswot") == ["naswot"] and needs_data("synflow+zen") == []
    for bad in ("synflo", "synflow+synflow", "synflow+", ""):
        with pytest.raises(ConfigError):
            members(bad)


def test_ranks_share_ties_and_put_missing_scores_last():
    assert score_ranks([3.0, None, 5.0, 3.0, float("-inf")]) == [2.5, 5.0, 1.0, 2.5, 4.0]
    # an ensemble is the unweighted mean of its members' ranks
    assert mean_ranks({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0]}) == [2.0, 2.5, 1.5]
    assert order({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0]}) == [2, 0, 1]
    assert order({"a": [1.0, 2.0, 3.0], "b": [3.0, 2.0, 1.0]}) == [0, 1, 2]  # ties go to the earlier
    assert order({"a": [1.0, 5.0, 3.0]}) == [1, 2, 0]


def test_synflow_conserves_flow_through_each_linear_layer():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3, bias=False), nn.Linear(3, 2, bias=False))
    w1, w2 = net[0].weight.detach().abs().double(), net[1].weight.detach().abs().double()
    total = float((w2 @ w1 @ torch.ones(4, dtype=torch.float64)).sum())
    # for a bias-free linear chain each layer's sum of |theta * dR/dtheta| equals R
    assert module_of("synflow").score_network(net, _inputs(shape=(4,))) == pytest.approx(2 * total)


def test_naswot_is_the_log_determinant_of_the_hamming_kernel():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3))
    x = torch.randn(7, 6)
    codes = []
    h = x
    for layer in net:
        if isinstance(layer, nn.ReLU):
            codes.append([[1 if v > 0 else 0 for v in row] for row in h.tolist()])
        h = layer(h)
    n_units = sum(len(c[0]) for c in codes)
    kernel = [[n_units - sum(a != b for c in codes for a, b in zip(c[i], c[j])) for j in range(7)] for i in range(7)]
    expected = torch.linalg.slogdet(torch.tensor(kernel, dtype=torch.float64))
    naswot = module_of("naswot").score_network
    assert naswot(net, _inputs(images=x)) == pytest.approx(float(expected.logabsdet))
    same = x[:1].repeat(7, 1)  # identical images cannot be told apart: singular kernel
    assert naswot(net, _inputs(images=same)) == float("-inf")


def test_snip_and_grad_norm_read_the_loss_gradient_of_each_weight():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 3, bias=False))
    x, y = torch.randn(7, 6), torch.tensor([0, 1, 2, 0, 1, 2, 0])
    w = net[0].weight.detach().clone()
    # the cross-entropy's gradient by hand: (softmax - one-hot)^T x / batch
    grad = (F.softmax(x @ w.T, dim=1) - F.one_hot(y, 3).float()).T @ x / 7
    inputs = _inputs(images=x, labels=y)
    assert module_of("snip").score_network(net, inputs) == pytest.approx(float((w * grad).abs().sum()), rel=1e-5)
    assert module_of("grad_norm").score_network(net, inputs) == pytest.approx(float(grad.norm()), rel=1e-5)


def test_jacov_scores_decorrelated_jacobians_above_identical_ones():
    torch.manual_seed(0)
    x = torch.randn(7, 6)
    linear = nn.Sequential(nn.Linear(6, 4))  # the same Jacobian for every image: correlation 1
    relu = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 4))
    jacov = module_of("jacov").score_network
    flat, varied = jacov(linear, _inputs(images=x)), jacov(relu, _inputs(images=x))
    # identical rows: eigenvalues 7 and 0 (six times), so the score is pinned by k = 1e-5
    k = 1e-5
    assert flat == pytest.approx(-(math.log(7 + k) + 1 / (7 + k)) - 6 * (math.log(k) + 1 / k), rel=1e-4)
    assert varied > flat


def test_zen_grows_with_width_and_needs_no_images():
    def net(width):
        return nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 3))

    zen = module_of("zen").score_network
    inputs = _inputs(shape=(3, 8, 8), batch=4)
    assert inputs.images is None
    narrow, wide = zen(net(4), inputs), zen(net(32), inputs)
    assert math.isfinite(narrow) and wide > narrow
    assert zen(net(4), inputs) == pytest.approx(narrow)  # drawn from the architecture's seed


# ---------------------------------------------------------------------- the scorer


def test_the_scorer_builds_the_compilers_small_network_seeded_by_the_hash():
    items = _items()
    scorer = ProxyScorer("synflow+params+flops", skeleton=nb201.SKELETON, dataset="cifar100")
    scores = scorer.scores(items + items[:1])
    assert scores["synflow"][3] == scores["synflow"][0]  # one hash, one score
    assert scorer.evaluated == 3 * 3 and scorer.seconds > 0
    # the counting proxies are the compiler's counts of the small network: its parameters by hand
    from nader.compiler.network import build_network

    net, _ = build_network(items[0][1], nb201.SKELETON, "cifar100", widths=[SETTINGS.width],
                           depths=[SETTINGS.depth] * 3, input_size=SETTINGS.input_size("cifar100"))
    assert scores["params"][0] == sum(p.numel() for p in net.parameters())
    assert scores["flops"][0] > scores["flops"][2]  # five 3x3 convolutions against none
    assert scores["synflow"][0] > scores["synflow"][1] > scores["synflow"][2]
    again = ProxyScorer("synflow", skeleton=nb201.SKELETON, dataset="cifar100").scores(list(reversed(items)))
    assert again["synflow"] == list(reversed(scores["synflow"][:3]))  # no order or run dependence
    assert seed_of(items[0][0]) == int(items[0][0][:8], 16)
    rng = torch.random.get_rng_state()
    ProxyScorer("zen", skeleton=nb201.SKELETON, dataset="cifar100").scores(items[:1])
    assert torch.equal(rng, torch.random.get_rng_state())  # scoring leaves the global RNG alone


def test_a_network_the_proxy_cannot_take_scores_none_and_ranks_last():
    items = _items()[:1] + [("f" * 64, "##X##\n0:input\n1:output\n2:Nope\n0->2\n2->1\n")]
    scorer = ProxyScorer("synflow", skeleton=nb201.SKELETON, dataset="cifar100")
    ranked, scores = scorer.order(list(reversed(items)))
    assert scores["synflow"][0] is None and ranked == [1, 0]


def test_scores_are_cached_by_hash_in_the_store_and_shared_through_a_file(tmp_path):
    items = _items()
    store = SearchStore(tmp_path / "a")
    shared = ProxyCache.open(tmp_path / "shared.sqlite")
    first = ProxyScorer("synflow", skeleton=nb201.SKELETON, dataset="cifar100", caches=[store.proxy_cache(), shared])
    want = first.scores(items)
    assert first.evaluated == 3 and first.reused == 0
    second = ProxyScorer("synflow", skeleton=nb201.SKELETON, dataset="cifar100", caches=[store.proxy_cache()])
    assert second.scores(items) == want and second.evaluated == 0 and second.reused == 3
    other = SearchStore(tmp_path / "b")  # another run: the shared file answers, its store keeps a copy
    third = ProxyScorer("synflow", skeleton=nb201.SKELETON, dataset="cifar100", caches=[other.proxy_cache(), shared])
    assert third.scores(items) == want and third.evaluated == 0
    stats = other.proxy_stats()
    assert [(s["proxy"], s["scored"], s["computed"], s["copied"]) for s in stats] == [("synflow", 3, 0, 3)]
    assert store.proxy_stats()[0]["computed"] == 3 and store.proxy_stats()[0]["seconds"] > 0
    # another setting (here the dataset) is another key: nothing is read across
    fourth = ProxyScorer("synflow", skeleton=nb201.SKELETON, dataset="imagenet16-120", caches=[shared])
    fourth.scores(items[:1])
    assert fourth.evaluated == 1
    for s in (store, other):
        s.close()
    shared.close()


def test_the_image_proxies_read_a_fixed_batch_of_the_datasets_training_images():
    pytest.importorskip("sklearn")  # digits, the built-in dataset
    from search_helpers import ROOT_TEXT

    item = [(arch_hash_of_text(ROOT_TEXT, "nb201"), ROOT_TEXT)]
    scorer = ProxyScorer("naswot+jacov+snip+grad_norm", skeleton="nb201", dataset="digits")
    images, labels = scorer.batch()
    assert images.shape == (SETTINGS.batch, 3, 16, 16) and labels.shape == (SETTINGS.batch,)
    assert float(images.std()) > 0.5  # normalised images, not a constant
    scores = scorer.scores(item)
    assert all(math.isfinite(s[0]) for s in scores.values()), scores
    again = ProxyScorer("naswot", skeleton="nb201", dataset="digits").scores(item)
    assert again["naswot"] == scores["naswot"]  # the same batch for every scorer
