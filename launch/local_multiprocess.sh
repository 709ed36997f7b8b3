#!/usr/bin/env bash
# Runs causal_disent.main as NUM_PROCESSES processes of one job on this machine,
# each with DEVICES_PER_PROCESS CPU devices, talking through a local coordinator:
# the multi-host code path (jax.distributed, per-process data slices, process 0
# writing the records, Orbax saving from every process) without a cluster.
#
#   launch/local_multiprocess.sh 2 4 --config=configs/ctvae_shapes3d.py:tiny --workdir=W
#
# Each process logs to W.process_<i>.log beside the workdir (the workdir's
# --workdir flag is required). Exit status: that of the first process to fail, else 0;
# its `error:` line (or the signal that ended it, or its log's last line) is printed
# with the log's path. tests/train/test_multiprocess.py uses it to check that 2 processes x 4
# devices train exactly as 1 process with 8 devices. On GPUs, leave
# DEVICES_PER_PROCESS empty ("") to use the real devices (one process per GPU:
# set CUDA_VISIBLE_DEVICES per process yourself, or use launch/slurm.sbatch).
set -euo pipefail

NUM_PROCESSES="${1:?usage: launch/local_multiprocess.sh NUM_PROCESSES DEVICES_PER_PROCESS MAIN_FLAGS...}"
DEVICES_PER_PROCESS="${2?usage: launch/local_multiprocess.sh NUM_PROCESSES DEVICES_PER_PROCESS MAIN_FLAGS...}"
shift 2
if ! [[ "${NUM_PROCESSES}" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: NUM_PROCESSES is '${NUM_PROCESSES}'; give a whole number of processes >= 1 (launch/local_multiprocess.sh 2 4 --config=... --workdir=W)" >&2
  exit 1
fi
if ! [[ "${DEVICES_PER_PROCESS}" =~ ^([1-9][0-9]*)?$ ]]; then
  echo "error: DEVICES_PER_PROCESS is '${DEVICES_PER_PROCESS}'; give a whole number of CPU devices >= 1, or \"\" for the machine's own devices" >&2
  exit 1
fi
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
declare -A process_of  # pid -> process index, while it runs
for ((i = 0; i < NUM_PROCESSES; i++)); do
  "${PYTHON}" -m causal_disent.main "$@" --distributed \
    --coordinator_address="localhost:${port}" --num_processes="${NUM_PROCESSES}" \
    --process_id="${i}" > "${workdir}.process_${i}.log" 2>&1 &
  process_of[$!]="${i}"
done
# Why a process ended with a status: its own `error:` line; else, for a signal, the
# signal's name and XLA's fatal log line if it has one (JAX aborts a process whose peer
# died: "Terminating process because the JAX distributed service detected fatal
# errors..."); else its log's last line.
reason() {
  local log="$1" code="$2" line fatal signal
  line="$(grep -m1 '^error:' "${log}" || true)"
  if [[ -n "${line}" ]]; then echo "${line#error: }"; return; fi
  fatal="$(grep -m1 -E '^F[0-9]{4} ' "${log}" | sed -E 's/^F[0-9]{4} [^]]*\] //' || true)"
  if (( code > 128 )); then
    if signal="$(kill -l $((code - 128)) 2>/dev/null)"; then signal="SIG${signal}"
    else signal="signal $((code - 128))"; fi
    echo "ended by ${signal}${fatal:+: ${fatal}}"
  else
    echo "${fatal:-$(tail -n 1 "${log}")}"
  fi
}

# Processes are taken in the order they end: the first to fail is the likeliest cause
# (a process killed, then its peers aborted by JAX).
status=0
while ((${#process_of[@]})); do
  code=0
  # (2>/dev/null: bash's own "Aborted ..." notice; the line below says it)
  wait -n -p ended "${!process_of[@]}" 2>/dev/null || code=$?
  i="${process_of[${ended}]}"
  unset "process_of[${ended}]"
  if [[ "${code}" -ne 0 && "${status}" -eq 0 ]]; then  # the others' logs lie beside it
    log="${workdir}.process_${i}.log"
    echo "error: process ${i} of ${NUM_PROCESSES} exited with status ${code}: $(reason "${log}" "${code}") (its log: ${log})" >&2
    status="${code}"
  fi
done
exit "${status}"
