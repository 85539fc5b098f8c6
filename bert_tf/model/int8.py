"""int8 projections for serving on x86-64 CPUs: weights stored as int8 with one scale per output
channel, activations quantized per row (token) at run time, both multiplied by oneDNN's int8
kernel.

The kernel is TensorFlow's `_QuantizedMatMul`, an internal op (not in tf.raw_ops) that the
x86-64 Linux builds of TensorFlow (2.17 and later) register from oneDNN: int8 x int8 dot
products (AVX-512 VNNI) with the bias add and the dequantization to float32 fused in. Measured
on a 2-layer encoder it ran 2.5x float32 at batch 32, where Keras' `quantize("int8")` (a generic
int8 BatchMatMul) ran 3.5x slower than float32. Only the Dense projections change: embeddings,
LayerNorm (one oneDNN kernel, `_MklLayerNorm`), the attention softmax and its score/value
matmuls, and activation functions stay float32. Exports using it need tensorflow_model_server
>= MIN_TF_SERVING_VERSION_INT8 (see bert_tf.tokenization.serving_ops).

The op runs in graphs only (tf.function, SavedModels), where each layer has its own kernel
(is_weight_const lets it keep its reordered weights); eager calls share cached kernels between
layers and gave wrong results.

On x86-64 CPUs without int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI or AMX; e.g. an
AVX2-only EPYC), oneDNN sums each pair of u8 x s8 products in int16, which saturates for
weights beyond +-63 (errors of 0.7 on outputs of magnitude 3 were measured): there the weights
are quantized to 7 bits (+-63), which no CPU overflows, at twice the step. Which kind of CPU
this is, is measured rather than read from its flags (int8_sums_exact: ONEDNN_MAX_CPU_ISA can
hide VNNI from oneDNN). The choice is made where the int8 copy is built; an export with 8-bit
weights carries a check that fails its loading on a CPU that would saturate them
(bert_tf.serving.int8_check).
"""

import functools
import logging

import keras
import numpy as np
import tensorflow as tf
from keras import ops
from tensorflow.python.framework import op_def_library

from bert_tf.cpu_features import cpu_flags
from bert_tf.model.activations import activation_name, get_activation
from bert_tf.model.attention import SelfAttention
from bert_tf.model.precision import with_dtype_policy
from bert_tf.model.transformer import TransformerBlock

QUANTIZED_MATMUL = "_QuantizedMatMul"
LAYER_NORM = "_MklLayerNorm"                 # oneDNN's LayerNorm, registered beside it
# Below this many elements FusedLayerNorm uses plain ops: oneDNN's kernel costs about 110 us
# per call whatever its size, plain ops 37 us on [53, 384] (one request) but 1 ms on [1700, 384].
SMALL_LAYER_NORM = 65536
_SMALLEST_RANGE = 1e-8                        # an all-zero column or input still has a scale
INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")      # /proc/cpuinfo's names

logger = logging.getLogger("bert_tf")


# Two private APIs, for which TensorFlow and Keras have no public counterpart. An upgrade that
# removes them fails here with the message below, and in tests/test_int8_private_apis.py.
def internal_op(op_type, name, **inputs_and_attrs):
    """The first output of a new `op_type` op in the current graph. `_QuantizedMatMul` and
    `_MklLayerNorm` are registered by TensorFlow's x86-64 builds but not listed in tf.raw_ops,
    so TensorFlow's private op_def_library._apply_op_helper is the only way to add them."""
    apply_op = getattr(op_def_library, "_apply_op_helper", None)
    if apply_op is None:
        raise RuntimeError(
            f"int8 exports build {op_type} with TensorFlow's private "
            "op_def_library._apply_op_helper, which TensorFlow "
            f"{tf.__version__} no longer has: export with --precision=fp32 or bf16, or use "
            "the TensorFlow version of requirements.txt")
    _, _, op, _ = apply_op(op_type, name=name, **inputs_and_attrs)
    return op.outputs[0]


def layer_tracker(layer):
    """`layer`'s private Keras tracker of sublayers and weights: Keras 3 has no public way to
    replace or drop a tracked sublayer, and without that the replaced float layers' weights
    would stay in the model and in its checkpoints."""
    tracker = getattr(layer, "_tracker", None)
    if not all(hasattr(tracker, m) for m in ("replace_tracked_value", "untrack")):
        raise RuntimeError(
            f"int8 exports replace {layer.name}'s Dense layers through Keras' private "
            "Layer._tracker (replace_tracked_value, untrack), which Keras "
            f"{keras.__version__} no longer has: export with --precision=fp32 or bf16, or use "
            "the Keras version of requirements.txt")
    return tracker


