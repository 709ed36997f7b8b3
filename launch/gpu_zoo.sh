#!/usr/bin/env bash
# The baseline zoo on one GPU: each of the eight VAEs of docs/baselines.md on
# dsprites_synth, seeds 0-2 as one stacked run, disentanglement_lib's network and
# optimiser for STEPS steps (its study: 300 000), k = 10 steps a call with the
# images on the device; then each seed's metric card, and one record a model. Runs in
# slices of at most MAX_MINUTES (default 9) minutes, for machines that may be taken
# away between commands; ROOT must outlive them.
#
#   ROOT=/mnt/zoo STEPS=30000 launch/gpu_zoo.sh                # one slice
#   ROOT=/mnt/zoo STEPS=30000 launch/gpu_zoo.sh --until-done   # slices until done
#
# Each model in turn (MODELS: a subset, in that order): trained in ROOT/<model> (a
# slice whose time runs out saves a checkpoint, the next resumes it), its seeds
# scored (skipped once their card is written), then summarised into
# RECORDS/zoo_dsprites_synth_gpu_<model>.json (default RECORDS: results), whose
# runs' histories give each model's training minutes. Training stops within the
# slice; a metric card (10 000 samples a metric, its classifiers on the host: 12
# minutes on 2 CPU cores for a convolutional encoder, most of it encoding images;
# 43 s for the identity map, which encodes none) has no time limit of its own, so
# one starts only while
# CARD_MINUTES (default 4) are left in the slice: set it to what a card takes on
# your machine (a card cut short by a command's limit is computed again). The cards
# run in the background, up to CARD_JOBS (default: half the host's cores) at once,
# while the next models train: their classifiers need the host, which a training
# run leaves mostly idle, and every process shares the GPU without preallocating it
# (XLA_PYTHON_CLIENT_PREALLOCATE=false). Exit status: 0 when every model is done, 3
# when the slice's time was spent (run it again to continue), anything else an
# error. Extra arguments go to every training run.
set -euo pipefail

: "${ROOT:?set ROOT to the zoo directory (shared by every slice)}"
: "${STEPS:?set STEPS to the training steps of each model (a multiple of 10)}"
ROOT="$(realpath -m "${ROOT}")"  # before leaving the caller's directory
RECORDS="$(realpath -m "${RECORDS:-results}")"
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repository root: configs/, .venv/
PYTHON="${PYTHON:-.venv/bin/python}"
MAX_MINUTES="${MAX_MINUTES:-9}"
CARD_MINUTES="${CARD_MINUTES:-4}"
ZOO="betavae annealedvae betatcvae dipvae1 dipvae2 factorvae laddervae ivae"
MODELS="${MODELS:-${ZOO}}"
SEEDS=3
CARD_JOBS="${CARD_JOBS:-$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))}"
source launch/slices.sh
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-${ROOT}/jax_cache}"
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # the cards' processes share the GPU

minutes_left() {  # of this slice, with two decimals
  awk -v max="${MAX_MINUTES}" -v used="$(( $(date +%s) - started ))" \
    'BEGIN { printf "%.2f", max - used / 60 }'
}

out_of_time() {  # fewer than $1 minutes left in this slice
  awk -v left="$(minutes_left)" -v need="$1" 'BEGIN { exit !(left < need) }'
}

label() {  # the model's row label, as the CPU zoo's records name it
  case "$1" in
    betavae) echo "β-VAE (β = 4)" ;;
    annealedvae) echo "AnnealedVAE (c_max = 25)" ;;
    betatcvae) echo "β-TCVAE (β = 6)" ;;
    dipvae1) echo "DIP-VAE-I (λ_od = 10, λ_d = 100)" ;;
    dipvae2) echo "DIP-VAE-II (λ_od = λ_d = 10)" ;;
    factorvae) echo "FactorVAE (γ = 30)" ;;
    laddervae) echo "LadderVAE (6 + 4 latents)" ;;
    ivae) echo "iVAE (u = shape, one-hot)" ;;
    *) echo "error: unknown model '$1' in MODELS; the zoo's: ${ZOO}" >&2; exit 2 ;;
  esac
}

for model in ${MODELS}; do
  label "${model}" > /dev/null  # an unknown model stops here, before any run
done

# start_card SEED_DIR: the seed's metric card in the background, once fewer than
# CARD_JOBS cards run, if CARD_MINUTES are still left then (else status 1); a card
# that fails is noted in CARDS_FAILED.
start_card() {
  while (( $(jobs -rp | wc -l) >= CARD_JOBS )); do
    wait -n || true  # a card's failure is noted by the card itself
  done
  out_of_time "${CARD_MINUTES}" && return 1
  ( "${PYTHON}" -m causal_disent.evaluate --workdir="$1" --metrics=all \
      || echo "$1" >> "${CARDS_FAILED}" ) &
}

one_slice() {  # returns 0 when every model is done, 3 when the slice's time is spent
  local model workdir seed seed_dir record status=0 paused=false
  started=$(date +%s)
  CARDS_FAILED="$(mktemp)"
  for model in ${MODELS}; do
    workdir="${ROOT}/${model}"
    if [[ ! -e "${workdir}/.zoo_trained" ]]; then
      if out_of_time 0.5; then paused=true; break; fi
      "${PYTHON}" -m causal_disent.main --config="configs/${model}_dsprites_synth.py" \
        --workdir="${workdir}" --max_minutes="$(minutes_left)" --config.num_seeds="${SEEDS}" \
        --config.vae.train.num_steps="${STEPS}" --config.vae.train.steps_per_call=10 \
        --config.vae.train.device_data=on "$@" || status=$?
      if [[ "${status}" -eq "${EXIT_PAUSED}" ]]; then status=0; paused=true; break; fi
      [[ "${status}" -eq 0 ]] || break
      touch "${workdir}/.zoo_trained"  # a finished run; its rerun would only reload it
    fi
    for (( seed = 0; seed < SEEDS; seed++ )); do
      seed_dir="${workdir}/seeds/seed_${seed}"
      if [[ ! -e "${seed_dir}/metrics_card.json" ]]; then
        start_card "${seed_dir}" || { paused=true; break 2; }
      fi
    done
  done
  wait  # every card started in this slice
  if [[ -s "${CARDS_FAILED}" ]]; then
    echo "error: the metric card of $(head -n 1 "${CARDS_FAILED}") failed (its output is above)" >&2
    status=1
  fi
  rm -f "${CARDS_FAILED}"
  [[ "${status}" -eq 0 ]] || return "${status}"
  for model in ${MODELS}; do
    workdir="${ROOT}/${model}"
    record="${RECORDS}/zoo_dsprites_synth_gpu_${model}.json"
    [[ -e "${record}" ]] && continue
    for (( seed = 0; seed < SEEDS; seed++ )); do
      [[ -e "${workdir}/seeds/seed_${seed}/metrics_card.json" ]] || continue 2
    done
    "${PYTHON}" -m causal_disent.summarize --group="$(label "${model}")=${workdir}" \
      --record="${record}" || return $?
  done
  [[ "${paused}" == false ]] || return "${EXIT_PAUSED}"
}

run_slices one_slice "$@"
