"""Named-entity recognition data: CoNLL files, tag schemes, word-aligned WordPiece windows."""

from bert_tf.data.ner.conll import ConllError, ConllFile, Sentence, read_conll, write_predictions
from bert_tf.data.ner.tags import TagError, bio_labels, entity_types, split_tag, to_bio
from bert_tf.data.ner.units import CONTEXTS, Units, group_sentences, per_sentence
from bert_tf.data.ner.windows import (TaggingFeatures, Window, WordScores, encode_units,
                                      max_context_flags, word_windows)
