#!/usr/bin/env bash
# Second device command: ab.py's variants of the one-seed β-VAE loop benchmark, on one
# machine, each in its own process, while BUDGET seconds last.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
for v in ${VARIANTS:-current old syncsave ahead}; do
  left=$(( ${BUDGET:-185} - ($(date +%s) - T0) ))
  (( left > 50 )) || break
  timeout $left python3 results/gpu_2026-11-27_h200_issue33/ab.py $v --cases=betavae \
    --steps=2000 --steps_per_call=10 --device_data=on 2>&1 | grep -E "^variant|^betavae|^case" \
    | tee -a $OUT/ab.txt
  echo "$v done at $(( $(date +%s) - T0 ))s" | tee -a $OUT/ab.txt
done
