#!/usr/bin/env bash
# The one prepared GPU run (chapter 11b): the `base` preset on Multi30k de->en. A preflight
# (packages, data, CUDA, a 20-step dry run) fails in seconds; training stops after 50 epochs
# (420 s at most); then the selected model is scored once on test_2016_flickr. Results (small
# files only) go to $OUT: summary.json, metrics.jsonl, preflight.json, curves.png, samples.md.
#
#   OUT=/some/folder bash scripts/gpu_run.sh             # on the GPU machine
#   bash scripts/gpu_run.sh --smoke                      # on a CPU: tiny model, 1 epoch, 60 s at most
#
# Data: $TRANSFORMER_DATA_DIR, else data/ in the checkout (git-ignored; before sending the tree
# to the GPU machine: mkdir -p data/multi30k && cp ../shared/data/multi30k/*.gz data/multi30k/,
# and send data/multi30k along, e.g. carry: ["data/multi30k"]), else the cache/download.
# Extra arguments go to scripts/gpu_run.py (e.g. --epochs 30, --set model.dropout=0.1).
set -euo pipefail
source "$(dirname "$0")/gpu_env.sh"   # the checkout, the data, $PY
OUT="${OUT:-runs/gpu_out}"
BUDGET=420
for a in "$@"; do [ "$a" = "--smoke" ] && BUDGET=60; done
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv || true
start=$(date +%s)
"$PY" scripts/gpu_run.py --out "$OUT" --budget "$BUDGET" "$@"
echo "gpu_run.sh: done in $(( $(date +%s) - start )) s; results in $OUT"
