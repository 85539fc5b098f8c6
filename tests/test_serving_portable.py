"""LiteRT, ONNX and OpenVINO exports (bert_tf.serving.portable): token ids in, the SavedModel's
numeric serve_features outputs out, run in ai-edge-litert, onnxruntime and OpenVINO against the
Keras model on real MRPC pairs."""

import functools
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from helpers import export_savedmodel


# multi_label: a classifier model served with per-label sigmoids.
ARGS = dict(support.EXPORT_ARGS, multi_label=dict(support.EXPORT_ARGS["classifier"],
                                                  labels=["a", "b"]))
MODEL = {"multi_label": "classifier"}


@functools.lru_cache(maxsize=None)
def _export(kind, fmt, precision=None):
    """(version path, export_info) of the tiny random `kind` model exported once per process."""
    folder = support.scratch_dir(f"{kind}_{fmt}")
    path = export_savedmodel(support.build_model(MODEL.get(kind, kind)), kind, folder,
                             support.vocab_file(), True, format=fmt, precision=precision,
                             **ARGS[kind])
    with open(os.path.join(path, "export_info.json")) as f:
        return path, json.load(f)


def _run_litert(path, features):
    from ai_edge_litert.interpreter import Interpreter
    runner = Interpreter(model_path=os.path.join(path, "model.tflite")).get_signature_runner(
        "serving_default")
    return runner(**features)


def _run_onnx(path, features):
    import onnxruntime
    session = onnxruntime.InferenceSession(os.path.join(path, "model.onnx"),
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, features)))


def _run_openvino(path, features):
    """The IR's outputs by the names export_info.json lists (OpenVINO also keeps the graph's
    own tensor names), computed in float32."""
    import openvino as ov
    import openvino.properties.hint as hints
    with open(os.path.join(path, "export_info.json")) as f:
        outputs = json.load(f)["outputs"]
    compiled = ov.Core().compile_model(os.path.join(path, "model.xml"), "CPU",
                                       {hints.inference_precision: ov.Type.f32})
    got = compiled.create_infer_request().infer(features)
    return {name: got[port] for port in compiled.outputs for name in port.get_names()
            if name in outputs}


RUN = {"litert": _run_litert, "onnx": _run_onnx, "openvino": _run_openvino}
FILES = {"litert": ["model.tflite"], "onnx": ["model.onnx"],
         "openvino": ["model.xml", "model.bin"]}


def _features(kind, count=8):
    """Real inputs packed as serve_features takes them and cut to their longest row (as a
    client pads a request), which is shorter than the export's seq_length: MRPC's first
    sentences; SQuAD questions with the start of their contexts."""
    if kind == "squad":
        questions = support.squad_questions(count)
        features = support.classifier_features([q for _, q, _ in questions],
                                               [c[:200] for _, _, c in questions],
                                               seq_length=support.SQUAD_SEQ)
    else:
        features = support.classifier_features(support.mrpc_pairs(count)[0])
    length = int(features["input_mask"].sum(axis=1).max())
    assert length < features["input_ids"].shape[1]
    return {k: v[:, :length] for k, v in features.items()}


def _keras(kind, features):
    from bert_tf.serving.heads import make_head
    from bert_tf.serving.options import HeadOptions
    from bert_tf.tokenization import vocab
    args = dict(ARGS[kind])
    seq_length = args.pop("seq_length")
    head = make_head(kind, support.build_model(MODEL.get(kind, kind)), vocab.Vocabulary.from_file(
        support.vocab_file()).id_to_token, True, seq_length, HeadOptions(**args))
    out = head.outputs(head.predict({k: tf.constant(v) for k, v in features.items()}), features)
    return {k: np.asarray(v) for k, v in out.items() if v.dtype != tf.string}


@pytest.mark.slow            # each exports (LiteRT conversion, tf2onnx): 2-5 s
@pytest.mark.parametrize("kind, fmt", [("classifier", "litert"), ("classifier", "onnx"),
                                       ("regression", "litert"), ("embedding", "onnx"),
                                       ("squad", "litert"), ("multi_label", "onnx"),
                                       ("classifier", "openvino"), ("squad", "openvino")])
