"""int8 projections (bert_tf.model.int8): the weight quantization, the layer against a float
Dense, and a model whose every Dense computes in int8 while the rest stays float32. The int8
kernel runs in graphs only, so every comparison calls through tf.function."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from bert_tf.model.activations import get_activation
from bert_tf.model.int8 import (INT8_DOT_FLAGS, SMALL_LAYER_NORM, FusedLayerNorm, Int8Dense,
                                _gelu_erf, int8_model, int8_sums_exact, quantize_kernel,
                                saturation_probe, weight_levels)
from bert_tf.model.attention import attention_bias
from bert_tf.cpu_features import cpu_flags
from bert_tf.model.recompute import attention_probs
from bert_tf.model.transformer import TransformerBlock


def test_weights_take_7_bits_where_the_int8_kernel_saturates_8_bit_ones(monkeypatch):
    """Without int8 dot products, oneDNN sums pairs of u8 x s8 products in int16: +-63 weights
    cannot saturate it (2 x 255 x 63 < 2^15), +-127 ones can."""
    for exact, levels in ((False, 63), (True, 127)):
        monkeypatch.setattr("bert_tf.model.int8.int8_sums_exact", lambda exact=exact: exact)
        weight_levels.cache_clear()
        assert weight_levels() == levels
        layer = Int8Dense.from_kernel(np.linspace(-1, 1, 12).reshape(4, 3), np.zeros(3))
        assert np.abs(layer.kernel.numpy()).max() == levels
    weight_levels.cache_clear()


@pytest.mark.skipif("ONEDNN_MAX_CPU_ISA" in os.environ,
                    reason="ONEDNN_MAX_CPU_ISA may hide the CPU's int8 dot products from oneDNN")
def test_the_saturation_probe_finds_exact_sums_on_cpus_with_int8_dot_products():
    """The probe measures what /proc/cpuinfo implies: exact int32 sums with AVX-512 VNNI,
    AVX-VNNI or AMX; saturating int16 pair sums without (measured: 2.0 instead of 254 on an
    AVX2-only EPYC)."""
    probe = tf.function(saturation_probe)().numpy()
    has_dot_products = bool(cpu_flags() & set(INT8_DOT_FLAGS))
    assert int8_sums_exact() == has_dot_products
    if has_dot_products:
        assert abs(probe.item() - 254.0) < 0.5
    else:
        assert probe.item() < 10


def test_int8_dense_is_exact_to_its_steps_with_7_bit_weights_on_any_cpu(monkeypatch):
    monkeypatch.setattr("bert_tf.model.int8.weight_levels", lambda: 63)
    dense, layer = _float_and_int8_dense(None)
    x = tf.constant(np.random.default_rng(2).normal(size=(3, 5, 32)), tf.float32)
    want, got = tf.function(dense)(x).numpy(), tf.function(layer)(x).numpy()
    np.testing.assert_allclose(got, want, atol=0.02 * np.abs(want).max())


def test_quantized_kernel_is_within_half_a_step_of_each_columns_scale():
    rng = np.random.default_rng(0)
    columns = np.array([1.0, 1e-3, 50.0], np.float32)                   # very different sizes
    kernel = rng.normal(size=(64, 3)).astype(np.float32) * columns
    quantized, scales = quantize_kernel(kernel)
    assert quantized.dtype == np.int8 and scales.shape == (3,)
    assert np.abs(quantized).max(axis=0).tolist() == [127, 127, 127]    # each column its own
    assert (np.abs(quantized * scales - kernel) <= scales / 2 * 1.0001).all()


def test_an_all_zero_column_quantizes_to_zeros():
    quantized, scales = quantize_kernel(np.zeros((4, 2), np.float32))
    assert not quantized.any() and (scales > 0).all()


def _float_and_int8_dense(activation):
    keras.utils.set_random_seed(1)
    dense = keras.layers.Dense(48, activation=get_activation(activation) if activation else None)
    dense.build((None, 32))
    dense.bias.assign(np.linspace(-1, 1, 48).astype(np.float32))
    return dense, Int8Dense.from_dense(dense)


@pytest.mark.parametrize("activation", [None, "tanh", "gelu"])
def test_int8_dense_computes_what_the_float_dense_computes(activation):
    dense, layer = _float_and_int8_dense(activation)
    x = tf.constant(np.random.default_rng(2).normal(size=(3, 5, 32)), tf.float32)
    want, got = tf.function(dense)(x).numpy(), tf.function(layer)(x).numpy()
    assert got.shape == (3, 5, 48)
    before_activation = x.numpy() @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(got, want, atol=0.02 * np.abs(before_activation).max())
    assert layer.activation == activation


def test_int8_gelu_written_with_erf_equals_the_models_gelu():
    x = tf.constant(np.linspace(-8, 8, 4001), tf.float32)
    np.testing.assert_allclose(_gelu_erf(x).numpy(), get_activation("gelu")(x).numpy(),
                               rtol=0, atol=1e-6)


def test_a_rows_int8_result_does_not_depend_on_the_rows_batched_with_it():
    _, layer = _float_and_int8_dense(None)
    row = np.random.default_rng(3).normal(size=(1, 32)).astype(np.float32)
    loud = 100.0 * np.random.default_rng(4).normal(size=(7, 32)).astype(np.float32)
    call = tf.function(layer)
    alone = call(tf.constant(row)).numpy()
    batched = call(tf.constant(np.concatenate([row, loud]))).numpy()[:1]
    np.testing.assert_array_equal(batched, alone)


def test_int8_dense_config_rebuilds_the_layer():
    _, layer = _float_and_int8_dense("tanh")
    copy = Int8Dense.from_config(layer.get_config())
    assert (copy.units, copy.activation, copy.name) == (48, "tanh", layer.name)


def test_int8_dense_refuses_eager_calls():
    _, layer = _float_and_int8_dense(None)
    with pytest.raises(RuntimeError, match="inside tf.function or a SavedModel only"):
        layer(tf.ones((2, 32)))


@pytest.mark.parametrize("shape", [(2, 7, 32), (2, SMALL_LAYER_NORM // 64 + 1, 32)],
                         ids=["small: plain ops", "large: oneDNN's kernel"])
def test_fused_layer_norm_computes_what_keras_layer_norm_computes(shape):
    keras.utils.set_random_seed(5)
    norm = keras.layers.LayerNormalization(epsilon=1e-12)
    norm.build((None, None, 32))
    norm.gamma.assign(np.linspace(0.5, 2.0, 32).astype(np.float32))
    norm.beta.assign(np.linspace(-1.0, 1.0, 32).astype(np.float32))
    fused = FusedLayerNorm.from_layer_norm(norm)
    x = tf.constant(3.0 + 5.0 * np.random.default_rng(6).normal(size=shape), tf.float32)
    got = tf.function(fused)(x)
    assert got.shape == shape
    np.testing.assert_allclose(got, tf.function(norm)(x), atol=1e-5)
    assert FusedLayerNorm.from_config(fused.get_config()).epsilon == 1e-12


def test_only_last_axis_layer_norms_with_scale_and_offset_fuse():
    norm = keras.layers.LayerNormalization(center=False)
    norm.build((None, 8))
    with pytest.raises(ValueError, match="only last-axis LayerNorms with scale and offset"):
        FusedLayerNorm.from_layer_norm(norm)


@pytest.fixture
def model(tiny_classifier):
    """The session's tiny random MRPC classifier (test_serving_support.build_model); int8_model
    leaves it as it was, so every test may read it."""
    return tiny_classifier


def _layers(model, kind):
    return [layer for layer in model._flatten_layers() if isinstance(layer, kind)]


def test_every_dense_projection_becomes_int8_and_nothing_else_changes(model):
    quantized = int8_model(model)
    blocks = model.config.num_hidden_layers
    # q, k and v as one; attention output, intermediate, output per block; the pooler; the
    # classifier.
    assert len(_layers(quantized, Int8Dense)) == 4 * blocks + 2
    assert _layers(quantized, keras.layers.Dense) == []
    assert len(_layers(model, keras.layers.Dense)) == 6 * blocks + 2      # model untouched
    assert _layers(quantized, keras.layers.LayerNormalization) == []
    norms = _layers(quantized, FusedLayerNorm)
    assert len(norms) == len(_layers(model, keras.layers.LayerNormalization)) == 2 * blocks + 1
    int8 = [w for w in quantized.weights if w.dtype == "int8"]
    assert len(int8) == 4 * blocks + 2
    hidden = model.config.hidden_size
    assert {tuple(w.shape) for w in int8 if "query_key_value" in w.path} == {(hidden, 3 * hidden)}
    float_weights = {w.path for w in quantized.weights if w.dtype == "float32"}
    assert not any(path.endswith("/kernel") for path in float_weights)    # no float copy kept
    embeddings = quantized.encoder.word_embeddings
    assert embeddings.dtype == "float32"
    np.testing.assert_array_equal(embeddings.numpy(), model.encoder.word_embeddings.numpy())


def test_int8_classifier_logits_stay_close_to_the_float_models(model):
    features = support.classifier_features(*support.mrpc_pairs(24))
    want = support.keras_outputs(model, features, graph=True)["logits"]
    got = support.keras_outputs(int8_model(model), features, graph=True)["logits"]
    # 10% with 8-bit weights; the error grows with the weights' step (7 bits without VNNI).
    assert np.abs(got - want).max() < 0.1 * 127 / weight_levels() * np.abs(want).max()
    assert np.mean(got.argmax(axis=1) == want.argmax(axis=1)) >= 0.8


def test_int8_copies_compute_the_exact_gelu_with_erf_not_erfc(model):
    """Float exports fuse tf.nn.gelu into oneDNN's matmul; int8 ones apply it on their own,
    where its Erfc kernel costs twice Erf's."""
    assert model.config.hidden_act == "gelu"
    copy = int8_model(model)
    features = {k: tf.constant(v) for k, v in
                support.classifier_features(*support.mrpc_pairs(2)).items()}
    graph = tf.function(lambda f: copy(f, training=False)).get_concrete_function(features).graph
    types = {op.type for op in graph.get_operations()}
    assert "Erf" in types and "Erfc" not in types


