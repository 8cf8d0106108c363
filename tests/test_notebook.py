"""The walkthrough notebook runs clean on a smoke-sized sample."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docs]

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("torch")
pytest.importorskip("pythia8mc")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "lhco-walkthrough.ipynb"


def test_walkthrough_executes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSENBLATT_NOTEBOOK_EVENTS", "160")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = "".join(
        out.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "best eta" in outputs
    assert (tmp_path / "data" / "notebook" / "irgi.json").is_file()
