"""The "embedding" serving head: a BertEmbedder -> one sentence embedding per text.

Outputs (every signature): embedding float32 [B, H], pooled as the model says (mode and L2
normalisation, recorded in assets.extra/export_info.json). serving_default takes one text per
row (text_a); with window_stride, a text longer than seq_length is read in windows whose
embeddings are combined (mean, or max) and, for a normalising model, normalised again.
"""

import tensorflow as tf

from bert_tf.serving.heads import _WindowedTextHead


class EmbeddingHead(_WindowedTextHead):
    """BertEmbedder -> embedding."""

    kind = "embedding"
    sequence_outputs = False                # the embedding is per row, not per token
    windowed_output = "embedding"

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        if options.text_pair:
            raise ValueError("task 'embedding' embeds one text per row: text_pair does not "
                             "apply")
        return cls(model, vocab_tokens, lower_case, seq_length, **options.windows())

    def outputs(self, predictions, features):
        return {"embedding": predictions["embedding"]}

    def text_outputs(self, predictions, features, extras, texts):
        out = super().text_outputs(predictions, features, extras, texts)
        if self.window_stride and self.model.normalize:
            out["embedding"] = tf.math.l2_normalize(out["embedding"], axis=-1)
        return out

    def info(self):
        return dict(super().info(), pooling=self.model.pooling_mode,
                    normalize=self.model.normalize)
