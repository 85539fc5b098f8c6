"""SQuAD features <-> TFRecord files with google-research/bert's feature names, and tf.data input.

Records hold int64 `unique_ids`, `input_ids`, `input_mask`, `segment_ids` and, for training,
`start_positions`, `end_positions`, `is_impossible`; files written by the original run_squad.py
read back unchanged and vice versa.
"""

import contextlib
import os

import tensorflow as tf

from bert_tf.data.maps import graph_map
from bert_tf.fileio import atomic_path


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def feature_to_example(feature, is_training):
    """The tf.train.Example of one InputFeatures."""
    fields = {
        "unique_ids": _int_feature([feature.unique_id]),
        "input_ids": _int_feature(feature.input_ids),
        "input_mask": _int_feature(feature.input_mask),
        "segment_ids": _int_feature(feature.segment_ids),
    }
    if is_training:
        fields["start_positions"] = _int_feature([feature.start_position])
        fields["end_positions"] = _int_feature([feature.end_position])
        fields["is_impossible"] = _int_feature([1 if feature.is_impossible else 0])
    return tf.train.Example(features=tf.train.Features(feature=fields))


class FeatureWriter:
    """Writes InputFeatures to a TFRecord file atomically: records go to a temporary file that
    replaces `filename` only on close(), so an interrupted run never leaves a truncated file that
    looks complete. Use as a context manager (an exception discards the file), or call close()."""

    def __init__(self, filename, is_training):
        self.filename = os.fspath(filename)
        self.is_training = is_training
        self.num_features = 0
        self._stack = contextlib.ExitStack()
        tmp = self._stack.enter_context(atomic_path(self.filename))
        self._writer = tf.io.TFRecordWriter(tmp)

    def process_feature(self, feature):
        self._writer.write(feature_to_example(feature, self.is_training).SerializeToString())
        self.num_features += 1

    def close(self):
        self._writer.close()
        self._stack.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self._writer.close()
        return self._stack.__exit__(exc_type, exc, tb)


def feature_spec(seq_length, is_training):
    """tf.io.parse_example spec for the records (is_impossible defaults to 0 for files that
    lack it)."""
    spec = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
    }
    if is_training:
        spec["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
        spec["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
        spec["is_impossible"] = tf.io.FixedLenFeature([], tf.int64, default_value=0)
    return spec


def read_feature_dataset(input_files, seq_length, is_training, batch_size,
                         drop_remainder=False, repeat=False, shuffle_buffer=100, seed=None):
    """A tf.data.Dataset of batched feature dicts from TFRecord file(s).

    Every tensor is int32 ([batch, seq_length] or [batch]) except `unique_ids`, kept int64.
    Training data is shuffled with `shuffle_buffer` records, anew in every pass, then repeated
    when repeat=True: with a buffer of at least the file's record count each epoch is a fresh
    permutation of every window (as HuggingFace's and our classifier's loaders do); the
    original's 100 only mixes neighbours of a file shuffled once. The buffer holds serialized
    records (about 2 KB at sequence 384) and is part of iterator checkpoints. Prediction data
    keeps file order.
    """
    if isinstance(input_files, (str, os.PathLike)):
        input_files = [input_files]
    spec = feature_spec(seq_length, is_training)

    def decode(records):
        parsed = tf.io.parse_example(records, spec)
        return {name: t if name == "unique_ids" else tf.cast(t, tf.int32)
                for name, t in parsed.items()}

    ds = tf.data.TFRecordDataset([str(f) for f in input_files])
    if is_training and shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    return graph_map(ds, decode).prefetch(tf.data.AUTOTUNE)
