"""Converting arrays and numpy scalars into values `json` can write."""

import numpy as np


def to_python(value):
    """Arrays -> floats or lists, for JSON."""
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array.tolist()
