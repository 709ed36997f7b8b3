#!/usr/bin/env bash
# Sourced by the GPU launchers (gpu_reproduce.sh, gpu_zoo.sh), which work in slices
# of a few minutes for machines that may be taken away between commands.
#
#   run_slices SLICE_FUNCTION [--until-done] ARGS...
#
# Runs SLICE_FUNCTION ARGS... once, or with --until-done again while it returns 3
# (its time was spent and it saved: the next slice resumes), and returns the last
# status: 0 when the work is done, 3 when paused, anything else an error.

EXIT_PAUSED=3  # causal_disent.main.EXIT_PAUSED

run_slices() {
  local slice="$1" until_done=false status
  shift
  if [[ "${1:-}" == "--until-done" ]]; then
    until_done=true
    shift
  fi
  while true; do
    status=0
    "${slice}" "$@" || status=$?  # `|| ...` keeps set -e from ending on status 3
    if [[ "${until_done}" == false || "${status}" -ne "${EXIT_PAUSED}" ]]; then
      return "${status}"
    fi
    echo "slice paused; starting the next one" >&2
  done
}
