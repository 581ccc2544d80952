#!/usr/bin/env bash
# The one prepared GPU check (chapter 11b, "Under the hood: on a GPU"), one command. Its core's phases
# are time-boxed to 240 s in all (boxes, not a measurement: no run of this check on a GPU is recorded
# in this repository); the extras run only when asked, while time remains.
# Each phase runs in its own process under its own time box and writes its JSON as it goes (a phase
# stopped by its box leaves what it measured); a phase that fails or runs out of time is named in the
# exit status and in summary.json, and the phases after it still run, except after a failed preflight.
#
#   OUT=/some/folder bash scripts/gpu_check.sh            # the core, on the GPU machine
#   OUT=/some/folder bash scripts/gpu_check.sh --extras   # the core, then the extras
#   bash scripts/gpu_check.sh --smoke                     # the core on a CPU: tiny model, toy task (CI)
#
# Core phases and time boxes (seconds): preflight 20 | equality 25 | profile 45 | train 150 (60 s of
# training steps, then selection and the test set). --smoke bounds every phase by steps, not seconds
# (a loaded machine makes it slower, never a failure); its boxes of 600 s only stop a hung phase.
# Extras: speed 120 | recipes: what is left of EXTRA_S (default 480).
# Results under $OUT (5 files): summary.json, profile.txt, metrics.jsonl, samples.md, log.txt.
# Exit status: 0 if every phase run passed, else 10 + the number of the first failed phase
# (1 preflight, 2 equality, 3 profile, 4 train, 5 speed, 6 recipes).
# Data: $TRANSFORMER_DATA_DIR, else data/multi30k in the checkout (git-ignored; copy the six .gz
# files there and send the folder along: carry ["data/multi30k"]).
# Other arguments go to every phase (e.g. --recipe post-ln-60s).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"   # the checkout, the data, $PY
SMOKE=""
EXTRAS=""
EXTRA=()
for a in "$@"; do
  case "$a" in
    --smoke) SMOKE="--smoke" ;;
    --extras) EXTRAS=1 ;;
    *) EXTRA+=("$a") ;;
  esac
done
OUT="${OUT:-runs/gpu_check_out}"
WORK="${WORK:-runs/gpu_check}"
mkdir -p "$OUT"
rm -rf "$WORK" && mkdir -p "$WORK"
LOG="$OUT/log.txt"
: > "$LOG"
PHASES=(preflight equality profile train speed recipes)
BOX=(20 25 45 150 120 0)
CORE_S=240
EXTRA_S="${EXTRA_S:-480}"
if [ -n "$SMOKE" ]; then BOX=(600 600 600 600 600 600); CORE_S=2400; EXTRA_S=1200; fi   # hang guards
[ -n "$EXTRAS" ] && TOTAL=$(( CORE_S + EXTRA_S )) || TOTAL=$CORE_S
start=$(date +%s)
status=""
first_failed=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv 2>&1 | tee -a "$LOG"
for i in "${!PHASES[@]}"; do
  name=${PHASES[$i]}
  if [ "$i" -ge 4 ] && [ -z "$EXTRAS" ]; then status+="$name=not asked,"; continue; fi
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
