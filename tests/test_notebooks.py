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
