"""No check rejects a right answer: the book's solution and three differently written
right answers per check.

Each check draws fresh inputs at every call (dtypes, layouts, ranks, magnitudes,
lengths), so one call proves little. Here every right answer is checked `CALLS` times:
in `make test` twice per answer, from fixed seeds (`transformer_lib.exercises.seeded`:
the same draws at every run, so a failure replays); in `make test-slow`
(EXERCISE_CALLS=300) 300 times per answer, from the operating system's seeds, as a
reader's calls are drawn. Zero rejections are allowed.

The book's solution is the function the chapter's solution cell passes to the check,
compiled from that cell's source alone (a value answer, such as chapter 9's counts, is
computed here as the chapter computes it). The three others are written differently on
purpose: another formula, another dtype path, NumPy or torch scalars, einsum, float64
inside, and so on."""

from __future__ import annotations

import ast
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
# make test-slow: 300 unseeded calls
CALLS = int(os.environ.get("EXERCISE_CALLS", "0")) or None
SEEDED_CALLS = 2  # make test: 2 seeded calls per answer


# ---- the book's solutions, compiled from their chapter cells -------------------------


def _namespace() -> dict:
    import transformer_lib

    ns = {
        "torch": torch,
        "math": math,
        "F": F,
        "nn": nn,
        "np": np,
        "Tensor": torch.Tensor,
    }
    ns.update({n: getattr(transformer_lib, n) for n in transformer_lib.__all__})
    return ns


def _book_solutions() -> dict[str, object]:
    """`chXX.exN` -> the function the chapter's solution cell checks (where the cell
    defines it), compiled with the functions of the chapter's earlier cells that it
    calls."""
    found: dict[str, object] = {}
    for nb_path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        defs: dict[str, ast.FunctionDef] = {}
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] != "code" or src.startswith("#| export"):
                continue
            try:
                tree = ast.parse(
                    "\n".join(
                        l
                        for l in src.split("\n")
                        if not l.lstrip().startswith(("%", "!"))
                    )
                )
            except SyntaxError:
                continue
            defs.update(
                {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
            )
            if ".check(" not in src:
                continue
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "check"
                    and isinstance(node.func.value, ast.Attribute)
                    and isinstance(node.func.value.value, ast.Name)
                    and len(node.args) == 1
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in defs
                ):
                    key = f"{node.func.value.value.id}.{node.func.value.attr}"
                    if key in found:
                        continue  # the first checked function is the solution
                    needed, todo = [], [node.args[0].id]
                    # the function and the chapter's functions it calls
                    while todo:
                        name = todo.pop()
                        if name in needed:
                            continue
                        needed.append(name)
                        todo += [
                            n.id
                            for n in ast.walk(defs[name])
                            if isinstance(n, ast.Name) and n.id in defs
                        ]
                    ns = _namespace()
                    exec(
                        compile(
                            ast.Module([defs[n] for n in needed], []),
                            f"<{nb_path.name}>",
                            "exec",
                        ),
                        ns,
                    )
                    found[key] = ns[node.args[0].id]
    return found


# ---- three other right answers per check ---------------------------------------------


def _softmax_a(s):
    m = s.amax(-1, keepdim=True)
    return torch.exp(s - m) / torch.exp(s - m).sum(-1, keepdim=True)


def _softmax_b(s):
    return torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))


def _softmax_c(s):
    z = s.double()
    e = (z - z.max(-1, keepdim=True).values).exp()
    return (e / e.sum(-1, keepdim=True)).to(s.dtype)


def _attention_a(q, k, v, mask=None):
    s = torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        s = torch.where(mask, s, torch.tensor(float("-inf"), dtype=s.dtype))
    w = torch.softmax(s, -1).nan_to_num(0.0)
    return w @ v


def _attention_b(q, k, v, mask=None):
    s = q @ k.mT * (1 / math.sqrt(k.size(-1)))
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), torch.finfo(s.dtype).min)
    w = F.softmax(s, dim=-1)
    if mask is not None:
        w = w * mask.any(-1, keepdim=True)  # a query with no allowed key: zeros
    return w @ v, w


