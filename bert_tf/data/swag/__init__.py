"""SWAG (multiple choice) data: both csv layouts, packed choice features."""

from bert_tf.data.swag.examples import (SwagError, SwagExample, detect_layout, gold_position,
                                        read_swag)
from bert_tf.data.swag.features import encode_swag, truncate_pair
