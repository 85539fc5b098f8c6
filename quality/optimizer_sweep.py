#!/usr/bin/env python3
"""Which optimizer should the fine-tuning runners use by default? (issue 26)

run_classifier.py on small tasks at the budget users try first (all-MiniLM-L6-v2, one epoch,
batch 32, lr 5e-5, seq 128, 10% warm-up: run_classifier's defaults except the epoch count),
once per optimizer and seed, seed-paired:

  mrpc:  GLUE MRPC (3,668 train pairs, 408 dev), accuracy and F1.
  cola:  GLUE CoLA (8,551 train sentences, 1,043 dev), Matthews correlation.
  sst2:  the first 4,000 rows of GLUE SST-2 train, the whole dev set (872).
  qnli:  a QNLI-style pair task built from the shared SQuAD subsets: (question, sentence of its
         paragraph), entailment when the sentence holds an answer, balanced; 4,000 train pairs
         from the training articles, 1,000 dev pairs from the dev articles.
  long_text: quality/long_text_task.py's documents (an SST-2 review inside a SQuAD paragraph;
         3,000 train, 807 dev), truncated to seq 64, batch 16 (its recipe in long_text.md, where
         google-research's optimizer once collapsed), one epoch.

One JSON line per run (commit, task, optimizer, seed, flags, every dev metric, including the
share of the most common predicted class, seconds) is appended to --results; runs already there
for the same commit are skipped, so an interrupted sweep resumes.

  python3 quality/optimizer_sweep.py --tasks mrpc,cola,sst2,qnli,long_text --seeds 1,2,3
  python3 quality/optimizer_sweep.py --tasks cola --optimizers adamw_torch \
      --num_train_epochs 3                 # the runner's own budget, beyond the first epoch
  python3 quality/optimizer_sweep.py --summarize
"""

import argparse
import collections
import csv
import itertools
import json
import os
import random
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
RESULTS = os.path.join(REPO, "quality", "results", "optimizer_sweep.jsonl")
sys.path[:0] = [REPO, os.path.join(REPO, "quality")]
from runlog import append_row, commit, read_rows, run_classifier, sweep_main  # noqa: E402

OPTIMIZERS = ("adamw", "adamw_torch")
RECIPE = ["--do_train", "--do_eval", "--max_seq_length=128",
          "--train_batch_size=32", "--eval_batch_size=64", "--warmup_proportion=0.1",
          "--iterations_per_loop=25",
          "--save_checkpoints_steps=100000"]
# task -> (--task_name, the metric the table reports, flags of its own)
TASKS = {"mrpc": ("MRPC", "eval_accuracy", []), "cola": ("CoLA", "mcc", []),
         "sst2": ("SST-2", "eval_accuracy", []), "qnli": ("QNLI", "eval_accuracy", []),
         "long_text": ("generic", "eval_accuracy",
                       ["--text_a_column=text", "--label_column=label", "--labels=0,1",
                        "--max_seq_length=64", "--train_batch_size=16"])}


def _write_tsv(path, header, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\",
                            lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow([re.sub(r"[\t\n\r\\]", " ", str(v)) for v in row])
    os.replace(tmp, path)


def _sentence_spans(text):
    """(start, end) character spans of a paragraph's sentences (split after . ! ? + space)."""
    spans, start = [], 0
    for match in re.finditer(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])", text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if e - s > 20]


