"""Executes a notebook in a Jupyter kernel and prints what its cells printed (stream and text outputs), as a
person reading it would see them; nothing is written back. Usage:
    .venv/bin/python scripts/run_notebook.py notebooks/02_matmul_gflops.ipynb [--small]
--small sets HETNN_NB_SIZE=128 (the sizes the test suite runs)."""
import os
import pathlib
import sys

import nbclient
import nbformat


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--small"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    if "--small" in sys.argv:
        os.environ["HETNN_NB_SIZE"] = "128"
    path = pathlib.Path(args[0])
    nb = nbformat.read(str(path), as_version=4)
    nbclient.NotebookClient(nb, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain") or ""
            print("".join(text) if isinstance(text, list) else text, end="" if str(text).endswith("\n") else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
