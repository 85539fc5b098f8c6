#!/usr/bin/env python3
"""SWAG quality run of run_swag.py with all-MiniLM-L6-v2: a short fine-tune on the first
--train_rows rows of the shared train.first999.csv, evaluated on --eval_rows other rows (from
row --eval_from), against chance (25% for 4 endings).

  python quality/swag_quality.py        # 300 train rows, rows 600-799 for eval, seq 64
Prints one JSON line (accuracy, chance, its binomial standard error, recipe, wall time).
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from helpers import minilm_dir, shared_path  # noqa: E402


def write_rows(src, dst, first, count):
    with open(src, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    with open(dst, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([rows[0]] + rows[1 + first:1 + first + count])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "bert_tf_quality/swag"))
    ap.add_argument("--train_rows", type=int, default=300)
    ap.add_argument("--eval_from", type=int, default=600)
    ap.add_argument("--eval_rows", type=int, default=200)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--optimizer", default="adamw_torch",
                    help="torch.optim.AdamW semantics, as the HF reference recipe uses")
    ap.add_argument("--max_seq_length", type=int, default=64)
    a = ap.parse_args()
    if a.eval_from < a.train_rows:
        raise SystemExit("--eval_from must come after the training rows")
    work = Path(a.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    source = shared_path("data/swag/train.first999.csv")
    write_rows(source, work / "train.csv", 0, a.train_rows)
    write_rows(source, work / "eval.csv", a.eval_from, a.eval_rows)
    out = work / "out"
    if out.exists():
        import shutil
        shutil.rmtree(out)
    start = time.time()
    subprocess.run([sys.executable, str(REPO / "run_swag.py"),
                    f"--train_file={work / 'train.csv'}", f"--eval_file={work / 'eval.csv'}",
                    f"--init_checkpoint={minilm_dir()}", "--do_train", "--do_eval",
                    f"--output_dir={out}", f"--max_seq_length={a.max_seq_length}",
                    f"--train_batch_size={a.batch}", "--eval_batch_size=32",
                    f"--learning_rate={a.lr}", f"--num_train_epochs={a.epochs}",
                    "--iterations_per_loop=10", f"--optimizer={a.optimizer}"], check=True,
                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO)))
    sys.path.insert(0, str(REPO))
    from bert_tf.metrics.results import read_eval_results
    values = read_eval_results(out / "eval_results.txt")
    n = a.eval_rows
    print(json.dumps({"impl": "bert_tf", "eval_accuracy": round(100 * values["eval_accuracy"], 1),
                      "chance": 25.0, "chance_std_error": round(100 * math.sqrt(0.25 * 0.75 / n),
                                                                1),
                      "eval_loss": round(values["eval_loss"], 4), "steps": values["global_step"],
                      "recipe": {k: v for k, v in vars(a).items() if k != "work_dir"},
                      "seconds": round(time.time() - start)}))


if __name__ == "__main__":
    main()
