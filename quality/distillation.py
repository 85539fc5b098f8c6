#!/usr/bin/env python3
"""Does a distilled 3-layer student keep the teacher's accuracy? (issue 29)

run_classifier.py with the quality table's recipe (quality/classifier_glue.sh: seq 128, batch
32, lr 1e-4, 3 epochs, 10% warm-up, torch's AdamW):

  teacher:   all-MiniLM-L6-v2 (6 layers) fine-tuned on the task, seed 42 (or --teacher_dir,
             a run of this script's kept from before).
  distilled: a 3-layer student initialised from the teacher's layers --student_layers (0,2,4;
             embeddings, pooler and classifier too), trained on the teacher's soft targets
             (--teacher_checkpoint, temperature 2, alpha 0.5) and the gold labels, per seed.
  alone:     the same student, the same initialisation and recipe, without the teacher.

One JSON line per run (commit, task, variant, seed, settings, flags, every dev metric,
seconds) is appended to --results; runs already there for the same commit and settings
(student epochs and layers; temperature and alpha for distilled runs) are skipped, so an
interrupted sweep resumes (the teacher is trained once per commit and task, in --work_dir);
a run stopped with SIGTERM resumes from its checkpoint (runlog.run_job; seconds then count
the last part only).

  python3 quality/distillation.py --tasks mrpc --seeds 1,2,3
  python3 quality/distillation.py --tasks mrpc --seeds 1,2,3 --num_train_epochs 6 \
      --temperature 4 --alpha 0.9 --teacher_dir <a teacher of an earlier run>
  python3 quality/distillation.py --tasks sst2 --seeds=      # the teacher alone
  python3 quality/distillation.py --tasks sst2 --num_train_epochs 1 --max_seq_length 64 \
      --temperature 4 --alpha 0.9 --variants alone --teacher_dir <the SST-2 teacher>
  python3 quality/distillation.py --tasks mrpc --variants distilled --num_train_epochs 3 \
      --temperature 4 --alpha 0.9 --augment 2 --hidden_weight 100 --teacher_dir <teacher>
  python3 quality/distillation.py --tasks mrpc --variants distilled --temperature 4 \
      --alpha 0.9 --augment 2 --transfer stsb --teacher_dir <teacher>
  python3 quality/distillation.py --summarize

--transfer stsb gives distilled MRPC students a transfer set (--distill_transfer_file): the
STS-B training pairs, less every pair with a sentence that is also in MRPC's dev set (compared
lower-cased, letters and digits only), written to --work_dir; stsb+swap adds MRPC's training
pairs in swapped order (paraphrase is symmetric; the teacher saw one order); a part nbrN
adds N copies of MRPC's training pairs whose words were each replaced, with probability 0.3,
by one of their 8 nearest neighbours in MiniLM's word-embedding table (cosine; words of the
vocabulary of 4 letters or more), as TinyBERT's augmentation does with GloVe neighbours: the
teacher labels them, so a replacement that turns a paraphrase into a non-paraphrase is
labelled so (bert_tf.data.neighbour_words, seed 0). --neighbours N is the runner's route to
the same copies: --distill_neighbours=N, with the teacher's (fine-tuned) table and the run's
seed. A part test adds the unlabelled pairs of MRPC's test set (1,725, less the 28
sharing a sentence with a dev pair; with swap, in both orders): the in-domain unlabelled text
a user serving the model would have. Their labels are never read (GLUE does not publish them).
A part cross adds new pairs of those sentences (MRPC's training and test pairs', none of the
dev set's): each with its most similar sentence of another pair (cosine over tf-idf word sets
of at least 0.3; with swap, in both orders), so pairs about one news event that MRPC did not
pair (bert_tf.data.cross_pairs). --cross is the runner's route to such pairs:
--distill_cross_pairs, which crosses the training pairs' sentences alone (dev sentences among
them take part, but no dev pair is made). For SST-2, --transfer test is the 1,821 unlabelled
sentences of its test set, less those also in its dev set (none are): whole sentences like
the dev set's, where the training set is mostly phrases; nbrN+test adds N copies of them
with words replaced by embedding neighbours, as MRPC's nbrN copies its training pairs. MRPC
kinds without stsb (test,
swap+test, ...) leave STS-B out.
"""

