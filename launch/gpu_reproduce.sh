#!/usr/bin/env bash
# Reproduces CT-VAE on Shapes3D (configs/ctvae_shapes3d.py:gpu, 6.4 minutes of one
# H200) in slices of at most MAX_MINUTES (default 9) minutes each, for machines
# that may be taken away between commands; WORKDIR must outlive them.
#
#   WORKDIR=/mnt/runs/ctvae launch/gpu_reproduce.sh               # one slice
#   WORKDIR=/mnt/runs/ctvae launch/gpu_reproduce.sh --until-done  # slices until done
#
# Exit status of one slice: 0 when both stages are finished, 3 when its time was
# spent and it saved a checkpoint (run it again to continue), anything else an
# error. --until-done reruns while the status is 3 and exits with the last status.
# Extra arguments go to causal_disent.main (e.g. --config.ct.train.num_steps=8000).
# Compiled programs are cached in WORKDIR/jax_cache, so later slices skip most
# compilation.
#
# KEEP=DIR copies, after every slice whatever its status, what a record of the run
# needs into DIR (e.g. results/gpu_<date>_<card>_ctvae, or the device tool's $OUT):
# metrics.jsonl (every step's training row and each curve point, with each action's
# mask and edge density), results.json once a stage has finished (its scores and
# structure densities), the curves, config, commands, log and figures; no
# checkpoints. A machine taken away mid-run then still leaves the run readable.
set -euo pipefail

: "${WORKDIR:?set WORKDIR to the run directory (shared by every slice)}"
WORKDIR="$(realpath -m "${WORKDIR}")"  # before leaving the caller's directory
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repository root: configs/, .venv/
PYTHON="${PYTHON:-.venv/bin/python}"
source launch/slices.sh
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-${WORKDIR}/jax_cache}"

run_slice() {
  "${PYTHON}" -m causal_disent.main --config=configs/ctvae_shapes3d.py:gpu \
    --workdir="${WORKDIR}" --max_minutes="${MAX_MINUTES:-9}" "$@"
}

# The run's readable records (no checkpoints, no code cache) into KEEP.
keep_records() {
  [[ -n "${KEEP:-}" && -d "${WORKDIR}" ]] || return 0
  mkdir -p "${KEEP}"
  local name
  for name in metrics.jsonl results.json config.json command.txt provenance.jsonl \
      log.txt curves figures; do
    [[ -e "${WORKDIR}/${name}" ]] && cp -r "${WORKDIR}/${name}" "${KEEP}/"
  done
  return 0
}

keeping_slice() {
  local status=0
  run_slice "$@" || status=$?
  keep_records
  return "${status}"
}

run_slices keeping_slice "$@"
