"""Pre-training data: create_pretraining_data (text -> TFRecords) and the tf.data reader.

TensorFlow is imported only by the reader (make_pretraining_dataset), so the generator's worker
processes stay light.
"""

from bert_tf.data.pretraining.job import create_pretraining_data
from bert_tf.data.pretraining.options import PretrainingDataOptions
from bert_tf.data.pretraining.schema import feature_names, feature_spec

__all__ = ["PretrainingDataOptions", "create_pretraining_data", "expand_input_patterns",
           "feature_names", "feature_spec", "make_pretraining_dataset"]


def __getattr__(name):
    if name in ("make_pretraining_dataset", "expand_input_patterns"):
        from bert_tf.data.pretraining import dataset
        return getattr(dataset, name)
    raise AttributeError(f"module 'bert_tf.data.pretraining' has no attribute {name!r}")
