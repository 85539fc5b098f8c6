"""bert_tf: BERT pre-training, fine-tuning and serving on TensorFlow 2 and Keras 3."""

import os as _os

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.model import (BertClassifier, BertEncoder, BertMultipleChoice,  # noqa: E402
                           BertPretrainer, BertSpanLabeler, BertTokenClassifier)

__version__ = "0.1.0"


def load_encoder(path, config=None):
    """Builds a BertEncoder from a TF1 checkpoint prefix, a HuggingFace folder or a native
    checkpoint (auto-detected) and loads its weights. See bert_tf.checkpoints.load_encoder."""
    from bert_tf.checkpoints import load_encoder as _load
    return _load(path, config=config)
