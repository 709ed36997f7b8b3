r"""Intervenes on an image with a trained run and writes the result as a PNG strip.

  CT-VAE (a run with stage `ct`): apply an action 1..T times
    python -m causal_disent.intervene --workdir=W --image=photo.png --action=floor_hue+
    python -m causal_disent.intervene --workdir=W --index=123 --action=2 --times=5
  CausalVAE (stage `causalvae`): do(concept = value) for several values
    python -m causal_disent.intervene --workdir=W --index=7 --concept=pendulum_angle \
        --values=-40,0,40

--image reads a PNG or JPEG of the run's image size (converted to the model's
channels); --index takes image INDEX of the run's dataset instead. The strip is
written to --out (default W/interventions/<image>_<action or concept>.png): the
input, its reconstruction, then each intervention, every column labelled.
CausalVAE values are in the concept's label units (default: five values spanning the
training labels); the paper's do() sets the concept at the mask layer's input, so
its descendants follow (Yang et al., "CausalVAE", CVPR 2021, §3.2).
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from absl import app, flags

from causal_disent import cli

_WORKDIR = flags.DEFINE(cli.PathParser(), "workdir", None,
                        "A finished CT-VAE or CausalVAE run.")
_IMAGE = flags.DEFINE(cli.PathParser(), "image", None,
                      "A PNG or JPEG of the run's image size.")
_INDEX = flags.DEFINE_integer("index", None, "Or: this image of the run's dataset.",
                              lower_bound=0)
_ACTION = flags.DEFINE_string("action", None, "CT-VAE: an action's name or index.")
_TIMES = flags.DEFINE_integer("times", 5, "CT-VAE: how often to apply it.", lower_bound=1)
_CONCEPT = flags.DEFINE_string("concept", None, "CausalVAE: a concept's name or index.")
_VALUES = flags.DEFINE_list(
    "values", None, "CausalVAE: values in the concept's label units (default: five "
    "spanning the training labels).")
_OUT = flags.DEFINE(cli.PathParser(), "out", None,
                    "The PNG to write (default: WORKDIR/interventions/<input>_<what>.png).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the CT layer's Gumbel samples.")

# Values of a default CausalVAE sweep, spanning the concept's training labels.
DEFAULT_NUM_VALUES = 5
OUT_FOLDER = "interventions"  # in the run's workdir, without --out


def main(argv) -> None:
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")
    cli.import_jax_or_exit()
    cli.stop_at_once_on_signals("no intervention strip was written")
    from causal_disent.runs import orbax_noise
    from causal_disent.runs.checkpoint import CheckpointError
    from causal_disent.utils import console

    orbax_noise.quiet_console()
    console.quiet_stderr()
    cli.start_devices_or_exit()
    try:
        path = intervene()
    except (ValueError, OSError, CheckpointError) as error:  # bad flags, images, runs: one line
        sys.exit(f"error: {error}")
    print(f"intervention strip: {path.absolute()}")


def intervene() -> Path:
    """Checks the flags and the input image (before any model is loaded), then
    writes the strip of the run's family; returns its path."""
    from causal_disent.data import registry
    from causal_disent.runs.config_file import read_config
    from causal_disent.train import stages

    if _WORKDIR.value is None:
        raise ValueError("--workdir=W is required: a finished CT-VAE or CausalVAE run")
    workdir = Path(_WORKDIR.value)
    config = read_config(workdir)
    if "ct" not in config.stages and "causalvae" not in config.stages:
        raise ValueError(f"the run in {workdir} trains {', '.join(config.stages)}; intervene "
                         "works on CT-VAE runs (stage ct) and CausalVAE runs (stage causalvae)")
    if (_IMAGE.value is None) == (_INDEX.value is None):
        raise ValueError("give the input as either --image=FILE.png or --index=N")
    out = _OUT.value
    if out is not None and not out.endswith(".png"):
        raise ValueError(f"--out={out} must name a .png file")
    check_writable_folder(Path(out).parent if out is not None else workdir / OUT_FOLDER)
    image = input_image(registry.dataset_from_config(config.data))
    progress = stages.training_progress(config, workdir, unfinished=True)
    if progress.get("finished") is False:  # a strip of a model in training is still useful
        print(f"warning: {progress['unfinished']}; drawing from its latest checkpoints",
              file=sys.stderr)
    if "ct" in config.stages:
        return _ct_strip(workdir, image, out)
    return _causalvae_strip(workdir, image, out)


def _ct_strip(workdir: Path, image: np.ndarray, out: str | None) -> Path:
    from causal_disent import ct_interventions
    from causal_disent.utils import figures

    if _CONCEPT.value is not None or _VALUES.value:
        raise ValueError("a CT-VAE run takes --action=NAME|INDEX (and --times), not "
                         "--concept / --values")
    model = ct_interventions.CTVAE.load(workdir)
    if _ACTION.value is None:
        raise ValueError(f"a CT-VAE run needs --action=NAME|INDEX; its actions: "
                         f"{', '.join(model.action_names)}")
    action = choose(_ACTION.value, model.action_names, "action")
    chain = ct_interventions.apply_action(model, image, action, times=_TIMES.value,
                                          seed=_SEED.value)
    strip = np.concatenate([image[None], chain])[None]
    labels = ["input", "reconstruction", *[f"×{t}" for t in range(1, _TIMES.value + 1)]]
    path = _output_path(workdir, out, model.action_names[action])
    return figures.save_image_grid(
        strip, path, title=f"{model.action_names[action]} applied 1..{_TIMES.value} times "
        f"(CT-VAE, {workdir.name})", row_labels=[model.action_names[action]],
        column_labels=labels)


