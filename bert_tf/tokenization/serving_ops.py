"""Which ops the in-graph tokenization needs from a model server.

Stock tensorflow_model_server links TensorFlow Text's `ops_lib`; TF Serving 2.12 and later pin
TensorFlow Text 2.12.1 (tensorflow/serving WORKSPACE), whose ops_lib holds both ops below
(FastWordpiece/FastBertNormalize ops were missing in TF Serving 2.10 and added to the server
around 2.11, tensorflow/serving#2064). Our layers use core TensorFlow ops plus these two only.
They avoid what stock servers lack: tensorflow-text's trimmers (TF Text 2.16+ emits
"TFText>RoundRobinTrim", unknown to TF Serving's TF Text 2.12.1) are replaced by core-op
packing, and FastBertNormalize is not needed (its ICU case folding is not google-research's
lower casing anyway).
"""

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

# TensorFlow Text ops the layers rely on (all in TF Text 2.12.1's ops_lib, i.e. in TF Serving
# 2.12+). Anything else in an exported graph must be a core TensorFlow op.
TF_TEXT_OPS = frozenset({"FastWordpieceTokenizeWithOffsets", "RegexSplitWithOffsets"})
MIN_TF_SERVING_VERSION = "2.12"

# What int8 exports (bert_tf.model.int8) add: oneDNN's int8 matmul, an internal op of TensorFlow
# (hence not in tf.raw_ops) that its x86-64 Linux builds register, in the form our graphs use
# (per-channel weight scales, fused bias and dequantization) since TensorFlow 2.17
# (tensorflow/tensorflow#66087): such exports need an x86-64 tensorflow_model_server >= 2.17.
# They also use oneDNN's LayerNorm, `_MklLayerNorm`, internal and registered by the same builds.
INT8_OPS = frozenset({"_QuantizedMatMul", "_MklLayerNorm"})
MIN_TF_SERVING_VERSION_INT8 = "2.17"


def op_types(graph_def):
    """Op types used by a GraphDef, including those inside its function library."""
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops.update(node.op for node in function.node_def)
    return ops


def saved_model_op_types(export_dir):
    """Op types used by every MetaGraph of the SavedModel at `export_dir`."""
    proto = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(tf.io.gfile.join(export_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    ops = set()
    for meta_graph in proto.meta_graphs:
        ops |= op_types(meta_graph.graph_def)
    return ops


def non_core_ops(ops):
    """The op types of `ops` that are not core TensorFlow ops (not in tf.raw_ops)."""
    return {op for op in ops if not hasattr(tf.raw_ops, op)}


def unsupported_serving_ops(ops, int8=False):
    """Ops of `ops` that stock tensorflow_model_server >= MIN_TF_SERVING_VERSION may lack:
    non-core ops other than TF_TEXT_OPS. int8: the ops of an int8 export, which may also use
    INT8_OPS (the server being x86-64 and >= MIN_TF_SERVING_VERSION_INT8)."""
    return non_core_ops(ops) - TF_TEXT_OPS - (INT8_OPS if int8 else frozenset())
