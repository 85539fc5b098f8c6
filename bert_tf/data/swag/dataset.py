"""tf.data pipeline over SWAG arrays, each batch cut to its longest choice."""

import tensorflow as tf

PAD_MULTIPLE = 8


def _trim(batch, max_seq_length):
    longest = tf.reduce_max(tf.reduce_sum(batch["input_mask"], axis=-1))
    length = tf.minimum((longest + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE,
                        max_seq_length)
    length = tf.maximum(length, 1)
    return {k: (v[:, :, :length] if v.shape.rank == 3 else v) for k, v in batch.items()}


def swag_dataset(arrays, batch_size, is_training, seed=None, input_context=None):
    """Batches of encode_swag arrays. Training: sharded, shuffled, repeated, remainder dropped;
    otherwise every example once, in order."""
    max_seq_length = arrays["input_ids"].shape[-1]
    ds = tf.data.Dataset.from_tensor_slices(arrays)
    if input_context is not None and input_context.num_input_pipelines > 1:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        ds = ds.shuffle(len(arrays["input_ids"]), seed=seed, reshuffle_each_iteration=True)
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=is_training)
    ds = ds.map(lambda b: _trim(b, max_seq_length), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)