def saturation_probe():
    """[1, 1] float32: a row of two ones times a column of two int8 127s, through the serving
    projection (_int8_matmul): 254 where oneDNN's int8 kernel sums exactly, about 2 where it
    adds the pair of products in int16 (2 x 255 x 127 > 2^15). Graphs only."""
    return _int8_matmul(tf.ones([1, 2]), tf.fill([2, 1], tf.constant(127, tf.int8)),
                        tf.constant([127.0]), tf.zeros([1]))


def probe_is_exact(probe):
    """Scalar bool tensor: saturation_probe()'s result is the exact 254."""
    return tf.reduce_all(tf.abs(probe - 254.0) < 0.5)


@functools.cache
def int8_sums_exact():
    """Whether oneDNN's int8 matmul sums 8-bit weights exactly on this CPU (it has int8 dot
    products: AVX-512 VNNI, AVX-VNNI or AMX, and oneDNN may use them), measured by running
    saturation_probe once."""
    return bool(tf.function(lambda: probe_is_exact(saturation_probe()), autograph=False)())


@functools.cache
def weight_levels():
    """127 (8-bit weights) where int8_sums_exact(), else 63 (7 bits, which oneDNN's int16 pair
    sums hold without saturating)."""
    if int8_sums_exact():
        return 127
    why = ("ONEDNN_MAX_CPU_ISA keeps oneDNN from this CPU's int8 dot products"
           if cpu_flags() & set(INT8_DOT_FLAGS) else
           "this CPU has no int8 dot products: " + ", ".join(INT8_DOT_FLAGS))
    logger.warning("int8: oneDNN's int8 matmul saturates 8-bit weights here (%s); quantizing "
                   "weights to 7 bits (+-63)", why)
    return 63


def quantize_kernel(kernel, levels=127):
    """float [K, N] -> (int8 [K, N], float32 scales [N]) with kernel ~ int8 * scales: each
    output column symmetric in [-levels, levels] of its own largest magnitude (per-channel
    scales keep a column of small weights from losing its precision to a column of large
    ones)."""
    kernel = np.asarray(kernel, np.float32)
    if kernel.ndim != 2:
        raise ValueError(f"quantize_kernel takes a [K, N] kernel, got shape {kernel.shape}")
    scales = np.maximum(np.abs(kernel).max(axis=0), _SMALLEST_RANGE) / levels
    quantized = np.clip(np.round(kernel / scales), -levels, levels).astype(np.int8)
    return quantized, scales.astype(np.float32)


def _quantize_rows(x):
    """float32 [M, K] -> (qint8 [M, K], float32 [M, 1] largest magnitudes) with
    x ~ int8 / 127 * largest: each row (one token) symmetric in [-127, 127] of its own largest
    magnitude, at run time. Per row, a request's result does not depend on the requests
    batched with it, and one token with large activations (after GELU, say) costs no other
    token its precision."""
    largest = tf.maximum(tf.reduce_max(tf.abs(x), axis=-1, keepdims=True), _SMALLEST_RANGE)
    # |x| * (127 / largest) <= 127 up to rounding, so no clip is needed (it cost a pass).
    quantized = tf.cast(tf.round(x * (127.0 / largest)), tf.int8)
    return tf.bitcast(quantized, tf.qint8), largest


def _gelu_erf(x):
    """Exact GELU written with erf, 0.5 x (1 + erf(x / sqrt 2)): the same values as
    get_activation("gelu") (within 5e-7) at half its cost, TF's Erf kernel being vectorized
    and the Erfc that tf.nn.gelu calls not (4.0 against 7.8 ms on [1700, 1536], one thread).
    Float exports fuse GELU into oneDNN's matmul; int8 projections apply it on their own."""
    return 0.5 * x * (1.0 + tf.math.erf(x * 0.7071067811865476))


def _serving_activation(name):
    """The function of activation `name` (bert_tf.model.activations) in int8 copies: the same,
    but the exact GELU written with erf."""
    return _gelu_erf if name == "gelu" else get_activation(name)


def _scaled_gelu(u):
    """u (1 + erf(u)) = sqrt 2 * GELU(u sqrt 2), two elementwise passes fewer than GELU
    itself: the int8 feed-forward (_fold_gelu_constants) feeds it u = x / sqrt 2 and takes
    the sqrt 2 back in the next projection's scales."""
    return u * (1.0 + tf.math.erf(u))


