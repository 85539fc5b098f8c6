"""A load-time check for int8 exports with 8-bit weights.

Such weights are exact only where oneDNN's int8 matmul sums in int32 (CPUs with int8 dot
products); elsewhere it saturates them and the model answers wrong without any error
(bert_tf.model.int8). The check is a resource whose initializer runs the int8 saturation probe:
tf.saved_model.load and tensorflow_model_server run it when they load the SavedModel, so on a
CPU that would saturate the weights the load fails with this message instead. Requests pay
nothing.
"""

import tensorflow as tf

from bert_tf.model.int8 import probe_is_exact, saturation_probe

MESSAGE = ("this SavedModel stores 8-bit int8 weights, which oneDNN's int8 matmul saturates on "
           "this CPU (it has no int8 dot products: AVX-512 VNNI, AVX-VNNI or AMX, or "
           "ONEDNN_MAX_CPU_ISA hides them), so its answers would be wrong. Re-export it on this "
           "CPU (7-bit weights are chosen there) or serve it on one with int8 dot products. "
           "Probe (exact: 254):")


class Int8WeightCheck(tf.saved_model.experimental.TrackableResource):
    """Attach to the module being saved (module.attr = Int8WeightCheck()); its initializer,
    run when the SavedModel is loaded, fails with MESSAGE where 8-bit weights saturate. The
    resource itself is a bool variable holding the probe's verdict."""

    def _create_resource(self):
        return tf.raw_ops.VarHandleOp(dtype=tf.bool, shape=[], shared_name="")

    def _initialize(self):
        probe = saturation_probe()
        exact = probe_is_exact(probe)
        check = tf.debugging.Assert(exact, [MESSAGE, probe])
        with tf.control_dependencies([check]):
            return tf.raw_ops.AssignVariableOp(resource=self.resource_handle, value=exact)

    def _destroy_resource(self):
        return tf.raw_ops.DestroyResourceOp(resource=self.resource_handle,
                                            ignore_lookup_error=True)