def test_fp32_exports_give_the_keras_models_outputs_by_the_savedmodels_names(kind, fmt):
    features = _features(kind)
    path, info = _export(kind, fmt)
    expected = _keras(kind, features)
    got = RUN[fmt](path, features)
    assert set(got) == set(expected) == set(info["outputs"])
    for name, value in expected.items():
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[name], value, atol=1e-4, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert info["format"] == fmt and info["precision"] == "fp32" and info["task"] == kind
    assert sorted(os.listdir(path)) == sorted(["export_info.json", "vocab.txt", *FILES[fmt]])


@pytest.mark.slow            # each exports (LiteRT conversion, tf2onnx): 2-5 s
def test_litert_export_takes_the_fewest_operators_per_layer():
    """FlatTokens: a Dense on [batch, length, hidden] of unknown sizes would lower to SHAPE,
    REDUCE_PROD and PACK around each matmul (48 of each in MiniLM), which XNNPACK runs apart.
    bert_tf.serving.portable.litert_graph: query, key and value are one FULLY_CONNECTED per
    block (4 per block with the attention output and the two feed-forward ones, and the pooler
    and classifier), split into heads by one TRANSPOSE (one more for the context; the last
    block, read only at [CLS], needs none); each LayerNorm is 2 MEANs and 1 RSQRT, with none of
    Keras' SQUARED_DIFFERENCE and NEG."""
    import collections

    from ai_edge_litert.interpreter import Interpreter
    path, _ = _export("classifier", "litert")
    ops = collections.Counter(op["op_name"] for op in Interpreter(
        model_path=os.path.join(path, "model.tflite"))._get_ops_details())
    blocks = support.build_model("classifier").encoder.config.num_hidden_layers
    norms = 2 * blocks + 1
    assert ops["FULLY_CONNECTED"] == 4 * blocks + 2 and ops["REDUCE_PROD"] == 0
    assert ops["TRANSPOSE"] == 2 * blocks - 1
    assert ops["MEAN"] == 2 * norms and ops["RSQRT"] == norms
    assert ops["SQUARED_DIFFERENCE"] == ops["NEG"] == 0


@pytest.mark.slow            # one LiteRT conversion: 2-5 s
def test_litert_keeps_layernorm_scales_out_of_the_projections_weights():
    """LiteRT's converter folds a multiply by a constant that feeds a FULLY_CONNECTED into its
    weights. Folded, a LayerNorm's gamma would leave the activations an int8 projection
    quantizes without it, and without the smoothing that divides it (all-MiniLM-L6-v2 int8
    embeddings: mean cosine to fp32 0.99804 folded, 0.99924 not). Each block's intermediate
    projection keeps the Keras kernel as it is."""
    from ai_edge_litert.interpreter import Interpreter
    model = support.build_model("classifier")
    rng = np.random.default_rng(0)
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if isinstance(layer, keras.layers.LayerNormalization):
            layer.gamma.assign(rng.uniform(0.5, 2.0, layer.gamma.shape).astype(np.float32))
    path = export_savedmodel(model, "classifier", support.scratch_dir("litert_gamma"),
                             support.vocab_file(), True, format="litert", **ARGS["classifier"])
    interpreter = Interpreter(model_path=os.path.join(path, "model.tflite"))
    interpreter.allocate_tensors()
    weights = [interpreter.get_tensor(op["inputs"][1])
               for op in interpreter._get_ops_details() if op["op_name"] == "FULLY_CONNECTED"]
    for block in model.encoder.blocks:
        kernel = block.intermediate.kernel.numpy().T                  # [intermediate, hidden]
        assert any(w.shape == kernel.shape and np.allclose(w, kernel, atol=1e-6)
                   for w in weights), block.name


@pytest.mark.slow            # each exports (LiteRT conversion, tf2onnx): 2-5 s
def test_classifier_outputs_name_string_labels_in_export_info_only():
    _, info = _export("classifier", "litert")
    assert info["outputs"] == ["label_id", "logits", "probabilities"]
    assert info["labels"] == support.MRPC_LABELS and info["do_lower_case"] is True
    assert info["inputs"] == {n: ["batch", "length"]
                              for n in ("input_ids", "input_mask", "segment_ids")}
    assert info["seq_length"] == support.SEQ


