"""What makes served BERT fast, and that it changes no answer: per-request bucketed padding,
XLA-compiled model functions, bf16 exports, and the dependency check before training."""

import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2

import test_serving_support as support
from helpers import export_savedmodel
from bert_tf import names
from bert_tf.serving import graph_ops, padding
from bert_tf.serving.warmup import read_warmup


def _fake_model(features):
    """Per-token and per-row outputs, and the [batch, length] of the features it was run on
    (per row, so they survive the batch cut)."""
    ids = tf.cast(features["input_ids"], tf.float32)
    shape = tf.shape(features["input_ids"])
    return {"per_token": ids[:, :, None] * 2.0 + 1.0,           # never 0 where the model ran
            "per_row": tf.reduce_sum(ids, axis=1, keepdims=True),
            "model_shape": tf.tile(shape[None], [shape[0], 1])}


def _serve(buckets, features, pad_batch=False):
    """bucketed(_fake_model) traced as the exporter traces it: any batch, any length."""
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in features}
    model_fn = tf.function(_fake_model, input_signature=[spec])
    run = tf.function(padding.bucketed(model_fn, buckets, pad_batch=pad_batch),
                      input_signature=[spec])
    out = {k: v.numpy() for k, v in run(features).items()}
    return out, {tuple(row) for row in out.pop("model_shape")}


def _features(lengths, seq):
    mask = np.array([[1] * n + [0] * (seq - n) for n in lengths], np.int32).reshape(-1, seq)
    ids = mask * (np.arange(seq, dtype=np.int32) + 1)
    return {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
            "segment_ids": tf.zeros_like(mask)}


def test_length_buckets_step_by_a_quarter_power_of_two_and_end_at_the_maximum():
    assert padding.length_buckets(128) == [16, 32, 48, 64, 80, 96, 112, 128]
    assert padding.length_buckets(512) == [16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224,
                                           256, 320, 384, 448, 512]
    assert padding.length_buckets(100) == [16, 32, 48, 64, 80, 96, 100]
    assert padding.length_buckets(8) == [8]
    with pytest.raises(ValueError, match="max_length must be >= 1"):
        padding.length_buckets(0)


def test_the_model_sees_the_batch_cut_to_the_bucket_of_its_longest_row():
    features = _features([5, 20, 3], 128)
    out, model_shapes = _serve(padding.length_buckets(128), features)
    assert model_shapes == {(3, 32)}
    # Outputs come back at the request's shape: per-token ones zero-padded to 128.
    ids = features["input_ids"].numpy()
    np.testing.assert_array_equal(out["per_token"][:, :32, 0], 2.0 * ids[:, :32] + 1.0)
    assert out["per_token"].shape == (3, 128, 1) and not out["per_token"][:, 32:].any()
    np.testing.assert_array_equal(out["per_row"][:, 0], ids.sum(axis=1))


def test_a_row_longer_than_every_bucket_runs_at_its_own_length():
    _, model_shapes = _serve([16, 32], _features([40], 50))
    assert model_shapes == {(1, 40)}


def test_with_pad_batch_the_model_sees_a_power_of_two_batch_and_clients_their_rows():
    out, model_shapes = _serve([16, 64], _features([9, 17, 3], 64), pad_batch=True)
    assert model_shapes == {(4, 64)}
    assert out["per_row"].shape == (3, 1) and out["per_token"].shape == (3, 64, 1)
    empty, _ = _serve([16, 64], _features([], 64), pad_batch=True)
    assert empty["per_row"].shape == (0, 1)


@pytest.fixture(scope="module")
def xla_export(tiny_classifier, tmp_path_factory):
    """The session's tiny MRPC classifier exported with jit_compile (and warm-up requests)."""
    return export_savedmodel(tiny_classifier, "classifier", str(tmp_path_factory.mktemp("xla")),
                          support.vocab_file(), True, support.SEQ, labels=support.MRPC_LABELS,
                          text_pair=True, jit_compile=True)


def test_exported_classifier_gives_the_model_outputs_at_full_padding(tiny_classifier,
                                                                     fp32_classifier_export,
                                                                     xla_export):
    """Raw MRPC pairs of different lengths in one request: the exports with and without XLA
    run the model on a cut batch, the reference at seq_length; logits agree to float
    rounding."""
    texts_a, texts_b = support.mrpc_pairs(6)
    texts_a[0], texts_b[0] = "Short.", "Also short."
    reference = support.keras_outputs(tiny_classifier,
                                      support.classifier_features(texts_a, texts_b),
                                      graph=True)["logits"]
    for loaded in (fp32_classifier_export[1], tf.saved_model.load(xla_export)):
        out = loaded.signatures[names.SERVING_DEFAULT](text_a=tf.constant(texts_a),
                                                       text_b=tf.constant(texts_b))
        np.testing.assert_allclose(out["logits"].numpy(), reference, atol=2e-5)


