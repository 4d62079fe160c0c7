"""Every notebook in notebooks/ runs top to bottom, offline, and is stored without outputs."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_seven_notebooks_exist() -> None:
    assert [p.name[:3] for p in NOTEBOOKS] == ["01_", "02_", "03_", "04_", "05_", "06_", "07_"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    import nbformat

    book = nbformat.read(path, as_version=4)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert code, "a notebook with no code"
    assert all(not c.outputs and c.execution_count is None for c in code), (
        "outputs must be stripped before committing (jupyter nbconvert --clear-output)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # jupyter_core warns about its path migration unless this is set; the kernel inherits it.
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    # Notebooks write their scratch files (stores, exports) under a temporary directory.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        # Kernel plumbing (zmq, tornado) is not under test; the notebook's own code is.
        warnings.simplefilter("ignore", DeprecationWarning)
        import nbclient
        import nbformat

        book = nbformat.read(path, as_version=4)
        client = nbclient.NotebookClient(
            book,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(tmp_path)}},
        )
        client.execute()
    errors = [
        o for c in book.cells if c.cell_type == "code" for o in c.outputs
        if o.output_type == "error"
    ]  # fmt: skip
    assert not errors
    assert os.environ["TMPDIR"] == str(tmp_path)
