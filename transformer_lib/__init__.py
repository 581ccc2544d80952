"""The Transformer of 'Attention Is All You Need', built one component at a time: the
library behind the book 'The Transformer, Built'."""

__version__ = "0.1.0"

# The package's names re-exported (ruff's F401/F403 are off for this file,
# pyproject.toml): `__all__` below is built from the modules' own lists.
from . import attention as _attention
from . import data as _data
from . import decoding as _decoding
from . import dropout as _dropout
from . import layers as _layers
from . import masks as _masks
from . import model as _model
from . import multihead as _multihead
from . import params as _params
from . import positional as _positional
from . import training as _training
from . import variants as _variants
from .attention import *
from .multihead import *
from .positional import *
from .masks import *
from .layers import *
from .model import *
from .dropout import *
from .params import *
from .decoding import *
from .data import *

# training's `__all__` is built from its modules' (chapter 11b), which type checkers
# cannot evaluate: its names are imported by name, so that `from transformer_lib import
# TrainConfig` is typed for users (tests/test_packaging.py checks this list against
# `training.__all__`)
from .training import (
    BF16_ENV,
    MIN_LOSS_SCALE,
    ONEDNN_CACHE_ENV,
    RunState,
    StepPlan,
    TrainConfig,
    TrainingData,
    TrainingRun,
    average_state_dicts,
    bucket_batches,
    bucket_rows,
    bucket_widths,
    chunked_cross_entropy,
    corpus_bleu,
    evaluate_loss,
    hardware_info,
    keep_freed_memory,
    label_smoothed_cross_entropy,
    load_checkpoint,
    make_optimizer,
    make_scheduler,
    multi30k_data,
    native_bf16,
    noam_lr,
    plan_step,
    read_metrics,
    resolve_bf16,
    resolve_precision,
    resolve_step_path,
    run_training,
    teacher_forced_loss,
    toy_translation_data,
    train_flops,
    translate,
    translation_scores,
)
from .variants import *

# The public API: each module's generated `__all__`, in reading order (`from
# transformer_lib import *` gives exactly these). `transformer_lib.train` (the command
# line) and `transformer_lib.viz` (plots, needs matplotlib) are imported on their own.
__all__ = ["__version__"] + [
    name
    for module in (
        _attention,
        _multihead,
        _positional,
        _masks,
        _layers,
        _model,
        _dropout,
        _params,
        _decoding,
        _data,
        _training,
        _variants,
    )
    for name in module.__all__
]
