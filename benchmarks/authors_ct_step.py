r"""Times one training step of the CT-VAE authors' PyTorch code (Strong-AI-Lab/ct-vae)
in one mode, on the CPU, so that benchmarks/ct_step_time.py can set our stage-2
step beside theirs measured on the same machine in the same hour.

Needs only PyTorch and torch-geometric (no JAX, nothing of this library), and a
checkout of their repository, which this project does not ship. Their
requirements pin torch-geometric 2.2.0, which needs the compiled torch-sparse;
2.3.1 is the nearest release that runs without it (from 2.4 on, GATv2Conv's
backward fails on their graphs with an in-place modification error):

  git clone https://github.com/Strong-AI-Lab/ct-vae /tmp/ct-vae   # commit 470ba42
  python -m venv /tmp/torchenv
  /tmp/torchenv/bin/pip install torch torch-geometric==2.3.1 pyyaml
  /tmp/torchenv/bin/python benchmarks/authors_ct_step.py --repo=/tmp/ct-vae --mode=action

What a step is, as their `experiment.VAEXperiment.training_step` and
`configure_optimizers` make it with `configs/ct_mcq_vae.yaml` (the paper's Shapes3D
CT-VAE: batch 16, 12 actions, one codebook of 64 codes over the 8 × 8 grid, pair
MLPs of 800, GATv2 layers of 100): `model(x, input_y=y, action=a, mode=m)`, their
`loss_function`, `loss.backward()` (the encoder and decoder keep
requires_grad, so the backward runs through them too), and an Adam step over
`ct_layer`'s parameters alone (`update_parameters: ct_layer`). Their modes are
named base / action / causal; base is our standard mode. Images are random in
[-1, 1] (the step's cost does not depend on them).

Prints one JSON line: {"mode", "median_s", "first_step_s", "steps", "peak_rss_gb",
"threads", "torch"}.
"""

import argparse
import importlib
import json
import resource
import statistics
import sys
import time
import types
from pathlib import Path

# Our names for their modes.
MODES = {"standard": "base", "action": "action", "causal": "causal"}


def load_authors_model_class(repo: Path):
    """CTMCQVAE from their `models` package, importing only the four modules it
    needs (their package's __init__ imports every model of the zoo it was forked
    from, some with requirements of their own)."""
    package = types.ModuleType("models")
    package.__path__ = [str(repo / "models")]
    sys.modules["models"] = package
    for name, exported in (("base", ["BaseVAE"]), ("vq_vae", ["ResidualLayer"]),
                           ("mcq_vae", ["MultipleCodebookVectorQuantizer"])):
        module = importlib.import_module(f"models.{name}")
        for symbol in exported:
            setattr(package, symbol, getattr(module, symbol))
    return importlib.import_module("models.ct_mcq_vae").CTMCQVAE


class _OneLineParser(argparse.ArgumentParser):
    """The project's one-line `error:` on a bad command line. This script runs in a
    PyTorch environment without this library, so it cannot import cli's parser."""

    def error(self, message: str):
        raise SystemExit(f"error: {message} (see --help)")


def main():
    parser = _OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a checkout of Strong-AI-Lab/ct-vae")
    parser.add_argument("--mode", choices=sorted(MODES), required=True)
    parser.add_argument("--steps", type=int, default=5, help="timed steps after one untimed")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error(f"--steps={args.steps} times nothing; give 1 or more")
    if not (args.repo / "models" / "ct_mcq_vae.py").is_file():
        raise SystemExit(f"error: {args.repo} is not a checkout of Strong-AI-Lab/ct-vae "
                         "(no models/ct_mcq_vae.py); pass --repo=<its clone>")

    import torch
    import yaml

    config = yaml.safe_load((args.repo / "configs" / "ct_mcq_vae.yaml").read_text())
    model_params = dict(config["model_params"])
    model_class = load_authors_model_class(args.repo)
    torch.manual_seed(config["exp_params"]["manual_seed"])
    model = model_class(**model_params)
    model.train()
    optimizer = torch.optim.Adam(getattr(model, config["exp_params"]["update_parameters"]).parameters(),
                                 lr=config["exp_params"]["LR"],
                                 weight_decay=config["exp_params"]["weight_decay"])

    batch = config["data_params"]["train_batch_size"]
    size = model_params["img_size"]
    num_actions = model_params["action_dim"]
    generator = torch.Generator().manual_seed(0)

    def step():
        x = torch.rand(batch, 3, size, size, generator=generator) * 2 - 1
        y = torch.rand(batch, 3, size, size, generator=generator) * 2 - 1
        action = torch.nn.functional.one_hot(
            torch.randint(num_actions, (batch,), generator=generator), num_actions).float()
        start = time.perf_counter()
        optimizer.zero_grad()
        results = model(x, input_y=y, action=action, mode=MODES[args.mode])
        loss = model.loss_function(*results, M_N=config["exp_params"]["kld_weight"],
                                   optimizer_idx=0, batch_idx=0)["loss"]
        loss.backward()
        optimizer.step()
        return time.perf_counter() - start

    first = step()
    times = [step() for _ in range(args.steps)]
    print(json.dumps({
        "mode": args.mode, "median_s": statistics.median(times), "first_step_s": first,
        "steps": args.steps,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "threads": torch.get_num_threads(), "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
