"""Executes every notebook in notebooks/ with small sizes (HETNN_NB_SIZE), so a broken notebook fails the suite, and
checks that every plot cell rendered an image (a bare Figure once printed "<Figure size 1000x350 with 2 Axes>")."""
import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("HETNN_NB_SIZE", "128")
    monkeypatch.delenv("HETNN_POISON", raising=False)
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: outputs must be stripped before committing"
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    plots = [c for c in nb.cells if c.cell_type == "code" and ("Figure(" in c.source or ".plot()" in c.source)]
    for cell in plots:
        kinds = [k for o in cell.get("outputs", []) for k in o.get("data", {})]
        assert "image/png" in kinds, f"{path.name}: a plot cell rendered no image (outputs: {kinds})"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebooks_use_only_the_public_api(path):
    """A notebook is what users copy from: it imports hetnn's public names, not its private modules."""
    import json
    import re

    cells = json.loads(path.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    private = re.findall(r"hetnn\._\w+|from hetnn\.bench\.\w+ import|hetnn\.bench\.(?!run|compare)\w+\.\w+", code)
    assert not private, private