def test_jit_compile_export_marks_the_model_function_for_xla(fp32_classifier_export,
                                                             xla_export):
    def must_compile(path):
        library = graph_ops.read_saved_model(path).meta_graphs[0].graph_def.library
        return any(f.attr["_XlaMustCompile"].b for f in library.function)

    assert must_compile(xla_export) and not must_compile(fp32_classifier_export[0])
    info = json.loads(open(os.path.join(xla_export, names.ASSETS_EXTRA,
                                        "export_info.json")).read())
    assert info["jit_compile"] is True and info["length_buckets"][:3] == [16, 32, 48]


def test_xla_export_warms_up_every_length_bucket_up_to_seq_length(xla_export):
    lengths = {inputs["input_ids"].shape[-1] for signature, inputs in
               read_warmup(os.path.join(xla_export, names.ASSETS_EXTRA, names.WARMUP_FILE))
               if signature == names.SERVE_FEATURES}
    assert lengths == set(padding.length_buckets(support.SEQ))


def _precision(path):
    """(export_info's dtype_policy, the dtypes of the stored float variables, the dtypes of the
    MatMul / BatchMatMul ops) of an export."""
    info = json.loads(open(os.path.join(path, names.ASSETS_EXTRA, "export_info.json")).read())
    stored = {dtype for dtype in tf.train.load_checkpoint(
        os.path.join(path, "variables", "variables")).get_variable_to_dtype_map().values()
        if dtype.is_floating}
    return info["dtype_policy"], stored, _matmul_dtypes(path)


def test_bf16_export_computes_in_bfloat16_and_agrees_with_fp32(tmp_path, minilm_encoder,
                                                                fp32_classifier_export):
    """Real MiniLM weights: the bf16 export's pooled outputs stay within bf16 rounding of the
    float32 model's (in process, which fp32 exports serve to float rounding: see above), and
    export_info names the policy; an fp32 export (the session's) stores and multiplies
    float32."""
    assert _precision(fp32_classifier_export[0]) == ("float32", {tf.float32}, {"DT_FLOAT"})
    path = export_savedmodel(minilm_encoder, "encoder", str(tmp_path), support.vocab_file(), True,
                          128, precision="bf16", warmup=False)
    assert _precision(path) == ("bfloat16", {tf.bfloat16}, {"DT_BFLOAT16"})
    texts_a, _ = support.mrpc_pairs(8)
    out = tf.saved_model.load(path).signatures[names.SERVING_DEFAULT](
        text_a=tf.constant(texts_a))
    assert out["pooled_output"].dtype == tf.float32
    outputs = {"bf16": out["pooled_output"].numpy(),
               "fp32": support.keras_outputs(minilm_encoder, support.classifier_features(
                   texts_a, seq_length=128))["pooled_output"]}
    difference = np.abs(outputs["bf16"] - outputs["fp32"])
    assert 0 < difference.max() < 0.05          # bf16 keeps 8 bits of mantissa
    cosine = np.sum(outputs["bf16"] * outputs["fp32"], axis=1) / (
        np.linalg.norm(outputs["bf16"], axis=1) * np.linalg.norm(outputs["fp32"], axis=1))
    assert cosine.min() > 0.999


def _matmul_dtypes(path):
    """The dtypes (attribute T) of the MatMul / BatchMatMul ops in an export's functions."""
    library = graph_ops.read_saved_model(path).meta_graphs[0].graph_def.library
    return {types_pb2.DataType.Name(node.attr["T"].type) for f in library.function
            for node in f.node_def if node.op in ("MatMul", "BatchMatMulV2", "BatchMatMulV3")}


def test_export_refuses_an_unknown_precision_and_xla_for_fill_mask(tmp_path):
    model = support.build_model("fill_mask")
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16"):
        export_savedmodel(model, "fill_mask", str(tmp_path), support.vocab_file(), True, 32,
                       precision="fp16")
    with pytest.raises(ValueError, match="jit_compile is not supported for task fill_mask"):
        export_savedmodel(model, "fill_mask", str(tmp_path), support.vocab_file(), True, 32,
                       jit_compile=True)


def test_a_missing_serving_api_stops_a_job_before_training(tmp_path, monkeypatch):
    """--export_dir needs tensorflow-serving-api for the warm-up requests: the options check
    says so before any training step."""
    from bert_tf.jobs.classifier import ClassifierOptions
    for module in ("tensorflow_serving", "tensorflow_serving.apis"):
        monkeypatch.setitem(sys.modules, module, None)                 # import fails
    opts = ClassifierOptions(config=support.tiny_config(), output_dir=str(tmp_path / "out"),
                             task_name="mrpc", data_dir=str(tmp_path), do_train=True,
                             vocab_file=support.vocab_file(), export_dir=str(tmp_path / "x"))
    with pytest.raises(ValueError, match="--export_dir: .*pip install tensorflow-serving-api"):
        opts.validate_export()
