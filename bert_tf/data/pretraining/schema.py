"""The TFRecord schema of pre-training instances (google-research/bert's feature names).

Static masking (the original's files): input_ids, input_mask, segment_ids (int64 x
max_seq_length), masked_lm_positions, masked_lm_ids (int64 x max_predictions_per_seq),
masked_lm_weights (float x max_predictions_per_seq), next_sentence_labels (int64 x 1;
0 = B is the actual next text, 1 = B is from a random document).

Dynamic masking: the same minus the three masked_lm_* features; input_ids are unmasked and the
reader chooses the predictions each time it reads a record.
"""

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")
MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
LABEL_FEATURE = "next_sentence_labels"


def feature_names(dynamic_masking=False):
    """Feature names in the order they are written."""
    names = SEQUENCE_FEATURES + (() if dynamic_masking else MASKED_LM_FEATURES)
    return names + (LABEL_FEATURE,)


def feature_spec(max_seq_length, max_predictions_per_seq, dynamic_masking=False):
    """tf.io.parse_example spec for the records."""
    import tensorflow as tf

    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
            for name in SEQUENCE_FEATURES}
    if not dynamic_masking:
        spec["masked_lm_positions"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
        spec["masked_lm_ids"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
        spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
    spec[LABEL_FEATURE] = tf.io.FixedLenFeature([1], tf.int64)
    return spec