@pytest.mark.slow            # each exports (LiteRT conversion, tf2onnx): 2-5 s
@pytest.mark.parametrize("fmt, precision", [("litert", "int8"), ("litert", "fp16"),
                                            ("onnx", "int8"), ("openvino", "int8")])
def test_smaller_precisions_stay_close_to_fp32_and_shrink_the_file(fmt, precision):
    features = _features("classifier")
    fp32_path, _ = _export("classifier", fmt)
    path, info = _export("classifier", fmt, precision)
    assert info["precision"] == precision
    name = FILES[fmt][-1]               # OpenVINO: the weights are in model.bin
    assert os.path.getsize(os.path.join(path, name)) < 0.6 * os.path.getsize(
        os.path.join(fp32_path, name))
    got, reference = RUN[fmt](path, features), RUN[fmt](fp32_path, features)
    # Measured on these 8 MRPC pairs (logits within +-0.35): int8 0.016 from fp32 in LiteRT and
    # in onnxruntime, fp16 0.0008; a wrong scale would move them by about their own size.
    spread = np.abs(reference["logits"]).max()
    np.testing.assert_allclose(got["logits"], reference["logits"], atol=0.15 * spread)


@pytest.mark.slow            # each exports (LiteRT conversion, tf2onnx): 2-5 s
def test_openvino_compiles_each_layernorm_into_one_mvn_kernel():
    """bert_tf.serving.portable.openvino_graph: OpenVINO's CPU plugin runs every LayerNorm as
    one MVN kernel, with no reductions left over (Keras' own formula left two per LayerNorm)."""
    import collections

    import openvino as ov
    path, _ = _export("classifier", "openvino")
    compiled = ov.Core().compile_model(os.path.join(path, "model.xml"), "CPU")
    kernels = collections.Counter(op.get_rt_info()["layerType"].astype(str)
                                  for op in compiled.get_runtime_model().get_ops())
    model = support.build_model("classifier")
    norms = sum(isinstance(layer, keras.layers.LayerNormalization)
                for layer in model._flatten_layers(include_self=False, recursive=True))
    assert kernels["MVN"] == norms and kernels["Reduce"] == 0


@pytest.mark.parametrize("kind, fmt, precision, jit_compile, message", [
    ("fill_mask", "litert", None, False, "exports classifier, regression"),
    ("classifier", "litert", "bf16", False, "must be one of fp32, fp16, int8, got 'bf16'"),
    ("classifier", "onnx", "fp16", False, "must be one of fp32, int8, got 'fp16'"),
    ("classifier", "onnx", None, True, "jit_compile applies to SavedModels"),
])
def test_what_a_portable_format_lacks_is_refused_by_name(kind, fmt, precision, jit_compile,
                                                         message, tmp_path):
    from bert_tf.serving.portable import check_portable_options
    with pytest.raises(ValueError, match=message):
        check_portable_options(fmt, kind, precision, jit_compile)


def test_an_unknown_format_is_refused(tiny_classifier, tmp_path):
    with pytest.raises(ValueError, match="format must be saved_model, litert, mediapipe, onnx, "
                                         "openvino, got 'tf'"):
        export_savedmodel(tiny_classifier, "classifier", str(tmp_path), support.vocab_file(),
                          True, support.SEQ, labels=support.MRPC_LABELS, format="tf")


@pytest.mark.slow            # each exports (LiteRT conversion, tf2onnx): 2-5 s
def test_export_savedmodel_writes_an_onnx_version_with_format(tmp_path):
    """--format=onnx --precision=int8 from a checkpoint: version 1 holds model.onnx, whose
    label ids equal the Keras model's on real MRPC pairs."""
    from bert_tf.checkpoints import save_weights
    model = support.build_model("classifier")
    checkpoint = save_weights(model, str(tmp_path / "ckpt"), "native",
                              vocab_file=support.vocab_file())
    path, _ = support.run_export_script(checkpoint, str(tmp_path / "export"),
                                        "--task=classifier", "--labels=0,1", "--text_pair",
                                        f"--max_seq_length={support.SEQ}", "--format=onnx",
                                        "--precision=int8", in_process=True,
                                        info_file="export_info.json")
    features = _features("classifier")
    got = _run_onnx(path, features)
    np.testing.assert_array_equal(got["label_id"], _keras("classifier", features)["label_id"])