def qnli_pairs(squad_file, count, seed):
    """Balanced (question, sentence, label) pairs: a sentence holding one of the question's
    answers is 'entailment'; a sentence of the same paragraph holding none is the negative."""
    with open(squad_file, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    positives, negatives = [], []
    for article in articles:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            spans = _sentence_spans(context)
            for qa in paragraph["qas"]:
                starts = [a["answer_start"] for a in qa["answers"]]
                holds = [any(s <= a < e for a in starts) for s, e in spans]
                if not any(holds) or all(holds):
                    continue
                pos = [context[s:e] for (s, e), h in zip(spans, holds) if h]
                neg = [context[s:e] for (s, e), h in zip(spans, holds) if not h]
                positives.append((qa["question"], pos[0], "entailment"))
                negatives.append((qa["question"], neg[len(qa["id"]) % len(neg)],
                                  "not_entailment"))
    rng = random.Random(seed)
    half = count // 2
    if min(len(positives), len(negatives)) < half:
        raise SystemExit(f"{squad_file}: only {len(positives)} questions usable, need {half}")
    rows = rng.sample(positives, half) + rng.sample(negatives, half)
    rng.shuffle(rows)
    return rows


def prepare(task, work_dir):
    """The task's data folder (the shared GLUE folder, or one written under work_dir)."""
    if task in ("mrpc", "cola"):
        return os.path.join(SHARED, "glue", TASKS[task][0])
    folder = os.path.join(work_dir, f"{task}_data")
    if os.path.exists(os.path.join(folder, "dev.tsv")):
        return folder
    os.makedirs(folder, exist_ok=True)
    if task == "sst2":
        source = os.path.join(SHARED, "glue", "SST-2")
        for split, limit in (("train", 4000), ("dev", None)):
            with open(os.path.join(source, f"{split}.tsv"), encoding="utf-8") as f:
                rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
            _write_tsv(os.path.join(folder, f"{split}.tsv"), rows[0], rows[1:][:limit])
    elif task == "long_text":
        import long_text_task
        long_text_task.build(folder, shared=os.path.dirname(SHARED), num_train=3000,
                             paragraphs_per_doc=1)
    else:
        squad = os.path.join(SHARED, "squad")
        for split, name, count in (("train", "train-v1.1.first44articles.json", 4000),
                                   ("dev", "dev-v1.1.half-a.json", 1000)):
            rows = qnli_pairs(os.path.join(squad, name), count, seed=0)
            _write_tsv(os.path.join(folder, f"{split}.tsv"),
                       ["index", "question", "sentence", "label"],
                       [(i, *row) for i, row in enumerate(rows)])
    return folder


def run(args):
    head = commit()
    done = {(r["task"], r["optimizer"], learning_rate(r), epochs(r), r["seed"])
            for r in read_rows(args.results) if r["commit"] == head}
    budget = f"lr {args.learning_rate:g}" + (
        f", {args.num_train_epochs:g} epochs" if args.num_train_epochs != 1 else "")
    for seed in [int(s) for s in args.seeds.split(",")]:
        for task in args.tasks.split(","):
            data_dir = prepare(task, args.work_dir)
            for optimizer in args.optimizers.split(","):
                if (task, optimizer, args.learning_rate, args.num_train_epochs, seed) in done:
                    print(f"skip {task} {optimizer} {budget} seed {seed}: in {args.results}",
                          flush=True)
                    continue
                out = os.path.join(args.work_dir, f"{task}_{optimizer}_{args.learning_rate:g}_"
                                   f"{args.num_train_epochs:g}_{seed}")
                flags = RECIPE + TASKS[task][2] + [
                    f"--num_train_epochs={args.num_train_epochs:g}",
                    f"--task_name={TASKS[task][0]}", f"--optimizer={optimizer}",
                    f"--learning_rate={args.learning_rate:g}", f"--seed={seed}"]
                values, seconds = run_classifier(
                    data_dir, out, flags, f"{task} {optimizer} {budget} seed {seed}")
                row = {"commit": head, "task": task, "optimizer": optimizer,
                       "learning_rate": args.learning_rate, "epochs": args.num_train_epochs,
                       "seed": seed, "flags": flags, "metric": TASKS[task][1],
                       "value": values[TASKS[task][1]], "eval": values,
                       "prediction_majority_share": prediction_share(values),
                       "seconds": seconds}
                append_row(args.results, row, args.work_dir)
                print(f"{task} {optimizer} {budget} seed {seed}: "
                      f"{row['metric']} = {row['value']:.4f}, most common predicted class "
                      f"{row['prediction_majority_share']:.3f} ({row['seconds']:.0f} s)", flush=True)


def learning_rate(row):
    """The run's learning rate (rows from before it was recorded carry it in their flags)."""
    if "learning_rate" in row:
        return row["learning_rate"]
    return float(next(f for f in row["flags"] if f.startswith("--learning_rate="))
                 .split("=", 1)[1])


def epochs(row):
    """The run's epoch count (rows from before it was a setting ran one)."""
    return row.get("epochs", 1.0)


def prediction_share(values):
    """Share of dev predictions in the most common predicted class: the run's own
    prediction_majority_share, else derived from the per-class precision, recall and support
    (predicted count = true positives / precision; a class with precision 0 gets the rest)."""
    if "prediction_majority_share" in values:
        return values["prediction_majority_share"]
    names = [k[len("support_"):] for k in values if k.startswith("support_")]
    if not names:
        return None
    total = sum(values[f"support_{c}"] for c in names)
    counted = {c: values[f"recall_{c}"] * values[f"support_{c}"] / values[f"precision_{c}"]
               for c in names if values[f"precision_{c}"] > 0}
    rest = [c for c in names if c not in counted]
    if len(rest) == 1:
        counted[rest[0]] = total - sum(counted.values())
    return max(counted.values()) / total


def collapsed_run(row):
    """The run's own `collapsed` value; runs from before it was reported had no class above
    95% of predictions (their derived share says so), so they did not collapse."""
    if "collapsed" in row["eval"]:
        return int(row["eval"]["collapsed"])
    if row["prediction_majority_share"] >= 0.95:
        raise ValueError(f"{row['task']} {row['optimizer']} seed {row['seed']}: no collapsed "
                         "value and a predicted-class share of 95% or more")
    return 0


def summarize(args):
    rows = read_rows(args.results)
    if args.commit:
        rows = [r for r in rows if r["commit"].startswith(args.commit)]
    cells = collections.defaultdict(dict)
    for r in rows:
        cells[(r["task"], r["optimizer"], learning_rate(r), epochs(r))][r["seed"]] = r
    seeds = sorted({r["seed"] for r in rows})
    lines = ["| task | metric | optimizer | lr | epochs | "
             + " | ".join(f"seed {s}" for s in seeds)
             + " | mean | min | largest share of one predicted class | collapsed runs |",
             "|---|---|---|---|---|" + "---|" * len(seeds) + "---|---|---|---|"]
    budgets = sorted({key[2:] for key in cells})
    for task, optimizer, (rate, count) in itertools.product(TASKS, OPTIMIZERS, budgets):
        runs = cells.get((task, optimizer, rate, count))
        if not runs:
            continue
        values = [runs[s]["value"] for s in seeds if s in runs]
        shares = [runs[s]["prediction_majority_share"] for s in seeds if s in runs]
        collapsed = [collapsed_run(runs[s]) for s in seeds if s in runs]
        lines.append(
            f"| {task} | {TASKS[task][1]} | {optimizer} | {rate:g} | {count:g} | "
            + " | ".join(f"{100 * runs[s]['value']:.2f}" if s in runs else "" for s in seeds)
            + f" | **{100 * sum(values) / len(values):.2f}** | {100 * min(values):.2f} | "
            + (f"{max(shares):.3f}" if shares else "")
            + f" | {sum(collapsed)} of {len(collapsed)} |")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--num_train_epochs", type=float, default=1.0,
                        help="the budget users try first is one epoch")
    sweep_main(parser, run, summarize, RESULTS, "bert_tf_quality/optimizer_sweep",
               "task x optimizer x seed", "rows of this commit")


if __name__ == "__main__":
    main()
