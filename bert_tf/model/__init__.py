"""Keras 3 layers and models of BERT."""

from bert_tf.model.encoder import BertEncoder, BertPooler
from bert_tf.model.heads import DenseHead, MaskedLMHead
from bert_tf.model.sentence_pooling import SentencePooling
from bert_tf.model.task_models import (BertClassifier, BertEmbedder, BertMultipleChoice,
                                       BertPretrainer, BertSpanLabeler, BertTokenClassifier)
