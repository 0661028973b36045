"""conv2d's 32-bit limits are refused in its front, before any memory is touched or any kernel runs: an input plane
of more than 2^31-1 elements once gave zeros on OpenCL (sizes passed as cl_int) and an error from inside oneDNN on
the CPU. The output-plane case (no large memory needed) is a row of tests/op_table.py's bad inputs."""
import subprocess
import sys

CODE = """
import hetnn
side = 46341  # 46341^2 = 2^31 + 9454 elements: 4.3 GB of float16, allocated and never touched (no poisoning)
for dev in hetnn.devices():
    try:
        x = hetnn.empty((1, 1, side, side), dtype="float16", device=dev)
    except Exception as e:  # the device cannot hold it at all: nothing to check there
        print(dev.id, "cannot allocate:", type(e).__name__)
        continue
    w = hetnn.zeros((1, 1, 3, 3), dtype="float16", device=dev)
    for call in (lambda: hetnn.conv2d(x, w), lambda: hetnn.conv2d_backward(x, x, w)):
        try:
            call()
        except ValueError as e:
            assert "input plane of more than 2^31-1" in str(e) and "(1, 1, 46341, 46341)" in str(e), e
        else:
            raise SystemExit(dev.id + ": no error")
    print(dev.id, "refused")
    del x
"""


def test_conv2d_refuses_an_input_plane_beyond_32_bits():
    env = {**__import__("os").environ, "HETNN_POISON": "0"}
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "cpu refused" in p.stdout, p.stdout
