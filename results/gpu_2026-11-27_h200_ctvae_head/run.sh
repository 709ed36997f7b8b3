#!/usr/bin/env bash
# One device command (H200): the :gpu CT-VAE reproduction as configured (stage-2
# structure noise annealed to 0), then the loop-overhead benchmark at k = 10 with
# device data in whatever time is left (β-VAE alone by default: CASES, STEPS).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import jax,flax,optax,orbax.checkpoint; print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,'orbax',orbax.checkpoint.__version__, jax.devices())" 2>&1 | tee -a $OUT/gpu.txt
W=/tmp/ctgpu
set -o pipefail
PYTHON=python3 WORKDIR=$W MAX_MINUTES=${MAXMIN:-8.2} launch/gpu_reproduce.sh \
  --record=$OUT/ctvae_gpu_record.json "$@" 2>&1 \
  | while IFS= read -r l; do printf '%(%s)T %s\n' -1 "$l"; done | tee $OUT/console_log.txt
echo "rc=$? wall=$(( $(date +%s)-T0 ))s" | tee -a $OUT/console_log.txt
(cd $W && tar czf $OUT/run.tgz --exclude='./checkpoints*' --exclude='./code_cache*' \
  --exclude='./jax_cache' --exclude='./*/checkpoints*' .)
left=$(( ${BUDGET:-575} - ($(date +%s)-T0) ))
echo "loop benchmark gets ${left}s" | tee $OUT/loop_overhead.txt
if (( left > 60 )); then
  timeout $left python3 benchmarks/loop_overhead.py --cases=${CASES:-betavae} --steps=${STEPS:-2000} \
    --steps_per_call=10 --device_data=on --record=$OUT/loop_overhead_k10_record.json 2>&1 \
    | tee -a $OUT/loop_overhead.txt
fi
ls -la $OUT