@pytest.mark.slow            # each exports (LiteRT conversion, tf2onnx): 2-5 s
@pytest.mark.parametrize("fmt", ["litert", "onnx", "openvino"])
def test_bert_tf_predict_gives_the_savedmodels_predictions_from_a_portable_export(
        fmt, tiny_classifier, fp32_classifier_export, tmp_path):
    """Raw MRPC pairs through `python -m bert_tf.predict --model=<version folder>`: the
    export's head tokenizes as serving_default does, the runtime runs the model."""
    from bert_tf.jobs.predict import PredictOptions, run
    path = export_savedmodel(tiny_classifier, "classifier", str(tmp_path), support.vocab_file(),
                             True, support.SEQ, labels=support.MRPC_LABELS, text_pair=True,
                             format=fmt)
    texts, pairs = support.mrpc_pairs(6)
    portable = run(PredictOptions(model=path, text=texts, text_pair=pairs))
    served = run(PredictOptions(model=fp32_classifier_export[0], text=texts, text_pair=pairs))
    assert [p["label"] for p in portable] == [s["label"] for s in served]
    for p, s in zip(portable, served):
        assert p["probabilities"] == pytest.approx(s["probabilities"], abs=1e-5)


def _mediapipe(exports, texts):
    """MediaPipe Tasks on each (kind, export folder) of exports, in one process that imports
    mediapipe alone; the outputs in the same order."""
    import subprocess
    import sys
    client = str(support.REPO / "quality" / "mediapipe_client.py")
    args = [a for kind, path in exports for a in (kind, os.path.join(path, "model.tflite"))]
    done = subprocess.run([sys.executable, client, *args], input=json.dumps(texts),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()[-len(exports):]]


@functools.lru_cache(maxsize=None)
def _mediapipe_export(kind):
    args = {k: v for k, v in ARGS[kind].items() if k != "text_pair"}    # one text per request
    path = export_savedmodel(support.build_model(kind), kind, support.scratch_dir(
        f"{kind}_mediapipe"), support.vocab_file(), True, format="mediapipe", **args)
    return path


@pytest.fixture(scope="module")
def mediapipe_outputs():
    """MediaPipe's TextClassifier and TextEmbedder on 8 MRPC sentences, each on its kind's
    mediapipe export, from one MediaPipe process."""
    texts = support.mrpc_pairs(8)[0]
    kinds = ("classifier", "embedding")
    outputs = _mediapipe([(kind, _mediapipe_export(kind)) for kind in kinds], texts)
    return texts, dict(zip(kinds, outputs))


@pytest.mark.slow            # the shared fixture: two exports, one MediaPipe process, ~13 s
def test_mediapipes_text_classifier_loads_a_mediapipe_export_as_it_is(mediapipe_outputs):
    texts, outputs = mediapipe_outputs
    got = outputs["classifier"]
    expected = _keras("classifier", support.classifier_features(texts))["probabilities"]
    labels = support.MRPC_LABELS
    np.testing.assert_allclose([[scores[label] for label in labels] for scores in got],
                               expected, atol=1e-5)


@pytest.mark.slow            # the shared fixture: two exports, one MediaPipe process, ~13 s
def test_mediapipes_text_embedder_loads_an_embedding_export_as_it_is(mediapipe_outputs):
    texts, outputs = mediapipe_outputs
    got = np.array(outputs["embedding"])
    expected = _keras("embedding", support.classifier_features(texts))["embedding"]
    cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(
        expected, axis=1)
    assert cosine.min() > 0.9999