def _causalvae_strip(workdir: Path, image: np.ndarray, out: str | None) -> Path:
    from causal_disent import causalvae_interventions as cvi
    from causal_disent.utils import figures

    if _ACTION.value is not None:
        raise ValueError("a CausalVAE run takes --concept=NAME|INDEX and --values, not "
                         "--action")
    run = cvi.TrainedCausalVAE.load(workdir)
    names = tuple(run.dataset.label_names)
    if _CONCEPT.value is None:
        raise ValueError(f"a CausalVAE run needs --concept=NAME|INDEX; its concepts: "
                         f"{', '.join(names)}")
    concept = choose(_CONCEPT.value, names, "concept")
    values = label_values(_VALUES.value, run.dataset.labels(run.split["train"])[:, concept],
                          names[concept])
    repeated = np.repeat(image[None], len(values), axis=0)
    intervened = cvi.intervene(run.model, run.params, repeated, concept,
                               run.codes_of_labels(values, concept=concept))
    strip = np.concatenate([image[None], cvi.reconstruct(run.model, run.params, image[None]),
                            intervened])[None]
    labels = ["input", "reconstruction", *[f"{names[concept]} = {v:g}" for v in values]]
    return figures.save_image_grid(
        strip, _output_path(workdir, out, names[concept]),
        title=f"do({names[concept]} = v): the concept and its descendants change "
              f"(CausalVAE, {workdir.name})",
        row_labels=[names[concept]], column_labels=labels)


def choose(given: str, names: tuple[str, ...], what: str) -> int:
    """The index of `given`, a name in `names` or an index into them."""
    if given in names:
        return names.index(given)
    if given.lstrip("-").isdigit():
        index = int(given)
        if 0 <= index < len(names):
            return index
        raise ValueError(f"--{what}={given} is out of range: the run has {len(names)} "
                         f"{what}s (0..{len(names) - 1})")
    raise ValueError(f"unknown {what} {given!r}; the run's {what}s: {', '.join(names)}")


def label_values(given: list[str] | None, train_labels: np.ndarray,
                 name: str = "the concept") -> np.ndarray:
    """The values of --values, else DEFAULT_NUM_VALUES spanning the training labels. A
    warning names the values outside them: the strip then shows the model
    extrapolating (what an intervention off the data's support may ask for)."""
    low, high = float(train_labels.min()), float(train_labels.max())
    if not given:
        return np.linspace(low, high, DEFAULT_NUM_VALUES)
    try:
        values = np.array([float(value) for value in given])
    except ValueError:
        raise ValueError(f"--values must be numbers separated by commas, got "
                         f"{','.join(given)}") from None
    if not np.isfinite(values).all():
        raise ValueError(f"--values must be finite, got {','.join(given)}")
    outside = values[(values < low) | (values > high)]
    if outside.size:
        print(f"warning: --values {', '.join(f'{v:g}' for v in outside)} lie outside the "
              f"training labels of {name} ({low:g} to {high:g}); the model never saw them, "
              f"so the strip shows it extrapolating", file=sys.stderr)
    return values


def input_image(dataset) -> np.ndarray:
    """uint8 [H, W, ch]: --image read and checked against the run's image shape, or
    image --index of the run's dataset."""
    if _INDEX.value is None:
        return read_image(Path(_IMAGE.value), tuple(dataset.image_shape))
    if _INDEX.value >= dataset.num_images:
        raise ValueError(f"--index={_INDEX.value} is out of range: the dataset "
                         f"{dataset.name} has {dataset.num_images} images")
    return dataset.images(np.array([_INDEX.value]))[0]


def read_image(path: Path, image_shape: tuple[int, int, int]) -> np.ndarray:
    """uint8 [H, W, ch] from a PNG or JPEG whose size is image_shape's (H, W),
    converted to its channels (1: grey, 3: RGB, 4: RGBA)."""
    from PIL import Image, UnidentifiedImageError

    height, width, channels = image_shape
    if not path.is_file():
        raise ValueError(f"--image={path}: no such file")
    try:
        with Image.open(path) as opened:
            image = opened.convert({1: "L", 3: "RGB", 4: "RGBA"}[channels])
    except UnidentifiedImageError:
        raise ValueError(f"--image={path} is not an image PIL can read (use PNG or "
                         "JPEG)") from None
    if image.size != (width, height):
        raise ValueError(f"--image={path} is {image.size[0]}x{image.size[1]} pixels; the "
                         f"run's model takes {width}x{height}: resize it first")
    pixels = np.asarray(image, np.uint8)
    return pixels[..., None] if channels == 1 else pixels


def _output_path(workdir: Path, out: str | None, what: str) -> Path:
    if out is not None:
        return Path(out)
    source = Path(_IMAGE.value).stem if _IMAGE.value else f"index{_INDEX.value}"
    safe = "".join(c if c.isalnum() or c in "+-_" else "_" for c in what)
    return workdir / OUT_FOLDER / f"{source}_{safe}.png"


def check_writable_folder(folder: Path) -> None:
    """ValueError, before any model is loaded, when the strip could not be written in
    `folder`: its nearest existing folder must take a file (nothing is left there)."""
    existing = next(path for path in (folder, *folder.absolute().parents) if path.exists())
    try:
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        with tempfile.NamedTemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise ValueError(f"{folder} cannot be written ({error.strerror or error}), so no strip "
                         f"can be: give --out=FILE.png in a folder you can write to") from None


if __name__ == "__main__":
    app.run(main, flags_parser=cli.parse_flags_or_exit)
