#!/usr/bin/env python3
"""Does a distilled 3-layer student tagger keep the teacher's entity F1, and beat the same
student trained without it? (issue 29, run_ner's --teacher_checkpoint)

Data: quality/ner_quality.py's subset of CoNLL-2003 (the first --train_sentences sentences of
eng.train; the first 1,000 of eng.testa for evaluation). Recipe: ner_quality.py's (sentences
of at most 128 WordPieces, batch 16, lr 1e-4, 3 epochs, 10% warm-up, torch's AdamW).

  teacher:   all-MiniLM-L6-v2 fine-tuned on the subset, seed 42 (once per commit, or
             --teacher_dir, a teacher of an earlier run of this script).
  alone:     a 3-layer student from the teacher's layers --student_layers (0,2,4; embeddings
             and tagging head too), trained on the gold tags, per seed.
  distilled: the same student with --teacher_checkpoint (--temperature, --alpha); with
             --transfer N also --distill_transfer_file: the N sentences of eng.train after
             the subset, their tags removed (the teacher tags them; the student learns its
             soft targets on them).

One JSON line per run (commit, variant, seed, settings, flags, every dev metric, seconds) is
appended to --results; runs already there for the same commit and settings are skipped, so an
interrupted sweep resumes.

  python3 quality/ner_distillation.py --seeds 1,2,3
  python3 quality/ner_distillation.py --summarize
"""

import argparse
import collections
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "quality"), os.path.join(REPO, "tests")]
from helpers import shared_path  # noqa: E402
from ner_quality import head_sentences  # noqa: E402
from runlog import append_row, commit, minilm, read_rows, run_job, sweep_main, \
    teacher_flags  # noqa: E402

RESULTS = os.path.join(REPO, "quality", "results", "ner_distillation.jsonl")
RECIPE = ["--do_train", "--do_eval", "--max_seq_length=128", "--train_batch_size=16",
          "--eval_batch_size=32", "--learning_rate=1e-4", "--optimizer=adamw_torch",
          "--iterations_per_loop=20", "--save_checkpoints_steps=100000"]
TEACHER_SEED = 42
EPOCHS = 3
VARIANTS = ("alone", "distilled")


def settings(variant, args):
    """What besides commit, variant and seed tells runs apart."""
    values = {"train_sentences": args.train_sentences}
    if variant != "teacher":
        values["student_layers"] = args.student_layers
        if args.epochs != EPOCHS:         # (absent from rows of runs at the recipe's 3)
            values["epochs"] = args.epochs
    if variant == "distilled":
        values.update(temperature=args.temperature, alpha=args.alpha)
        if args.transfer:                 # (absent from rows of runs without a transfer set)
            values["transfer"] = args.transfer
    return values


def variant_flags(variant, teacher_dir, args):
    if variant == "teacher":
        return [f"--init_checkpoint={minilm()}"]
    student = [f"--init_checkpoint={teacher_dir}", f"--student_layers={args.student_layers}",
               f"--vocab_file={os.path.join(minilm(), 'vocab.txt')}"]
    if variant == "alone":
        return student
    return student + teacher_flags(teacher_dir, args.temperature, args.alpha) + (
        [f"--distill_transfer_file={transfer_file(args)}"] if args.transfer else [])


def transfer_file(args):
    """The --transfer sentences of eng.train after the first --train_sentences, words only."""
    path = os.path.join(args.work_dir, f"transfer_{args.train_sentences}_{args.transfer}.txt")
    both = os.path.join(args.work_dir, f"head_{args.train_sentences + args.transfer}.txt")
    head_sentences(shared_path("data/conll2003/eng.train"), both,
                   args.train_sentences + args.transfer)
    blocks = [b for b in open(both, encoding="utf-8").read().split("\n\n")
              if b.strip() and not b.startswith("-DOCSTART-")][args.train_sentences:]
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(line.split(" ")[0] for line in b.splitlines())
                             for b in blocks) + "\n")
    os.replace(temporary, path)
    return path


def run(args):
    unknown = set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"--variants: {', '.join(sorted(unknown))} unknown; known: "
                         f"{', '.join(VARIANTS)}")
    head = commit()
    train = os.path.join(args.work_dir, f"train_{args.train_sentences}.txt")
    dev = os.path.join(args.work_dir, "dev_1000.txt")
    head_sentences(shared_path("data/conll2003/eng.train"), train, args.train_sentences)
    head_sentences(shared_path("data/conll2003/eng.testa"), dev, 1000)
    done = {(r["variant"], r["seed"], tuple(sorted(r["settings"].items())))
            for r in read_rows(args.results) if r["commit"] == head}
    teacher_dir = args.teacher_dir or os.path.join(
        args.work_dir, f"teacher_{args.train_sentences}_{head}")
    plan = [] if args.teacher_dir else [("teacher", TEACHER_SEED)]
    plan += [(v, int(s)) for s in args.seeds.split(",") if s for v in args.variants.split(",")]
    for variant, seed in plan:
        values = settings(variant, args)
        out = teacher_dir if variant == "teacher" else os.path.join(
            args.work_dir, f"{variant}_" + "_".join(str(v) for v in values.values()).replace(
                ",", "") + f"_{seed}")
        if (variant, seed, tuple(sorted(values.items()))) in done and (
                variant != "teacher" or os.path.isdir(teacher_dir)):
            print(f"skip {variant} seed {seed}: in {args.results}", flush=True)
            continue
        flags = RECIPE + variant_flags(variant, teacher_dir, args) + [
            f"--train_file={train}", f"--eval_file={dev}", f"--seed={seed}",
            f"--num_train_epochs={values.get('epochs', EPOCHS):g}"]
        metrics, seconds = run_job("run_ner.py", out, flags, f"{variant} seed {seed}")
        append_row(args.results, {"commit": head, "variant": variant, "seed": seed,
                                  "settings": values, "flags": flags, "eval": metrics,
                                  "seconds": seconds}, args.work_dir)
        print(f"{variant} seed {seed}: entity F1 {100 * metrics['f1']:.2f} ({seconds:.0f} s)",
              flush=True)


def summarize(args):
    """A markdown table of --results: entity F1 per variant and settings, by seed."""
    rows = [r for r in read_rows(args.results) if not args.commit or r["commit"] == args.commit]
    groups = collections.defaultdict(dict)
    for r in rows:
        groups[(r["variant"], tuple(sorted(r["settings"].items())))][r["seed"]] = \
            100 * r["eval"]["f1"]
    print("| variant | settings | F1 by seed | mean |")
    print("|---|---|---|---|")
    for (variant, values), by_seed in sorted(groups.items()):
        scores = [by_seed[s] for s in sorted(by_seed)]
        text = ", ".join(f"{k} {v}" for k, v in values)
        print(f"| {variant} | {text} | {', '.join(f'{x:.2f}' for x in scores)} | "
              f"{statistics.mean(scores):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--train_sentences", type=int, default=1000)
    parser.add_argument("--student_layers", default="0,2,4")
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--epochs", type=float, default=EPOCHS,
                        help="the students' epochs (the teacher's stay 3)")
    parser.add_argument("--transfer", type=int, default=0,
                        help="distilled: this many untagged sentences of eng.train as a "
                             "transfer set")
    parser.add_argument("--teacher_dir", help="a teacher of an earlier run: skip training one")
    return sweep_main(parser, run, summarize, RESULTS, "bert_tf_quality/ner_distillation",
                      "entity F1", "only rows of this commit")


if __name__ == "__main__":
    main()
