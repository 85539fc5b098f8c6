"""bert_tf: BERT pre-training, fine-tuning and serving on TensorFlow 2 and Keras 3.

Top-level names load on first use, so `import bert_tf.data...` or `bert_tf.tokenization` in a
worker process does not pull in TensorFlow and Keras.
"""

import os as _os

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from bert_tf._lazy import lazy_exports  # noqa: E402

__version__ = "0.1.0"

_EXPORTS = {
    "BertConfig": "bert_tf.config",
    "BertEncoder": "bert_tf.model",
    "BertPretrainer": "bert_tf.model",
    "BertClassifier": "bert_tf.model",
    "BertSpanLabeler": "bert_tf.model",
    "BertTokenClassifier": "bert_tf.model",
    "BertMultipleChoice": "bert_tf.model",
    "BertEmbedder": "bert_tf.model",
    "load_encoder": "bert_tf.checkpoints",
    "LiteRTRunner": "bert_tf.prediction.litert_runner",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
