#!/usr/bin/env bash
# One device command (H200) for issue 33's GPU targets, each part under its own
# timeout so that what finished comes back: the loop-overhead benchmark at k = 10 with
# device data (one seed, 2000 steps), the whole-run seed-stacking benchmark with the
# same settings (8 sequential runs against one stacked run), then eight stacked seeds
# in the loop-overhead benchmark with whatever time is left. BUDGET: seconds in all.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import jax,flax,optax,orbax.checkpoint; print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,'orbax',orbax.checkpoint.__version__, jax.devices())" 2>&1 | tee -a $OUT/gpu.txt
K10="--steps_per_call=10 --device_data=on"
timeout 150 python3 benchmarks/loop_overhead.py --cases=betavae --steps=2000 $K10 \
  --record=$OUT/loop_overhead_k10_s1_record.json > $OUT/k10_device_data_2000_steps.txt 2>&1
echo "betavae rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $OUT/timeline.txt
timeout $(( $(left) - 100 )) python3 benchmarks/seed_stacking_runs.py --root=/tmp/stacking \
  --config.vae.train.steps_per_call=10 --config.vae.train.device_data=on \
  --record=$OUT/seed_stacking_gpu_record.json > $OUT/seed_stacking_k10_device_data.txt 2>&1
echo "seed stacking rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $OUT/timeline.txt
if (( $(left) > 60 )); then
  timeout $(left) python3 benchmarks/loop_overhead.py --cases=betavae_s8 --steps=1000 $K10 \
    --record=$OUT/loop_overhead_k10_s8_record.json > $OUT/k10_device_data_1000_steps_s8.txt 2>&1
  echo "betavae_s8 rc=$? at $(( $(date +%s) - T0 ))s" | tee -a $OUT/timeline.txt
fi
for d in /tmp/stacking/*/; do tail -3 "$d/stdout.txt" > $OUT/stacking_tail_$(basename $d).txt 2>/dev/null; done
ls -la $OUT
