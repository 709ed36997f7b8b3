#!/usr/bin/env bash
# One slice of the :gpu CT-VAE reproduction (resumable): WORKDIR stays on the warm machine.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import jax,flax,optax,orbax.checkpoint; print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,'orbax',orbax.checkpoint.__version__, jax.devices())" 2>&1 | tee -a $OUT/gpu.txt
W=/tmp/ctfull
T0=$(date +%s)
set -o pipefail
PYTHON=python3 WORKDIR=$W MAX_MINUTES=${MAXMIN:-8.5} launch/gpu_reproduce.sh "$@" 2>&1 \
  | while IFS= read -r l; do printf '%(%s)T %s\n' -1 "$l"; done | tee $OUT/log.txt
rc=$?
echo "rc=$rc wall=$(( $(date +%s)-T0 ))s" | tee -a $OUT/log.txt
cd $W && ls -laR . | head -80 > $OUT/ls.txt
tar czf $OUT/run.tgz --exclude='./checkpoints*' --exclude='./code_cache*' --exclude='./jax_cache' --exclude='./*/checkpoints*' . 2>&1 | tail -2
ls -la $OUT
