#!/usr/bin/env bash
# Runs causal_disent.main as NUM_PROCESSES processes of one job on this machine,
# each with DEVICES_PER_PROCESS CPU devices, talking through a local coordinator:
# the multi-host code path (jax.distributed, per-process data slices, process 0
# writing the records, Orbax saving from every process) without a cluster.
#
#   launch/local_multiprocess.sh 2 4 --config=configs/ctvae_shapes3d.py:tiny --workdir=W
#
# Each process logs to W.process_<i>.log beside the workdir (the workdir's
# --workdir flag is required). Exit status: the first non-zero status of a process,
# else 0. tests/train/test_multiprocess.py uses it to check that 2 processes x 4
# devices train exactly as 1 process with 8 devices. On GPUs, leave
# DEVICES_PER_PROCESS empty ("") to use the real devices (one process per GPU:
# set CUDA_VISIBLE_DEVICES per process yourself, or use launch/slurm.sbatch).
set -euo pipefail

NUM_PROCESSES="${1:?usage: launch/local_multiprocess.sh NUM_PROCESSES DEVICES_PER_PROCESS MAIN_FLAGS...}"
DEVICES_PER_PROCESS="${2?usage: launch/local_multiprocess.sh NUM_PROCESSES DEVICES_PER_PROCESS MAIN_FLAGS...}"
shift 2
PYTHON="${PYTHON:-python}"
workdir=""
for argument in "$@"; do
  if [[ "${argument}" == --workdir=* ]]; then workdir="${argument#--workdir=}"; fi
done
: "${workdir:?pass --workdir=W (each process logs to W.process_<i>.log)}"
mkdir -p "$(dirname "${workdir}")"
port="$("${PYTHON}" -c 'import socket; s = socket.socket(); s.bind(("localhost", 0)); print(s.getsockname()[1])')"

if [[ -n "${DEVICES_PER_PROCESS}" ]]; then
  export JAX_PLATFORMS=cpu
  export XLA_FLAGS="--xla_force_host_platform_device_count=${DEVICES_PER_PROCESS} ${XLA_FLAGS:-}"
fi
pids=()
for ((i = 0; i < NUM_PROCESSES; i++)); do
  "${PYTHON}" -m causal_disent.main "$@" --distributed \
    --coordinator_address="localhost:${port}" --num_processes="${NUM_PROCESSES}" \
    --process_id="${i}" > "${workdir}.process_${i}.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "${pid}" || { code=$?; [[ "${status}" -eq 0 ]] && status="${code}"; }
done
exit "${status}"
