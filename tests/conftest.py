"""Shared fixtures. Every device test runs once per device found; a device class that is absent on this machine
(no OpenCL, no GPU) shows up as a skipped case rather than silently disappearing."""
import os

os.environ.setdefault("HETNN_POISON", "1")  # new arrays start as NaN bytes: unwritten outputs fail the tests

import random  # noqa: E402
import warnings  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import hetnn  # noqa: E402

_FOUND = {d.id: d for d in hetnn.devices()}
_PARAMS = list(_FOUND)
if not any(d.kind == "opencl" for d in _FOUND.values()):
    _PARAMS.append("opencl")  # placeholder, skipped below
if not any(d.type == "gpu" for d in _FOUND.values()):
    _PARAMS.append("gpu")
# Without a GPU, the 'gpu' parameter of the modules whose kernels have a GPU shape runs those GPU-shaped kernels on
# the first OpenCL device instead (hetnn._core._set_kernel_variant), so that they are checked here too.
GPU_VARIANT_MODULES = frozenset({"test_max_pool", "test_max_pool_zeros", "test_properties", "test_reduction"})
_GPU_STANDIN = None if "gpu" not in _PARAMS else next((d for d in _FOUND.values() if d.kind == "opencl"), None)


def _standin(module_name):
    return _GPU_STANDIN if module_name.rsplit(".", 1)[-1] in GPU_VARIANT_MODULES else None


@pytest.fixture(params=_PARAMS)
def device(request):
    """Each available device (cpu, every OpenCL device); 'opencl'/'gpu' placeholders skip when none exists (or,
    for 'gpu' in GPU_VARIANT_MODULES, run the GPU-shaped kernels on an OpenCL device)."""
    standin = _standin(request.module.__name__) if request.param == "gpu" else None
    if standin is not None:
        hetnn._core._set_kernel_variant(standin._dev, "gpu")
        try:
            yield standin
        finally:
            hetnn._core._set_kernel_variant(standin._dev, "")
        return
    if request.param not in _FOUND:
        pytest.skip(f"no {request.param} device on this machine ({hetnn._core.opencl_status() or 'none found'})")
    yield _FOUND[request.param]


@pytest.fixture
def opencl_device():
    for d in _FOUND.values():
        if d.kind == "opencl":
            return d
    pytest.skip(f"no OpenCL device ({hetnn._core.opencl_status()})")


# ---- Device capabilities: the one place a test asks what a device can do ----------------------------------------
# A device test parametrised over `dtype` (a name or a NumPy type) runs only where the device takes that dtype;
# @pytest.mark.requires("float64", "fp64", ...) states other needs (a dtype name: the device takes it; any other
# name: a Device attribute that must be truthy). @pytest.mark.all_dtypes opts a test out of the dtype check, for
# tests of the refusal itself. tests/test_capabilities.py fails when a device test takes a dtype under another name.
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
CAPABILITY_DTYPES = frozenset(FLOAT_DTYPES[1:])  # dtypes that some device may not take
DEVICE_FIXTURES = ("device", "opencl_device")