def _int8_matmul(x, kernel, kernel_max, bias):
    """float32 [M, K] @ (int8 [K, N] scaled to +-kernel_max [N]) + bias [N] -> float32 [M, N].
    The kernel multiplies the int8 rows (input range +-1: scale 1/127) and applies the kernel's
    scales; each row's largest magnitude and the bias follow in float32. Every op here counts:
    at a batch of one, the graph's many small ops cost as much as its matmuls."""
    if tf.executing_eagerly():
        raise RuntimeError("int8 layers run inside tf.function or a SavedModel only: eagerly, "
                           "oneDNN's int8 matmul shares its cached kernels between calls and "
                           "can return wrong results")
    xq, x_largest = _quantize_rows(x)
    zero_bias = tf.zeros(bias.shape, tf.float32)                        # a constant
    inputs = [xq, tf.bitcast(kernel, tf.qint8), zero_bias, tf.constant(-1.0),
              tf.constant(1.0), -kernel_max, kernel_max]
    product = internal_op(
        QUANTIZED_MATMUL, name="int8_matmul", device_inputs=inputs, host_inputs=[],
        Tdevice_outputs=[tf.float32], Thost_outputs=[], T1=tf.qint8, T2=tf.qint8,
        Tbias=tf.float32, Tout=tf.float32, U=tf.float32, fused_ops=["BiasAdd", "Dequantize"],
        input_quant_mode="SCALED", output_quant_mode="SCALED", is_weight_const=True,
        is_bias_const=True, transpose_a=False, transpose_b=False,
        leakyrelu_alpha=0.2)                 # required by the op, unused without LeakyRelu
    return product * x_largest + bias


