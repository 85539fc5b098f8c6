#!/usr/bin/env python3
"""Re-runs the bert_tf side of the quality table (docs/quality.md) at the checked-out commit and
appends one JSON line per row (commit, row, metrics, seconds) to
quality/results/readme_table.jsonl.

Rows: MRPC and STS-B (quality/classifier_glue.sh --optimizer=adamw_torch, seed 42: the
recipe of quality/results/classifier.md), the CoNLL-2003 subset
(quality/ner_quality.py --only ours) and SWAG (quality/swag_quality.py). The SQuAD rows take
hours on 2 cores and are not part of this run. Rows already in the file for this commit are
skipped, so an interrupted run resumes.

  python3 quality/readme_table.py                 # every row
  python3 quality/readme_table.py --rows mrpc,ner
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "quality", "results", "readme_table.jsonl")
sys.path.insert(0, REPO)
from bert_tf.metrics.results import read_eval_results  # noqa: E402


def glue(task, work):
    out = os.path.join(work, f"ours_{task.lower()}")
    subprocess.run(["rm", "-rf", out], check=True)
    subprocess.run(["bash", "quality/classifier_glue.sh", task, out, "--optimizer=adamw_torch"],
                   cwd=REPO, check=True, capture_output=True)
    return read_eval_results(os.path.join(out, "eval_results.txt"))


def last_json(command):
    done = subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


ROWS = {
    "mrpc": lambda work: glue("MRPC", work),
    "stsb": lambda work: glue("STS-B", work),
    "ner": lambda work: last_json([sys.executable, "quality/ner_quality.py", "--only", "ours",
                                   "--work_dir", os.path.join(work, "ner")]),
    "swag": lambda work: last_json([sys.executable, "quality/swag_quality.py"]),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--work_dir",
                        default=os.path.join(tempfile.gettempdir(), "bert_tf_readme_table"))
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.strip()
    done = set()
    if os.path.exists(RESULTS):
        with open(RESULTS, encoding="utf-8") as f:
            done = {(r["commit"], r["row"]) for r in map(json.loads, filter(str.strip, f))}
    os.makedirs(args.work_dir, exist_ok=True)
    for row in args.rows.split(","):
        if (commit, row) in done:
            print(f"skip {row}: in {RESULTS}", flush=True)
            continue
        started = time.time()
        values = ROWS[row](args.work_dir)
        line = {"commit": commit, "row": row, "values": values,
                "seconds": round(time.time() - started, 1)}
        with open(RESULTS, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