def test_the_folded_gelu_feed_forward_computes_what_int8_layers_with_gelu_compute(model):
    """_fold_gelu_constants moves GELU's constants into the projections' scales: the int8
    block's feed-forward equals the plain one (Int8Dense, GELU, Int8Dense) up to float
    rounding, and its int8 kernels are the plain ones up to one step, rarely."""
    block = _layers(model, TransformerBlock)[0]
    folded = _layers(int8_model(model), TransformerBlock)[0]
    assert folded.intermediate_activation is not _gelu_erf
    inner = Int8Dense.from_dense(block.intermediate)
    outer = Int8Dense.from_dense(block.output_dense)
    for plain, new in ((inner, folded.intermediate), (outer, folded.output_dense)):
        steps = np.abs(plain.kernel.numpy().astype(int) - new.kernel.numpy().astype(int))
        assert steps.max() <= 1 and steps.mean() < 1e-3
    x = tf.constant(np.random.default_rng(5).normal(size=(40, block.hidden_size)), tf.float32)
    want = tf.function(lambda x: outer(_gelu_erf(inner(x))))(x).numpy()
    got = tf.function(lambda x: folded.output_dense(
        folded.intermediate_activation(folded.intermediate(x))))(x).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def _op_dtypes(model):
    """{op type: the dtypes (attribute T) of its ops} of attention's matmuls and softmax in
    the graph of `model` on two MRPC pairs."""
    features = {k: tf.constant(v) for k, v in
                support.classifier_features(*support.mrpc_pairs(2)).items()}
    graph = tf.function(lambda f: model(f, training=False)).get_concrete_function(features).graph
    return {op_type: {op.get_attr("T").name for op in graph.get_operations()
                      if op.type == op_type} for op_type in ("BatchMatMulV2", "Softmax")}


