"""The two private TensorFlow/Keras APIs that int8 exports rely on (bert_tf.model.int8): each
still does its job, and an upgrade that removes one gets an error saying what and what to do."""

import keras
import pytest
import tensorflow as tf

from bert_tf.model import int8
from bert_tf.model.int8 import LAYER_NORM, internal_op, layer_tracker


def test_an_op_missing_from_raw_ops_is_added_to_a_graph():
    assert not hasattr(tf.raw_ops, LAYER_NORM)
    with tf.Graph().as_default():
        y = internal_op(LAYER_NORM, name="layer_norm", x=tf.ones([2, 4]), scale=tf.ones([4]),
                        offset=tf.zeros([4]), epsilon=1e-12)
        assert (y.op.type, y.shape.as_list(), y.dtype) == (LAYER_NORM, [2, 4], tf.float32)


def test_a_tensorflow_without_the_op_helper_gets_a_clear_error(monkeypatch):
    monkeypatch.delattr(int8.op_def_library, "_apply_op_helper")
    with pytest.raises(RuntimeError, match=r"private op_def_library\._apply_op_helper, which "
                                           r"TensorFlow .* no longer has: export with "
                                           r"--precision=fp32 or bf16"):
        internal_op(LAYER_NORM, name="layer_norm")


class _Parent(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(3, name="old")

    def call(self, x):
        return self.dense(x)


def test_a_replaced_sublayer_leaves_the_weights_and_the_checkpoint():
    parent = _Parent()
    parent(tf.ones([1, 2]))
    new = keras.layers.Dense(3, name="new")
    new.build((1, 2))
    layer_tracker(parent).replace_tracked_value("layers", parent.dense, new)
    parent.dense = new
    assert [w.path for w in parent.weights] == ["new/kernel", "new/bias"]


def test_a_keras_without_the_layer_tracker_gets_a_clear_error():
    parent = _Parent()
    object.__setattr__(parent, "_tracker", None)
    with pytest.raises(RuntimeError, match=r"private Layer\._tracker .* which Keras .* no "
                                           r"longer has: export with --precision=fp32 or bf16"):
        layer_tracker(parent)
