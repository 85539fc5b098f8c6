"""WordPiece tokenization, exactly as google-research/bert's tokenization.py, plus fast batch
entry points, in-graph Keras layers and vocabulary learning.

`from bert_tf import tokenization` replaces the original `import tokenization`. The Keras
layers (BertTokenizerLayer, BertPreprocessor) load TensorFlow Text on first access.
"""

from bert_tf.tokenization.basic import BasicTokenizer
from bert_tf.tokenization.checkpoint_case import validate_case_matches_checkpoint
from bert_tf.tokenization.full import FullTokenizer
from bert_tf.tokenization.text import convert_to_unicode, printable_text, whitespace_tokenize
from bert_tf.tokenization.vocab import (SPECIAL_TOKENS, Vocabulary, VocabularyError,
                                        convert_by_vocab, convert_ids_to_tokens,
                                        convert_tokens_to_ids, load_vocab)
from bert_tf.tokenization.wordpiece import WordpieceTokenizer

_LAZY = {"BertTokenizerLayer": "layers", "BertPreprocessor": "layers",
         "truncate_pair_lengths": "packing", "learn_wordpiece_vocab": "vocab_learning"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module = importlib.import_module(f"bert_tf.tokenization.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'bert_tf.tokenization' has no attribute {name!r}")
