"""google-research/bert TF1 checkpoints (`.../bert_model.ckpt` prefixes), read and written by
their exact variable names without building a TF1 graph."""

import collections
import os
from typing import Mapping

import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.names import is_training_state
from bert_tf.fileio import atomic_write_text


def is_tf1_checkpoint(prefix: str) -> bool:
    """True for a name-based (TF1 Saver) checkpoint; object-based (tf.train.Checkpoint) ones
    carry an object graph instead."""
    try:
        names = [n for n, _ in tf.train.list_variables(prefix)]
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        return False
    return "_CHECKPOINTABLE_OBJECT_GRAPH" not in names


def read_tf1(prefix: str) -> dict[str, np.ndarray]:
    """{google name: numpy array}; optimizer slots and step counters are skipped."""
    reader = tf.train.load_checkpoint(prefix)
    arrays = collections.OrderedDict()
    for name in sorted(reader.get_variable_to_shape_map()):
        if is_training_state(name):
            continue
        arrays[name] = reader.get_tensor(name)
    return arrays


def write_tf1(arrays: Mapping[str, np.ndarray], prefix: str) -> str:
    """Writes a TF1 name-based checkpoint (index + data + `checkpoint` state file) that
    google-research's `tf.train.init_from_checkpoint` / `Saver.restore` load by name.

    Args:
      arrays: {google name: array in google layout}, e.g. from checkpoints.extract(model).
      prefix: the checkpoint prefix to write (.../bert_model.ckpt); its folder is created.

    Returns:
      `prefix`.
    """
    folder = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(folder, exist_ok=True)
    names = list(arrays)
    tensors = [tf.constant(np.asarray(arrays[n])) for n in names]
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                      shape_and_slices=[""] * len(names), tensors=tensors)
    state = (f'model_checkpoint_path: "{os.path.basename(prefix)}"\n'
             f'all_model_checkpoint_paths: "{os.path.basename(prefix)}"\n')
    atomic_write_text(os.path.join(folder, "checkpoint"), state)
    return prefix
