#!/usr/bin/env bash
# CT-VAE :gpu at k = 10 (both stages) with device data, for MAXMIN minutes on a warm
# machine: how fast each stage goes at the authors' size with issue 33's loop
# (the k = 1 reproductions: stage 1 at 127 steps/s on the host pipeline, stage 2 at
# 108-139). Run from the repository root with OUT set; .whl/ carried.
set -uo pipefail
: "${OUT:?set OUT}"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl || exit 9
  export PYTHONPATH="/tmp/site:${PWD}"
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "${OUT}/gpu.txt" 2>&1
echo "WORKDIR=/tmp/ctk10 PYTHON=python3 MAX_MINUTES=${MAXMIN:-3.5} launch/gpu_reproduce.sh --config.mcqvae.train.steps_per_call=10 --config.ct.train.steps_per_call=10" > "${OUT}/command.txt"
WORKDIR=/tmp/ctk10 PYTHON=python3 MAX_MINUTES="${MAXMIN:-3.5}" timeout "${LIMIT:-250}" \
  bash launch/gpu_reproduce.sh --config.mcqvae.train.steps_per_call=10 \
  --config.ct.train.steps_per_call=10 2>&1 \
  | while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N | cut -c1-14)" "${line}"; done \
  > "${OUT}/console_log.txt"
echo "exit ${PIPESTATUS[0]}" | tee -a "${OUT}/console_log.txt"
find /tmp/ctk10 \( -name '*.jsonl' -o -name 'config.json' -o -name 'results.json' -o -name '*.log' -o -name '*.txt' \) \
  -size -16M -not -path '*/jax_cache/*' -exec cp --parents {} "${OUT}" \; 2>/dev/null
ls -R "${OUT}" | head -50
