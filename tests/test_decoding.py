"""transformer_lib.decoding: temperature, filters, greedy/sampling/beam search, the
key/value cache."""

import math

import pytest
import torch

from transformer_lib import (
    IncrementalDecoder,
    Transformer,
    TransformerConfig,
    beam_search,
    greedy_decode,
    length_penalty_gnmt,
    sample,
    sample_logits,
    sequence_log_prob,
    softmax_with_temperature,
    top_k_filter,
    top_p_filter,
)

PAD, BOS, EOS = 0, 1, 2


def make_model(norm_first=False, seed=0, **overrides):
    torch.manual_seed(seed)
    fields = dict(
        src_vocab_size=23,
        tgt_vocab_size=19,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=64,
        max_len=48,
        norm_first=norm_first,
    )
    fields.update(overrides)
    return Transformer(TransformerConfig(**fields)).eval()


def make_src(B=5, S=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, 23, (B, S), generator=g)
    src[1, 6:] = PAD  # padded rows
    src[B - 1, 2:] = PAD
    return src


# ----- temperature and filters --------------------------------------------------------
def test_softmax_with_temperature():
    z = torch.randn(4, 10)
    assert torch.allclose(softmax_with_temperature(z, 1.0), torch.softmax(z, -1))
    assert torch.allclose(softmax_with_temperature(z, 0.25), torch.softmax(4 * z, -1))
    H = [
        -(p * p.log()).sum().item()
        for p in (softmax_with_temperature(z[0], T) for T in (0.5, 1, 2, 4))
    ]
    assert H == sorted(H)
    assert softmax_with_temperature(z.double(), 2.0).dtype == torch.float64


@pytest.mark.parametrize("T", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_bad_temperature(T):
    with pytest.raises(ValueError, match="temperature"):
        softmax_with_temperature(torch.randn(3), T)


def test_top_k_filter():
    z = torch.randn(6, 20)
    out = top_k_filter(z, 5)
    assert (torch.isfinite(out).sum(-1) == 5).all()
    ref = torch.full_like(z, float("-inf")).scatter(
        -1, z.topk(5, -1).indices, z.topk(5, -1).values
    )
    assert torch.equal(out, ref)
    assert torch.equal(top_k_filter(z, 100), z)
    for k in (0, -1, 1.5, None):
        with pytest.raises(ValueError, match="top_k"):
            top_k_filter(z, k)


def test_top_p_filter_is_smallest_nucleus():
    z = torch.randn(50, 30) * 2
    probs = torch.softmax(z, -1)
    for p in (0.1, 0.5, 0.9, 0.999):
        kept = torch.isfinite(top_p_filter(z, p))
        for row in range(z.shape[0]):
            pk = probs[row][kept[row]]
            assert pk.sum() >= p - 1e-6 and pk.sum() - pk.min() < p
            # kept tokens are the most probable ones
            dropped = probs[row][~kept[row]]
            assert dropped.numel() == 0 or dropped.max() <= pk.min()
    assert torch.equal(top_p_filter(z, 1.0), z)
    assert (torch.isfinite(top_p_filter(z, 1e-9)).sum(-1) == 1).all()
    for p in (0, -0.1, 1.01, float("nan")):
        with pytest.raises(ValueError, match="top_p"):
            top_p_filter(z, p)


def test_sample_logits_frequencies_and_reproducibility():
    z = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0])
    draws = sample_logits(
        z.expand(100_000, -1),
        temperature=1.5,
        top_k=3,
        generator=torch.Generator().manual_seed(0),
    )
    freq = torch.bincount(draws, minlength=5).float() / len(draws)
    assert (freq - torch.softmax(top_k_filter(z / 1.5, 3), -1)).abs().max() < 0.01
    a = sample_logits(torch.randn(8, 5), generator=torch.Generator().manual_seed(3))
    torch.manual_seed(0)
    x = torch.randn(8, 5)
    assert torch.equal(
        sample_logits(x, generator=torch.Generator().manual_seed(3)),
        sample_logits(x, generator=torch.Generator().manual_seed(3)),
    )
    assert a.shape == (8,) and a.dtype == torch.long


