"""Serving a BertPretrainer's masked-LM head: text with [MASK] tokens in, the top-k tokens and
probabilities of every mask out (predict_masked.py's results, in the graph).

Text is read as bert_tf.jobs.fill_mask reads it: each literal "[MASK]" (case-sensitive) is the
mask token, the text between masks is tokenized by the model's tokenizer, and the result is
packed as [CLS] text [SEP], cut to seq_length. Probabilities are the head's float32 softmax over
the whole vocabulary, so the k of a mask sum to at most 1; special tokens ([PAD], [UNK], [CLS],
[SEP], [MASK], [unusedN]) and ids without a vocabulary entry are never among the k unless
include_special_tokens. Requests carry one text each ("a ||| b" pairs are not parsed).

Outputs hold M rows per text, M = the most masks of any text of the batch (0 when none has
one); rows past a text's own num_masks are padding: token "", token_id -1, probability 0,
position and offsets -1.
"""

import numbers

import numpy as np
import tensorflow as tf

from bert_tf.serving.heads import ServingHead, _tokenizer
from bert_tf.tokenization import packing, vocab as _vocab


def _mask_positions(input_ids, input_mask, mask_id):
    """int32 [B, M]: the positions of each row's [MASK] tokens in order, then -1."""
    is_mask = tf.equal(input_ids, mask_id) & tf.equal(input_mask, 1)
    columns = tf.broadcast_to(tf.range(tf.shape(input_ids)[1]), tf.shape(input_ids))
    return tf.ragged.boolean_mask(columns, is_mask).to_tensor(default_value=-1)