def dtype_name(value):
    """The NumPy name of a dtype-like value ('float16', np.float16, np.dtype('float16')), else None."""
    if isinstance(value, (str, type, np.dtype)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # 'a' and other deprecated aliases: not ours
            try:
                return np.dtype(value).name
            except (TypeError, ValueError, DeprecationWarning):  # not a dtype spelling at all (e.g. a program text)
                return None
    return None


def item_device(item):
    """The hetnn device a collected test runs on (None: no device fixture, or a placeholder that skips)."""
    names = getattr(item, "fixturenames", ())
    if "device" in names:
        param = getattr(getattr(item, "callspec", None), "params", {}).get("device")
        if param == "gpu" and _standin(item.module.__name__) is not None:
            return _standin(item.module.__name__)
        return _FOUND.get(param)
    if "opencl_device" in names:
        return next((d for d in _FOUND.values() if d.kind == "opencl"), None)
    return None


def missing_capability(dev, params, requires=(), check_dtype=True):
    """Why `dev` cannot run a test with these parameters and `requires` needs, or None when it can."""
    needs = list(requires)
    if check_dtype and dtype_name(params.get("dtype")) is not None:
        needs.append(dtype_name(params["dtype"]))
    for cap in needs:
        if dtype_name(cap) is not None:
            if dtype_name(cap) not in dev.dtypes:
                return f"{dev.id} does not take {dtype_name(cap)}"
        elif not getattr(dev, cap, None):
            return f"{dev.id} has no {cap}"
    return None


def supported_dtypes(dev, candidates=FLOAT_DTYPES):
    """The dtypes of `candidates` that `dev` takes (for tests that loop over dtypes inside)."""
    return [c for c in candidates if dtype_name(c) in dev.dtypes]


def pytest_configure(config):
    config.addinivalue_line("markers", "requires(*caps): device capabilities the test needs (dtype names or "
                                       "truthy Device attributes); skipped where the device lacks one")
    config.addinivalue_line("markers", "all_dtypes: run dtype-parametrised cases on devices that refuse the dtype")


def pytest_runtest_setup(item):
    dev = item_device(item)
    if dev is None:
        return
    requires = [cap for m in item.iter_markers("requires") for cap in m.args]
    params = getattr(getattr(item, "callspec", None), "params", {})
    why = missing_capability(dev, params, requires, check_dtype=item.get_closest_marker("all_dtypes") is None)
    if why:
        pytest.skip(why)


# Fresh inputs on every run; HETNN_TEST_SEED=<n> replays a run (the seed is printed in pytest's header). Set here in
# the environment, so that pytest-xdist's workers, started after this module is imported, draw from the same seed
# (each drew its own before: a CI failure's inputs could not be replayed from the seed printed).
RUN_SEED = int(os.environ.get("HETNN_TEST_SEED") or random.SystemRandom().randrange(2**31))
os.environ["HETNN_TEST_SEED"] = str(RUN_SEED)


def pytest_report_header(config):
    devs = ", ".join(f"{d.id} ({d.name})" for d in _FOUND.values())
    return [f"hetnn {hetnn.__version__}: devices {devs}", f"HETNN_TEST_SEED={RUN_SEED}"]


@pytest.fixture
def rng(request):
    """A generator per test: the run's seed mixed with the test id."""
    return np.random.default_rng([RUN_SEED, zlib.crc32(request.node.nodeid.encode())])


def rel_err(result, reference):
    """max|result - reference| / max|reference| (norm-wise), in float64."""
    result = np.asarray(result, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if reference.size == 0:
        return 0.0
    scale = np.max(np.abs(reference))
    err = np.max(np.abs(result - reference))
    return float(err / scale) if scale else float(err)


def _figures():
    """This process's figures for the summary below (a worker's, under pytest-xdist)."""
    mods = __import__("sys").modules
    prop, bad, adv = mods.get("test_properties"), mods.get("test_bad_inputs"), mods.get("test_adversarial")
    return {"examples": prop.COUNT["examples"] if prop is not None else 0,
            "cases": bad.COUNT["cases"] if bad is not None else 0,
            "adversarial": adv.RESULT["summary"] if adv is not None else ""}


_FROM_WORKERS = []


def pytest_sessionfinish(session):
    out = getattr(session.config, "workeroutput", None)
    if out is not None:  # a pytest-xdist worker: its figures go to the controller
        out["hetnn_figures"] = __import__("json").dumps(_figures())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    figures = getattr(node, "workeroutput", {}).get("hetnn_figures")
    if figures:
        _FROM_WORKERS.append(__import__("json").loads(figures))


def pytest_terminal_summary(terminalreporter):
    """The figures docs/design.md's Reliability section quotes: property-test examples run in this session (over
    every worker when pytest-xdist spreads the tests)."""
    figs = [_figures()] + _FROM_WORKERS
    examples, cases = sum(f["examples"] for f in figs), sum(f["cases"] for f in figs)
    if examples:
        terminalreporter.write_line(f"hetnn: property-test examples run: {examples}")
    if cases:
        terminalreporter.write_line(f"hetnn: bad-input cases tried: {cases}")
    for f in figs:
        if f["adversarial"]:
            terminalreporter.write_line("hetnn: " + f["adversarial"])


def assert_row_matches(name, op, dtype, got, want):
    """An op-table row's outputs against its float64 reference: as many, same shapes, within the row's tolerance."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == np.shape(w), (name, g.shape, np.shape(w))
        assert not np.isnan(g).any() or np.isnan(w).any(), f"{name}: unwritten (NaN-poisoned) output"
        assert rel_err(g, w) <= op.tol[dtype], (name, dtype, rel_err(g, w))
