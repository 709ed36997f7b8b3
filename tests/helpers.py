"""Helpers shared by the tests (import as `from tests.helpers import ...`)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def tiny_config(**changes):
    """configs/ctvae_shapes3d.py:tiny (both stages), a fresh copy each call, with
    `changes` by dotted path: tiny_config(**{"seed": 1, "ct.optim.batch_size": 4})."""
    from configs import ctvae_shapes3d

    config = ctvae_shapes3d.get_config("tiny")
    for path, value in changes.items():
        *sections, field = path.split(".")
        node = config
        for section in sections:
            node = node[section]
        node[field] = value
    return config


def small_shapes3d_dataset():
    """A 729-image corner of shapes3d_synth (the first 3 values of each factor), for
    tests that need a whole dataset encoded quickly; images are shapes3d_synth's."""
    import numpy as np

    from causal_disent.data.base import FactorDataset
    from causal_disent.data.shapes3d_synth import Shapes3DSynth

    full = Shapes3DSynth()

    class Shapes3DCorner(FactorDataset):
        name = "shapes3d_corner"
        image_shape = full.image_shape
        factor_names = full.factor_names
        factor_sizes = (3,) * len(full.factor_sizes)
        factor_values = tuple(np.asarray(v)[:3] for v in full.factor_values)

        def _images_at(self, index):
            return full.render(self.index_to_factors(index))

    return Shapes3DCorner()


def serve_small_shapes3d(monkeypatch) -> str:
    """Makes the registry serve `small_shapes3d_dataset()` as "shapes3d_corner"."""
    from causal_disent.data import registry

    dataset = small_shapes3d_dataset()
    get_dataset, check_name = registry.get_dataset, registry.check_dataset_name
    monkeypatch.setattr(registry, "get_dataset", lambda name, data_dir=None, path=None: (
        dataset if name == dataset.name else get_dataset(name, data_dir)))
    monkeypatch.setattr(registry, "check_dataset_name", lambda name: (
        None if name == dataset.name else check_name(name)))
    return dataset.name


def run_intervene(workdir, *flags):
    """`python -m causal_disent.intervene --workdir=W FLAGS...` as a user runs it."""
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "causal_disent.intervene", f"--workdir={workdir}", *flags],
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAX_PLATFORMS="cpu"),
        capture_output=True, text=True, timeout=300)


def figure_drawn_with_pid(pid_file: str):
    """A small heat-map figure whose building writes the id of the process that
    built it to `pid_file` (a figures.Drawing that figure workers import by name)."""
    import os

    import numpy as np

    from causal_disent.utils import figures

    Path(pid_file).write_text(str(os.getpid()))
    return figures.draw_heat_maps([[figures.HeatMap(np.eye(3), title="m", xlabel="i")]],
                                  title="pid", colorbar_label="score")


def check_tiny_vae_run(workdir, results: dict, objective: dict, row_keys) -> list[dict]:
    """The checks every VAE-family `:tiny` run (4 steps, 3 latents) passes: its results
    name `objective`, their test scores are finite, and the 4 training rows hold
    finite `row_keys`. Returns the rows, for the family's own checks."""
    import numpy as np

    from causal_disent.runs import metrics_log

    assert results["objective"] == objective
    assert results["steps"] == 4 and len(results["test_kl_per_latent"]) == 3
    for key in ("test_bce", "test_mse", "test_kl"):
        assert np.isfinite(results[key]), key
    rows = metrics_log.read_rows(workdir, validation=False)  # training rows
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    for row in rows:
        for key in row_keys:
            assert np.isfinite(row[key]), key
    return rows


def check_card_encodes_the_encoder_mean(workdir, param_groups: set) -> None:
    """The metric card of a trained VAE-family run scores the encoder mean of
    q(z | x), computed from the images alone, with the model's parameters (of
    `param_groups`) as the run saved them."""
    import numpy as np

    from causal_disent.evaluation import trained_runs
    from causal_disent.runs import vae as vae_run
    from causal_disent.train import stages

    mesh = stages.make_data_mesh()
    run = trained_runs.open_run(workdir, mesh, batch_size=8)
    assert run.family == "vae" and list(run.representations) == ["encoder_mean"]
    images = run.dataset.images(np.arange(3))
    model, params = vae_run.load_trained(run.config, workdir, mesh, run.dataset)
    assert set(params) == param_groups
    mean, _ = model.apply({"params": params}, images / 255.0, method=model.encode)
    np.testing.assert_allclose(run.representations["encoder_mean"](images), mean,
                               rtol=1e-5, atol=1e-6)


def truncate_data_files(step_dir):
    """Damages a saved checkpoint step as a crash in the middle of its write would:
    every array data file cut to 3 bytes, the metadata intact."""
    for path in (step_dir / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            with path.open("r+b") as f:
                f.truncate(3)