import argparse
import collections
import csv
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "quality")]
from runlog import append_row, commit, minilm, read_rows, run_classifier, sweep_main, \
    teacher_flags  # noqa: E402

from bert_tf.data.cross_pairs import cross_pairs, sentence_key  # noqa: E402

RESULTS = os.path.join(REPO, "quality", "results", "distillation.jsonl")
GLUE = os.path.join(REPO, "..", "shared", "data", "glue")
RECIPE = ["--do_train", "--do_eval", "--do_lower_case=true",
          "--train_batch_size=32", "--eval_batch_size=32", "--learning_rate=1e-4",
          "--warmup_proportion=0.1", "--optimizer=adamw_torch",
          "--iterations_per_loop=20", "--save_checkpoints_steps=100000"]
TEACHER_EPOCHS = 3
TASKS = {"mrpc": "MRPC", "sst2": "SST-2"}
TEACHER_SEED = 42
VARIANTS = ("distilled", "alone")
STUDENT_LAYERS = "0,2,4"
SEQ = 128


def _tsv_rows(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]


TRANSFER_PARTS = re.compile(r"stsb|swap|nbr[1-9]|test|cross")
TRANSFER_ORDER = ["stsb", "swap", "nbr", "test", "cross"]
CROSS_SIMILARITY = 0.3
REPLACE_PROBABILITY = 0.3
NEIGHBOURS = 8


def _transfer_kind(text):
    """argparse type of --transfer: '+'-joined parts in the order stsb, swap, nbrN, test,
    cross (MRPC), or test or nbrN+test (SST-2)."""
    parts = text.split("+")
    order = [TRANSFER_ORDER.index(p[:3] if p.startswith("nbr") else p)
             if TRANSFER_PARTS.fullmatch(p) else -1 for p in parts]
    if -1 in order or order != sorted(set(order)):
        raise argparse.ArgumentTypeError(
            f"{text!r}: any of stsb, swap, nbrN (N 1-9), test, cross, in that order, "
            f"'+'-joined (SST-2: test or nbrN+test)")
    return text


def neighbour_replacer(seed):
    """bert_tf's NeighbourReplacer (what --distill_neighbours uses, there with the teacher's
    table) over MiniLM's vocabulary and pre-trained word-embedding table."""
    from bert_tf.checkpoints.hf import read_hf
    from bert_tf.data.neighbour_words import NeighbourReplacer
    from bert_tf.tokenization import load_vocab
    folder = minilm()
    return NeighbourReplacer(list(load_vocab(os.path.join(folder, "vocab.txt"))),
                             read_hf(folder)[0]["bert/embeddings/word_embeddings"],
                             REPLACE_PROBABILITY, seed, neighbours=NEIGHBOURS)


