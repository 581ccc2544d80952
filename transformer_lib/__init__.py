"""The Transformer of 'Attention Is All You Need', built one component at a time: the library behind the book 'The Transformer, Built'.

Modules:

- `transformer_lib.attention`: An attention function can be described as mapping a query and a set of key-value pairs to an output, where the query, keys, values, and output are all vectors. The output is computed as a weighted sum of the values, where the weight assigned to each value is computed by a compatibility function of the query with the corresponding key."""

__version__ = "0.1.0"

from .attention import *  # noqa: F401,F403
