"""Answer raw-text requests with an exported classifier, through the SavedModel's
`serving_default` signature, as tensorflow_model_server would run it: the model is loaded with
tf.saved_model.load and needs TensorFlow and tensorflow_text only, no bert_tf code.

  python -m bert_tf.quickstart.serve --export_dir=quickstart_out/serving \
      --text="Return the event loop of this thread." --text="Set the charset of the payload."
  python -m bert_tf.quickstart.serve --export_dir=quickstart_out/serving \
      --input_file=quickstart_out/data/task/test.tsv --output_file=predictions.tsv

EXPORT_DIR is the folder of numbered versions (the latest is used) or one version folder.
"""

import argparse
import functools
import json
import os
import sys
import time


def version_path(export_dir):
    """export_dir itself when it holds saved_model.pb, else its highest numeric version."""
    if os.path.exists(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    versions = sorted(int(n) for n in (os.listdir(export_dir) if os.path.isdir(export_dir)
                                       else []) if n.isdigit())
    if not versions:
        raise FileNotFoundError(f"{export_dir}: no saved_model.pb and no numbered version "
                                f"folder in it")
    return os.path.join(export_dir, str(versions[-1]))


def export_labels(path):
    """The label list written at export (assets.extra/export_info.json), or None."""
    info = os.path.join(path, "assets.extra", "export_info.json")
    if not os.path.exists(info):
        return None
    with open(info, encoding="utf-8") as f:
        return json.load(f).get("labels")


@functools.lru_cache(maxsize=4)
def load(path):
    """The loaded SavedModel (cached: loading it again gives the same model)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops of serving_default)
    return tf.saved_model.load(path)


def classify(model, texts, batch_size=64):
    """[(label, probabilities)] of the texts through serving_default (text_a)."""
    import tensorflow as tf
    serve = model.signatures["serving_default"]
    results = []
    for start in range(0, len(texts), batch_size):
        out = serve(text_a=tf.constant(texts[start:start + batch_size], tf.string))
        labels = [label.decode("utf-8") for label in out["label"].numpy()]
        results.extend(zip(labels, out["probabilities"].numpy().tolist()))
    return results


def read_texts(path):
    """(texts, labels or None) of a TSV file with a header: text in the first column, the
    label in the second when there is one."""
    with open(path, encoding="utf-8") as f:
        header, *rows = [line for line in f.read().splitlines() if line]
    cells = [row.split("\t") for row in rows]
    texts = [c[0] for c in cells]
    labels = [c[1] for c in cells] if len(header.split("\t")) > 1 else None
    return texts, labels


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.quickstart.serve",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export_dir", required=True,
                        help="folder of numbered versions, or one version folder")
    parser.add_argument("--text", action="append", default=[], help="a request (repeatable)")
    parser.add_argument("--input_file", help="TSV with a header: text[, label] per line "
                                             "(accuracy is printed when it has labels)")
    parser.add_argument("--output_file", help="write the --input_file predictions here (TSV: "
                                              "index, prediction)")
    args = parser.parse_args(argv)
    if not args.text and not args.input_file:
        parser.error("give --text and/or --input_file")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    path = version_path(args.export_dir)
    model = load(path)
    names = export_labels(path)
    for text, (label, probs) in zip(args.text, classify(model, args.text)):
        shown = (", ".join(f"{n} {p:.2f}" for n, p in zip(names, probs)) if names
                 else " ".join(f"{p:.2f}" for p in probs))
        print(f"{label:>10}  ({shown})  {text}")
    if args.input_file:
        texts, labels = read_texts(args.input_file)
        start = time.perf_counter()
        predicted = [label for label, _ in classify(model, texts)]
        seconds = time.perf_counter() - start
        if args.output_file:
            with open(args.output_file, "w", encoding="utf-8") as f:
                f.write("index\tprediction\n"
                        + "".join(f"{i}\t{label}\n" for i, label in enumerate(predicted)))
        print(f"{args.input_file}: {len(texts)} texts in {seconds:.1f}s "
              f"({len(texts) / max(seconds, 1e-9):.0f}/s)")
        if labels:
            correct = sum(p == t for p, t in zip(predicted, labels))
            print(f"accuracy {correct / len(labels):.4f} ({correct}/{len(labels)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