@pytest.mark.slow            # exports (LiteRT conversion): 3 s
def test_bert_tf_predict_reads_a_mediapipe_classifier_export_too():
    """The file outputs probabilities only; predict gives the Keras model's labels and
    probabilities from it."""
    from bert_tf.jobs.predict import PredictOptions, run
    texts = support.mrpc_pairs(6)[0]
    predictions = run(PredictOptions(model=_mediapipe_export("classifier"), text=texts))
    expected = _keras("classifier", support.classifier_features(texts))["probabilities"]
    for row, probabilities in zip(predictions, expected):
        assert [row["probabilities"][label] for label in support.MRPC_LABELS] == \
            pytest.approx(list(probabilities), abs=1e-5)
        assert row["label"] == support.MRPC_LABELS[int(np.argmax(probabilities))]


@pytest.mark.parametrize("kind, lower_case, text_pair, message", [
    ("regression", True, False, "classifier or an embedding model, not regression"),
    ("classifier", False, False, "needs an uncased model"),
    ("classifier", True, True, "cannot feed text pairs"),
])
def test_what_mediapipe_cannot_tokenize_for_is_refused(kind, lower_case, text_pair, message):
    from bert_tf.serving.portable.mediapipe_metadata import check_mediapipe
    with pytest.raises(ValueError, match=message):
        check_mediapipe(kind, lower_case, text_pair)


def test_a_mediapipe_export_of_another_kind_is_refused_before_exporting():
    from bert_tf.serving.portable import check_portable_options
    with pytest.raises(ValueError, match="format=mediapipe exports classifier, embedding, "
                                         "not squad"):
        check_portable_options("mediapipe", "squad", None, False)


@pytest.mark.slow            # two exports and a SavedModel: ~10 s
def test_bert_tf_predict_answers_squad_from_a_litert_export_as_from_the_savedmodel():
    """Each batch reaches the runtime cut to its longest row; start and end logits come back
    zero past it, as the SavedModel's serve_features gives them, so the answers agree."""
    from bert_tf.jobs.predict import PredictOptions, run
    questions = support.squad_questions(4)
    rows = dict(question=[q for _, q, _ in questions],
                context=[c[:300] for _, _, c in questions])
    portable = run(PredictOptions(model=_export("squad", "litert")[0], **rows))
    served = run(PredictOptions(model=support.exported("squad")[1], **rows))
    assert [(p["start"], p["end"]) for p in portable] == [(s["start"], s["end"]) for s in served]
    assert [p["score"] for p in portable] == pytest.approx([s["score"] for s in served],
                                                           abs=1e-4)


def test_runtimes_get_each_batch_cut_to_its_longest_row():
    from bert_tf.prediction.portable import cut_to_longest_row
    mask = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]], np.int32)
    cut = cut_to_longest_row({"input_ids": mask * 7, "input_mask": mask,
                              "segment_ids": np.zeros_like(mask)})
    assert {k: v.shape for k, v in cut.items()} == {k: (2, 4) for k in cut}
    np.testing.assert_array_equal(cut["input_ids"], (mask * 7)[:, :4])


@pytest.mark.parametrize("precision, capabilities, hint", [
    ("fp32", ["FP32", "BF16", "INT8"], "f32"),
    ("bf16", ["FP32", "BF16", "INT8"], "bf16"),
    ("bf16", ["FP32", "INT8"], "f32"),          # emulated bf16 would be far slower
    ("int8", ["FP32", "INT8"], None),            # OpenVINO's default for the float parts
])
def test_openvino_computes_a_bf16_export_in_bfloat16_only_where_the_cpu_has_it(
        precision, capabilities, hint):
    from bert_tf.prediction.portable import openvino_hint
    assert openvino_hint(precision, capabilities) == hint


@pytest.mark.slow            # two OpenVINO exports: ~8 s
def test_an_openvino_bf16_export_is_the_fp32_ir_recorded_as_bf16():
    fp32_path, _ = _export("classifier", "openvino")
    path, info = _export("classifier", "openvino", "bf16")
    assert info["precision"] == "bf16"
    assert os.path.getsize(os.path.join(path, "model.bin")) == os.path.getsize(
        os.path.join(fp32_path, "model.bin"))


@pytest.mark.slow            # one LiteRT export (cached per process): 3 s
def test_bert_tf_predict_runs_litert_on_every_core_the_process_may_use():
    """ai-edge-litert runs on one thread unless told."""
    from bert_tf.cpu_features import usable_cores
    from bert_tf.prediction.portable import RuntimeModel
    path, info = _export("classifier", "litert")
    assert RuntimeModel(path, info).litert.num_threads == usable_cores()


