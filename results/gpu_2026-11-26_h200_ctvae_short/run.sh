#!/usr/bin/env bash
# One ~8-minute command: a shortened :gpu CT-VAE run (paper sizes, C = 1), both stages.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 JAX_COMPILATION_CACHE_DIR=/tmp/jc
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import jax,flax,optax,orbax.checkpoint,chex,jraph,ml_collections; print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,'orbax',orbax.checkpoint.__version__, jax.devices())" 2>&1 | tee -a $OUT/gpu.txt
W=/tmp/run
T0=$(date +%s)
set -o pipefail
python3 -m causal_disent.main --config=configs/ctvae_shapes3d.py:gpu --workdir=$W --max_minutes=${MAXMIN:-8.3} \
  --config.mcqvae.train.num_steps=${S1:-10000} --config.mcqvae.train.eval_every_steps=2500 \
  --config.ct.train.num_steps=${S2:-8000} --config.ct.train.eval_every_steps=2000 "$@" 2>&1 \
  | while IFS= read -r l; do printf '%(%s)T %s\n' -1 "$l"; done | tee $OUT/log.txt
rc=$?
echo "rc=$rc wall=$(( $(date +%s)-T0 ))s" | tee -a $OUT/log.txt
cd $W && ls -laR . | head -60 > $OUT/ls.txt
tar czf $OUT/run.tgz --exclude='./checkpoints*' --exclude='./code_cache*' --exclude='./jax_cache' --exclude='./*/checkpoints*' . 2>&1 | tail -2
ls -la $OUT
