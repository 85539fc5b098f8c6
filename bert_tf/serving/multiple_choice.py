"""Serving a BertMultipleChoice: a context and N endings in, a probability per ending out.

Each (context, ending) pair is packed as run_swag packs it (bert_tf.data.swag.encode_swag):
[CLS] context [SEP] ending [SEP], truncated with google-research's pair rule (the longer side
loses its last token, the ending on ties), one [B, N, S] row of features per request row. For
SWAG rows, `context` is sent1 and each ending is the full second sentence, sent2 + " " +
ending (SwagExample.choice_texts()), as run_swag reads them.
"""

import numbers

import tensorflow as tf

from bert_tf.serving.heads import ServingHead, _tokenizer
from bert_tf.tokenization import packing, vocab as _vocab


class MultipleChoiceHead(ServingHead):
    """BertMultipleChoice -> logits, probabilities [B, N] and the chosen ending `choice` [B].

    serving_default: `context` string [B], `endings` string [B, N]; serve_features: int
    [B, N, S]; serve_examples: input_ids, input_mask, segment_ids of N * seq_length int64 values
    each (choice-major: the seq_length values of ending 0, then of ending 1, ...)."""

    kind = "multiple_choice"
    text_names = ("context", "endings")
    sequence_outputs = False

    def __init__(self, model, vocab_tokens, lower_case, seq_length, num_choices):
        super().__init__(model, seq_length)
        if num_choices is None:
            raise ValueError("task 'multiple_choice' needs num_choices, the number of endings "
                             "per request row (4 for SWAG)")
        if (isinstance(num_choices, bool) or not isinstance(num_choices, numbers.Integral)
                or num_choices < 2):
            raise ValueError(f"num_choices must be an integer >= 2, got {num_choices!r}")
        if seq_length < 4:
            raise ValueError(f"seq_length={seq_length}: multiple choice packs [CLS] context "
                             f"[SEP] ending [SEP] and needs seq_length >= 4")
        self.num_choices = int(num_choices)
        self.tokenizer = _tokenizer(vocab_tokens, lower_case)
        special = self.tokenizer.special_ids()
        self.cls_id, self.sep_id = special[_vocab.CLS], special[_vocab.SEP]

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        return cls(model, vocab_tokens, lower_case, seq_length, options.num_choices)

    def text_specs(self):
        return [tf.TensorSpec([None], tf.string, name="context"),
                tf.TensorSpec([None, self.num_choices], tf.string, name="endings")]

    def feature_shape(self):
        return [None, self.num_choices, None]

    def example_shape(self):
        return [self.num_choices, self.seq_length]

    def encode(self, texts):
        context, endings = texts
        batch = tf.shape(context, out_type=tf.int64)[0]
        check = tf.debugging.assert_equal(
            tf.shape(endings, out_type=tf.int64)[0], batch,
            message="context and endings need the same batch size")
        with tf.control_dependencies([check]):
            joined = tf.concat([context, tf.reshape(endings, [-1])], axis=0)
        # One tokenizer call; each context is tokenized once and paired with its N endings.
        ids = self.tokenizer.tokenize(joined, with_offsets=False)
        contexts = tf.gather(ids[:batch], tf.repeat(tf.range(batch), self.num_choices))
        features, _ = packing.pack([contexts, ids[batch:]], self.seq_length, self.cls_id,
                                   self.sep_id)
        shape = [-1, self.num_choices, self.seq_length]
        return {k: tf.reshape(v, shape) for k, v in features.items()}, {}

    def outputs(self, predictions, features):
        logits = tf.ensure_shape(predictions["logits"], [None, self.num_choices])
        return {"probabilities": tf.nn.softmax(logits), "logits": logits,
                "choice": tf.argmax(logits, axis=-1, output_type=tf.int32)}

    def warmup_texts(self):
        long = " ".join(["warm-up"] * self.seq_length)
        return {"context": ["A server loads a new model version.", long],
                "endings": [[f"It answers request {i + 1}." for i in range(self.num_choices)],
                            [long] * self.num_choices]}

    def info(self):
        return dict(super().info(), num_choices=self.num_choices)