class FillMaskHead(ServingHead):
    """BertPretrainer -> per [MASK]: tokens, token_ids, probabilities [B, M, top_k] (most
    likely first), mask_positions [B, M], num_masks [B]; raw text adds the byte offsets of each
    "[MASK]" in the text and masks_truncated (a mask fell beyond seq_length and got no
    prediction; predict_masked.py refuses such a text)."""

    kind = "fill_mask"
    text_names = ("text",)
    sequence_outputs = False

    def __init__(self, model, vocab_tokens, lower_case, seq_length, top_k=5,
                 include_special_tokens=False):
        super().__init__(model, seq_length)
        if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
            raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
        if seq_length < 3:
            raise ValueError(f"seq_length={seq_length}: fill-mask packs [CLS] text [SEP] and "
                             f"needs seq_length >= 3")
        self.tokenizer = _tokenizer(vocab_tokens, lower_case)
        special = self.tokenizer.special_ids()
        self.cls_id, self.sep_id = special[_vocab.CLS], special[_vocab.SEP]
        self.mask_id = special[_vocab.MASK]
        self.include_special_tokens = bool(include_special_tokens)
        excluded = np.zeros(model.config.vocab_size, bool)
        excluded[len(vocab_tokens):] = True           # no token string to return
        if not self.include_special_tokens:
            excluded[_vocab.special_token_ids(vocab_tokens)] = True
        self.top_k = min(int(top_k), int((~excluded).sum()))
        self._excluded = excluded

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        return cls(model, vocab_tokens, lower_case, seq_length, options.top_k,
                   options.include_special_tokens)

    def predict(self, features):
        """The masked-LM logits (float32 [B, M, V]) at the [MASK] positions of the features."""
        positions = _mask_positions(features["input_ids"], features["input_mask"], self.mask_id)
        count = tf.shape(positions)[1]
        # At least one (padding) position: the head's keras.ops.take_along_axis fails on a
        # [0, 0] index tensor (an empty batch without masks).
        padded = tf.pad(tf.maximum(positions, 0), [[0, 0], [0, tf.maximum(1 - count, 0)]])
        logits = self.model(dict(features, masked_lm_positions=padded),
                            training=False)["mlm_logits"][:, :count]
        return {"mlm_logits": tf.cast(logits, tf.float32), "mask_positions": positions}

    def outputs(self, predictions, features):
        positions = predictions["mask_positions"]
        found = (positions >= 0)[..., None]
        probabilities = tf.nn.softmax(predictions["mlm_logits"], axis=-1)
        shown = tf.where(tf.constant(self._excluded), -1.0, probabilities)
        values, ids = tf.math.top_k(shown, k=self.top_k)
        ids = tf.where(found, ids, -1)
        return {"tokens": tf.where(found, self.tokenizer.id_to_token(ids), ""),
                "token_ids": ids, "probabilities": tf.where(found, values, 0.0),
                "mask_positions": positions,
                "num_masks": tf.reduce_sum(tf.cast(positions >= 0, tf.int32), axis=1)}

    def encode(self, texts):
        """Splits each text at "[MASK]", tokenizes the pieces and joins them with the mask id;
        extras: byte offsets of every token and whether a mask was cut off."""
        pieces = tf.strings.split(texts[0], sep=_vocab.MASK)                  # ragged [B, P]
        flat = pieces.flat_values
        index = tf.range(tf.size(flat, out_type=tf.int64))
        row = pieces.value_rowids()
        lengths = tf.cast(tf.strings.length(flat), tf.int64)                  # bytes
        # Byte where each piece starts in its text: the pieces and masks before it.
        bounds = tf.concat([[0], tf.cumsum(lengths + len(_vocab.MASK))], axis=0)
        piece_start = bounds[:-1] - tf.gather(bounds, tf.gather(pieces.row_splits, row))
        # Every piece but the last of its text is followed by a mask.
        followed = tf.not_equal(index + 1, tf.gather(pieces.row_splits[1:], row))
        mask_start = tf.boolean_mask(piece_start + lengths, followed)
        tokens = self.tokenizer.tokenize(flat, with_offsets=True)            # ragged [pieces, T]

        def with_masks(ragged, mask_values):
            masks = tf.RaggedTensor.from_row_lengths(mask_values, tf.cast(followed, tf.int64),
                                                     validate=False)
            return pieces.with_flat_values(tf.concat([ragged, masks], axis=1)).merge_dims(1, 2)

        def shifted(offsets):
            return offsets.with_flat_values(
                offsets.flat_values + tf.gather(piece_start, offsets.value_rowids()))

        ids = with_masks(tokens["token_ids"],
                         tf.fill(tf.shape(mask_start), tf.constant(self.mask_id, tf.int32)))
        starts = with_masks(shifted(tokens["start_offsets"]), mask_start)
        ends = with_masks(shifted(tokens["end_offsets"]), mask_start + len(_vocab.MASK))
        features, (starts, ends) = packing.pack([ids], self.seq_length, self.cls_id,
                                                self.sep_id, ((starts,), (ends,)))
        in_text = tf.maximum(pieces.row_lengths() - 1, 0)
        kept = tf.reduce_sum(tf.cast(tf.equal(features["input_ids"], self.mask_id), tf.int64),
                             axis=1)
        return features, {"start_offsets": starts, "end_offsets": ends,
                          "masks_truncated": kept < in_text}

    def text_outputs(self, predictions, features, extras, texts):
        out = self.outputs(predictions, features)
        positions = out["mask_positions"]

        def at_masks(offsets):
            picked = tf.gather(offsets, tf.maximum(positions, 0), batch_dims=1)
            return tf.where(positions >= 0, picked, tf.constant(-1, offsets.dtype))

        out.update(mask_start_offsets=at_masks(extras["start_offsets"]),
                   mask_end_offsets=at_masks(extras["end_offsets"]),
                   masks_truncated=extras["masks_truncated"])
        return out

    def warmup_texts(self):
        long = "[MASK] " + " ".join(["warm-up"] * self.seq_length) + " [MASK]"
        return {"text": ["The server answers the first [MASK] quickly.", long]}

    def info(self):
        return dict(super().info(), top_k=self.top_k,
                    include_special_tokens=self.include_special_tokens, mask_token=_vocab.MASK)