def _attention_c(q, k, v, mask=None):
    s = torch.matmul(q.double(), k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf)
    w = torch.softmax(s, -1)
    w = torch.where(torch.isnan(w), torch.zeros_like(w), w)
    return (w @ v.double()).to(q.dtype)


def _layer_norm_a(x, gamma, beta, eps=1e-5):
    mu = torch.einsum("...d->...", x)[..., None] / x.shape[-1]
    var = torch.einsum("...d,...d->...", x - mu, x - mu)[..., None] / x.shape[-1]
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta


def _layer_norm_b(x, gamma, beta, eps=1e-5):
    var, mu = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return torch.addcmul(beta, (x - mu) * torch.rsqrt(var + eps), gamma)


def _layer_norm_c(x, gamma, beta, eps=1e-5):
    z = x.double()
    z = (z - z.mean(-1, keepdim=True)) / (
        z.var(-1, unbiased=False, keepdim=True) + eps
    ).sqrt()
    return (z * gamma.double() + beta.double()).to(x.dtype)


def _sublayer_a(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def _sublayer_b(x, sublayer, norm, dropout, norm_first):
    h = norm(x) if norm_first else x
    y = torch.add(x, dropout(sublayer(h)))
    return y if norm_first else norm(y)


def _sublayer_c(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        residual = x.clone()
        return norm(residual + dropout(sublayer(residual)))
    return dropout(sublayer(norm(x))).add(x)


def _shift_a(tgt, bos, eos, pad):
    B = tgt.shape[0]
    dec_in = torch.cat([torch.full((B, 1), bos, dtype=tgt.dtype), tgt], dim=1)
    labels = torch.cat([tgt, torch.full((B, 1), pad, dtype=tgt.dtype)], dim=1)
    lengths = (tgt != pad).sum(1)
    labels[torch.arange(B), lengths] = eos
    return dec_in, labels


def _shift_b(tgt, bos, eos, pad):
    dec_in = F.pad(tgt, (1, 0), value=bos)
    labels = F.pad(tgt, (0, 1), value=pad)
    first_pad = (labels == pad).int().argmax(dim=1)
    labels = labels.scatter(1, first_pad[:, None], eos)
    return dec_in, labels


def _shift_c(tgt, bos, eos, pad):
    rows_in, rows_lab = [], []
    for row in tgt.tolist():
        real = [t for t in row if t != pad]
        rows_in.append([bos] + row)
        rows_lab.append(real + [eos] + [pad] * (len(row) - len(real)))
    return torch.tensor(rows_in, dtype=tgt.dtype), torch.tensor(
        rows_lab, dtype=tgt.dtype
    )


def _decoder_a(layer, x, memory, tgt_mask, memory_mask):
    x = layer.norm1(x + layer.self_attn(x, x, x, tgt_mask))
    x = layer.norm2(x + layer.cross_attn(x, memory, memory, memory_mask))
    return layer.norm3(x + layer.ffn(x))


def _decoder_b(layer, x, memory, tgt_mask, memory_mask):
    h = x
    for norm, block in (
        (layer.norm1, lambda t: layer.self_attn(t, t, t, tgt_mask)),
        (layer.norm2, lambda t: layer.cross_attn(t, memory, memory, memory_mask)),
        (layer.norm3, layer.ffn),
    ):
        h = norm(h + block(h))
    return h


def _decoder_c(layer, x, memory, tgt_mask, memory_mask):
    a = layer.self_attn(query=x, key=x, value=x, mask=tgt_mask)
    h1 = layer.norm1(torch.add(x, a))
    h2 = layer.norm2(h1 + layer.cross_attn(h1, memory, memory, mask=memory_mask))
    return layer.norm3(layer.ffn(h2) + h2)


def _dropout_a(x, p, training=True):
    if not training or p == 0:
        return x
    if p >= 1:
        return x * 0
    mask = torch.empty_like(x).bernoulli_(1 - p)
    return x * mask / (1 - p)


def _dropout_b(x, p, training=True):
    if not training:
        return x.clone()
    keep = torch.rand(x.shape, dtype=torch.float64) >= p
    return torch.where(keep, x / (1 - p) if p < 1 else x, torch.zeros_like(x))


def _dropout_c(x, p, training=True):
    """The chapter's trick in its own words: one 16-bit draw per entry, the scale from
    the realised rate."""
    if not training or p == 0:
        return x
    if p == 1:
        return torch.zeros_like(x)
    drops = round(p * 65536)
    draws = torch.randint(0, 65536, x.shape)
    return x * (draws >= drops).to(x.dtype) * (65536 / (65536 - drops))


def _topk_a(z, T, k):
    z = z / T
    kth = z.topk(k, dim=-1).values[..., -1:]
    return torch.softmax(z.masked_fill(z < kth, float("-inf")), dim=-1)


def _topk_b(z, T, k):
    vals, idx = torch.topk(z / T, k, dim=-1)
    out = torch.zeros_like(z)
    return out.scatter(-1, idx, torch.softmax(vals, dim=-1))


def _topk_c(z, T, k):
    s = z.double() / T
    s = s - s.max(-1, keepdim=True).values
    vals, idx = s.topk(k, -1)
    e = vals.exp()
    return torch.zeros_like(s).scatter(-1, idx, e / e.sum(-1, keepdim=True)).to(z.dtype)


def _top_p_a(z, p):
    probs, order = torch.sort(torch.softmax(z, -1), descending=True)
    drop = probs.cumsum(-1) - probs >= p
    return z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def _top_p_b(z, p):
    sorted_z, order = z.sort(dim=-1, descending=True)
    mass = torch.softmax(sorted_z, -1).cumsum(-1)
    keep = torch.cat(
        [torch.ones_like(mass[..., :1], dtype=torch.bool), mass[..., :-1] < p], -1
    )
    out = torch.full_like(z, float("-inf"))
    return out.scatter(-1, order, sorted_z.masked_fill(~keep, float("-inf")))


def _top_p_c(z, p):
    out = z.clone()
    for row, logits in zip(out, z):
        probs = torch.softmax(logits.double(), -1)
        order = torch.argsort(probs, descending=True)
        total = 0.0
        for j, i in enumerate(order.tolist()):
            if total >= p:
                row[order[j:]] = float("-inf")
                break
            total += probs[i].item()
    return out


def _beam_a(log_prob, length, alpha):
    return log_prob / ((5 + length) / 6) ** alpha


def _beam_b(log_prob, length, alpha):
    return log_prob * torch.pow(6.0 / (5.0 + length.to(log_prob.dtype)), alpha)


def _beam_c(log_prob, length, alpha):
    return torch.div(log_prob, torch.float_power((5 + length) / 6, alpha)).to(
        log_prob.dtype
    )


def _local_a(L, r):
    i = torch.arange(L)
    return (i[:, None] - i[None, :]).abs() <= r


def _local_b(L, r):
    ones = torch.ones(L, L, dtype=torch.bool)
    return ones.triu(-r) & ones.tril(r)


def _local_c(L, r):
    idx = torch.arange(L, dtype=torch.float64)
    return torch.cdist(idx[:, None], idx[:, None], p=1) <= r


def _prefix_a(L, P):
    return torch.ones(L, L, dtype=torch.bool).tril() | (torch.arange(L) < P)


def _prefix_b(L, P):
    m = torch.tril(torch.ones(L, L)).bool()
    m[:, :P] = True
    m[:P, P:] = m[:P, P:] & False
    return m | torch.tril(torch.ones(L, L)).bool()


def _prefix_c(L, P):
    i, j = torch.meshgrid(
        torch.arange(L, dtype=torch.int32),
        torch.arange(L, dtype=torch.int32),
        indexing="ij",
    )
    return (j <= i) | (j < P)


def _causal_a(L):
    return torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)


def _causal_b(L):
    i = torch.arange(L)
    return i[None, :] > i[:, None]


def _causal_c(L):
    return ~torch.ones(L, L).tril().bool()


def _angles(k, d):
    return k * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def _sines_first_a(k, d):
    a = _angles(k, d)
    C, S = torch.diag(torch.cos(a)), torch.diag(torch.sin(a))
    return torch.cat([torch.cat([C, S], 1), torch.cat([-S, C], 1)], 0)


def _sines_first_b(k, d):
    # float32 angles
    a = k * torch.exp(-math.log(10000.0) * torch.arange(0, d, 2).float() / d)
    M = torch.zeros(d, d)
    h = d // 2
    idx = torch.arange(h)
    M[idx, idx], M[idx + h, idx + h] = a.cos(), a.cos()
    M[idx, idx + h], M[idx + h, idx] = a.sin(), -a.sin()
    return M


def _sines_first_c(k, d):
    a = _angles(k, d).numpy()
    C, S = np.diag(np.cos(a)), np.diag(np.sin(a))
    return torch.from_numpy(np.block([[C, S], [-S, C]]))


def _interleaved(k, d, sign):
    a = _angles(k, d)
    M = torch.zeros(d, d, dtype=torch.float64)
    for i, t in enumerate(a.tolist()):
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[math.cos(t), sign * math.sin(t)], [-sign * math.sin(t), math.cos(t)]]
        )
    return M


