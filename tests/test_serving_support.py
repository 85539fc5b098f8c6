"""Shared by tests/test_serving_*.py (holds no tests): small random models of every task,
exported once per pytest process (exporting is the slow part), the real inputs they are checked
on, reference features built by the Python FullTokenizer, and a runner for a fresh Python
process that imports TensorFlow and tensorflow_text but not bert_tf."""

import atexit
import csv
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from helpers import REPO, built_once, export_savedmodel, minilm_dir, shared_path

SEQ = 64            # classifier, regression, tagger, encoder
SQUAD_SEQ = 128
SQUAD_QUERY = 24    # max_query_length: questions of the sample get truncated too
SQUAD_ANSWER = 12   # max_answer_length
SQUAD_STRIDE = 64   # doc_stride: long contexts get overlapping windows
CONLL_LABELS = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
MRPC_LABELS = ["0", "1"]
MULTI_LABELS = ["PER", "ORG", "LOC", "MISC"]
CHOICE_SEQ = 32     # multiple_choice: short enough that some SWAG pairs get truncated
NUM_CHOICES = 4
FILL_SEQ = 32       # fill_mask
TOP_K = 5

_ROOT = tempfile.mkdtemp(prefix="bert_tf_serving_tests_")
atexit.register(shutil.rmtree, _ROOT, True)


def vocab_file():
    return str(minilm_dir() / "vocab.txt")  # uncased, 30,522 tokens


def tiny_config(**overrides):
    from bert_tf.config import BertConfig
    # A wide initializer so random logits differ clearly between rows and labels.
    values = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, type_vocab_size=2, initializer_range=0.2)
    values.update(overrides)
    return BertConfig(**values)


# Seed 14 splits the classifier's 12 MRPC rows 10/2 (nearest margin 0.011), so both labels are
# exercised; most seeds give one label to all rows.
SEEDS = {"classifier": 14}


def build_model(kind, seed=None):
    import keras

    from bert_tf.model import (BertClassifier, BertEmbedder, BertEncoder, BertMultipleChoice,
                               BertPretrainer, BertSpanLabeler, BertTokenClassifier)
    keras.utils.set_random_seed(SEEDS.get(kind, 7) if seed is None else seed)
    encoder = BertEncoder(tiny_config())
    return {"classifier": lambda: BertClassifier(encoder, len(MRPC_LABELS)),
            "multi_label": lambda: BertClassifier(encoder, len(MULTI_LABELS)),
            "regression": lambda: BertClassifier(encoder, 1),
            "squad": lambda: BertSpanLabeler(encoder),
            "tagger": lambda: BertTokenClassifier(encoder, len(CONLL_LABELS)),
            "multiple_choice": lambda: BertMultipleChoice(encoder),
            "fill_mask": lambda: BertPretrainer(encoder),
            "encoder": lambda: encoder,
            "embedding": lambda: BertEmbedder(encoder, "mean", normalize=True)}[kind]()


EXPORT_ARGS = {
    "classifier": dict(seq_length=SEQ, labels=MRPC_LABELS, text_pair=True),
    "multi_label": dict(seq_length=SEQ, labels=MULTI_LABELS, text_pair=True),
    "regression": dict(seq_length=SEQ, text_pair=True),
    "squad": dict(seq_length=SQUAD_SEQ, max_query_length=SQUAD_QUERY,
                  max_answer_length=SQUAD_ANSWER, doc_stride=SQUAD_STRIDE),
    "tagger": dict(seq_length=SEQ, labels=CONLL_LABELS),
    "encoder": dict(seq_length=SEQ),
    "embedding": dict(seq_length=SEQ),
    "multiple_choice": dict(seq_length=CHOICE_SEQ, num_choices=NUM_CHOICES),
    "fill_mask": dict(seq_length=FILL_SEQ, top_k=TOP_K),
}


@functools.lru_cache(maxsize=None)
def exported(kind):
    """(model, version path) of `kind`, exported once per test run (helpers.built_once: the
    xdist workers share it); each process builds the same seeded model for itself."""
    model = build_model(kind)
    folder, version = built_once(f"serving_export_{kind}", lambda folder: os.path.basename(
        export_savedmodel(model, kind, str(folder), vocab_file(), True, **EXPORT_ARGS[kind])))
    return model, str(folder / version)


