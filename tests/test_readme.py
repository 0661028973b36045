"""The README's Python blocks run as written, in order, in one fresh interpreter, and the printed results its
comments state hold; its commands and links name things that exist."""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_python_blocks_run_as_written(tmp_path):
    import hetnn

    if not any(d.kind == "opencl" for d in hetnn.devices()):
        import pytest

        pytest.skip("the README's session uses an OpenCL device (scripts/setup.sh installs PoCL)")
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 4
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks))
    env = {k: v for k, v in os.environ.items() if k != "HETNN_POISON"}
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    assert out.count("True") >= 3 and "False" not in out.replace("False,", ""), out
    assert "hetnn.Array(shape=(512, 128), dtype=float32, device='opencl:0:0')" in out or "opencl" not in out
    assert "15.0 (1, 3)" in out and "[0. 1. 2.]" in out
    assert "Total params: 1,474" in out
    assert (tmp_path / "model.npz").exists()


def test_readme_links_and_commands_exist():
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link
    for path in ("scripts/setup.sh", "scripts/test.sh", ".ci/run"):
        assert (ROOT / path).exists(), path
    assert "bash scripts/test.sh" in (ROOT / ".ci/run").read_text()
    for nb in re.findall(r"`(0\d_\w+)`", README):
        assert (ROOT / "notebooks" / f"{nb}.ipynb").exists(), nb
    assert len(README.splitlines()) <= 260


def test_setup_refuses_an_unknown_option_before_doing_anything():
    """`scripts/setup.sh --peers` adds the peer libraries; any other option is refused before apt or pip runs."""
    root = pathlib.Path(__file__).resolve().parent.parent
    p = subprocess.run(["bash", str(root / "scripts" / "setup.sh"), "--peer"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "unknown option --peer (known: --peers)" in p.stderr, p.stderr
    extras = (root / "pyproject.toml").read_text()
    for peer in ("torch", "jax", "numba", "keras"):  # what the README says --peers adds
        assert f'"{peer}>=' in extras.split("peers = [")[1].split("]")[0], peer
