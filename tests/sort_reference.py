"""Float64/int reference of hetnn.sort / argsort: per line, Python's stable sort with NaN the largest value
(ascending: NaN last; descending: NaN first); -0.0 and 0.0 equal."""
import math

import numpy as np


def argsort(x, axis, descending):
    """int64 positions along ``axis`` (x: a NumPy array of any real dtype)."""
    moved = np.moveaxis(np.asarray(x), axis, -1)
    out = np.empty(moved.shape, np.int64)
    flat, res = moved.reshape(-1, moved.shape[-1]), out.reshape(-1, moved.shape[-1])
    for r, line in enumerate(flat):
        vals = [float(v) if line.dtype.kind == "f" else int(v) for v in line]
        nan = [isinstance(v, float) and math.isnan(v) for v in vals]
        if descending:
            order = sorted(range(len(vals)), key=lambda j: (not nan[j], 0 if nan[j] else -vals[j]))
        else:
            order = sorted(range(len(vals)), key=lambda j: (nan[j], 0 if nan[j] else vals[j]))
        res[r] = order
    return np.moveaxis(out, -1, axis)


def sort(x, axis, descending):
    return np.take_along_axis(np.asarray(x), argsort(x, axis, descending), axis=axis)