# ----- the cache ----------------------------------------------------------------------
@pytest.mark.parametrize("norm_first, d_k", [(False, None), (True, None), (False, 3)])
def test_cache_equals_uncached_step_by_step(norm_first, d_k):
    model = make_model(norm_first, d_k=d_k)  # d_k=3: keys narrower than values (8)
    src = make_src()
    # grows several times
    cached = IncrementalDecoder(model, src, use_cache=True, capacity=2)
    uncached = IncrementalDecoder(model, src, use_cache=False)
    tok = torch.full((src.shape[0],), BOS)
    for _ in range(30):
        a, b = cached.step(tok), uncached.step(tok)
        assert torch.allclose(a, b, atol=1e-5)
        assert torch.equal(a.argmax(-1), b.argmax(-1))
        tok = a.argmax(-1)
    assert cached.length == uncached.length == 30


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_logits_equal_full_decode(norm_first):
    """Feeding a fixed sequence token by token gives model.decode's logits at every
    position."""
    model = make_model(norm_first, seed=1)
    src = make_src(seed=1)
    tgt = torch.randint(3, 19, (src.shape[0], 12))
    tgt[:, 0] = BOS
    with torch.no_grad():
        memory = model.encode(src)
        full = model.decode(
            tgt,
            memory,
            (src != PAD)[:, None, None, :],
            torch.ones(12, 12, dtype=torch.bool).tril(),
        )
    dec = IncrementalDecoder(model, src)
    steps = torch.stack([dec.step(tgt[:, t]) for t in range(12)], 1)  # (B, 12, V)
    assert torch.allclose(steps, full, atol=1e-5)


@pytest.mark.parametrize("norm_first, d_k", [(False, None), (True, None), (False, 16)])
def test_greedy_cached_equals_uncached(norm_first, d_k):
    model = make_model(norm_first, seed=2, d_k=d_k)
    src = make_src(seed=2)
    a = greedy_decode(model, src, 40, BOS, EOS)
    b = greedy_decode(model, src, 40, BOS, EOS, use_cache=False)
    assert torch.equal(a, b)
    c = greedy_decode(model, src, 40, BOS, None)
    assert c.shape == (src.shape[0], 40)


def test_reorder_keeps_rows():
    model = make_model()
    src = make_src()
    dec = IncrementalDecoder(model, src)
    ref = IncrementalDecoder(model, src[[4, 4, 0]])
    tok = torch.full((5,), BOS)
    dec.step(tok)
    ref.step(tok[:3])
    dec.reorder(torch.tensor([4, 4, 0]))
    nxt = torch.tensor([5, 6, 7])
    assert torch.allclose(dec.step(nxt), ref.step(nxt), atol=1e-5)


def test_incremental_decoder_requires_eval_and_transformer():
    model = make_model().train()
    with pytest.raises(ValueError, match="eval"):
        IncrementalDecoder(model, make_src())
    with pytest.raises(TypeError, match="model"):
        IncrementalDecoder(torch.nn.Linear(2, 2), make_src())


# ----- greedy / sample / beam ---------------------------------------------------------
def test_greedy_matches_naive_loop_and_conventions():
    model = make_model(seed=3)
    src = make_src(seed=3)
    out = greedy_decode(model, src, 25, BOS, EOS)
    assert out.dtype == torch.long and (out[:, 0] == BOS).all() and out.shape[1] <= 25
    with torch.no_grad():
        memory = model.encode(src)
        mask = (src != PAD)[:, None, None, :]
        ys = torch.full((src.shape[0], 1), BOS)
        for _ in range(24):
            T = ys.shape[1]
            logits = model.decode(
                ys, memory, mask, torch.ones(T, T, dtype=torch.bool).tril()
            )
            ys = torch.cat([ys, logits[:, -1].argmax(-1, keepdim=True)], 1)
    for row, ref in zip(out.tolist(), ys.tolist()):
        if EOS in ref:
            n = ref.index(EOS) + 1
            assert row[:n] == ref[:n] and all(t == PAD for t in row[n:])
        else:
            assert row == ref[: len(row)]


def test_max_len_one_and_mode_restored():
    model = make_model().train()
    src = make_src()
    for fn in (
        lambda: greedy_decode(model, src, 1, BOS, EOS),
        lambda: sample(model, src, 1, BOS, EOS),
        lambda: beam_search(model, src, 1, BOS, EOS, beam_size=3),
    ):
        out = fn()
        assert out.shape == (5, 1) and (out == BOS).all()
        assert model.training
    model.eval()
    greedy_decode(model, src, 4, BOS, EOS)
    assert not model.training
    assert torch.is_grad_enabled()


