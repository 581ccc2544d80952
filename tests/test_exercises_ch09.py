"""Chapter 9's checks name each mistake they promise, pass the right answers, and never
show a traceback."""

import pytest

from transformer_lib import TransformerConfig
from transformer_lib.exercises import ch09
from transformer_lib.params import (
    encoder_layer_parameter_count,
    mha_parameter_count,
    transformer_flops,
    transformer_parameter_count,
)

D, H, D_FF = 1024, 16, 4096
MHA, ENC = mha_parameter_count(D), encoder_layer_parameter_count(D, D_FF)
V, d = 32000, 512
SHARED = transformer_parameter_count(TransformerConfig.base(V))
SEPARATE = transformer_parameter_count(
    TransformerConfig.base(V, share_embeddings=False, tie_output=False)
)
POST = transformer_parameter_count(TransformerConfig.base(37000))
PRE = transformer_parameter_count(TransformerConfig.base(37000, norm_first=True))
BASE = TransformerConfig.base(37000)
FPT = transformer_flops(BASE, 30, 20) / 20
_W = 6 * (4 * d * d + 2 * d * 2048) + 6 * (8 * d * d + 2 * d * 2048) + d * 37000
CROSS = 2 * _W / (4 * d * 18)


def test_right_answers_pass():
    for v in (
        ch09.ex1.check(mha=MHA, encoder_layer=ENC),
        ch09.ex2.check(shared=SHARED, separate=SEPARATE),
        ch09.ex3.check(n_params=PRE),
        ch09.ex4.check(flops_per_token=FPT, crossover=round(CROSS)),
        ch09.ex5.check(bytes_per_param=16),
    ):
        assert v.ok, v.message
    # a float with an integer value is fine
    assert ch09.ex1.check(mha=float(MHA), encoder_layer=ENC).ok


