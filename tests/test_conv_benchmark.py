"""Device.set_conv_algorithm("benchmark"): per layer shape, the first call times every algorithm that applies and
the shape keeps the fastest. Run on the first OpenCL device against the op table's float64 references."""
import numpy as np
import pytest

import hetnn
from op_table import _conv_bwd_ref, _conv_ref
from test_conv_winograd import UNIT, winograd4_magnitude


@pytest.fixture
def bench_device(opencl_device):
    dev = hetnn.device(opencl_device.id)
    dev.set_conv_algorithm("benchmark")
    yield dev
    dev.set_conv_algorithm("auto")


def test_benchmark_times_each_algorithm_once_per_shape_and_keeps_the_fastest(bench_device, rng):
    shape = (2, 4 + int(rng.integers(0, 1000)), 9, 7)  # a shape no other test measured in this process
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((5, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    with hetnn.profile(bench_device) as first:
        y = hetnn.conv2d(x, w, b, 1, 1, 1, 1, "relu", device=bench_device)
    names = [r["name"] for r in first.records]
    assert "conv2d_im2col" in names and "conv2d:winograd_input" in names, names  # every candidate ran
    prefix = f"x (2, {shape[1]}, 9, 7), w (5, {shape[1]}, 3, 3)"
    choices = [c for c in bench_device.conv_choices() if c["shape"].startswith(prefix)]
    assert len(choices) == 1, bench_device.conv_choices()
    c = choices[0]
    assert {"im2col", "winograd", "winograd4"} <= set(c["ms"]) and all(t > 0 for t in c["ms"].values())
    assert c["algorithm"] == min(c["ms"], key=c["ms"].get)
    (ref,) = _conv_ref((x, w, b, (1, 1), (1, 1), (1, 1), 1, "relu"))
    bound = (shape[1] + 32) * UNIT["float32"] * winograd4_magnitude(x, w, b, (1, 1))  # the loosest candidate's
    assert (np.abs(np.asarray(y, np.float64) - ref) <= bound).all()
    # the next call of that shape runs the chosen algorithm alone
    with hetnn.profile(bench_device) as again:
        y2 = hetnn.conv2d(x, w, b, 1, 1, 1, 1, "relu", device=bench_device)
    names = [r["name"] for r in again.records]
    ran = {"im2col": "conv2d_im2col" in names, "winograd": "conv2d:winograd_input" in names,
           "implicit": "conv2d_im2col" not in names and "conv2d:winograd_input" not in names}
    if c["algorithm"] in ("im2col", "implicit"):
        assert ran[c["algorithm"]] and not ran["winograd"], (c, names)
    else:
        assert names.count("conv2d:winograd_input") == 1 and not ran["im2col"], (c, names)
    assert (np.abs(np.asarray(y2, np.float64) - ref) <= bound).all()
    # the measuring call leaves the chosen algorithm's result, as every later call (each rounds differently)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y2))
    assert len([c for c in bench_device.conv_choices() if c["shape"] == choices[0]["shape"]]) == 1


def test_benchmark_leaves_grouped_and_single_candidate_layers_alone(bench_device, rng):
    x = rng.standard_normal((2, 6, 8, 8)).astype(np.float32)
    before = len(bench_device.conv_choices())
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)  # groups=2: the direct kernel, nothing to choose
    y = hetnn.conv2d(x, w, None, 1, 1, 1, 2, device=bench_device)
    (ref,) = _conv_ref((x, w, None, (1, 1), (1, 1), (1, 1), 2, None))
    assert np.max(np.abs(np.asarray(y, np.float64) - ref)) < 1e-4
    assert len(bench_device.conv_choices()) == before
    w5 = rng.standard_normal((4, 6, 5, 5)).astype(np.float32)  # 5x5: im2col (and implicit on GPU families)
    y = hetnn.conv2d(x, w5, None, 1, 2, device=bench_device)
    (ref,) = _conv_ref((x, w5, None, (1, 1), (2, 2), (1, 1), 1, None))
    assert np.max(np.abs(np.asarray(y, np.float64) - ref)) < 1e-4


def test_benchmark_data_gradient_chooses_between_a_measured_forward_and_col2im(bench_device, rng):
    x = rng.standard_normal((3, 5, 10, 9)).astype(np.float32)
    w = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
    (yr,) = _conv_ref((x, w, None, (1, 1), (1, 1), (1, 1), 1, None))
    gy = rng.standard_normal(yr.shape).astype(np.float32)
    gx, gw, gb = hetnn.conv2d_backward(gy, x, w, 1, 1, device=bench_device)
    rgx, rgw, rgb = _conv_bwd_ref((gy, x, w, (1, 1), (1, 1), (1, 1), 1))
    for got, ref in ((gx, rgx), (gw, rgw), (gb, rgb)):
        assert np.max(np.abs(np.asarray(got, np.float64) - ref)) < 1e-4 * max(1.0, np.max(np.abs(ref)))
    choices = bench_device.conv_choices()
    mine = [c for c in choices if c["shape"].startswith("data gradient: x (3, 5, 10, 9), w (7, 5, 3, 3)")]
    assert len(mine) == 1 and set(mine[0]["ms"]) == {"forward", "im2col"}, choices
    assert mine[0]["algorithm"] == min(mine[0]["ms"], key=mine[0]["ms"].get)
    # its "forward" candidate (7 -> 5 channels over gy's 10x9 planes) was measured as a layer of its own
    assert any(c["shape"].startswith("x (3, 7, 10, 9), w (5, 7, 3, 3)") for c in choices)


def test_benchmark_measures_a_strided_data_gradient_s_classes_against_col2im(bench_device, rng):
    """Stride 2: the forward candidate is four stride-1 convolutions of gy (2x2, 2x1, 1x2 and 1x1 taps), each
    measured as a layer of its own; whichever wins, the gradient is right."""
    c = 3 + int(rng.integers(0, 1000))  # channels no other test measured in this process
    x = rng.standard_normal((2, c, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, c, 3, 3)).astype(np.float32)
    (yr,) = _conv_ref((x, w, None, (2, 2), (1, 1), (1, 1), 1, None))
    gy = rng.standard_normal(yr.shape).astype(np.float32)
    gx, _, _ = hetnn.conv2d_backward(gy, x, w, 2, 1, weight_grad=False, bias_grad=False, device=bench_device)
    rgx, _, _ = _conv_bwd_ref((gy, x, w, (2, 2), (1, 1), (1, 1), 1))
    assert np.max(np.abs(np.asarray(gx, np.float64) - rgx)) < 1e-4 * max(1.0, np.max(np.abs(rgx)))
    choices = bench_device.conv_choices()
    mine = [ch for ch in choices if ch["shape"].startswith(f"data gradient: x (2, {c}, 9, 8)")]
    assert len(mine) == 1 and set(mine[0]["ms"]) == {"forward", "im2col"}, choices
    # the classes' own layers (gy has 4 channels and 5x4 planes; each class's convolution gives c channels)
    taps = sorted(ch["shape"].split("), ")[1] for ch in choices if ch["shape"].startswith("x (2, 4, 5, 4)")
                  and f"w ({c}, 4," in ch["shape"])
    assert taps == [f"w ({c}, 4, 1, 1", f"w ({c}, 4, 1, 2", f"w ({c}, 4, 2, 1", f"w ({c}, 4, 2, 2"], taps


def test_conv_algorithm_setting(opencl_device):
    dev = hetnn.device(opencl_device.id)
    assert dev.conv_algorithm == "auto"
    try:
        for name in ("benchmark", "winograd", "winograd4", "implicit", "im2col", "auto"):
            dev.set_conv_algorithm(name)
            assert dev.conv_algorithm == name
    finally:
        dev.set_conv_algorithm("auto")
    with pytest.raises(ValueError, match="conv algorithm must be .*got 'fastest'"):
        dev.set_conv_algorithm("fastest")
    assert dev.conv_algorithm == "auto"


def test_cpu_device_takes_only_auto():
    cpu = hetnn.device("cpu")
    assert cpu.conv_algorithm == "auto"
    cpu.set_conv_algorithm("auto")
    with pytest.raises(ValueError, match="oneDNN.*only 'auto'.*got 'winograd'"):
        cpu.set_conv_algorithm("winograd")
    assert cpu.conv_choices() == []


def _in_subprocess(code, **env):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_process_default_from_the_environment(opencl_device):
    code = ("import hetnn; d = hetnn.device(%r); print(d.conv_algorithm); "
            "from hetnn._device import conv_algorithm_line; print(conv_algorithm_line(hetnn.devices()))"
            % opencl_device.id)
    r = _in_subprocess(code, HETNN_CONV_ALGORITHM="benchmark")
    assert r.returncode == 0, r.stderr
    first, line = r.stdout.splitlines()
    assert first == "benchmark" and f"{opencl_device.id} benchmark" in line and "not the device's own" in line
    r = _in_subprocess(code, HETNN_CONV_ALGORITHM="auto")
    assert r.returncode == 0 and r.stdout.splitlines() == ["auto", "None"], r.stderr


def test_a_bad_environment_value_is_named_at_first_use(opencl_device):
    code = ("import numpy as np, hetnn; d = hetnn.device(%r)\n"
            "try:\n    hetnn.conv2d(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), device=d)\n"
            "except ValueError as e:\n    print('ValueError', e)\n"
            "d.set_conv_algorithm('auto'); print(d.conv_algorithm)" % opencl_device.id)
    r = _in_subprocess(code, HETNN_CONV_ALGORITHM="fastest")
    assert r.returncode == 0, r.stderr
    err, after = r.stdout.splitlines()
    assert err.startswith("ValueError HETNN_CONV_ALGORITHM must be") and "got 'fastest'" in err
    assert after == "auto"  # setting it replaces the bad value


def test_bench_conv_algorithm_option_sets_and_says_it(opencl_device):
    import subprocess
    import sys

    args = ["-m", "hetnn", "bench", "matmul", "--shapes", "32x32x32", "--device", opencl_device.id,
            "--conv-algorithm", "benchmark", "--no-output", "--repeat", "2", "--warmup", "1", "--processes", "1",
            "--compare", "none"]
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"conv algorithm: {opencl_device.id} benchmark" in r.stdout, r.stdout
    r = subprocess.run([sys.executable, "-m", "hetnn", "bench", "conv", "--conv-algorithm", "fastest"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--conv-algorithm" in r.stderr and "'fastest'" in r.stderr


def test_benchmark_chooses_the_weight_gradient_path_where_two_apply(bench_device, rng):
    """With vtiled GEMM parameters (a GPU's family) the weight gradient can be one implicit GEMM or im2col and
    per-image GEMMs: "benchmark" times both once per shape and keeps the faster."""
    from hetnn import _core
    from test_conv_implicit import VTILED

    old, source = _core.gemm_params(bench_device._dev, "float32")
    _core.set_gemm_params(bench_device._dev, "float32", VTILED[0], "test")
    try:
        c = 3 + int(rng.integers(0, 1000))  # a shape of its own
        x = rng.standard_normal((2, c, 6, 5)).astype(np.float32)
        w = rng.standard_normal((4, c, 3, 3)).astype(np.float32)
        (yr,) = _conv_ref((x, w, None, (1, 1), (0, 0), (1, 1), 1, None))
        gy = rng.standard_normal(yr.shape).astype(np.float32)
        for _ in range(2):  # measured, then the choice
            _, gw, gb = hetnn.conv2d_backward(gy, x, w, 1, 0, input_grad=False, device=bench_device)
            _, rgw, rgb = _conv_bwd_ref((gy, x, w, (1, 1), (0, 0), (1, 1), 1))
            assert np.max(np.abs(np.asarray(gw, np.float64) - rgw)) < 1e-4 * max(1.0, np.max(np.abs(rgw)))
            assert np.max(np.abs(np.asarray(gb, np.float64) - rgb)) < 1e-4 * max(1.0, np.max(np.abs(rgb)))
        mine = [ch for ch in bench_device.conv_choices()
                if ch["shape"].startswith(f"weight gradient: x (2, {c}, 6, 5), w (4, {c}, 3, 3)")]
        assert len(mine) == 1 and set(mine[0]["ms"]) == {"implicit", "im2col"}, bench_device.conv_choices()
        assert mine[0]["algorithm"] == min(mine[0]["ms"], key=mine[0]["ms"].get)
    finally:
        _core.set_gemm_params(bench_device._dev, "float32", "" if source.startswith(("database", "default")) else old,
                              source)


def test_new_gemm_parameters_forget_the_choices(bench_device, rng):
    """The choices were timed on the GEMM parameters in force; setting others (as `hetnn tune gemm` or a test does)
    makes every layer shape be measured again."""
    from hetnn import _core
    from test_conv_implicit import VTILED

    c = 3 + int(rng.integers(0, 1000))
    x = rng.standard_normal((2, c, 7, 7)).astype(np.float32)
    w = rng.standard_normal((3, c, 3, 3)).astype(np.float32)
    hetnn.conv2d(x, w, None, 1, 1, device=bench_device)
    assert any(ch["shape"].startswith(f"x (2, {c}, 7, 7)") for ch in bench_device.conv_choices())
    old, source = _core.gemm_params(bench_device._dev, "float32")
    try:
        _core.set_gemm_params(bench_device._dev, "float32", VTILED[1], "test")
        assert bench_device.conv_choices() == []
        with hetnn.profile(bench_device) as prof:
            y = hetnn.conv2d(x, w, None, 1, 1, device=bench_device)
        names = [r["name"] for r in prof.records]
        assert "conv2d_im2col" in names and "conv2d:winograd_input" in names, names  # measured again
        mine = [ch for ch in bench_device.conv_choices() if ch["shape"].startswith(f"x (2, {c}, 7, 7)")]
        assert len(mine) == 1 and "implicit" in mine[0]["ms"]  # now with the vtiled family's implicit GEMM
        (ref,) = _conv_ref((x, w, None, (1, 1), (1, 1), (1, 1), 1, None))
        bound = (c + 32) * UNIT["float32"] * winograd4_magnitude(x, w, None, (1, 1))
        assert (np.abs(np.asarray(y, np.float64) - ref) <= bound).all()
    finally:
        _core.set_gemm_params(bench_device._dev, "float32", "" if source.startswith(("database", "default")) else old,
                              source)
    assert bench_device.conv_choices() == []  # and back: forgotten again


def test_choices_are_the_fastest_call_of_each_and_say_how_many(bench_device, rng):
    c = 3 + int(rng.integers(0, 1000))
    x = rng.standard_normal((2, c, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, c, 3, 3)).astype(np.float32)
    hetnn.conv2d(x, w, None, 1, 1, device=bench_device)
    (ch,) = [ch for ch in bench_device.conv_choices() if ch["shape"].startswith(f"x (2, {c}, 6, 6)")]
    assert ch["calls"] >= 3 and isinstance(ch["flags"], str)
    assert ch["algorithm"] == min(ch["ms"], key=ch["ms"].get) and all(t > 0 for t in ch["ms"].values())


def test_a_choice_made_beside_busy_processes_is_flagged(bench_device, rng):
    """Other processes on every CPU this one may use: the choice takes twice the rounds and says it was made on
    a busy machine (its figures are not the layer's), and a report carries it as a note: one note for every
    flagged choice of the device, whatever spans their flags name."""
    import os
    import subprocess
    import sys

    from hetnn._device import conv_choice_notes

    c = 3 + int(rng.integers(0, 1000))
    xs = [rng.standard_normal((2, c, h, 8)).astype(np.float32) for h in (8, 9)]
    w = rng.standard_normal((3, c, 3, 3)).astype(np.float32)
    loop = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"  # killed when done
    busy = [subprocess.Popen([sys.executable, "-c", loop]) for _ in os.sched_getaffinity(0)]
    try:
        ys = [hetnn.conv2d(x, w, None, 1, 1, device=bench_device) for x in xs]
    finally:
        for p in busy:
            p.kill()
            p.wait()
    choices = bench_device.conv_choices()
    for x, y in zip(xs, ys):
        (ch,) = [ch for ch in choices if ch["shape"].startswith(f"x {x.shape}")]
        assert ch["flags"].startswith("chosen"), ch
        assert ch["calls"] >= 6 and ch["algorithm"] == min(ch["ms"], key=ch["ms"].get)
        (ref,) = _conv_ref((x, w, None, (1, 1), (1, 1), (1, 1), 1, None))
        bound = (c + 32) * UNIT["float32"] * winograd4_magnitude(x, w, None, (1, 1))
        assert (np.abs(np.asarray(y, np.float64) - ref) <= bound).all()
    flagged = [ch for ch in choices if ch["flags"]]
    notes = [n for n in conv_choice_notes(hetnn.devices()) if n.startswith(f"{bench_device.id}: ")]
    assert len(notes) == 1 and f"{len(flagged)} of {len(choices)} " in notes[0], notes
    assert "may not be the fastest" in notes[0] and "s of calls" not in notes[0], notes
    assert all(ch["flags"].split(" (")[0] in notes[0] for ch in flagged), notes


def test_bench_and_study_reports_carry_the_flagged_choices(monkeypatch, opencl_device):
    from hetnn import _device
    from hetnn.bench import suites

    monkeypatch.setattr(suites, "conv_choice_notes", lambda devs: ["opencl:x: 1 of 2 choices were chosen busy"])
    rep = hetnn.bench.run("matmul", device=opencl_device.id, shapes="16x16x16", repeat=1, warmup=0, compare="none",
                          processes=1)
    assert "note: opencl:x: 1 of 2 choices were chosen busy" in rep.text, rep.text
    monkeypatch.setattr(_device.Device, "conv_choices",
                        lambda self: [{"shape": "s", "algorithm": "im2col", "ms": {}, "calls": 6, "flags": "busy!"},
                                      {"shape": "t", "algorithm": "im2col", "ms": {}, "calls": 3, "flags": ""}])
    notes = _device.conv_choice_notes([hetnn.device(opencl_device.id), hetnn.device("cpu")])
    assert notes == [f"{opencl_device.id}: 1 of 2 convolution algorithm choices of \"benchmark\" were busy!: they "
                     "may not be the fastest (Device.conv_choices())"]
