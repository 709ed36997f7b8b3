r"""Fingerprints of every config's `:tiny` run: a hash of the numbers in results.json
and one of each stage's final parameters. A refactoring that must not change
behaviour leaves every line of the output the same.

  python benchmarks/tiny_run_fingerprints.py > before.txt
  ... change the code ...
  python benchmarks/tiny_run_fingerprints.py > after.txt && diff before.txt after.txt

Each run is a fresh process (`python -m causal_disent.main --config=C:tiny`) in a
temporary workdir. Wall-clock figures (any key naming seconds, minutes or a rate per
second) are left out of the results hash; every other number is hashed exactly
(its repr). Parameters are read from each stage's latest Orbax checkpoint and hashed
leaf by leaf, in path order, by their bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import orbax.checkpoint as ocp

ROOT = Path(__file__).resolve().parents[1]
VOLATILE_KEY = re.compile(r"second|minute|duration|elapsed")


def results_hash(results: dict) -> str:
    """sha256 of every (path, value) leaf of results.json except wall-clock ones."""
    leaves: list[str] = []

    def walk(value, path: str) -> None:
        if isinstance(value, dict):
            for key in sorted(value):
                if not VOLATILE_KEY.search(key):
                    walk(value[key], f"{path}/{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}/{i}")
        else:
            leaves.append(f"{path}={value!r}")

    walk(results, "")
    return hashlib.sha256("\n".join(leaves).encode()).hexdigest()[:16]


def params_hash(stage_dir: Path) -> str:
    """sha256 of the latest checkpoint's params, leaf by leaf in path order."""
    latest = max(int(p.name) for p in stage_dir.iterdir() if p.name.isdigit())
    with ocp.StandardCheckpointer() as checkpointer:
        state = checkpointer.restore(stage_dir / str(latest) / "state")
    digest = hashlib.sha256()
    flat = sorted(_flatten(state["params"]).items())
    for path, leaf in flat:
        array = np.asarray(leaf)
        digest.update(path.encode() + str(array.dtype).encode() + array.tobytes())
    return f"{latest}:{digest.hexdigest()[:16]}"


def _flatten(tree, prefix: str = "") -> dict:
    if isinstance(tree, dict):
        out = {}
        for key, value in tree.items():
            out.update(_flatten(value, f"{prefix}/{key}"))
        return out
    return {prefix: tree}


def fingerprint(config_path: Path) -> list[str]:
    with tempfile.TemporaryDirectory() as workdir:
        command = [sys.executable, "-m", "causal_disent.main",
                   f"--config={config_path}:tiny", f"--workdir={workdir}"]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "JAX_PLATFORMS": "cpu"})
        if done.returncode:
            return [f"{config_path.stem} FAILED: {done.stderr.strip().splitlines()[-1:]}"]
        results = json.loads((Path(workdir) / "results.json").read_text())
        lines = [f"{config_path.stem} results {results_hash(results)}"]
        for stage_dir in sorted((Path(workdir) / "checkpoints").iterdir()):
            lines.append(f"{config_path.stem} {stage_dir.name} params {params_hash(stage_dir)}")
        return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="", help="comma-separated config files "
                        "(default: every configs/*.py)")
    args = parser.parse_args()
    paths = ([Path(p) for p in args.configs.split(",")] if args.configs
             else sorted((ROOT / "configs").glob("*.py")))
    for path in paths:
        for line in fingerprint(path.resolve()):
            print(line, flush=True)


if __name__ == "__main__":
    main()
