#!/usr/bin/env bash
# One-time set-up for minitepo, safe to re-run.
#
# torch first: if this Python already has a torch (for example a CUDA build you installed
# yourself), it is kept. Otherwise we install the pinned CPU-capable 2.13.0 wheel. We never let pip
# resolve an unpinned "torch", which on a CPU-only Linux machine would download a multi-GB CUDA
# build. Then minitepo itself (editable) with its test dependencies and the lessons' notebook tools (jupytext,
# ipykernel, nbclient: the tests run one lesson as a notebook).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
if "$PYTHON" -c "import torch" 2>/dev/null; then
    echo "setup: using the installed torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"
else
    echo "setup: installing torch==2.13.0"
    "$PYTHON" -m pip install --quiet "torch==2.13.0"
fi
"$PYTHON" -m pip install --quiet -e ".[test,lessons]"
echo "setup: done"
