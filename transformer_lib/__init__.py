"""The Transformer of 'Attention Is All You Need', built one component at a time: the library behind the book 'The Transformer, Built'."""

__version__ = "0.1.0"

from . import attention as _attention, data as _data, decoding as _decoding, layers as _layers, masks as _masks  # noqa: I001
from . import dropout as _dropout, model as _model, multihead as _multihead, params as _params
from . import positional as _positional
from . import training as _training, variants as _variants
from .attention import *  # noqa: F401,F403
from .multihead import *  # noqa: F401,F403
from .positional import *  # noqa: F401,F403
from .masks import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .params import *  # noqa: F401,F403
from .decoding import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .training import *  # noqa: F401,F403
from .variants import *  # noqa: F401,F403

# The public API: each module's generated `__all__`, in reading order (`from transformer_lib import *`
# gives exactly these). `transformer_lib.train` (the command line) and `transformer_lib.viz`
# (plots, needs matplotlib) are imported on their own.
__all__ = ["__version__"] + [name for module in (_attention, _multihead, _positional, _masks, _layers, _model,
                                                 _dropout, _params, _decoding, _data, _training, _variants)
                             for name in module.__all__]
