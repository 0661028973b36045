"""Shared fixtures. Every device test runs once per device found; a device class that is absent on this machine
(no OpenCL, no GPU) shows up as a skipped case rather than silently disappearing."""
import os

os.environ.setdefault("HETNN_POISON", "1")  # new arrays start as NaN bytes: unwritten outputs fail the tests

import random  # noqa: E402
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


@pytest.fixture(params=_PARAMS)
def device(request):
    """Each available device (cpu, every OpenCL device); 'opencl'/'gpu' placeholders skip when none exists."""
    if request.param not in _FOUND:
        pytest.skip(f"no {request.param} device on this machine ({hetnn._core.opencl_status() or 'none found'})")
    return _FOUND[request.param]


@pytest.fixture
def opencl_device():
    for d in _FOUND.values():
        if d.kind == "opencl":
            return d
    pytest.skip(f"no OpenCL device ({hetnn._core.opencl_status()})")


# Fresh inputs on every run; HETNN_TEST_SEED=<n> replays a run (the seed is printed in pytest's header).
RUN_SEED = int(os.environ.get("HETNN_TEST_SEED", random.SystemRandom().randrange(2**31)))


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


def pytest_terminal_summary(terminalreporter):
    """The figures the README's Reliability section quotes: property-test examples run in this session."""
    mods = __import__("sys").modules
    prop, bad = mods.get("test_properties"), mods.get("test_bad_inputs")
    if prop is not None and prop.COUNT["examples"]:
        terminalreporter.write_line(f"hetnn: property-test examples run: {prop.COUNT['examples']}")
    if bad is not None and bad.COUNT["cases"]:
        terminalreporter.write_line(f"hetnn: bad-input cases tried: {bad.COUNT['cases']}")
