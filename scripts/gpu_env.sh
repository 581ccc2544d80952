# Sourced by scripts/gpu_run.sh and scripts/gpu_check.sh: run from the checkout's root, with the
# checkout on the Python path, the data from $TRANSFORMER_DATA_DIR or data/multi30k (git-ignored:
# copy the six .gz files there on a machine without the download), and $PY the Python to use:
# $PYTHON if set; the project's .venv on a machine without a GPU; else the python on the PATH.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHONPATH="$PWD:$PWD/book${PYTHONPATH:+:$PYTHONPATH}"   # the library and the book's tools (no install there)
if [ -z "${TRANSFORMER_DATA_DIR:-}" ] && [ -d data/multi30k ]; then
  export TRANSFORMER_DATA_DIR="$PWD/data"
fi
PY="${PYTHON:-$(command -v python || command -v python3)}"
if [ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && ! command -v nvidia-smi >/dev/null 2>&1; then
  PY=.venv/bin/python
fi