def loaded_path(path):
    """tf.saved_model.load(path) (in this process)."""
    import tensorflow as tf
    return tf.saved_model.load(path)


@functools.lru_cache(maxsize=None)
def loaded(kind):
    """The SavedModel of `kind`, loaded once in this process."""
    return loaded_path(exported(kind)[1])


def run_export_script(checkpoint, export_dir, *flags, in_process=False,
                      info_file=os.path.join("assets.extra", "export_info.json")):
    """export_savedmodel.py on `checkpoint` in a subprocess, or with in_process run as
    __main__ in this process (scripts_in_process.run_script: its own absl flags, no new
    interpreter to start); returns (the new version's path, its export_info.json: `info_file`
    in the version, a LiteRT or ONNX version has it at the top)."""
    argv = [f"--init_checkpoint={checkpoint}", f"--export_dir={export_dir}", "--nowarmup",
            *flags]
    if in_process:
        from scripts_in_process import run_script
        out = run_script("export_savedmodel.py", *argv)
    else:
        out = subprocess.run([sys.executable, str(REPO / "export_savedmodel.py"), *argv],
                             capture_output=True, text=True, timeout=600,
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert out.returncode == 0, out.stderr[-3000:]
    path = os.path.join(export_dir, "1")
    with open(os.path.join(path, info_file)) as f:
        return path, json.load(f)


def scratch_dir(name):
    path = tempfile.mkdtemp(prefix=f"{name}-", dir=_ROOT)
    return path


# --------------------------------------------------------------------------- real inputs
def _tsv_rows(rel):
    with open(shared_path(rel), encoding="utf-8-sig", newline="") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def mrpc_pairs(count=12):
    rows = _tsv_rows("data/glue/MRPC/dev.tsv")[1:count + 1]
    return [r[3] for r in rows], [r[4] for r in rows]


def stsb_pairs(count=8):
    rows = _tsv_rows("data/glue/STS-B/dev.tsv")[1:count + 1]
    return [r[7] for r in rows], [r[8] for r in rows]


def conll_sentences(count=8, skip=2):
    """Sentences of CoNLL-2003 eng.testa, words joined by spaces (the first `skip` are
    headlines in capitals)."""
    sentences, words = [], []
    with open(shared_path("data/conll2003/eng.testa"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if not parts:
                if words:
                    sentences.append(" ".join(words))
                words = []
            elif parts[0] != "-DOCSTART-":
                words.append(parts[0])
    return sentences[skip:skip + count]


def squad_questions(count=12):
    """(qas_id, question, context) of the first questions of several paragraphs of the SQuAD
    v1.1 dev sample (one question per paragraph, so contexts vary)."""
    with open(shared_path("data/squad/dev-v1.1.half-a.json"), encoding="utf-8") as f:
        data = json.load(f)["data"]
    out = []
    for article in data:
        for paragraph in article["paragraphs"][:2]:
            qa = paragraph["qas"][0]
            out.append((qa["id"], qa["question"], paragraph["context"]))
            if len(out) == count:
                return out
    return out


def swag_examples(count=10):
    """The first SwagExamples of the SWAG train.csv sample (4 endings each)."""
    from bert_tf.data.swag import read_swag
    examples, _, _ = read_swag(shared_path("data/swag/train.first999.csv"))
    return examples[:count]


def fill_mask_texts(count=6):
    """MRPC sentences with their 2nd (and in every other one also their 6th) word masked, and
    texts probing the [MASK] parsing: adjacent masks, a mask inside a word, non-ASCII text."""
    texts = []
    for i, sentence in enumerate(mrpc_pairs(count)[0]):
        words = sentence.split()
        for k in ((1, 5) if i % 2 else (1,)):
            words[k] = "[MASK]"
        texts.append(" ".join(words))
    return texts + ["The capital of France is [MASK].", "[MASK][MASK] opened the door.",
                    "Le café [MASK] était très bon, naïve résumé.", "a well[MASK]known fact"]


# --------------------------------------------------------------------------- references
@functools.lru_cache(maxsize=None)
def full_tokenizer():
    from bert_tf.tokenization import FullTokenizer
    return FullTokenizer(vocab_file(), do_lower_case=True)


def classifier_features(texts_a, texts_b=None, seq_length=SEQ):
    """run_classifier's convert_single_example with the Python FullTokenizer: int32 arrays."""
    tok = full_tokenizer()
    ids, masks, segments = [], [], []
    for i, a in enumerate(texts_a):
        tokens_a = tok.tokenize(a)
        tokens_b = tok.tokenize(texts_b[i]) if texts_b is not None else None
        if tokens_b is not None:
            while len(tokens_a) + len(tokens_b) > seq_length - 3:
                (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
        else:
            tokens_a = tokens_a[:seq_length - 2]
        tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
        segment = [0] * len(tokens)
        if tokens_b is not None:
            tokens += tokens_b + ["[SEP]"]
            segment += [1] * (len(tokens_b) + 1)
        pad = seq_length - len(tokens)
        ids.append(tok.convert_tokens_to_ids(tokens) + [0] * pad)
        masks.append([1] * len(tokens) + [0] * pad)
        segments.append(segment + [0] * pad)
    as_array = lambda rows: np.array(rows, np.int32).reshape(-1, seq_length)
    return {"input_ids": as_array(ids), "input_mask": as_array(masks),
            "segment_ids": as_array(segments)}


def keras_outputs(model, features, graph=False):
    """The in-process Keras model's outputs (numpy) on int32 features; with graph=True traced
    in a tf.function, as the exporter does. Mixed-precision comparisons need that: on CPUs with
    native bfloat16 (AVX512-BF16), graphs get oneDNN's fused matmul+bias kernels, which round
    once where eager op-by-op execution rounds after each op (1 bf16 ulp apart)."""
    import tensorflow as tf
    call = tf.function(model) if graph else model
    out = call({k: tf.constant(v) for k, v in features.items()}, training=False)
    return {k: np.asarray(v) for k, v in out.items() if k != "encoder_outputs"}


def serialized_examples(features, unique_ids=None):
    """tf.Example records with run_classifier's (and, given unique_ids, run_squad's) names."""
    import tensorflow as tf

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    records = []
    for row in range(len(features["input_ids"])):
        fields = {k: ints(features[k][row]) for k in ("input_ids", "input_mask", "segment_ids")}
        fields["label_ids"] = ints([0])          # present in run_classifier files; ignored
        if unique_ids is not None:
            fields["unique_ids"] = ints([unique_ids[row]])
        records.append(tf.train.Example(features=tf.train.Features(feature=fields))
                       .SerializeToString())
    return np.array(records, object)


def requests(kind, head_kind=None):
    """[(signature, {input: array})]: one request per signature of an export of `kind`, on real
    inputs (MRPC, STS-B, SQuAD, CoNLL-2003, SWAG; fill-mask: MRPC sentences with a [MASK]),
    as TF Serving's Predict API receives them; serve_features and serve_examples get features
    packed by the Python FullTokenizer (SQuAD: [CLS] question [SEP] context [SEP] cut to one
    window; fill-mask: the [MASK] id at each row's third position)."""
    a, b = mrpc_pairs()
    seq = SEQ
    if kind in ("classifier", "multi_label"):
        texts = {"text_a": a, "text_b": b}
    elif kind == "regression":
        sa, sb = stsb_pairs()
        texts = {"text_a": sa, "text_b": sb}
    elif kind == "tagger":
        texts = {"text_a": conll_sentences()}
    elif kind == "squad":
        questions = squad_questions()
        texts = {"question": [q for _, q, _ in questions], "context": [c for _, _, c in questions]}
        seq = SQUAD_SEQ
    elif kind == "fill_mask":
        texts = {"text": fill_mask_texts()}
        seq = FILL_SEQ
    elif kind == "multiple_choice":
        examples = swag_examples()
        texts = {"context": [e.context for e in examples],
                 "endings": [[second for _, second in e.choice_texts()] for e in examples]}
    else:                                               # encoder, embedding
        texts = {"text_a": a}
    if kind == "multiple_choice":
        from bert_tf.data.swag import encode_swag
        arrays = encode_swag(examples, full_tokenizer(), CHOICE_SEQ)
        features = {k: arrays[k].astype(np.int32) for k in ("input_ids", "input_mask",
                                                            "segment_ids")}
        flat = {k: v.reshape(len(v), -1) for k, v in features.items()}  # choice-major
    else:
        names = list(texts)
        features = classifier_features(texts[names[0]], texts[names[1]] if len(names) > 1
                                       else None, seq)
        if kind == "fill_mask":
            features["input_ids"][:, 2] = full_tokenizer().vocab["[MASK]"]
        flat = features
    return [("serving_default", {k: np.array(v, object) for k, v in texts.items()}),
            ("serve_features", features),
            ("serve_examples", {"examples": serialized_examples(flat)})]


# --------------------------------------------------------------------------- fresh process
_FRESH_SCRIPT = r'''
import json, os, sys
import numpy as np
import tensorflow as tf

spec = json.load(open(sys.argv[1]))
report = {"non_core": {}}
# Phase 1, tensorflow_text not imported: which listed op types are not core TensorFlow ops?
assert "tensorflow_text" not in sys.modules
for key, ops in spec["op_types"].items():
    report["non_core"][key] = sorted(op for op in ops if not hasattr(tf.raw_ops, op))
report["tf_text_imported_in_phase1"] = "tensorflow_text" in sys.modules

# Phase 2: load every export with tensorflow_text's ops registered; run every request.
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
from tensorflow.python.framework import op_def_registry
from tensorflow_serving.apis import prediction_log_pb2
report["registered_text_ops"] = {op: op_def_registry.get(op) is not None
                                 for op in spec["text_ops"]}
results, replay = {}, {}
for name, job in spec["exports"].items():
    model = tf.saved_model.load(job["path"])
    inputs = np.load(job["inputs"], allow_pickle=True)
    for signature, keys in job["calls"].items():
        function = model.signatures[signature]
        out = function(**{k: tf.constant(inputs[f"{signature}/{k}"]) for k in keys})
        for k, v in out.items():
            results[f"{name}/{signature}/{k}"] = v.numpy()
    warmup = os.path.join(job["path"], "assets.extra", "tf_serving_warmup_requests")
    replayed = []
    for record in tf.data.TFRecordDataset(warmup).as_numpy_iterator():
        request = prediction_log_pb2.PredictionLog.FromString(record).predict_log.request
        function = model.signatures[request.model_spec.signature_name]
        out = function(**{k: tf.constant(tf.make_ndarray(v))
                          for k, v in request.inputs.items()})
        replayed.append([request.model_spec.signature_name, sorted(out)])
    replay[name] = replayed
np.savez(spec["results"], **results)
report["replay"] = replay
report["bert_tf_imported"] = any(m == "bert_tf" or m.startswith("bert_tf.")
                                 for m in sys.modules)
json.dump(report, open(spec["report"], "w"))
'''


def run_fresh_process(exports, op_types, text_ops):
    """Runs _FRESH_SCRIPT in a new interpreter (cwd outside the repository).

    exports: {name: {"path", "inputs": {f"{signature}/{input}": array}, "calls": {signature:
    [input names]}}}; op_types: {key: [op types]} to check against tf.raw_ops.
    Returns (report dict, {f"{name}/{signature}/{output}": array})."""
    folder = scratch_dir("fresh")
    spec = {"exports": {}, "op_types": {k: sorted(v) for k, v in op_types.items()},
            "text_ops": sorted(text_ops), "results": os.path.join(folder, "results.npz"),
            "report": os.path.join(folder, "report.json")}
    for name, job in exports.items():
        inputs = os.path.join(folder, f"{name}.npz")
        np.savez(inputs, **job["inputs"])
        spec["exports"][name] = {"path": job["path"], "inputs": inputs, "calls": job["calls"]}
    with open(os.path.join(folder, "spec.json"), "w") as f:
        json.dump(spec, f)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    proc = subprocess.run([sys.executable, "-c", _FRESH_SCRIPT, os.path.join(folder, "spec.json")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise AssertionError(f"fresh process failed:\n{proc.stderr[-5000:]}")
    with open(spec["report"]) as f:
        report = json.load(f)
    return report, dict(np.load(spec["results"], allow_pickle=True))
