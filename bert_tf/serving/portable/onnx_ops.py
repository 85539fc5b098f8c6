"""tf2onnx conversions that tf2onnx 1.17 lacks for a BERT model: TensorFlow's Erfc.

bert_tf's exact GELU (tf.nn.gelu, approximate=False) computes 0.5 x erfc(-x / sqrt(2)); without
a handler the ONNX graph keeps an `Erfc` node, which onnxruntime refuses to load. ONNX has Erf
(opset 9 and later), and erfc(x) = 1 - erf(x).
"""

_registered = False


def register():
    """Registers the handlers with tf2onnx (once per process)."""
    global _registered
    if _registered:
        return
    import numpy as np
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    @tf_op("Erfc")
    class Erfc:
        @classmethod
        def version_9(cls, ctx, node, **kwargs):
            dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
            erf = ctx.make_node("Erf", [node.input[0]], op_name_scope=node.name)
            one = ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype))
            ctx.replace_inputs(node, [one.output[0], erf.output[0]])
            node.type = "Sub"

    _registered = True
