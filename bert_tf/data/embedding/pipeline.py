"""tf.data input of run_embedding: text columns tokenized in the graph, a batch at a time.

Training batches hold, for each text column c (anchor, positive[, negative] or text_a,
text_b), int32 `c_input_ids`, `c_input_mask`, `c_segment_ids` [B, L] (each text alone:
[CLS] text [SEP]), plus float32 `score` [B] for scored pairs; L is the batch's longest text
over all columns rounded up to 8, so the objective embeds the columns in one model call.
Batches of single texts (embedding for evaluation) hold `input_ids`, `input_mask`,
`segment_ids` and int32 `example_index` [B]; texts are fed in order of length, so that short
texts share batches, and `example_index` puts the embeddings back in order.
"""

import numpy as np
import tensorflow as tf

from bert_tf.data.arrays import PAD_MULTIPLE
from bert_tf.data.maps import graph_map

MODEL_KEYS = ("input_ids", "input_mask", "segment_ids")


def make_preprocessor(vocab_file, do_lower_case, max_seq_length):
    """The in-graph BertPreprocessor of single texts."""
    from bert_tf.tokenization import BertPreprocessor
    return BertPreprocessor(vocabulary=vocab_file, lower_case=do_lower_case,
                            seq_length=max_seq_length, name="preprocessor")


def _trim(features, keys, max_seq_length):
    """Cuts the [B, S] tensors of `keys` to the longest text of all of them."""
    masks = [features[k] for k in keys if k.endswith("input_mask")]
    longest = tf.reduce_max(tf.stack([tf.reduce_max(tf.reduce_sum(m, axis=1)) for m in masks]))
    length = tf.minimum((longest + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE,
                        max_seq_length)
    length = tf.maximum(length, 1)
    return {k: v[:, :length] if k in keys else v for k, v in features.items()}


def training_dataset(table, text_columns, preprocessor, batch_size, seed=None,
                     input_context=None):
    """Shuffled (every epoch anew), repeated batches of B rows of `table` ({column: values};
    the text columns and an optional float `score`), the remainder of an epoch dropped."""
    columns = {c: np.array(table[c], dtype=object) for c in text_columns}
    if "score" in table:
        columns["score"] = np.asarray(table["score"], np.float32)
    rows = len(columns[text_columns[0]])
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    if input_context is not None and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)
    dataset = dataset.shuffle(rows, seed=seed, reshuffle_each_iteration=True).repeat()
    keys = [f"{c}_{k}" for c in text_columns for k in MODEL_KEYS]

    def tokenize(batch):
        features = {k: v for k, v in batch.items() if k not in text_columns}
        for column in text_columns:
            for key, value in preprocessor(batch[column]).items():
                features[f"{column}_{key}"] = value
        return _trim(features, keys, preprocessor.seq_length)

    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = graph_map(dataset, tokenize, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


def texts_dataset(texts, preprocessor, batch_size, input_context=None):
    """Every text once, in batches of similar length, with its position as example_index."""
    order = np.argsort([len(t) for t in texts], kind="stable").astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(
        {"text": np.array(texts, dtype=object)[order], "example_index": order})
    if input_context is not None and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)

    def tokenize(batch):
        features = dict(preprocessor(batch["text"]), example_index=batch["example_index"])
        return _trim(features, MODEL_KEYS, preprocessor.seq_length)

    dataset = dataset.batch(batch_size)
    dataset = graph_map(dataset, tokenize, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
