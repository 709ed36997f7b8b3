#!/usr/bin/env bash
# The GPU figures of docs/accelerators.md ("Feeding an accelerator") in one device
# command of at most BUDGET seconds (default 560), each part under its own timeout so
# that what finished is kept:
#   1. benchmarks/loop_overhead.py: β-VAE :small, one seed, 2000 steps, k = 10, device
#      data, the 10 steps a loop (the GPU's "auto"; the target: the device busy for
#      >= 0.85 of the loop's time)
#   2. the same with the 10 steps unrolled (train.unroll_call=on: no loop control for
#      the host to wait on inside each call)
#   2p. part 1's loop again for 500 steps, its trace kept in TRACES: where the device
#      idles and what the host's main thread is doing then (benchmarks/trace_gaps.py,
#      its summary in the part's console)
#   3. benchmarks/seed_stacking.py: the stacked step of eight seeds alone, vmapped with
#      convolutions (the GPU's "auto") and with convolutions as matmuls (vmap_matmul);
#      the faster one runs the stacked seeds of the parts after it
#   4. benchmarks/loop_overhead.py, unrolled, for eight stacked seeds, 1000 steps
#   5. benchmarks/seed_stacking_runs.py: eight stacked seeds against two sequential runs,
#      projected to eight (the target: >= 6x less wall time), k = 10 unrolled, device data,
#      JAX_LOG_COMPILES=1 (each part's compile seconds); the runs' log.txt files (lines
#      cut to 160 characters) are kept beside its record
#   6. part 1 again with XLA:GPU's command buffers also holding loops and conditionals
#      (XLA_FLAGS=--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL: the loop run as a
#      CUDA graph on the device, its control not on the host), the other way out of
#      part 1's waits, one that compiles the step once
#   7. benchmarks/loop_overhead.py: eight stacked seeds, 1000 steps, a loop
#   8. benchmarks/first_state_compilation.py: compiling each stage's first state with
#      XLA's defaults and at LLVM -O1 (the CPU's choice, train/resume.py): seconds and
#      whether the bits stay, for β-VAE at one and eight seeds and CT-VAE's two stages
#   9. CT-VAE stage 2 on its code cache (`:small`), 1000 steps, k = 10 as configured
#      for accelerators (a loop over `lax.switch` on each step's mode), in the time left
# The issue's GPU targets (parts 1, 2, 4 and 5) and the trace of part 1's loop (2p, about
# 30 s) come first: a session lends 15 minutes of device time, CT-VAE's reproduction
# takes about 400 s of it, and BUDGET=400 should reach part 5 (at a44d96a on an H200 the
# one-seed loop took 46 s, the stacked and sequential runs 138 s, the eight-seed loop
# 64 s); part 5 takes the time left but 10 s.
#
#   OUT=/tmp/out BUDGET=560 launch/gpu_loop_benchmarks.sh
#
# Each part writes PARTS/<part>.txt (its console) and PARTS/<part>_record.json (its
# record, to copy into results/); PARTS/timeline.txt says when each ended and how, and
# PARTS/machine.txt what ran them (PARTS: default /tmp/gpu_loop_benchmarks, emptied
# first). After each part the folder is packed anew into
# OUT/gpu_loop_benchmarks.tar.gz, beside a copy of the timeline: two files, since the
# device tool brings back only 8 files from OUT (two were lost that way at a44d96a),
# and whatever parts had ended when a time limit cut the command are in the archive.
# Unpack it here with `tar -xzf gpu_loop_benchmarks.tar.gz -C results/<folder>`.
#
# PREFLIGHT=1 runs every part for a few steps and without time limits, to check on any
# machine, before a GPU session spends its minutes on them, that the commands still
# run (2 CPU cores: 36 minutes; its figures mean nothing, and a CPU runs the
# looped parts 30x slower than unrolled, train/multi_step.py). A benchmark that broke
# shows as a part whose exit is not 0 in the timeline:
#
#   OUT=/tmp/preflight PREFLIGHT=1 PYTHON=.venv/bin/python launch/gpu_loop_benchmarks.sh
#
# PYTHON (default python3) needs the package's dependencies: wheels in .whl/ are
# installed first when present (some GPU images lack jraph, ml-collections,
# tensorboardX and filelock, without which runs compile afresh: `.venv/bin/pip
# download --no-deps -d .whl jraph ml-collections tensorboardX filelock` here, then
# carry .whl to the machine). Run it from the repository root.
set -uo pipefail

: "${OUT:?set OUT to the folder that gets the outputs}"
PYTHON="${PYTHON:-python3}"
PARTS="${PARTS:-/tmp/gpu_loop_benchmarks}"
RUNS="${RUNS:-/tmp/seed_stacking_runs}"  # the workdirs of part 5
TRACES="${TRACES:-/tmp/gpu_loop_traces}"  # part 2p's trace (megabytes: not packed)
rm -rf "${PARTS}" "${TRACES}"
mkdir -p "${OUT}" "${PARTS}"
if compgen -G ".whl/*.whl" > /dev/null; then
  "${PYTHON}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl || exit 9
  export PYTHONPATH="/tmp/site:${PWD}"
fi
export PYTHONUNBUFFERED=1
START=$(date +%s)
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - START) )); }
upto() { local l; l=$(left); echo $(( $1 < l ? $1 : l )); }  # SECONDS, or what is left
# Each part's steps: the measurement's, or a preflight's few (`loop_overhead.py` times
# what follows its first call of 10 steps).
if [[ -n "${PREFLIGHT:-}" ]]; then
  BUDGET=86400
  upto() { left; }
  LONG=20 SHORT=20 TRACED=20 STACKED_STEPS=3
  FEWER_RUNS=(--seeds=2 --sequential_runs=1 --config.vae.train.num_steps=20)