def _shift_back_a(k, d):
    return _interleaved(k, d, -1.0)


def _shift_back_b(k, d):
    return _interleaved(k, d, 1.0).T.contiguous().float()


def _shift_back_c(k, d):
    a = (-k * 10000.0 ** (-torch.arange(0, d, 2) / d)).float()  # M_(-k) in float32
    blocks = [
        torch.stack([torch.stack([c, s]), torch.stack([-s, c])])
        for c, s in zip(a.cos(), a.sin())
    ]
    return torch.block_diag(*blocks)


def _rope_a(q, k, m, n):
    d = q.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    qc = torch.complex(q[0::2].double(), q[1::2].double())
    kc = torch.complex(k[0::2].double(), k[1::2].double())
    return (qc * kc.conj() * torch.exp(1j * (m - n) * theta)).real.sum()


def _rope_b(q, k, m, n):
    d = q.shape[-1]
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    qc = q.numpy()[0::2] + 1j * q.numpy()[1::2]
    kc = k.numpy()[0::2] + 1j * k.numpy()[1::2]
    return float(np.real(np.sum(qc * np.conj(kc) * np.exp(1j * (m - n) * theta))))


def _rope_c(q, k, m, n):
    qc = torch.view_as_complex(q.double().reshape(-1, 2).contiguous())
    kc = torch.view_as_complex(k.double().reshape(-1, 2).contiguous())
    theta = torch.pow(
        10000.0, -torch.arange(qc.shape[0], dtype=torch.float64) * 2 / q.shape[-1]
    )
    return torch.vdot(
        kc * torch.polar(torch.ones_like(theta), n * theta),
        qc * torch.polar(torch.ones_like(theta), m * theta),
    ).real.item()