def test_an_int8_copy_runs_attention_in_bfloat16_when_asked(model):
    assert _op_dtypes(int8_model(model)) == {"BatchMatMulV2": {"float32"},
                                             "Softmax": {"float32"}}
    assert _op_dtypes(int8_model(model, attention_dtype="bfloat16")) == {
        "BatchMatMulV2": {"bfloat16"}, "Softmax": {"bfloat16"}}


def test_a_bfloat16_softmax_gives_what_a_float32_softmax_between_casts_gives():
    """int8_bf16 copies hand bf16 scores to oneDNN's bf16 softmax, which computes in float32
    inside and rounds once: on CPUs with AVX512_BF16 or AMX, the probabilities of casting
    around a float32 softmax, bit for bit, with two passes over the [B, N, S, S] scores fewer;
    elsewhere (TensorFlow's own kernel) within a bfloat16 step of them."""
    rng = np.random.default_rng(6)
    q, k = (tf.constant(3 * rng.normal(size=(2, 3, 9, 8)), tf.bfloat16) for _ in range(2))
    mask = np.ones((2, 9), np.float32)
    mask[1, 5:] = 0
    bias = attention_bias(mask, "float32")
    probs = tf.function(lambda dtype: attention_probs(q, k, bias, softmax_dtype=dtype))
    want, got = probs("float32"), probs("bfloat16")
    assert got.dtype == want.dtype == tf.bfloat16
    exact = bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})
    np.testing.assert_allclose(tf.cast(got, tf.float32).numpy(),
                               tf.cast(want, tf.float32).numpy(), rtol=0,
                               atol=0 if exact else 2.0 ** -8)


def _cosines(a, b):
    return np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def test_int8_encoder_with_real_weights_keeps_the_embeddings_direction(minilm_encoder):
    """all-MiniLM-L6-v2 on MRPC sentences: the int8 encoder's mean-pooled token vectors (the
    model's sentence embedding) point where float32's do. Measured 0.976-0.989: the loss is the
    one activation scale per tensor (the same rounding simulated in float32 gives the same
    cosines; int8 weights alone keep 0.999)."""
    features = support.classifier_features(support.mrpc_pairs(8)[0], seq_length=64)
    mask = features["input_mask"][..., None]

    def embeddings(model):
        tokens = support.keras_outputs(model, features, graph=True)["sequence_output"]
        return (tokens * mask).sum(axis=1) / mask.sum(axis=1)

    cosines = _cosines(embeddings(int8_model(minilm_encoder)), embeddings(minilm_encoder))
    assert cosines.min() > 0.97
