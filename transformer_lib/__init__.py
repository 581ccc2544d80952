"""The Transformer of 'Attention Is All You Need', built one component at a time: the library behind the book 'The Transformer, Built'."""

__version__ = "0.1.0"

from .attention import *  # noqa: F401,F403
from .multihead import *  # noqa: F401,F403
from .positional import *  # noqa: F401,F403
from .masks import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .params import *  # noqa: F401,F403
from .decoding import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .training import *  # noqa: F401,F403
from .variants import *  # noqa: F401,F403
