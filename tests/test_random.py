"""hetnn.random on every device: the stream against its definition computed here in NumPy (SplitMix64 over (seed,
counter), core/ops.h), the same numbers on every device, a stream continued across calls, the ranges and the
distributions' moments (bounds far outside sampling noise: a false alarm is below one in 10^9 runs), and the
refusals."""
import numpy as np
import pytest

import hetnn

GAMMA, M1, M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def splitmix64(seed, counters):
    """core/ops.h splitmix64(seed, k) for each k of ``counters`` (uint64 arithmetic wraps)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (counters.astype(np.uint64) + np.uint64(1)) * GAMMA
        z = (z ^ (z >> np.uint64(30))) * M1
        z = (z ^ (z >> np.uint64(27))) * M2
        return z ^ (z >> np.uint64(31))


def _seed(rng):
    return int(rng.integers(0, 2**63)) * 2 + int(rng.integers(2))


def _real(device):
    return "float64" if "float64" in device.dtypes else "float32"


def test_uniform_draws_are_the_definition_bit_for_bit(device, rng):
    seed = _seed(rng)
    g = hetnn.random.default_rng(seed)
    n = 1000
    for dtype, bits in (("float32", 24), ("float64", 53), ("float16", 11), ("bfloat16", 8)):
        if dtype not in device.dtypes:
            continue
        offset = g._g.offset
        got = g.random(n, dtype=dtype, device=device).numpy()
        draws = splitmix64(seed, np.arange(offset, offset + n))
        want = (draws >> np.uint64(64 - bits)).astype(np.float64) * 2.0 ** -bits
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got.astype(np.float64), want)
        assert 0 <= got.astype(np.float64).min() and got.astype(np.float64).max() < 1


def test_integer_draws_are_the_definition(device, rng):
    seed = _seed(rng)
    g = hetnn.random.default_rng(seed)
    for low, high, dtype in ((0, 10, "int64"), (-5, 3, "int8"), (0, 256, "uint8"), (-(2**40), 2**41, "int64"),
                             (-(2**31), 2**31, "int32")):
        offset = g._g.offset
        got = g.integers(low, high, 500, dtype=dtype, device=device).numpy()
        span = high - low
        draws = splitmix64(seed, np.arange(offset, offset + 500))
        want = np.array([low + ((int(d) * span) >> 64) for d in draws])
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.astype(np.int64), want)
    full = g.integers(-(2**63), 2**63 - 1, 1000, endpoint=True, device=device).numpy()
    assert full.min() < -(2**61) and full.max() > 2**61  # the whole int64 range (span 2**64)


def test_one_seed_gives_the_same_stream_on_every_device(rng):
    seed = _seed(rng)
    outs = []
    for dev in hetnn.devices():
        g = hetnn.random.default_rng(seed)
        outs.append((dev, g.random((3, 50), dtype="float32", device=dev).numpy(),
                     g.integers(0, 1000, 77, device=dev).numpy(),
                     g.normal(2.0, 3.0, 300, dtype="float32", device=dev).numpy()))
    for dev, u, i, z in outs[1:]:
        np.testing.assert_array_equal(u, outs[0][1], err_msg=dev.id)
        np.testing.assert_array_equal(i, outs[0][2], err_msg=dev.id)
        np.testing.assert_allclose(z, outs[0][3], rtol=1e-5, atol=1e-5, err_msg=dev.id)


def test_a_stream_continues_across_calls_and_devices(device, rng):
    seed = _seed(rng)
    whole = hetnn.random.default_rng(seed).random(100, dtype="float32", device=device).numpy()
    g = hetnn.random.default_rng(seed)
    first = g.random(30, dtype="float32", device=device).numpy()
    second = g.random((7, 10), dtype="float32", device="cpu").numpy()
    np.testing.assert_array_equal(np.concatenate([first, second.ravel()]), whole)
    assert g.random(device=device).shape == ()  # size None: one value, 0-d


def test_uniform_moments_and_ranges(device, rng):
    g = hetnn.random.default_rng(_seed(rng))
    n = 200_000
    u = g.random(n, device=device).numpy().astype(np.float64)
    assert u.dtype == np.float64 and 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 6.5 * np.sqrt(1 / 12 / n)
    assert abs(u.var() - 1 / 12) < 6.5 * np.sqrt(1 / 180 / n)
    counts = np.bincount((u * 16).astype(int), minlength=16)
    chi2 = ((counts - n / 16) ** 2 / (n / 16)).sum()
    assert chi2 < 80  # 15 degrees of freedom: P(chi2 > 80) < 1e-9
    v = g.uniform(-3.0, 5.0, (100, 100), dtype="float32", device=device).numpy()
    assert v.dtype == np.float32 and v.shape == (100, 100) and -3 <= v.min() and v.max() < 5


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
def test_normal_moments(device, rng, dtype):
    if dtype not in device.dtypes:
        pytest.skip(f"{device.id} has no {dtype}")
    g = hetnn.random.default_rng(_seed(rng))
    n = 100_000
    z = g.normal(1.5, 2.0, n, dtype=dtype, device=device).numpy().astype(np.float64)
    assert np.isfinite(z).all()
    rounding = {"float16": 2e-3, "bfloat16": 1.6e-2}.get(dtype, 0) * 4
    assert abs(z.mean() - 1.5) < 6.5 * 2 / np.sqrt(n) + rounding
    assert abs(z.std() - 2.0) < 6.5 * 2 / np.sqrt(2 * n) + rounding * 2
    within = np.mean(np.abs(z - 1.5) < 2.0)  # one standard deviation: 68.27 %
    assert abs(within - 0.6827) < 6.5 * np.sqrt(0.6827 * 0.3173 / n) + rounding


def test_integers_cover_their_range_evenly(device, rng):
    g = hetnn.random.default_rng(_seed(rng))
    x = g.integers(7, size=70_000, device=device).numpy()
    assert x.dtype == np.int64 and x.min() == 0 and x.max() == 6
    counts = np.bincount(x, minlength=7)
    assert (((counts - 10_000) ** 2) / 10_000).sum() < 60  # 6 degrees of freedom: P < 1e-9
    y = g.integers(-2, 2, 1000, dtype="int8", endpoint=True, device=device).numpy()
    assert set(np.unique(y)) == {-2, -1, 0, 1, 2}


def test_refusals(device):
    g = hetnn.random.default_rng(1)
    for call, exc, match in ((lambda: hetnn.random.default_rng(-1), ValueError, r"\[0, 2\*\*64\)"),
                             (lambda: hetnn.random.default_rng(2**64), ValueError, "seed"),
                             (lambda: hetnn.random.default_rng(1.5), TypeError, "seed must be an int"),
                             (lambda: hetnn.random.default_rng(True), TypeError, "seed must be an int"),
                             (lambda: g.random(3, dtype="int32", device=device), TypeError, "floating"),
                             (lambda: g.uniform(1.0, 1.0, 3, device=device), ValueError, "low < high"),
                             (lambda: g.uniform(0.0, float("inf"), 3, device=device), ValueError, "finite"),
                             (lambda: g.normal(0.0, -1.0, 3, device=device), ValueError, "scale >= 0"),
                             (lambda: g.integers(5, 5, 3, device=device), ValueError, "empty range"),
                             (lambda: g.integers(0, 300, 3, dtype="int8", device=device), ValueError, "fit in int8"),
                             (lambda: g.integers(0, 3, 3, dtype="float32", device=device), TypeError, "integer"),
                             (lambda: g.integers(0.5, 3, device=device), TypeError, "low must be an int"),
                             (lambda: g.integers(0, 2**70, device=device), ValueError, "int64"),
                             (lambda: g.random((2, -1), device=device), ValueError, "negative"),
                             (lambda: g.random(3, device="nowhere"), ValueError, "nowhere")):
        with pytest.raises(exc, match=match):
            call()
    assert g._g.offset == 0  # nothing refused took counters