else
  LONG=2000 SHORT=1000 TRACED=500 STACKED_STEPS=20
  FEWER_RUNS=()
fi

# note LINE: a timeline line, printed and kept; then PARTS packed into OUT again.
note() {
  echo "$1" | tee -a "${PARTS}/timeline.txt"
  cp "${PARTS}/timeline.txt" "${OUT}/timeline.txt"
  tar -czf "${OUT}/.packing.tar.gz" -C "${PARTS}" . \
    && mv "${OUT}/.packing.tar.gz" "${OUT}/gpu_loop_benchmarks.tar.gz"
}

# part NAME SECONDS COMMAND...: runs COMMAND under a timeout of SECONDS, its console to
# PARTS/NAME.txt, and notes its exit status and end time.
part() {
  local name=$1 seconds=$2
  shift 2
  if (( seconds < 20 )); then
    note "${name}: skipped, ${seconds} s left"
    return
  fi
  timeout "${seconds}" "$@" --record="${PARTS}/${name}_record.json" > "${PARTS}/${name}.txt" 2>&1
  note "${name}: exit ${?} at $(( $(date +%s) - START )) s"
}

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  "${PYTHON}" -c "import jax, flax; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())"
} > "${PARTS}/machine.txt" 2>&1
note "machine.txt: exit ${?} at $(( $(date +%s) - START )) s"

K10=(--steps_per_call=10 --device_data=on)
part loop_overhead_s1 "$(upto 120)" "${PYTHON}" benchmarks/loop_overhead.py --cases=betavae \
  --steps="${LONG}" "${K10[@]}" --unroll_call=off
part loop_overhead_s1_unrolled "$(upto 150)" "${PYTHON}" benchmarks/loop_overhead.py --cases=betavae \
  --steps="${LONG}" "${K10[@]}" --unroll_call=on
part loop_overhead_s1_profile "$(upto 60)" "${PYTHON}" benchmarks/loop_overhead.py \
  --cases=betavae --steps="${TRACED}" "${K10[@]}" --unroll_call=off --profile="${TRACES}"
for execution in vmap vmap_matmul; do
  part "seed_stacking_step_${execution}" "$(upto 90)" "${PYTHON}" benchmarks/seed_stacking.py \
    --execution="${execution}" --steps="${STACKED_STEPS}"
done

# The execution whose stacked step was faster ("vmap" when either part failed).
EXECUTION=$("${PYTHON}" - "${PARTS}" <<'PICK'
import json, sys
from pathlib import Path
seconds = {}
for execution in ("vmap", "vmap_matmul"):
    record = Path(sys.argv[1]) / f"seed_stacking_step_{execution}_record.json"
    if record.is_file():
        seconds[execution] = json.loads(record.read_text())["figures"]["stacked"]["step_s"]
print(min(seconds, key=seconds.get) if len(seconds) == 2 else "vmap")
PICK
)
[[ "${EXECUTION}" == vmap_matmul ]] || EXECUTION=vmap
note "stacked seeds run as ${EXECUTION}"
S8_CASE=betavae_s8
[[ "${EXECUTION}" == vmap_matmul ]] && S8_CASE=betavae_s8_matmul

part loop_overhead_s8_unrolled "$(upto 150)" "${PYTHON}" benchmarks/loop_overhead.py \
  --cases="${S8_CASE}" --steps="${SHORT}" "${K10[@]}" --unroll_call=on
part seed_stacking_runs $(( $(left) - 10 )) env JAX_LOG_COMPILES=1 \
  "${PYTHON}" benchmarks/seed_stacking_runs.py \
  --root="${RUNS}" --sequential_runs=2 \
  --config.vae.train.steps_per_call=10 --config.vae.train.device_data=on \
  --config.vae.train.unroll_call=on --config.seed_execution="${EXECUTION}" \
  "${FEWER_RUNS[@]}"
# Each run's log.txt, its lines cut short (the results lines hold whole score tables):
# their times split setup (init, rendering, placing the table, the step-0 curve
# point) and each seed's evaluation and figures.
for run in "${RUNS}"/*/; do
  if [[ -f "${run}log.txt" ]]; then
    cut -c1-160 "${run}log.txt" > "${PARTS}/seed_stacking_runs_log_$(basename "${run}").txt"
  fi
done
note "seed_stacking_runs logs: $(compgen -G "${PARTS}/seed_stacking_runs_log_*" | wc -l) kept"
part loop_overhead_s1_command_buffer "$(upto 90)" env \
  XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL" \
  "${PYTHON}" benchmarks/loop_overhead.py --cases=betavae --steps="${LONG}" "${K10[@]}" \
  --unroll_call=off
part loop_overhead_s8 "$(upto 90)" "${PYTHON}" benchmarks/loop_overhead.py --cases="${S8_CASE}" \
  --steps="${SHORT}" "${K10[@]}" --unroll_call=off
part first_state_compilation "$(upto 150)" "${PYTHON}" benchmarks/first_state_compilation.py \
  --cases=betavae,betavae_s8,ctvae
part loop_overhead_ct_cache "$(left)" "${PYTHON}" benchmarks/loop_overhead.py --cases=ct_cache \
  --steps="${SHORT}" "${K10[@]}"
ls -la "${PARTS}" "${OUT}"
