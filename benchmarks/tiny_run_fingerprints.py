r"""Fingerprints of every config's `:tiny` run: a hash of the numbers in results.json
and one of each stage's final parameters. A refactoring that must not change
behaviour leaves every line of the output the same.

  python benchmarks/tiny_run_fingerprints.py > before.txt
  ... change the code ...
  python benchmarks/tiny_run_fingerprints.py > after.txt && diff before.txt after.txt

  python benchmarks/tiny_run_fingerprints.py --tree=/tmp/old_checkout   # another tree's code

Each run is a fresh process (`python -m causal_disent.main --config=C:tiny`) in a
temporary workdir, started in the tree whose code it fingerprints (this checkout, or
--tree: a checkout of another commit, e.g. a `git worktree`), so that tree's
`causal_disent` and configs are the ones imported. `--record` keeps the fingerprints,
and the tree's commit, as a record in results/. Wall-clock figures (any key naming
seconds, minutes or a rate per second) are left out of the results hash; every other
number is hashed exactly (its repr). Parameters are read from each stage's latest Orbax checkpoint and hashed
leaf by leaf, in path order, by their bytes.

Compare fingerprints made on one machine. XLA compiles for the host CPU's vector
instructions, so float results, and every hash, depend on them: 4341aca's `:tiny`
runs, fingerprinted on 2026-11-26 and again on 2026-11-28 on another 2-core AMD EPYC
machine (AVX2, no AVX-512), gave other hashes for every VAE-family config. The first
line printed names the host's CPU and its vector extensions, so a diff between two
machines shows that first.
"""

from __future__ import annotations

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
sys.path.insert(0, str(ROOT))
from causal_disent import cli  # noqa: E402
from causal_disent.runs import records  # noqa: E402
from causal_disent.utils import arguments  # noqa: E402

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


def fingerprint(config_path: Path, tree: Path) -> dict:
    """{"results": hash, "params": {stage: "step:hash"}} of one config's `:tiny` run
    with `tree`'s code, or {"failed": its last error line}."""
    with tempfile.TemporaryDirectory() as workdir:
        command = [sys.executable, "-m", "causal_disent.main",
                   f"--config={config_path}:tiny", f"--workdir={workdir}"]
        # `python -m` puts the working directory first on sys.path: the tree's package.
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True,
                              env={**os.environ, "JAX_PLATFORMS": "cpu"})
        if done.returncode:
            return {"failed": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        results = json.loads((Path(workdir) / "results.json").read_text())
        return {"results": results_hash(results),
                "params": {stage_dir.name: params_hash(stage_dir)
                           for stage_dir in sorted((Path(workdir) / "checkpoints").iterdir())
                           if stage_dir.is_dir()}}  # beside them: ct_stage_one.json


def lines(name: str, prints: dict) -> list[str]:
    if "failed" in prints:
        return [f"{name} FAILED: {prints['failed']}"]
    return [f"{name} results {prints['results']}"] + [
        f"{name} {stage} params {value}" for stage, value in prints["params"].items()]


VECTOR_EXTENSION = re.compile(r"^(sse4\w*|avx\w*|fma\w*|amx\w*|asimd\w*|sve\w*)$")


def host_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU model and its vector extensions (x86 `flags`, Arm `Features` of
    `cpuinfo`), e.g. "AMD EPYC; avx avx2 fma sse4_1 sse4_2 sse4a"."""
    features: set[str] = set()
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("flags", "Features"):
                features |= {flag for flag in value.split() if VECTOR_EXTENSION.match(flag)}
    except OSError:
        pass
    return f"{records.cpu_model()}; {' '.join(sorted(features)) or 'extensions unknown'}"


def tree_commit(tree: Path) -> str | None:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                          text=True)
    return done.stdout.strip() or None


def main() -> None:
    parser = arguments.OneLineArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="", help="comma-separated config names or "
                        "files, e.g. betavae_dsprites_synth (default: every configs/*.py)")
    parser.add_argument("--tree", default=str(ROOT), help="the checkout whose code and "
                        "configs run (default: this one)")
    records.add_record_flag(parser)
    args = parser.parse_args()
    tree = Path(args.tree).resolve()
    if not (tree / "causal_disent" / "main.py").is_file():
        sys.exit(f"error: --tree={args.tree} is not a causal_disent checkout (no "
                 f"causal_disent/main.py); give a checkout, e.g. from `git worktree add`")
    recorder = records.script_recorder(args.record)
    names = ([Path(name).stem for name in args.configs.split(",")] if args.configs
             else sorted(path.stem for path in (tree / "configs").glob("*.py")
                         if not path.stem.startswith("_")))  # "_": shared parts
    missing = [name for name in names if not (tree / "configs" / f"{name}.py").is_file()]
    if missing:
        sys.exit(f"error: {tree}/configs has no {', '.join(missing)}; name configs/*.py files")
    cpu = host_cpu()
    print(f"# host CPU: {cpu}", flush=True)
    found = {}
    for name in names:
        found[name] = fingerprint(tree / "configs" / f"{name}.py", tree)
        for line in lines(name, found[name]):
            print(line, flush=True)
    records.write_or_exit(recorder, {"tree_commit": tree_commit(tree), "host_cpu": cpu,
                                     "configs": found})


if __name__ == "__main__":
    cli.run_script(main)