def test_sample_reproducible_and_degenerate_cases():
    model = make_model(seed=4)
    src = make_src(seed=4)
    g = lambda s: torch.Generator().manual_seed(s)
    a = sample(
        model, src, 20, BOS, EOS, temperature=1.3, top_k=8, top_p=0.9, generator=g(0)
    )
    b = sample(
        model, src, 20, BOS, EOS, temperature=1.3, top_k=8, top_p=0.9, generator=g(0)
    )
    c = sample(
        model,
        src,
        20,
        BOS,
        EOS,
        temperature=1.3,
        top_k=8,
        top_p=0.9,
        generator=g(0),
        use_cache=False,
    )
    assert torch.equal(a, b) and torch.equal(a, c)
    assert not torch.equal(
        sample(model, src, 20, BOS, None, temperature=2.0, generator=g(1)),
        sample(model, src, 20, BOS, None, temperature=2.0, generator=g(2)),
    )
    greedy = greedy_decode(model, src, 20, BOS, EOS)
    assert torch.equal(
        sample(model, src, 20, BOS, EOS, top_k=1, generator=g(5)), greedy
    )
    assert torch.equal(
        sample(model, src, 20, BOS, EOS, temperature=1e-4, generator=g(5)), greedy
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_beam_search(norm_first):
    model = make_model(norm_first, seed=5)
    src = make_src(seed=5)
    greedy = greedy_decode(model, src, 20, BOS, EOS)
    assert torch.equal(beam_search(model, src, 20, BOS, EOS, beam_size=1), greedy)
    out, scores = beam_search(model, src, 20, BOS, EOS, beam_size=4, return_scores=True)
    assert (out[:, 0] == BOS).all() and out.shape[1] <= 20
    assert torch.equal(
        out, beam_search(model, src, 20, BOS, EOS, beam_size=4, use_cache=False)
    )
    # generated tokens, <eos> included = the position of <eos> (the output starts with
    # <bos>)
    lengths = torch.tensor(
        [(r.index(EOS) if EOS in r else len(r) - 1) for r in out.tolist()]
    )
    ref = sequence_log_prob(model, src, out, EOS) / length_penalty_gnmt(
        lengths.float(), 0.6
    )
    assert torch.allclose(scores, ref, atol=1e-4)


def test_beam_search_exhaustive_on_short_outputs():
    """With eos_id=None and a beam as wide as the vocabulary, 2 generated tokens: the
    optimum."""
    model = make_model(seed=6, tgt_vocab_size=7)
    src = make_src(B=3, seed=6)
    out, scores = beam_search(
        model,
        src,
        beam_size=7,
        max_len=3,
        bos_id=BOS,
        eos_id=None,
        length_penalty=0.0,
        return_scores=True,
    )
    cands = torch.cartesian_prod(torch.arange(7), torch.arange(7))  # (49, 2)
    for b in range(3):
        ys = torch.cat([torch.full((49, 1), BOS), cands], 1)
        lp = sequence_log_prob(model, src[b : b + 1].expand(49, -1), ys)
        assert math.isclose(scores[b].item(), lp.max().item(), abs_tol=1e-4)
        assert torch.equal(out[b], ys[lp.argmax()])


def test_length_penalty():
    assert length_penalty_gnmt(1, 0.6) == 1.0
    assert math.isclose(length_penalty_gnmt(10, 0.6), (15 / 6) ** 0.6)
    assert length_penalty_gnmt(10, 0.0) == 1.0


def test_sequence_log_prob_matches_steps():
    model = make_model(seed=7)
    src = make_src(seed=7)
    out = greedy_decode(model, src, 15, BOS, EOS)
    dec = IncrementalDecoder(model, src)
    total = torch.zeros(src.shape[0])
    alive = torch.ones(src.shape[0], dtype=torch.bool)
    for t in range(1, out.shape[1]):
        logp = torch.log_softmax(dec.step(out[:, t - 1]), -1)
        total += torch.where(alive, logp.gather(1, out[:, t : t + 1])[:, 0], 0.0)
        alive &= out[:, t] != EOS
    assert torch.allclose(sequence_log_prob(model, src, out, EOS), total, atol=1e-4)


# ----- errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn, exc, name",
    [
        (lambda m, s: greedy_decode(m, s[0], 10, BOS, EOS), ValueError, "src"),
        (lambda m, s: greedy_decode(m, s.float(), 10, BOS, EOS), TypeError, "src"),
        (lambda m, s: greedy_decode(m, s.tolist(), 10, BOS, EOS), TypeError, "src"),
        (lambda m, s: greedy_decode(m, s, 0, BOS, EOS), ValueError, "max_len"),
        (lambda m, s: greedy_decode(m, s, 1000, BOS, EOS), ValueError, "max_len"),
        (lambda m, s: greedy_decode(m, s, 10, 100, EOS), ValueError, "bos_id"),
        (lambda m, s: greedy_decode(m, s, 10, BOS, 1.5), TypeError, "eos_id"),
        (
            lambda m, s: greedy_decode(torch.nn.Linear(2, 2), s, 10, BOS, EOS),
            TypeError,
            "model",
        ),
        (
            lambda m, s: sample(m, s, 10, BOS, EOS, temperature=0),
            ValueError,
            "temperature",
        ),
        (
            lambda m, s: sample(m, s, 10, BOS, EOS, temperature=-2),
            ValueError,
            "temperature",
        ),
        (lambda m, s: sample(m, s, 10, BOS, EOS, top_k=0), ValueError, "top_k"),
        (lambda m, s: sample(m, s, 10, BOS, EOS, top_p=0.0), ValueError, "top_p"),
        (lambda m, s: sample(m, s, 10, BOS, EOS, top_p=1.2), ValueError, "top_p"),
        (lambda m, s: sample(m, s, 10, BOS, EOS, generator=3), TypeError, "generator"),
        (
            lambda m, s: beam_search(m, s, 10, BOS, EOS, beam_size=0),
            ValueError,
            "beam_size",
        ),
        (
            lambda m, s: beam_search(m, s, 0, BOS, EOS, beam_size=4),
            ValueError,
            "max_len",
        ),
        (
            lambda m, s: beam_search(m, s, 10, None, EOS, beam_size=4),
            TypeError,
            "bos_id",
        ),
        (
            lambda m, s: beam_search(
                m, s, 10, BOS, EOS, beam_size=4, length_penalty=-1
            ),
            ValueError,
            "length_penalty",
        ),
        (
            lambda m, s: beam_search(m, s[None], 10, BOS, EOS, beam_size=4),
            ValueError,
            "src",
        ),
    ],
)
def test_errors_name_the_argument(fn, exc, name):
    with pytest.raises(exc, match=name):
        fn(make_model(), make_src())


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_search_exhaustive_with_eos(alpha):
    """A beam wider than the number of live prefixes is exact, early stopping included:
    compare with every output of at most 3 generated tokens, scored log P / lp."""
    V = 6
    model = make_model(seed=8, tgt_vocab_size=V)
    src = make_src(B=4, seed=8)
    out, scores = beam_search(
        model,
        src,
        beam_size=V * V,
        max_len=4,
        bos_id=BOS,
        eos_id=EOS,
        length_penalty=alpha,
        return_scores=True,
    )
    cands = []  # generated tokens: ends with <eos>, or 3 tokens
    for n in (1, 2, 3):
        for seq in torch.cartesian_prod(*[torch.arange(V)] * n).reshape(-1, n).tolist():
            if EOS in seq[:-1] or (n < 3 and seq[-1] != EOS):
                continue
            cands.append(seq)
    for b in range(src.shape[0]):
        best, best_seq = -math.inf, None
        for seq in cands:
            ys = torch.tensor([[BOS] + seq])
            s = sequence_log_prob(
                model, src[b : b + 1], ys, EOS
            ).item() / length_penalty_gnmt(len(seq), alpha)
            if s > best:
                best, best_seq = s, seq
        assert math.isclose(scores[b].item(), best, abs_tol=1e-4)
        got = [t for t in out[b, 1:].tolist()]
        assert got[: len(best_seq)] == best_seq and all(
            t == PAD for t in got[len(best_seq) :]
        )


def test_default_max_len_and_explicit_src_mask():
    model = make_model(seed=9)
    src = make_src(seed=9)
    # default: S + 50, capped at config.max_len
    out = beam_search(model, src, bos_id=BOS, eos_id=None)
    assert out.shape == (src.shape[0], min(src.shape[1] + 50, model.config.max_len))
    mask = (src != PAD)[:, None, None, :]
    assert torch.equal(
        greedy_decode(model, src, 20, BOS, EOS, src_mask=mask),
        greedy_decode(model, src, 20, BOS, EOS),
    )
    with pytest.raises(ValueError, match="src_mask"):
        greedy_decode(model, src, 20, BOS, EOS, src_mask=mask[:, :, :, :3])
    # (B, 1, S, S): not a padding mask
    with pytest.raises(ValueError, match="src_mask"):
        greedy_decode(
            model, src, 20, BOS, EOS, src_mask=mask.expand(-1, 1, src.shape[1], -1)
        )
