# Run before every Python case (harness.py prepends it). A case signals its verdict with these helpers; anything
# else that escapes (an unexpected exception type) is a finding too.
import contextlib as _contextlib
import os
import re as _re
import sys

TMP = os.environ["HARNESS_TMP"]
DEV = os.environ.get("HARNESS_DEVICE", "cpu")


def wrong(message):
    """A wrong result: hetnn returned something other than the float64 reference."""
    print("WRONG-RESULT: " + message, file=sys.stderr, flush=True)
    os._exit(4)


def data_loss(message):
    """Something the user had (a model file, results) is gone or damaged."""
    print("DATA-LOSS: " + message, file=sys.stderr, flush=True)
    os._exit(3)


def bad_error(message):
    print("BAD-ERROR: " + message, file=sys.stderr, flush=True)
    os._exit(5)


def check_close(got, want, rtol=1e-4, atol=1e-4, what="result"):
    import numpy as np
    got = np.asarray(got)
    if got.shape != np.shape(want) or not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        wrong(f"{what}: shape {got.shape} vs {np.shape(want)}, max diff "
              f"{np.nanmax(np.abs(got.astype(np.float64) - want)) if got.shape == np.shape(want) else 'n/a'}")


@_contextlib.contextmanager
def expect_error(types, *patterns):
    """The block must raise one of `types` whose message matches every regex in `patterns` (the argument named,
    what was expected)."""
    try:
        yield
    except types as exc:
        for p in patterns:
            if not _re.search(p, str(exc), _re.S):
                bad_error(f"{type(exc).__name__} without /{p}/: {exc}")
    except BaseException as exc:
        bad_error(f"expected {types}, got {type(exc).__name__}: {exc}")
    else:
        bad_error(f"expected {types}, nothing was raised")


def done():
    print("HARNESS-OK", flush=True)
