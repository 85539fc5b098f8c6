"""int8 exports (export(precision="int8")): raw text served close to the fp32 export, and the op
check that lets oneDNN's int8 matmul into int8 exports only."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from helpers import export_savedmodel
from bert_tf import names
from bert_tf.model.int8 import int8_sums_exact
from bert_tf.serving.exporter import check_compute_options
from bert_tf.tokenization import serving_ops


@pytest.fixture(scope="module")
def classifier_exports(tiny_classifier, fp32_classifier_export, tmp_path_factory):
    """{precision: path} of one tiny random MRPC classifier exported in fp32 (the session's
    export), int8 and int8_bf16."""
    root = tmp_path_factory.mktemp("int8")
    paths = {precision: export_savedmodel(tiny_classifier, "classifier", str(root / precision),
                                       support.vocab_file(), True, support.SEQ,
                                       labels=support.MRPC_LABELS, text_pair=True,
                                       precision=precision, warmup=False)
             for precision in ("int8", "int8_bf16")}
    return dict(paths, fp32=fp32_classifier_export[0])


@pytest.fixture(scope="module")
def served_logits(classifier_exports, fp32_classifier_export):
    """{precision: the logits tensor serving_default returns} for 12 raw MRPC pairs, each
    export loaded once."""
    texts_a, texts_b = support.mrpc_pairs(12)
    logits = {}
    for precision, path in classifier_exports.items():
        loaded = (fp32_classifier_export[1] if precision == "fp32"
                  else tf.saved_model.load(path))
        logits[precision] = loaded.signatures[names.SERVING_DEFAULT](
            text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))["logits"]
    return logits


def test_int8_export_serves_raw_text_close_to_the_fp32_export(served_logits):
    assert served_logits["fp32"].dtype == served_logits["int8"].dtype == tf.float32
    logits = {precision: served_logits[precision].numpy() for precision in ("fp32", "int8")}
    assert 0 < np.abs(logits["int8"] - logits["fp32"]).max() < 0.1 * np.abs(logits["fp32"]).max()
    assert np.mean(logits["int8"].argmax(1) == logits["fp32"].argmax(1)) >= 0.8


def test_int8_bf16_export_serves_close_to_the_int8_export(served_logits, classifier_exports):
    logits = {precision: served_logits[precision].numpy() for precision in ("int8", "int8_bf16")}
    difference = np.abs(logits["int8_bf16"] - logits["int8"]).max()
    assert 0 < difference < 0.1 * np.abs(logits["int8"]).max()     # measured: 0.07
    assert np.mean(logits["int8_bf16"].argmax(1) == logits["int8"].argmax(1)) >= 0.8
    info = json.loads(open(os.path.join(classifier_exports["int8_bf16"], names.ASSETS_EXTRA,
                                        names.EXPORT_INFO)).read())
    assert (info["quantized"], info["attention_dtype"]) == ("int8", "bfloat16")


def test_int8_export_stores_int8_kernels_and_names_its_server_version(classifier_exports):
    path = classifier_exports["int8"]
    stored = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    dtypes, shapes = stored.get_variable_to_dtype_map(), stored.get_variable_to_shape_map()
    matrices = [(dtypes[name], shapes[name][1]) for name in dtypes if len(shapes[name]) == 2]
    hidden = support.tiny_config().hidden_size
    # The projections' int8 kernels (query/key/value as one, attention output, intermediate and
    # output per block, pooler, classifier); the word, position and segment embedding tables
    # are the only float matrices.
    blocks = support.tiny_config().num_hidden_layers
    assert sorted(dtype.name for dtype, _ in matrices) == (
        ["float32"] * 3 + ["int8"] * (4 * blocks + 2))
    assert [width for dtype, width in matrices if dtype == tf.float32] == [hidden] * 3
    info = json.loads(open(os.path.join(path, names.ASSETS_EXTRA, names.EXPORT_INFO)).read())
    assert (info["quantized"], info["min_tf_serving_version"]) == (
        "int8", serving_ops.MIN_TF_SERVING_VERSION_INT8)
    # The weights' range, which tells on which CPUs the export computes right.
    widest = max(np.abs(stored.get_tensor(name)).max() for name in dtypes
                 if dtypes[name] == tf.int8)
    assert info["int8_weight_levels"] == widest in (63, 127)


def _export_int8(monkeypatch, model, folder, levels, text_signatures=False):
    """An int8 export of `model` with `levels`-step weights; raw text only where a test serves
    it (the load-time check does not depend on the signatures)."""
    monkeypatch.setattr("bert_tf.model.int8.weight_levels", lambda: levels)
    return export_savedmodel(model, "classifier", str(folder), support.vocab_file(), True,
                          support.SEQ, labels=support.MRPC_LABELS, text_pair=True,
                          precision="int8", warmup=False, text_signatures=text_signatures)


def test_the_load_time_check_of_8_bit_weights_passes_where_the_probe_is_exact(
        monkeypatch, tmp_path, tiny_classifier):
    """On any CPU: with a probe that reads exact, the export carrying the check loads and
    serves (the real probe is exact only on CPUs with int8 dot products)."""
    monkeypatch.setattr("bert_tf.serving.int8_check.saturation_probe",
                        lambda: tf.constant([[254.0]]))
    loaded = tf.saved_model.load(_export_int8(monkeypatch, tiny_classifier, tmp_path, 127,
                                              text_signatures=True))
    assert hasattr(loaded, "int8_check")
    texts_a, texts_b = support.mrpc_pairs(4)
    out = loaded.signatures[names.SERVING_DEFAULT](text_a=tf.constant(texts_a),
                                                   text_b=tf.constant(texts_b))
    assert out["logits"].shape == (4, 2)


def test_the_load_time_check_of_8_bit_weights_fails_where_the_probe_saturates(
        monkeypatch, tmp_path, tiny_classifier):
    """On any CPU: with a probe that reads saturated (about 2 instead of 254), both loaders
    refuse the export, naming the fix. The TF1 loader runs the SavedModel's init op, as
    tensorflow_model_server does."""
    monkeypatch.setattr("bert_tf.serving.int8_check.saturation_probe",
                        lambda: tf.constant([[2.0]]))
    path = _export_int8(monkeypatch, tiny_classifier, tmp_path, 127)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Re-export it on this CPU"):
        tf.saved_model.load(path)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session, pytest.raises(
            tf.errors.InvalidArgumentError, match="Re-export it on this CPU"):
        tf.compat.v1.saved_model.loader.load(session, ["serve"], path)


def test_an_export_with_8_bit_weights_loads_only_where_they_sum_exactly(monkeypatch, tmp_path,
                                                                        tiny_classifier):
    """8-bit weights (an export built on a CPU with int8 dot products) carry a load-time check:
    where oneDNN would saturate them, loading fails naming the fix instead of serving wrong
    answers; elsewhere the export serves as usual."""
    path = _export_int8(monkeypatch, tiny_classifier, tmp_path, 127)
    info = json.loads(open(os.path.join(path, names.ASSETS_EXTRA, names.EXPORT_INFO)).read())
    assert info["int8_weight_levels"] == 127
    if int8_sums_exact():
        assert hasattr(tf.saved_model.load(path), "int8_check")
    else:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Re-export it on this CPU"):
            tf.saved_model.load(path)


def test_an_export_with_7_bit_weights_carries_no_load_time_check(monkeypatch, tmp_path,
                                                                 tiny_classifier):
    path = _export_int8(monkeypatch, tiny_classifier, tmp_path, 63)
    assert not hasattr(tf.saved_model.load(path), "int8_check")


def test_the_op_check_accepts_the_int8_op_in_int8_exports_only(classifier_exports):
    int8_ops = serving_ops.saved_model_op_types(classifier_exports["int8"])
    assert serving_ops.non_core_ops(int8_ops) == serving_ops.TF_TEXT_OPS | serving_ops.INT8_OPS
    assert serving_ops.unsupported_serving_ops(int8_ops, int8=True) == set()
    assert serving_ops.unsupported_serving_ops(int8_ops) == serving_ops.INT8_OPS
    fp32_ops = serving_ops.saved_model_op_types(classifier_exports["fp32"])
    assert serving_ops.non_core_ops(fp32_ops) == serving_ops.TF_TEXT_OPS
    assert serving_ops.unsupported_serving_ops(
        int8_ops | {"SomeCustomOp"}, int8=True) == {"SomeCustomOp"}


def test_int8_does_not_combine_with_xla():
    with pytest.raises(ValueError, match="--export_jit_compile does not combine with "
                                         "--export_precision int8"):
        check_compute_options("classifier", "int8", True,
                              ("--export_precision", "--export_jit_compile"))
