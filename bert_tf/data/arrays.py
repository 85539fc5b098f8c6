"""tf.data pipeline over in-memory feature arrays (NER windows, SWAG choices), each batch cut
to its longest sequence so short inputs are not padded to max_seq_length."""

import tensorflow as tf

from bert_tf.data.maps import graph_map

PAD_MULTIPLE = 8   # batch lengths are rounded up to this, so few distinct shapes occur


def _trim_to_longest(batch, max_seq_length, sequence_keys, axis):
    """Cuts the sequence `axis` of the tensors in `sequence_keys` to the longest row of the
    batch."""
    longest = tf.reduce_max(tf.reduce_sum(batch["input_mask"], axis=-1))
    length = tf.minimum((longest + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE,
                        max_seq_length)
    length = tf.maximum(length, 1)
    cut = (slice(None),) * axis + (slice(None, length),)
    return {k: (v[cut] if k in sequence_keys else v) for k, v in batch.items()}


def arrays_dataset(arrays, batch_size, is_training, seed=None, input_context=None):
    """Batches of a dict of numpy arrays whose sequence arrays have the shape of `input_ids`
    ([N, S] or [N, C, S]), or begin with it (per-token values, e.g. [N, S, labels]).
    Training: sharded per input pipeline, shuffled, repeated, remainder dropped; otherwise
    every row once, in order."""
    shape = arrays["input_ids"].shape
    sequence_keys = {k for k, v in arrays.items() if v.shape[1:len(shape)] == shape[1:]}
    ds = tf.data.Dataset.from_tensor_slices(arrays)
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        ds = ds.shuffle(len(arrays["input_ids"]), seed=seed, reshuffle_each_iteration=True)
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=is_training)
    ds = graph_map(ds, lambda b: _trim_to_longest(b, shape[-1], sequence_keys,
                                                  len(shape) - 1))
    return ds.prefetch(tf.data.AUTOTUNE)