@keras.saving.register_keras_serializable(package="bert_tf")
class Int8Dense(keras.layers.Layer):
    """y = activation(x @ kernel + bias) for float32 x [..., K], with an int8 kernel [K, N] and
    per-output-channel float32 `kernel_max` [N] (the float value of int8 127 in each column;
    the weights span +-weight_levels()); the stand-in for a float Dense at serving.

    Args:
      units: N.
      activation: None or a name of bert_tf.model.activations, applied in float32 after the
        matmul.
    """

    def __init__(self, units, activation=None, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.activation = activation
        self._activation_fn = _serving_activation(activation) if activation else None

    def build(self, input_shape):
        depth = input_shape[-1]
        self.kernel = self.add_weight(name="kernel", shape=(depth, self.units), dtype="int8",
                                      initializer="zeros", trainable=False)
        self.kernel_max = self.add_weight(name="kernel_max", shape=(self.units,),
                                          dtype="float32", initializer="ones", trainable=False)
        self.bias = self.add_weight(name="bias", shape=(self.units,), dtype="float32",
                                    initializer="zeros", trainable=False)
        self.built = True

    @classmethod
    def from_dense(cls, dense):
        """An Int8Dense computing what the built float keras.layers.Dense `dense` computes."""
        bias = dense.bias if dense.use_bias else np.zeros(dense.kernel.shape[1], np.float32)
        return cls.from_kernel(dense.kernel, bias, activation_name(dense.activation),
                               name=dense.name)

    @classmethod
    def from_kernel(cls, kernel, bias, activation=None, name=None):
        """An Int8Dense computing activation(x @ kernel + bias) for float `kernel` [K, N]."""
        kernel = keras.ops.convert_to_numpy(kernel).astype(np.float32)
        layer = cls(kernel.shape[1], activation, name=name)
        layer.build(kernel.shape[:1])
        kernel, scale = quantize_kernel(kernel, weight_levels())
        layer.kernel.assign(kernel)
        layer.kernel_max.assign(scale * 127.0)
        layer.bias.assign(keras.ops.convert_to_numpy(bias).astype(np.float32))
        return layer

    def call(self, x):
        x = tf.cast(x, tf.float32)
        if x.shape.rank == 2:                 # [T, K]: packed tokens, no reshapes needed
            y = _int8_matmul(x, self.kernel.value, self.kernel_max.value, self.bias.value)
        else:
            shape = tf.shape(x)
            y = _int8_matmul(tf.reshape(x, [-1, shape[-1]]), self.kernel.value,
                             self.kernel_max.value, self.bias.value)
            y = tf.reshape(y, tf.concat([shape[:-1], [self.units]], axis=0))
        return self._activation_fn(y) if self._activation_fn else y

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, activation=self.activation)
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class FusedLayerNorm(keras.layers.Layer):
    """LayerNorm over the last axis in float32, as one oneDNN kernel (`_MklLayerNorm`) instead
    of Keras' eight or so elementwise ops when the input has SMALL_LAYER_NORM elements or more
    (4x faster on [2000, 768]), and as those ops below it, where the kernel's fixed cost per
    call dominates (3x faster on one request of 53 tokens). The stand-in for
    keras.layers.LayerNormalization (last axis, with scale and offset) in int8 serving copies,
    whose servers have the op anyway."""

    def __init__(self, epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def build(self, input_shape):
        depth = input_shape[-1]
        self.gamma = self.add_weight(name="gamma", shape=(depth,), dtype="float32",
                                     initializer="ones", trainable=False)
        self.beta = self.add_weight(name="beta", shape=(depth,), dtype="float32",
                                    initializer="zeros", trainable=False)
        self.built = True

    @classmethod
    def from_layer_norm(cls, norm):
        """A FusedLayerNorm computing what the built keras LayerNormalization `norm` does."""
        if not (norm.center and norm.scale and list(np.atleast_1d(norm.axis)) == [-1]):
            raise ValueError(f"{norm.name}: only last-axis LayerNorms with scale and offset fuse")
        layer = cls(norm.epsilon, name=norm.name)
        layer.build(tuple(norm.gamma.shape))
        layer.gamma.assign(keras.ops.convert_to_numpy(norm.gamma).astype(np.float32))
        layer.beta.assign(keras.ops.convert_to_numpy(norm.beta).astype(np.float32))
        return layer

    def call(self, x):
        x = tf.cast(x, tf.float32)
        gamma, beta = self.gamma.value, self.beta.value

        def one_kernel():
            rows = x if x.shape.rank == 2 else tf.reshape(x, [-1, tf.shape(x)[-1]])
            y = internal_op(LAYER_NORM, name="layer_norm", x=rows, scale=gamma, offset=beta,
                            epsilon=self.epsilon)
            return y if x.shape.rank == 2 else tf.reshape(y, tf.shape(x))

        def plain_ops():
            mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
            return (x - mean) * (tf.math.rsqrt(variance + self.epsilon) * gamma) + beta

        y = tf.cond(tf.size(x) >= SMALL_LAYER_NORM, one_kernel, plain_ops)
        y.set_shape(x.shape)
        return y

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(epsilon=self.epsilon)
        return config


def int8_model(model, skip_padding=None, attention_dtype=None):
    """A float32 copy of bert_tf `model` (BertEncoder or task model) whose every Dense layer
    (the attention-output, intermediate and output projections of each Transformer block, the
    pooler and the heads) is an Int8Dense, each block's query, key and value one fused
    Int8Dense, every LayerNorm a FusedLayerNorm and every exact GELU written with erf (in a
    block's feed-forward, folded into its projections: _fold_gelu_constants);
    `model` is left as it is.
    For serving: the copy runs in tf.function/SavedModel graphs only and cannot be trained.
    `skip_padding`: the copy's encoder option (None: as `model`'s). `attention_dtype`:
    "bfloat16" runs each attention's score and value matmuls in bfloat16 (softmax stays
    float32; faster on CPUs with AVX512_BF16 or AMX), None in float32."""
    copy = with_dtype_policy(model, "float32", skip_padding=skip_padding)
    for block in [p for p in _layers_of(copy) if isinstance(p, TransformerBlock)]:
        _replace_sublayer(block, "attention",
                          Int8SelfAttention.from_attention(block.attention, attention_dtype))
    parents = _layers_of(copy)
    for block in [p for p in parents if isinstance(p, TransformerBlock)]:
        if block.activation == "gelu":
            _fold_gelu_constants(block)
        else:
            block.intermediate_activation = _serving_activation(block.activation)
    for parent in parents:
        for attribute, child in list(vars(parent).items()):
            if isinstance(child, keras.layers.Dense):
                _replace_sublayer(parent, attribute, Int8Dense.from_dense(child))
    return replace_layer_norms(copy, FusedLayerNorm)


def _fold_gelu_constants(block):
    """Replaces the float intermediate and output projections of TransformerBlock `block`
    (exact GELU) by Int8Dense layers that compute the same feed-forward with fewer passes over
    its [tokens, intermediate_size] activations: the intermediate projection's kernel and bias
    are divided by sqrt 2 (so GELU's inner x / sqrt 2 costs nothing), the activation is
    _scaled_gelu (without GELU's factor 1/2), and the output projection's kernel is divided by
    sqrt 2 to give back what _scaled_gelu added. Each column's scale and each row's run-time
    scale absorb these constant factors, so the int8 values stay the same up to float
    rounding (on [1700, 1536] activations, 4 of 2.6 million moved by one step). It cuts the
    elementwise work between the two int8 matmuls by about a quarter."""
    numpy = keras.ops.convert_to_numpy
    inner, outer = block.intermediate, block.output_dense
    if inner.activation is not keras.activations.linear or not (inner.use_bias and
                                                                outer.use_bias):
        raise ValueError(f"{block.name}: the GELU fold needs linear projections with biases")
    root2 = np.float32(np.sqrt(2.0))
    _replace_sublayer(block, "intermediate", Int8Dense.from_kernel(
        numpy(inner.kernel).astype(np.float32) / root2,
        numpy(inner.bias).astype(np.float32) / root2, name=inner.name))
    _replace_sublayer(block, "output_dense", Int8Dense.from_kernel(
        numpy(outer.kernel).astype(np.float32) / root2,
        numpy(outer.bias).astype(np.float32), name=outer.name))
    block.intermediate_activation = _scaled_gelu


class Int8SelfAttention(SelfAttention):
    """SelfAttention of int8 serving copies: query, key and value are one Int8Dense computing
    [q / sqrt(head_size) | k | v] (one int8 matmul of [S, H] x [H, 3H] costs less than three
    of [S, H] x [H, H], each having a fixed cost, and the query's scale rides in its columns'
    own int8 scales for free). With `attention_dtype` bfloat16 the score and value matmuls run
    in bfloat16 and hand their scores to oneDNN's bfloat16 softmax, which computes in float32
    inside and rounds once: the values of casting around a float32 softmax, two passes fewer
    (x86-64 with oneDNN only). Graphs only, like Int8Dense."""

    def __init__(self, hidden_size, num_heads, attention_dtype=None, **kwargs):
        super().__init__(hidden_size, num_heads, **kwargs)
        self.attention_dtype = attention_dtype
        self.softmax_dtype = attention_dtype or "float32"

    def make_projections(self):
        self.query_key_value = None               # from_attention sets the built Int8Dense

    def build(self, input_shape):
        self.built = True

    @classmethod
    def from_attention(cls, attention, attention_dtype=None):
        """The int8 counterpart of float SelfAttention `attention` (its weights, name)."""
        denses = (attention.query, attention.key, attention.value)
        if any(d.activation is not keras.activations.linear or not d.use_bias for d in denses):
            raise ValueError(f"{attention.name}: query, key and value fuse only as linear "
                             "Dense layers with biases")
        scale = 1.0 / np.sqrt(attention.head_size)
        kernel = np.concatenate([keras.ops.convert_to_numpy(d.kernel) for d in denses], axis=1)
        bias = np.concatenate([keras.ops.convert_to_numpy(d.bias) for d in denses])
        kernel, bias = kernel.astype(np.float32), bias.astype(np.float32)
        kernel[:, :attention.hidden_size] *= scale
        bias[:attention.hidden_size] *= scale
        layer = cls(attention.hidden_size, attention.num_heads, attention_dtype,
                    initializer_range=attention.initializer_range,
                    dropout_rate=attention.dropout_rate, name=attention.name, dtype="float32")
        layer.query_key_value = Int8Dense.from_kernel(kernel, bias, name="query_key_value")
        layer.built = True
        return layer

    def heads(self, x, layout):
        qkv = self.query_key_value(x)
        qkv = qkv if self.attention_dtype is None else ops.cast(qkv, self.attention_dtype)
        qkv = qkv if layout is None else layout.to_padded(qkv)                    # [B, S, 3H]
        batch, seq = ops.shape(qkv)[0], ops.shape(qkv)[1]
        qkv = ops.reshape(qkv, (batch, seq, 3, self.num_heads, self.head_size))
        return ops.unstack(ops.transpose(qkv, (2, 0, 3, 1, 4)), 3)             # [B, N, S, D]

    def get_config(self):
        config = super().get_config()
        config.update(attention_dtype=self.attention_dtype)
        return config


def _layers_of(model):
    return [model] + list(model._flatten_layers(include_self=False, recursive=True))


def replace_layer_norms(model, norm_class):
    """Rewrites `model` (a serving copy) in place: every keras LayerNormalization in it a
    `norm_class` (a FusedLayerNorm subclass) with the same weights; returns `model`."""
    for parent in _layers_of(model):
        for attribute, child in list(vars(parent).items()):
            if isinstance(child, keras.layers.LayerNormalization):
                _replace_sublayer(parent, attribute, norm_class.from_layer_norm(child))
    return model


def _replace_sublayer(parent, attribute, layer):
    """parent.<attribute> = layer, the old layer's place among parent's tracked layers given to
    the new one (else the old float weights would stay in the model's weights and be saved)."""
    layer_tracker(parent).replace_tracked_value("layers", getattr(parent, attribute), layer)
    setattr(parent, attribute, layer)