def transfer_file(kind, task, work_dir):
    """The --transfer `kind` file for `task`, written once, atomically. MRPC: with stsb,
    STS-B's training pairs (sentence1, sentence2) less those sharing a sentence with MRPC's
    dev set; with swap, MRPC's training pairs in swapped order (text_b, text_a); with nbrN, N
    copies of them with words replaced by embedding neighbours (seed 0); with test, the pairs
    of its unlabelled test set less those sharing a sentence with the dev set; with cross,
    cross_pairs of the training and test pairs' sentences, dev sentences held out (test and
    cross pairs, with swap, in both orders). SST-2: sst2_test_sentences, with nbrN followed
    by N copies of them with words replaced by embedding neighbours (seed 0)."""
    path = os.path.join(work_dir, f"transfer_{kind.replace('+', '_')}_for_{task}.tsv")
    if os.path.exists(path):
        return path
    parts = kind.split("+")
    if task == "sst2":
        test = sst2_test_sentences()
        copies = sum(int(p[3:]) for p in parts if p.startswith("nbr"))
        replace = neighbour_replacer(seed=0) if copies else None
        return _write_transfer(path, kind, test + [replace(sentence) for _ in range(copies)
                                                   for sentence in test])
    held_out = {sentence_key(row[c]) for row in _tsv_rows(os.path.join(GLUE, "MRPC", "dev.tsv"))
                for c in (3, 4)}

    def pairs_clear_of_dev(path, a, b):
        """Columns a, b of the rows of `path` where neither sentence is in the dev set."""
        return [(row[a], row[b]) for row in _tsv_rows(path)
                if not {sentence_key(row[a]), sentence_key(row[b])} & held_out]

    pairs = pairs_clear_of_dev(os.path.join(GLUE, "STS-B", "train.tsv"), 7, 8) \
        if "stsb" in parts else []
    train = [(row[3], row[4]) for row in _tsv_rows(os.path.join(GLUE, "MRPC", "train.tsv"))]
    if "swap" in parts:
        pairs += [(b, a) for a, b in train]
    copies = sum(int(p[3:]) for p in parts if p.startswith("nbr"))
    if copies:
        replace = neighbour_replacer(seed=0)
        pairs += [(replace(a), replace(b)) for _ in range(copies) for a, b in train]
    test = pairs_clear_of_dev(os.path.join(GLUE, "MRPC", "test.tsv"), 3, 4)
    extras = ([test] if "test" in parts else []) + (
        [cross_pairs(train + test, CROSS_SIMILARITY, held_out)] if "cross" in parts else [])
    for extra in extras:
        pairs += extra + ([(b, a) for a, b in extra] if "swap" in parts else [])
    return _write_transfer(path, kind, [f"{a}\t{b}" for a, b in pairs])


def sst2_test_sentences():
    """SST-2's unlabelled test sentences, less those also in its dev set."""
    held_out = {sentence_key(row[0]) for row in _tsv_rows(os.path.join(GLUE, "SST-2",
                                                                         "dev.tsv"))}
    return [row[1] for row in _tsv_rows(os.path.join(GLUE, "SST-2", "test.tsv"))
            if sentence_key(row[1]) not in held_out]