@pytest.mark.parametrize(
    "mha, message",
    [
        (4 * D * D, "forgot the biases"),
        (4 * D * D + 5 * D, "biases of W_O twice"),
        (4 * D * D + 3 * D, "W_O has a bias too"),
        (3 * D * D + 3 * D, "you forgot W_O"),
        (H * MHA, "per head"),
        (H * 4 * D * D + 4 * D, "per head"),
        (4 * D * (D // H) + 4 * (D // H), "one head's slice"),
        (MHA + 7, "not right"),
    ],
)
def test_ex1_attention_mistakes(mha, message):
    v = ch09.ex1.check(mha=mha, encoder_layer=ENC)
    assert not v.ok and message in v.message, v.message


@pytest.mark.parametrize(
    "enc, message",
    [
        (ENC - 2 * D, "LayerNorm's parameters once instead of twice per layer"),
        (ENC - D, "only the gain of one LayerNorm"),
        (ENC + 2 * D, "three LayerNorms"),
        (ENC - D_FF - D, "FFN's biases"),
        (ENC - 4 * D - D_FF - D, "biases of the attention projections and of the FFN"),
        (ENC - 4 * D - D_FF - 2 * D, "LayerNorm's β"),
        (ENC - D * D_FF, "one FFN matrix"),
        (ENC + MHA, "two attention sub-layers"),
        (ENC - (2 * D * D_FF + D_FF + D), "forgot the feed-forward network"),
        (ENC + D, "biases of W_O twice"),
        (ENC - 4 * D, "4d short"),
        (ENC + 1, "not right"),
    ],
)
def test_ex1_encoder_layer_mistakes(enc, message):
    v = ch09.ex1.check(mha=MHA, encoder_layer=enc)
    assert not v.ok and message in v.message, v.message


def _structural(config):
    c, n = config, transformer_parameter_count(config)
    return [
        (
            n - 6 * 2 * d - 6 * 4 * d,
            "LayerNorm's parameters once instead of twice per layer",
        ),
        (n - 6 * 2 * d, "three, one after each of its three sub-layers"),
        (n - 30 * 2 * d, "left out the LayerNorms"),
        (n - 6 * mha_parameter_count(d), "cross-attention"),
        (
            n - 6 * (2 * mha_parameter_count(d) + 2 * d * 2048 + 2048 + d + 6 * d),
            "left out the decoder stack",
        ),
        (n + 4 * d, "added final LayerNorms"),
        (n + c.tgt_vocab_size, "output layer a bias"),
        (n - 18 * 4 * d - 12 * (2048 + d), "forgot the biases"),
    ]


@pytest.mark.parametrize(
    "shared, message",
    [
        (SHARED + V * d, "counted the shared embedding twice"),
        (SHARED + 2 * V * d, "three times"),
        (SHARED - V * d, "left out the shared"),
        (SHARED + 3, "not right"),
    ]
    + _structural(TransformerConfig.base(V)),
)
def test_ex2_shared_mistakes(shared, message):
    v = ch09.ex2.check(shared=shared, separate=SEPARATE)
    assert not v.ok and message in v.message, v.message


@pytest.mark.parametrize(
    "separate, message",
    [
        (SEPARATE - 2 * V * d, "you counted one V × d matrix"),
        (SEPARATE - V * d, "you counted two V × d matrices"),
        (SEPARATE + V * d, "four V × d matrices"),
        (SEPARATE - 1, "not right"),
    ]
    + _structural(TransformerConfig.base(V, share_embeddings=False, tie_output=False)),
)
def test_ex2_separate_mistakes(separate, message):
    v = ch09.ex2.check(shared=SHARED, separate=separate)
    assert not v.ok and message in v.message, v.message


@pytest.mark.parametrize(
    "n, message",
    [
        (POST, "that is the post-LN count"),
        (POST + 2 * d, "one final LayerNorm"),
        (POST + 12 * 2 * d, "a LayerNorm per layer"),
        (PRE + 37000 * d, "shared embedding twice"),
        (PRE - 60 * d, "dropped the per-layer LayerNorms"),
        (PRE + 5, "not right"),
    ],
)
def test_ex3_mistakes(n, message):
    v = ch09.ex3.check(n_params=n)
    assert not v.ok and message in v.message, v.message


_ATT = 3 * (6 * 4 * 30 * 30 * d + 6 * 4 * (20 * 20 + 20 * 30) * d) / 20


@pytest.mark.parametrize(
    "fpt, message",
    [
        (FPT / 3, "forward pass only"),
        (FPT / 2, "a multiply-add is 2 FLOPs"),
        (FPT / 6, "forward multiply-adds"),
        (FPT * 20 / 30, "you divided by S"),
        (FPT - _ATT, "attention products"),
        (FPT - 6 * d * 37000, "left out the output layer"),
        (
            FPT - 3 * 6 * 4 * d * d * 30 / 20 + 3 * 6 * 4 * d * d,
            "not the T target tokens",
        ),
        (6 * POST, "6N rule of thumb"),
        (FPT * 1.01, "not right"),
    ],
)
def test_ex4_flops_mistakes(fpt, message):
    v = ch09.ex4.check(flops_per_token=fpt, crossover=CROSS)
    assert not v.ok and message in v.message, v.message


@pytest.mark.parametrize(
    "L, message",
    [
        (2 * (_W - d * 37000) / (4 * d * 18), "left out the output layer"),
        (2 * _W / (4 * d * 12), "one attention product term"),
        (2 * CROSS, "only Q Kᵀ"),
        (CROSS / 2, "P FLOPs per token"),
        (CROSS**0.5, "square root"),
        (CROSS + 50, "not right"),
    ],
)
def test_ex4_crossover_mistakes(L, message):
    v = ch09.ex4.check(flops_per_token=FPT, crossover=L)
    assert not v.ok and message in v.message, v.message


@pytest.mark.parametrize(
    "b, message",
    [
        (12, "master copy"),
        (8, "two 32-bit moments"),
        (20, "weights and gradients in 32 bits"),
        (18, "gradients are bf16"),
        (14, "two moments"),
        (10, "moments in 16 bits"),
        (15.5, "not right"),
        (4, "not right"),
    ],
)
def test_ex5_mistakes(b, message):
    v = ch09.ex5.check(bytes_per_param=b)
    assert not v.ok and message in v.message, v.message


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ch09.ex1.check(MHA), "by name"),
        (lambda: ch09.ex1.check(mha=MHA), "encoder_layer="),
        (lambda: ch09.ex1.check(mha="a lot", encoder_layer=ENC), "finite number"),
        (lambda: ch09.ex1.check(mha=MHA + 0.5, encoder_layer=ENC), "whole"),
        (lambda: ch09.ex2.check(shared=SHARED), "separate="),
        (lambda: ch09.ex3.check(n_params=None), "n_params="),
        (lambda: ch09.ex4.check(flops_per_token=FPT), "both answers"),
        (
            lambda: ch09.ex4.check(flops_per_token=[FPT], crossover=CROSS),
            "finite number",
        ),
        (lambda: ch09.ex5.check(), "bytes_per_param="),
        (lambda: ch09.ex5.check(bytes_per_param=float("nan")), "finite number"),
    ],
)
def test_wrong_kinds_of_answer_get_a_sentence(call, message):
    v = call()
    assert not v.ok and message in v.message, v.message


def test_numpy_scalars_are_counts():
    """Issue: 09.1 refused NumPy scalars with "should be a finite number; got
    np.int64(…)"."""
    import numpy as np

    assert ch09.ex1.check(mha=np.int64(MHA), encoder_layer=np.int64(ENC)).ok
    assert ch09.ex2.check(shared=np.int32(SHARED), separate=np.float64(SEPARATE)).ok
    assert ch09.ex4.check(
        flops_per_token=np.float64(FPT), crossover=np.float32(round(CROSS))
    ).ok
    assert ch09.ex5.check(bytes_per_param=np.int8(16)).ok
    v = ch09.ex1.check(mha=np.int64(4 * D * D), encoder_layer=ENC)
    assert not v.ok and "forgot the biases" in v.message, v.message
