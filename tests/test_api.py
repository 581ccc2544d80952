"""The public API contract of DESIGN.md: every name importable from the top level.

Each chapter that exports a public name adds it here, so that a module silently
overwritten by a second `default_exp` (nbdev's failure mode) fails this test loudly.
"""

import importlib

import pytest

import transformer_lib

PUBLIC = {
    "attention": ["attention", "check_mask"],
    "multihead": ["MultiHeadAttention", "load_torch_mha_weights"],
    "positional": [
        "sinusoidal_positional_encoding",
        "PositionalEncoding",
        "LearnedPositionalEmbedding",
        "RotaryEmbedding",
    ],
    "masks": [
        "padding_mask",
        "causal_mask",
        "target_mask",
        "shift_right",
        "teacher_forcing",
    ],
    "layers": ["PositionwiseFeedForward", "EncoderLayer", "Encoder"],
    "model": [
        "DecoderLayer",
        "Decoder",
        "TransformerConfig",
        "Transformer",
        "load_torch_transformer_weights",
        "stacks_from_torch_transformer",
    ],
    "dropout": [
        "mask_drop_probability",
        "fast_dropout",
        "FastDropout",
        "use_fast_dropout",
    ],
    "params": [
        "count_parameters",
        "transformer_parameter_count",
        "mha_parameter_count",
        "ffn_parameter_count",
        "encoder_layer_parameter_count",
        "decoder_layer_parameter_count",
        "transformer_flops",
    ],
    "data": [
        "load_multi30k",
        "multi30k_file",
        "multi30k_search_dirs",
        "default_cache_dir",
        "sha256_file",
        "verify_checksum",
        "fetch_url",
        "read_lines_gz",
        "DataNotFoundError",
        "ChecksumError",
        "SubwordTokenizer",
        "filter_by_length",
        "token_batches",
        "pad_sequences",
        "Batch",
        "TokenBatches",
        "number_pairs",
    ],
    "decoding": [
        "softmax_with_temperature",
        "top_k_filter",
        "top_p_filter",
        "sample_logits",
        "IncrementalDecoder",
        "greedy_decode",
        "sample",
        "beam_search",
        "length_penalty_gnmt",
        "sequence_log_prob",
    ],
    "training": [
        "make_optimizer",
        "noam_lr",
        "make_scheduler",
        "label_smoothed_cross_entropy",
        "chunked_cross_entropy",
        "keep_freed_memory",
        "TrainConfig",
        "teacher_forced_loss",
        "TrainingData",
        "toy_translation_data",
        "multi30k_data",
        "translate",
        "corpus_bleu",
        "hardware_info",
        "train_flops",
        "evaluate_loss",
        "read_metrics",
        "run_training",
        "translation_scores",
        "average_state_dicts",
        "load_checkpoint",
        "native_bf16",
        "resolve_bf16",
    ],
    "variants": [
        "EncoderOnlyTransformer",
        "DecoderOnlyTransformer",
        "mask_tokens_for_mlm",
    ],
}


@pytest.mark.parametrize("module,names", sorted(PUBLIC.items()))
def test_public_names_importable(module, names):
    mod = importlib.import_module(f"transformer_lib.{module}")
    for name in names:
        assert name in mod.__all__, (
            f"{name} missing from transformer_lib.{module}.__all__"
        )
        assert getattr(transformer_lib, name) is getattr(mod, name)


def test_version():
    assert (
        isinstance(transformer_lib.__version__, str)
        and transformer_lib.__version__.count(".") == 2
    )


@pytest.mark.parametrize("name", sorted(n for names in PUBLIC.values() for n in names))
def test_public_name_documented(name):
    obj = getattr(transformer_lib, name)
    assert obj.__doc__ and len(obj.__doc__.strip()) > 20, (
        f"{name} has no real docstring"
    )