def _write_transfer(path, kind, lines):
    """`lines` to `path`, one a line, atomically; returns `path`."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"           # sweeps may start side by side
    with open(temporary, "w", encoding="utf-8") as f:
        f.writelines(f"{line}\n" for line in lines)
    os.replace(temporary, path)
    print(f"transfer set ({kind}): {len(lines)} examples in {path}", flush=True)
    return path


def variant_flags(variant, teacher_dir, args, task):
    if variant == "teacher":
        return []
    student = [f"--student_layers={args.student_layers}",
               f"--bert_config_file={os.path.join(teacher_dir, 'bert_config.json')}",
               f"--vocab_file={os.path.join(minilm(), 'vocab.txt')}"]
    if variant == "alone":
        return student
    return student + teacher_flags(teacher_dir, args.temperature, args.alpha) + (
        [f"--distill_augment={args.augment}", f"--distill_augment_drop={args.augment_drop:g}"]
        if args.augment else []) + (
        [f"--distill_hidden_weight={args.hidden_weight:g}"] if args.hidden_weight else []) + (
        [f"--distill_neighbours={args.neighbours}"] if args.neighbours else []) + (
        ["--distill_cross_pairs"] if args.cross else []) + (
        [f"--distill_transfer_file={transfer_file(args.transfer, task, args.work_dir)}"]
        if args.transfer else [])


def settings(variant, args):
    """What besides commit, task and seed tells runs apart (rows before it: the defaults)."""
    if variant == "teacher":
        return {"epochs": TEACHER_EPOCHS}
    values = {"epochs": args.num_train_epochs, "student_layers": args.student_layers}
    if args.max_seq_length != SEQ:        # (absent from rows of runs at the recipe's length)
        values["max_seq_length"] = args.max_seq_length
    if variant == "distilled":
        values.update(temperature=args.temperature, alpha=args.alpha)
        if args.augment:                  # (absent from rows of runs without augmentation)
            values.update(augment=args.augment, augment_drop=args.augment_drop)
        if args.hidden_weight:            # (absent from rows of runs without hidden matching)
            values["hidden_weight"] = args.hidden_weight
        if args.transfer:                 # (absent from rows of runs without a transfer set)
            values["transfer"] = args.transfer
        if args.neighbours:               # (absent from rows of runs without the flag)
            values["neighbours"] = args.neighbours
        if args.cross:                    # (absent from rows of runs without the flag)
            values["cross"] = True
    return values


def row_settings(row, args):
    defaults = argparse.Namespace(num_train_epochs=TEACHER_EPOCHS, student_layers=STUDENT_LAYERS,
                                  temperature=2.0, alpha=0.5, augment=0, max_seq_length=SEQ,
                                  hidden_weight=0.0, transfer=None, neighbours=0,
                                  cross=False)
    return row.get("settings") or settings(row["variant"], defaults)


def key(task, variant, seed, values):
    return task, variant, seed, tuple(sorted(values.items()))


def run(args):
    unknown = set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"--variants: {', '.join(sorted(unknown))} unknown; known: "
                         f"{', '.join(VARIANTS)}")
    if args.teacher_dir and not args.seeds:
        raise SystemExit("--seeds= trains the teacher alone, and --teacher_dir skips training "
                         "it: together they do nothing")
    tasks = args.tasks.split(",")
    if args.transfer and not set(tasks) <= {"mrpc", "sst2"} or args.cross and tasks != ["mrpc"]:
        raise SystemExit(f"--tasks {args.tasks}: --transfer is built for MRPC and SST-2, "
                         f"--cross for MRPC (a sentence-pair task)")
    if args.transfer and "sst2" in tasks and not re.fullmatch(r"(nbr[1-9]\+)?test",
                                                               args.transfer):
        raise SystemExit(f"--transfer {args.transfer}: SST-2 takes test or nbrN+test")
    head = commit()
    done = {key(r["task"], r["variant"], r["seed"], row_settings(r, args))
            for r in read_rows(args.results) if r["commit"] == head}
    for task in tasks:
        teacher_dir = args.teacher_dir or os.path.join(args.work_dir, f"{task}_teacher_{head}")
        plan = [] if args.teacher_dir else [("teacher", TEACHER_SEED)]
        plan += [(v, int(s)) for s in args.seeds.split(",") if s
                 for v in args.variants.split(",")]
        for variant, seed in plan:
            values = settings(variant, args)
            out = (teacher_dir if variant == "teacher" else os.path.join(
                args.work_dir, f"{task}_{variant}_" + "_".join(
                    str(v) for v in values.values()).replace(",", "") + f"_{seed}"))
            if key(task, variant, seed, values) in done and (variant != "teacher"
                                                             or os.path.isdir(teacher_dir)):
                print(f"skip {task} {variant} seed {seed}: in {args.results}", flush=True)
                continue
            flags = RECIPE + variant_flags(variant, teacher_dir, args, task) + [
                f"--max_seq_length={values.get('max_seq_length', SEQ)}",
                f"--num_train_epochs={values['epochs']:g}", f"--task_name={TASKS[task]}",
                f"--seed={seed}"]
            metrics, seconds = run_classifier(
                os.path.join(GLUE, TASKS[task]), out, flags, f"{task} {variant} seed {seed}",
                init_checkpoint=None if variant == "teacher" else teacher_dir)
            append_row(args.results, {"commit": head, "task": task, "variant": variant,
                                      "seed": seed, "settings": values, "flags": flags,
                                      "eval": metrics,
                                      "init_checkpoint": "minilm" if variant == "teacher"
                                      else teacher_dir, "seconds": seconds}, args.work_dir)
            print(f"{task} {variant} seed {seed}: accuracy {metrics['eval_accuracy']:.4f} "
                  f"({seconds:.0f} s)", flush=True)


def describe(variant, values):
    epochs = values["epochs"]
    text = f"3-layer student, {variant}, {epochs:g} epoch{'s' if epochs != 1 else ''}"
    if values.get("student_layers", STUDENT_LAYERS) != STUDENT_LAYERS:
        text += f", layers {values['student_layers']}"
    if "max_seq_length" in values:
        text += f", seq {values['max_seq_length']}"
    if variant == "distilled":
        text += f", T {values['temperature']:g}, alpha {values['alpha']:g}"
        if values.get("augment"):
            text += f", {values['augment']} copies dropping {values['augment_drop']:g} of words"
        if values.get("hidden_weight"):
            text += f", [CLS] states matched x {values['hidden_weight']:g}"
        if values.get("transfer"):
            text += f", transfer set {values['transfer']}"
        if values.get("neighbours"):
            text += f", {values['neighbours']} neighbour copies (teacher's table)"
        if values.get("cross"):
            text += ", cross pairs of the training sentences"
    return text


def summarize(args):
    rows = read_rows(args.results)
    teachers = [r for r in rows if r["variant"] == "teacher"]       # the latest per task
    rows = teachers + [r for r in rows if r["variant"] != "teacher" and "init_checkpoint" in r
                       and r["commit"].startswith(args.commit)]  # (earlier: MiniLM's layers)
    cells = collections.defaultdict(dict)
    for r in rows:
        values = row_settings(r, args)
        cells[key(r["task"], r["variant"], None, values)][r["seed"]] = (
            100 * r["eval"]["eval_accuracy"])
    seeds = sorted({r["seed"] for r in rows if r["variant"] != "teacher"})
    lines = ["| task | model | " + " | ".join(f"seed {s}" for s in seeds)
             + " | mean | share of the teacher |", "|---|---|" + "---|" * len(seeds) + "---|---|"]
    for task in TASKS:
        teacher = cells.get(key(task, "teacher", None, settings("teacher", args)), {})
        if TEACHER_SEED not in teacher:
            continue
        teacher = teacher[TEACHER_SEED]
        lines.append(f"| {task} | teacher (6 layers, seed {TEACHER_SEED}) | "
                     + " | " * (len(seeds) - 1) + f" | **{teacher:.2f}** | 100% |")
        students = sorted((k, v) for k, v in cells.items()
                          if k[0] == task and k[1] != "teacher")
        for (_, variant, _, values), accuracy in students:
            mean = sum(accuracy.values()) / len(accuracy)
            lines.append(f"| {task} | {describe(variant, dict(values))} | "
                         + " | ".join(f"{accuracy[s]:.2f}" if s in accuracy else ""
                                      for s in seeds)
                         + f" | **{mean:.2f}** | {100 * mean / teacher:.1f}% |")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="mrpc")
    parser.add_argument("--seeds", default="1,2,3",
                        help="the students' seeds; empty (--seeds=) trains the teacher only")
    parser.add_argument("--teacher_dir", default=None,
                        help="a teacher trained before (one task): skip training it")
    parser.add_argument("--student_layers", default=STUDENT_LAYERS)
    parser.add_argument("--max_seq_length", type=int, default=SEQ,
                        help="the students' sequence length (a teacher computes its soft "
                        "targets at its own run's length)")
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="the students to train per seed: distilled, alone or both")
    parser.add_argument("--augment", type=int, default=0,
                        help="distilled students: --distill_augment (copies per example)")
    parser.add_argument("--augment_drop", type=float, default=0.1,
                        help="with --augment: --distill_augment_drop")
    parser.add_argument("--hidden_weight", type=float, default=0.0,
                        help="distilled students: --distill_hidden_weight (0: off)")
    parser.add_argument("--transfer", type=_transfer_kind, default=None,
                        help="distilled students: a transfer set (--distill_transfer_file), "
                        "see above")
    parser.add_argument("--neighbours", type=int, default=0,
                        help="distilled students: --distill_neighbours (copies per example; "
                        "the library's route to the transfer kind's nbrN, with the teacher's "
                        "word-embedding table)")
    parser.add_argument("--cross", action="store_true",
                        help="distilled students: --distill_cross_pairs (new pairs of the "
                        "training pairs' sentences alone, no dev pair; the transfer part "
                        "cross also crosses the test pairs' and holds out every dev sentence)")
    parser.add_argument("--num_train_epochs", type=float, default=TEACHER_EPOCHS,
                        help="the students' epochs (the teacher's stay 3)")
    sweep_main(parser, run, summarize, RESULTS, "bert_tf_quality/distillation",
               "task x model x seed", "students of this commit (teachers: the latest)")


if __name__ == "__main__":
    main()