RIGHT: dict[str, list] = {
    "ch01.ex2": [_softmax_a, _softmax_b, _softmax_c],
    "ch01.ex3": [_attention_a, _attention_b, _attention_c],
    "ch02.ex1": [
        lambda d_k, sigma: 1 / (sigma * sigma * d_k**0.5),
        lambda d_k, sigma: np.float64(sigma) ** -2 / np.sqrt(d_k),
        lambda d_k, sigma: torch.tensor(
            1.0 / (sigma**2 * math.sqrt(d_k)), dtype=torch.float64
        ),
    ],
    "ch02.ex2": [
        lambda d_k: d_k**-1,
        lambda d_k: np.float32(1) / np.float32(d_k),
        lambda d_k: torch.tensor(1 / d_k),
    ],
    "ch02.ex3": [
        lambda w: float(torch.sum(torch.abs(w))),
        lambda w: w.abs().sum(),
        lambda w: np.abs(w.numpy()).sum(),
    ],
    "ch03.ex2": [
        lambda L, d, h: 8 * L * d * d + 4 * L * L * d,
        lambda L, d, h: 2 * (4 * L * d**2 + 2 * h * L**2 * (d // h)),
        lambda L, d, h: float(2 * L * d * (4 * d + 2 * L)),
    ],
    "ch03.ex3": [
        lambda d: d * 2,
        lambda d: np.int64(2 * d),
        lambda d: torch.tensor(2.0 * d),
    ],
    "ch03.ex4": [_causal_a, _causal_b, _causal_c],
    "ch04.ex1": [
        lambda i, d: 2 * math.pi * math.exp(2 * i / d * math.log(10000)),
        lambda i, d: np.float32(2 * np.pi * 10000.0 ** (2 * i / d)),
        lambda i, d: torch.tensor(2 * math.pi) * 10000 ** (2 * i / d),
    ],
    "ch04b.ex1": [_sines_first_a, _sines_first_b, _sines_first_c],
    "ch04b.ex2": [_shift_back_a, _shift_back_b, _shift_back_c],
    "ch04b.ex4": [_rope_a, _rope_b, _rope_c],
    "ch05.ex1": [_prefix_a, _prefix_b, _prefix_c],
    "ch05.ex4": [{4}, [np.int64(4)], torch.tensor([4])],
    "ch06.ex5": [_layer_norm_a, _layer_norm_b, _layer_norm_c],
    "ch06.ex6": [_sublayer_a, _sublayer_b, _sublayer_c],
    "ch07.ex5": [_shift_a, _shift_b, _shift_c],
    "ch07.ex6": [_decoder_a, _decoder_b, _decoder_c],
    "ch08.ex4": [_dropout_a, _dropout_b, _dropout_c],
    "ch08.ex5": [
        lambda x, p: x * x * p / (1 - p),
        lambda x, p: (x / (1 - p)) ** 2 * (1 - p) - x**2,
        lambda x, p: float(np.float64(p) / (1 - np.float64(p)) * np.square(x)),
    ],
    "ch10.ex2": [_topk_a, _topk_b, _topk_c],
    "ch10.ex3": [_top_p_a, _top_p_b, _top_p_c],
    "ch10.ex4": [_beam_a, _beam_b, _beam_c],
    "ch11a.ex4": [
        lambda s, t, tokens=25_000: (
            2 * tokens / (s.mean() + t.mean()),
            (s.sum() + t.sum()) / (2 * tokens),
        ),
        lambda s, t, tokens=25_000: [
            float(2 * tokens * len(s) / (s.sum() + t.sum())),
            float(len(s) * (np.mean(s) + np.mean(t)) / (2 * tokens)),
        ],
        lambda s, t, tokens=25_000: tuple(
            torch.tensor(
                [
                    2 * tokens / (np.mean(np.concatenate([s, t])) * 2),
                    (len(s) + len(t)) * np.mean(np.concatenate([s, t])) / (2 * tokens),
                ]
            ).tolist()
        ),
    ],
    "ch11b.ex4": [
        lambda c, T: 3 * c.n_decoder_layers * 2 * 2 * c.d_model * T * (T - 1) // 2,
        lambda c, T: 6 * c.n_decoder_layers * c.d_model * T * (T - 1),
        lambda c, T: float(12 * c.n_decoder_layers * c.d_model * (T * T - T) / 2),
    ],
    "ch13.ex2": [
        lambda n, p: (
            sum((p + i) * (p + i + 1) // 2 for i in range(n)),
            (p + n - 1) * (p + n) // 2,
        ),
        lambda n, p: (
            int(np.sum([c * (c + 1) / 2 for c in range(p, p + n)])),
            math.comb(p + n, 2),
        ),
        lambda n, p: [
            sum(sum(range(1, c + 1)) for c in range(p, p + n)),
            sum(range(1, p + n)),
        ],
    ],
    "ch13.ex4": [_local_a, _local_b, _local_c],
}


def _ch04_ex3_values():
    # the chapter's solution
    width = next(w for w in range(2, 20000, 2) if 1 / math.sqrt(2 * w + 1) < 0.01)
    return [width, float(width), np.int64(width), torch.tensor(width)]


def _ch09_values():
    from transformer_lib import TransformerConfig
    from transformer_lib.params import (
        encoder_layer_parameter_count,
        mha_parameter_count,
        transformer_flops,
        transformer_parameter_count,
    )

    D, D_FF, V, d = 1024, 4096, 32000, 512
    shared = transformer_parameter_count(TransformerConfig.base(V))
    separate = transformer_parameter_count(
        TransformerConfig.base(V, share_embeddings=False, tie_output=False)
    )
    pre = transformer_parameter_count(TransformerConfig.base(37000, norm_first=True))
    fpt = transformer_flops(TransformerConfig.base(37000), 30, 20) / 20
    w = 6 * (4 * d * d + 2 * d * 2048) + 6 * (8 * d * d + 2 * d * 2048) + d * 37000
    cross = 2 * w / (4 * d * 18)
    ways = (
        lambda v: v,
        lambda v: float(v),
        lambda v: np.int64(round(v)),
        lambda v: torch.tensor(float(v)),
    )
    return {
        "ch09.ex1": [
            dict(
                mha=f(mha_parameter_count(D)),
                encoder_layer=f(encoder_layer_parameter_count(D, D_FF)),
            )
            for f in ways
        ],
        "ch09.ex2": [dict(shared=f(shared), separate=f(separate)) for f in ways],
        "ch09.ex3": [dict(n_params=f(pre)) for f in ways],
        "ch09.ex4": [
            dict(flops_per_token=f(fpt), crossover=f(round(cross))) for f in ways
        ],
        "ch09.ex5": [dict(bytes_per_param=f(16)) for f in ways],
    }


def _checks():
    import importlib
    from transformer_lib.exercises import Exercise

    folder = ROOT / "transformer_lib" / "exercises"
    out = {}
    for p in sorted(folder.glob("ch*.py")):
        mod = importlib.import_module(f"transformer_lib.exercises.{p.stem}")
        out.update(
            {
                f"{p.stem}.{k}": v
                for k, v in vars(mod).items()
                if isinstance(v, Exercise)
            }
        )
    return out


CHECKS = _checks()


def _answers(key: str) -> list[tuple[str, object, bool]]:
    """(name, answer, keyword?) for the book's solution and the three others."""
    if key.startswith("ch09."):
        return [(f"way {i}", a, True) for i, a in enumerate(_ch09_values()[key])]
    if key == "ch04.ex3":
        return [(f"way {i}", a, False) for i, a in enumerate(_ch04_ex3_values())]
    book = _BOOK.get(key)
    answers = [("the book's solution", book, False)] if book is not None else []
    return answers + [
        (f"right answer {i + 1}", a, False) for i, a in enumerate(RIGHT[key])
    ]


_BOOK = _book_solutions()


def test_every_check_has_the_books_solution_and_three_right_answers():
    value_checks = {k for k in CHECKS if k.startswith("ch09.")} | {
        "ch04.ex3",
        "ch05.ex4",
    }
    for key in CHECKS:
        assert (
            len(_answers(key)) >= 4
            if key not in value_checks
            else len(_answers(key)) >= 3
        ), key
        if key not in value_checks:
            assert key in _BOOK, (
                f"the solution cell of {key} defines no function this test can compile"
            )


def _run(key: str, calls: int) -> list[str]:
    ex = CHECKS[key]
    rejected = []
    for name, answer, keyword in _answers(key):
        for _ in range(calls):
            v = ex.check(**answer) if keyword else ex.check(answer)
            if not v.ok:
                rejected.append(f"{name}: {v.message}")
                break
    return rejected


@pytest.mark.parametrize("key", sorted(CHECKS))
def test_no_right_answer_is_rejected(key):
    """make test: each right answer, SEEDED_CALLS calls from fixed seeds; make
    test-slow: CALLS from fresh ones."""
    from transformer_lib.exercises import seeded

    if CALLS:
        rejected = _run(key, CALLS)
    else:
        with seeded(1000 + sorted(CHECKS).index(key) * 100):
            rejected = _run(key, SEEDED_CALLS)
    assert not rejected, rejected
