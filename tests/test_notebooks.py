"""The Colab notebooks in notebooks/: each runs top to bottom as a user runs it, and
each is stored as a user should receive it.

Execution: nbclient, headless, one fresh kernel of this interpreter per notebook,
on CPU (JAX_PLATFORMS=cpu), from the repository root, with the parameters cell
replaced by `TINY = True` (the `:tiny` configs, few samples; the runs go under a
temporary folder passed in CAUSAL_DISENT_NOTEBOOK_RUNS). A cell that raises fails
the test with that cell's error. Measured on 2 CPU cores: causalvae_pendulum 26-28 s,
metrics 16-28 s, ctvae_quickstart 44-69 s; 1.5 to 2 minutes in all.
"""

import json
import os
import sys
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient

from tests.helpers import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
RUNS_VARIABLE = "CAUSAL_DISENT_NOTEBOOK_RUNS"
CELL_TIMEOUT_S = 600


def parameters_cells(notebook) -> list:
    return [cell for cell in notebook.cells
            if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", [])]


def is_this_python(command: str) -> bool:
    """Whether a kernel spec's argv[0] starts this interpreter. jupyter_client runs a
    bare "python" / "python3" / "python3.X" as sys.executable."""
    version = sys.version_info
    if command in {"python", f"python{version[0]}", f"python{version[0]}.{version[1]}"}:
        return True
    return Path(command).resolve() == Path(sys.executable).resolve()


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory):
    """"python3" when its kernel spec starts this interpreter; else a kernel spec of
    this interpreter written into a temporary folder put on JUPYTER_PATH."""
    try:
        if is_this_python(KernelSpecManager().get_kernel_spec("python3").argv[0]):
            yield "python3"
            return
    except NoSuchKernel:
        pass
    name = "causal_disent_tests"
    data_dir = tmp_path_factory.mktemp("jupyter")
    (data_dir / "kernels" / name).mkdir(parents=True)
    (data_dir / "kernels" / name / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})", "language": "python",
    }))
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(data_dir)] + ([previous] if previous else []))
    yield name
    if previous is None:
        del os.environ["JUPYTER_PATH"]
    else:
        os.environ["JUPYTER_PATH"] = previous


def test_there_are_notebooks():
    assert {path.name for path in NOTEBOOKS} >= {
        "ctvae_quickstart.ipynb", "causalvae_pendulum.ipynb", "metrics.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_is_stored_clean_with_install_and_parameters_cells(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.cells[0].cell_type == "markdown", "open with what it does and how long"
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"cell {index} has outputs: store the notebook with outputs cleared")
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    install = [source for source in code if '"google.colab" in sys.modules' in source]
    assert len(install) == 1, "one Colab install cell"
    assert "REPOSITORY_URL = " in install[0] and "pip install -q -e ." in install[0]
    assert 'jax[cuda12]' in install[0] and 'jax[tpu]' in install[0]
    # The placeholder URL is refused with what to do; runs can go to Google Drive.
    assert 'if "<you>" in REPOSITORY_URL:' in install[0] and "RUNS_ON_DRIVE = False" in install[0]
    parameters = parameters_cells(notebook)
    assert len(parameters) == 1, "one code cell tagged `parameters`"
    assert "TINY = False" in parameters[0].source
    assert code.index(install[0]) < code.index(parameters[0].source)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs_top_to_bottom_under_tiny(path, kernel_name, tmp_path):
    notebook = nbformat.read(path, as_version=4)
    parameters_cells(notebook)[0].source = "TINY = True"
    client = NotebookClient(
        notebook, kernel_name=kernel_name, timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(REPO_ROOT)}},
    )
    environment = dict(os.environ, JAX_PLATFORMS="cpu", **{RUNS_VARIABLE: str(tmp_path)})
    start = time.perf_counter()
    try:
        client.execute(env=environment)  # raises CellExecutionError naming the cell
    finally:
        nbformat.write(notebook, tmp_path / path.name)  # the executed copy, to look at
    print(f"{path.name}: {time.perf_counter() - start:.0f} s")
    # The command line's console filters hold in a notebook too (orbax's "Given
    # directory is read only" warning printed under every stage-2 cell before).
    stderr = [line for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.outputs if output.get("name") == "stderr"
              for line in output.text.splitlines()]
    assert not [line for line in stderr if line.startswith("WARNING:absl:")
                or "Traceback" in line], stderr
    assert any(output.get("output_type") == "display_data" and "image/png" in output.data
               for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs)
