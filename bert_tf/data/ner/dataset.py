"""tf.data pipelines over TaggingFeatures arrays, each batch cut to its longest window."""

import tensorflow as tf

PAD_MULTIPLE = 8   # batch lengths are rounded up to this, so few distinct shapes occur


def trim_to_longest(batch, max_seq_length, keys):
    """Cuts the [B, S] tensors named in `keys` to the batch's longest row (rounded up)."""
    longest = tf.reduce_max(tf.reduce_sum(batch["input_mask"], axis=-1))
    length = tf.minimum((longest + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE,
                        max_seq_length)
    length = tf.maximum(length, 1)
    return {k: (v[:, :length] if k in keys else v) for k, v in batch.items()}


def tagging_dataset(arrays, batch_size, is_training, seed=None, input_context=None):
    """Batches of a TaggingFeatures' arrays. Training: sharded per input pipeline, shuffled,
    repeated, remainder dropped; otherwise every window once, in order."""
    max_seq_length = arrays["input_ids"].shape[1]
    sequence_keys = {k for k, v in arrays.items() if v.ndim == 2}
    ds = tf.data.Dataset.from_tensor_slices(arrays)
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        ds = ds.shuffle(len(arrays["input_ids"]), seed=seed, reshuffle_each_iteration=True)
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=is_training)
    ds = ds.map(lambda b: trim_to_longest(b, max_seq_length, sequence_keys),
                num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)
