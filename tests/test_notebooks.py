"""Executes every notebook in notebooks/ with small sizes (HETNN_NB_SIZE), so a broken notebook fails the suite, and
checks that every plot cell rendered an image (a bare Figure once printed "<Figure size 1000x350 with 2 Axes>") and
that every ratio a notebook prints comes with its interval (or says why it has none) and its flags."""
import pathlib
import re

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


RATIO = re.compile(r"(?<![\w.])\d+\.\d+x\b|-> \d")  # "1.23x", or a bare "-> 0.68"
INTERVAL = ("CI", "no interval", "not compared", "no conclusion")


def _printed(nb):
    """Every line the notebook printed (stream outputs and text results)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain") or ""
            yield from ("".join(text) if isinstance(text, list) else text).splitlines()


def _qualified(line):
    """A ratio line that says its interval (or why it has none, or that nothing was compared) and its flags."""
    return any(k in line for k in INTERVAL) and "flags" in line


def test_the_ratio_check_catches_a_bare_ratio():
    assert RATIO.search("cpu 1.23x") and RATIO.search("batch 100: 0.9 ms, 1.1 ms  -> 0.68")
    assert not _qualified("hetnn cpu / numpy: 1.23x (1.10-1.35, 95% CI)")  # no flags
    assert _qualified("hetnn cpu / numpy: 1.23x (1.10-1.35, 95% CI); flags: none")
    assert not RATIO.search("784x128x512") and not RATIO.search("GFLOP/s 12.5")


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
    bare = [line for line in _printed(nb) if RATIO.search(line) and not _qualified(line)]
    assert not bare, f"{path.name}: ratios printed without their interval and flags: {bare[:5]}"
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_study_runs_once_per_notebook(path):
    """Notebooks 02, 03, 04 and 06 once held their study's cells twice, so each ran its study twice; no code cell
    may repeat another, and a study is run by one cell."""
    import json

    cells = ["".join(c["source"]).strip() for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    repeated = [c[:60] for i, c in enumerate(cells) if c and c in cells[:i]]
    assert not repeated, f"{path.name}: code cells repeated: {repeated}"
    runs = re.findall(r"study\.run\(\s*\"([\w-]+)\"", "\n".join(cells))
    assert len(runs) == len(set(runs)), f"{path.name}: a study run more than once: {runs}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_cell_has_a_unique_id(path):
    """nbformat 4.5 requires cell ids (a missing one is a warning now, an error in later nbformat versions)."""
    import json

    ids = [c.get("id") for c in json.loads(path.read_text())["cells"]]
    assert all(ids) and len(set(ids)) == len(ids), f"{path.name}: cell ids {ids}"
