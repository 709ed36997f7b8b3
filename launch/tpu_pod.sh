#!/usr/bin/env bash
# Launches a config on every host of a Cloud TPU VM pod slice.
#
#   TPU_NAME=my-v4-32 ZONE=us-central2-b WORKDIR=/mnt/shared/ctvae \
#     launch/tpu_pod.sh configs/ctvae_shapes3d.py [--config.seed=1 ...]
#
# Every host runs the same command with --distributed, which calls
# jax.distributed.initialize(); the global batch is split over all hosts' devices.
# WORKDIR must be one directory that every host sees (an NFS/Filestore or gcsfuse
# mount): Orbax writes the checkpoint there together from all hosts, and host 0
# writes metrics, figures and results.json.
set -euo pipefail

: "${TPU_NAME:?set TPU_NAME to the TPU VM name}"
: "${ZONE:?set ZONE to the TPU VM zone}"
: "${WORKDIR:?set WORKDIR to a directory shared by all hosts}"
CONFIG="${1:?usage: launch/tpu_pod.sh CONFIG.py[:variant] [flags...]}"
shift
REPO_URL="${REPO_URL:-$(git config --get remote.origin.url)}"
REF="${REF:-$(git rev-parse HEAD)}"

remote_command=$(cat <<CMD
set -e
if [ ! -d causal_disent_repo ]; then git clone -q '${REPO_URL}' causal_disent_repo; fi
cd causal_disent_repo && git fetch -q origin && git checkout -q '${REF}'
python3 -m venv .venv && .venv/bin/pip install -q -e . 'jax[tpu]'
.venv/bin/python -m causal_disent.main --config='${CONFIG}' --workdir='${WORKDIR}' --distributed $*
CMD
)

gcloud compute tpus tpu-vm ssh "${TPU_NAME}" --zone="${ZONE}" --worker=all \
  --command="${remote_command}"
