#!/usr/bin/env bash
# Runs a config on every host of a Cloud TPU VM slice; optionally creates the slice
# first and deletes it afterwards.
#
#   TPU_NAME=my-v4-32 ZONE=us-central2-b WORKDIR=/mnt/shared/ctvae \
#     launch/tpu_pod.sh configs/ctvae_shapes3d.py [--config.seed=1 ...]
#
#   CREATE=1 ACCELERATOR_TYPE=v4-32 [RUNTIME_VERSION=tpu-ubuntu2204-base] [SPOT=1] \
#   DELETE=1 TPU_NAME=... ZONE=... WORKDIR=... launch/tpu_pod.sh CONFIG [flags...]
#
# Every host runs the same command with --distributed, whose
# jax.distributed.initialize() finds its peers from the TPU metadata; the global
# batch is split over all hosts' devices. WORKDIR must be one directory that every
# host sees (a Filestore/NFS or gcsfuse mount): Orbax writes each checkpoint there
# from all hosts together, host 0 writes metrics, figures and results.json.
# Preemption (spot slices) sends SIGTERM: the run saves the step it is on and exits
# 143; running the same command again (with CREATE=1 on a new slice) resumes.
# DELETE=1 deletes the slice when the command ends, whatever its status.
# DRY_RUN=1 prints the gcloud commands instead of running them.
# Needs: the gcloud CLI, authenticated, with a project set (or PROJECT=...).
set -euo pipefail

: "${TPU_NAME:?set TPU_NAME to the TPU VM name}"
: "${ZONE:?set ZONE to the TPU VM zone}"
: "${WORKDIR:?set WORKDIR to a directory shared by all hosts}"
CONFIG="${1:?usage: launch/tpu_pod.sh CONFIG.py[:variant] [flags...]}"
shift
REPO_URL="${REPO_URL:-$(git config --get remote.origin.url)}"
REF="${REF:-$(git rev-parse HEAD)}"
project=(${PROJECT:+--project="${PROJECT}"})

gcloud_() {
  if [[ "${DRY_RUN:-0}" == 1 ]]; then printf 'gcloud'; printf ' %q' "$@"; echo; else gcloud "$@"; fi
}

if [[ "${CREATE:-0}" == 1 ]]; then
  : "${ACCELERATOR_TYPE:?set ACCELERATOR_TYPE (e.g. v4-32, v5litepod-16) to create a slice}"
  gcloud_ compute tpus tpu-vm create "${TPU_NAME}" --zone="${ZONE}" "${project[@]}" \
    --accelerator-type="${ACCELERATOR_TYPE}" \
    --version="${RUNTIME_VERSION:-tpu-ubuntu2204-base}" ${SPOT:+--spot}
fi
if [[ "${DELETE:-0}" == 1 ]]; then
  trap 'gcloud_ compute tpus tpu-vm delete "${TPU_NAME}" --zone="${ZONE}" "${project[@]}" --quiet' EXIT
fi

remote_command=$(cat <<CMD
set -e
if [ ! -d causal_disent_repo ]; then git clone -q '${REPO_URL}' causal_disent_repo; fi
cd causal_disent_repo && git fetch -q origin && git checkout -q '${REF}'
python3 -m venv .venv && .venv/bin/pip install -q -e . 'jax[tpu]'
.venv/bin/python -m causal_disent.main --config='${CONFIG}' --workdir='${WORKDIR}' --distributed $*
CMD
)

gcloud_ compute tpus tpu-vm ssh "${TPU_NAME}" --zone="${ZONE}" "${project[@]}" --worker=all \
  --command="${remote_command}"
