#!/usr/bin/env bash
# The one prepared GPU check (chapter 11b, "Under the hood: the GPU run"): at most ~8 minutes on an
# H100/H200-class card, one command. Each phase runs in its own process under its own time box;
# a phase that fails or runs out of time is named in the exit status and in summary.json, and the
# phases after it still run (their results are kept), except after a failed preflight.
#
#   OUT=/some/folder bash scripts/gpu_check.sh         # on the GPU machine
#   bash scripts/gpu_check.sh --smoke                  # the same phases on a CPU: tiny model, toy task (CI)
#
# Phases and time boxes (seconds; --smoke: a few seconds each):
#   preflight 40 | equality 40 | profile 60 | train 200 | speed 70 | recipes: what is left of 470
# Results under $OUT (5 files): summary.json, profile.txt, metrics.jsonl, samples.md, log.txt.
# Exit status: 0 if every phase passed, else 10 + the number of the first failed phase
# (1 preflight, 2 equality, 3 profile, 4 train, 5 speed, 6 recipes).
# Data: $TRANSFORMER_DATA_DIR, else data/multi30k in the checkout (git-ignored; copy the six .gz
# files there and send the folder along: carry ["data/multi30k"]).
# Extra arguments after --smoke go to every phase (e.g. --recipe post-ln).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"   # the checkout, the data, $PY
SMOKE=""
EXTRA=()
for a in "$@"; do
  if [ "$a" = "--smoke" ]; then SMOKE="--smoke"; else EXTRA+=("$a"); fi
done
OUT="${OUT:-runs/gpu_check_out}"
WORK="${WORK:-runs/gpu_check}"
mkdir -p "$OUT"
rm -rf "$WORK" && mkdir -p "$WORK"
LOG="$OUT/log.txt"
: > "$LOG"
export TORCH_CUDNN_SDPA_AVOID_RECOMPILE="${TORCH_CUDNN_SDPA_AVOID_RECOMPILE:-1}"
TOTAL=470
PHASES=(preflight equality profile train speed recipes)
BOX=(40 40 60 200 70 0)
if [ -n "$SMOKE" ]; then TOTAL=400; BOX=(60 60 90 90 60 0); fi   # ceilings for a slow shared CPU
start=$(date +%s)
status=""
first_failed=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv 2>&1 | tee -a "$LOG"
for i in "${!PHASES[@]}"; do
  name=${PHASES[$i]}
  left=$(( TOTAL - ($(date +%s) - start) ))
  box=${BOX[$i]}
  if [ "$box" -eq 0 ] || [ "$box" -gt "$left" ]; then box=$left; fi
  if [ "$box" -lt 5 ]; then
    echo "== $name: skipped, no time left" | tee -a "$LOG"
    status+="$name=skipped,"
    continue
  fi
  echo "== $name (time box ${box} s)" | tee -a "$LOG"
  t0=$(date +%s)
  timeout --signal=TERM --kill-after=10 "$box" "$PY" scripts/gpu_check.py --phase "$name" --work "$WORK" \
      --out "$OUT" --budget "$box" $SMOKE "${EXTRA[@]}" 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then s=ok; elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then s=timeout; else s="failed($rc)"; fi
  echo "== $name: $s after $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
  status+="$name=$s,"
  if [ "$s" != ok ] && [ "$first_failed" -eq 0 ]; then first_failed=$(( i + 1 )); fi
  if [ "$name" = preflight ] && [ "$s" != ok ]; then break; fi
done
GPU_CHECK_STATUS="$status" "$PY" scripts/gpu_check.py --phase summary --work "$WORK" --out "$OUT" $SMOKE 2>&1 | tee -a "$LOG"
echo "gpu_check.sh: ${status%,} in $(( $(date +%s) - start )) s; results in $OUT" | tee -a "$LOG"
if [ "$first_failed" -ne 0 ]; then
  echo "gpu_check.sh: first failed phase: ${PHASES[$((first_failed - 1))]}" | tee -a "$LOG"
  exit $(( 10 + first_failed ))
fi
exit 0