def _runner(kind, **kwargs):
    from bert_tf.prediction.litert_runner import LiteRTRunner
    return LiteRTRunner(os.path.join(_export(kind, "litert")[0], "model.tflite"), **kwargs)


def _request(features, rows, length):
    return {k: v[rows, :length] for k, v in features.items()}


@pytest.mark.slow            # two LiteRT exports (cached per process): 5 s
@pytest.mark.parametrize("kind", ["classifier", "squad"])
def test_litert_runner_gives_the_interpreters_outputs_at_every_input_shape(kind):
    """squad's start and end logits are per token: their shape follows the request's."""
    features = _features(kind)
    runner = _runner(kind)
    length = features["input_ids"].shape[1]
    for rows, cut in [(slice(0, 8), length), (slice(0, 1), 9), (slice(2, 5), length - 3),
                      (slice(0, 1), 12), (slice(0, 8), length)]:
        request = _request(features, rows, cut)
        got, expected = runner(**request), _run_litert(_export(kind, "litert")[0], request)
        assert set(got) == set(expected)
        for name, value in expected.items():
            assert got[name].shape == value.shape and got[name].dtype == value.dtype, name
            np.testing.assert_allclose(got[name], value, atol=1e-6, err_msg=name)


@pytest.mark.slow            # one LiteRT export (cached per process)
def test_litert_runner_keeps_a_compiled_model_for_each_of_the_latest_shapes():
    features = _features("classifier")
    runner = _runner("classifier", max_shapes=2)
    shape = lambda batch, length: ((batch, length),) * 3     # noqa: E731  (three inputs)
    for batch, length in [(1, 5), (2, 7), (1, 5), (1, 9)]:
        runner(**_request(features, slice(0, batch), length))
    assert runner.compiled_shapes == [shape(1, 5), shape(1, 9)]


@pytest.mark.slow            # one LiteRT export (cached per process)
def test_litert_runner_outputs_are_not_overwritten_by_the_next_request():
    features = _features("classifier")
    runner = _runner("classifier")
    first = runner(**_request(features, slice(0, 2), 9))
    kept = {k: v.copy() for k, v in first.items()}
    second = runner(**_request(features, slice(2, 4), 9))
    assert not np.array_equal(second["logits"], kept["logits"])
    for name, value in kept.items():
        np.testing.assert_array_equal(first[name], value, err_msg=name)


@pytest.mark.slow            # one LiteRT export (cached per process)
def test_litert_runner_refuses_inputs_it_does_not_take_by_name():
    features = _request(_features("classifier"), slice(0, 2), 6)
    runner = _runner("classifier")
    with pytest.raises(ValueError,
                       match=r"missing \['segment_ids'\], unknown \['token_type_ids'\]"):
        runner(input_ids=features["input_ids"], input_mask=features["input_mask"],
               token_type_ids=features["segment_ids"])
    with pytest.raises(ValueError, match="input 'input_ids' must be int32, got float32"):
        runner(**dict(features, input_ids=features["input_ids"].astype(np.float32)))


@pytest.mark.slow            # one LiteRT export (cached per process)
def test_litert_runner_takes_int64_arrays_and_lists_as_its_int32_inputs():
    """A tokenizer's int64 ids (HuggingFace's) or plain lists give the int32 arrays' outputs."""
    features = _request(_features("classifier"), slice(0, 2), 7)
    runner = _runner("classifier")
    expected = runner(**features)
    for converted in ({k: v.astype(np.int64) for k, v in features.items()},
                      {k: v.tolist() for k, v in features.items()}):
        got = runner(**converted)
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.slow            # one LiteRT export (cached per process)
def test_litert_runner_removes_its_packed_weights_when_closed():
    runner = _runner("classifier")
    runner(**_request(_features("classifier"), slice(0, 1), 6))
    folder = runner.weight_cache_folder
    assert os.listdir(folder)
    runner.close()
    assert not os.path.exists(folder)
