"""Serving a BertSpanLabeler (SQuAD): a question and a context in, the best answer span out.

serving_default reads every window of the context, as run_squad does (google-research/bert's
convert_examples_to_features and write_predictions, bert_tf.data.squad):
  * the question keeps its first max_query_length WordPieces; a window holds up to
    seq_length - 3 - len(question) context WordPieces, [CLS] question [SEP] window [SEP], and
    windows start every min(doc_stride, that room) WordPieces until one reaches the end;
  * the model runs once on the windows of all request rows ([windows, seq_length]);
  * in each window the best span maximises start_logit + end_logit over context tokens
    start <= end, at most max_answer_length WordPieces, whose start token has its maximum
    context in this window (check_is_max_context's rule: each token starts spans in one window
    only); every such pair is scored, as run_squad with n_best_size >= seq_length;
  * each request row takes the best of its windows' spans (the earlier window on ties).

serving_default outputs, one value per request row [B]:
  answer_text           string: the context's bytes [answer_start, answer_end), "" if none
  answer_start, answer_end   int64 byte offsets into the UTF-8 context, -1 if none
  score                 float32 start_logit + end_logit of the answer, 0 if none
  answer_window         int32 the row's window that holds the answer (0 = first), -1 if none
  answer_token_start, answer_token_end   int32 positions of the answer in that window
  null_score            float32 the lowest [CLS] start_logit + end_logit over the row's windows
                        (SQuAD 2.0 models: run_squad answers "" when null_score - score >
                        null_score_diff_threshold)
  num_windows           int32 windows the context was read in (an empty context gets one,
                        without context tokens, and no answer)
Per-token outputs are not in serving_default: a row has as many windows as its context needs.
serve_features / serve_examples take already-packed windows (one per row, e.g. run_squad's
features) and return start_logits, end_logits [B, seq] and each window's best span
(answer_token_start, answer_token_end, score), every context token counting as a start since
a lone window carries no max-context information.
"""

import tensorflow as tf

from bert_tf.contract import DOC_STRIDE, MAX_ANSWER_LENGTH, MAX_QUERY_LENGTH
from bert_tf.serving.span import best_span
from bert_tf.serving.heads import ServingHead, _tokenizer, tokenize_together
from bert_tf.tokenization import packing, vocab as _vocab


def _at(values, index):
    """values[b, index[b]] for [B, S] values (index -1 reads position 0)."""
    return tf.gather(values, tf.maximum(index, 0), batch_dims=1)


def max_context_windows(positions, context_length, room, step, num_windows):
    """The window (index within its row) where each context token has its maximum context.

    All arguments are int64 [T], one value per context WordPiece: its position in the context
    and its row's context length, window room, window step and window count. Window k spans
    [k * step, k * step + length) with length = min(context_length - k * step, room). As
    check_is_max_context: a window scores a token min(left context, right context)
    + 0.01 * window length (in float64, as the Python code computes it), and the first window
    with the highest score wins."""
    last = tf.minimum(num_windows - 1, positions // step)        # last window starting <= p
    first = tf.maximum(positions - room + step, 0) // step         # first window ending >= p
    width = tf.maximum(tf.reduce_max(last - first), 0) + 1         # (no tokens: max -> 0)
    window = first[:, None] + tf.range(width)[None, :]             # [T, width] candidates
    start = window * step[:, None]
    length = tf.minimum(context_length[:, None] - start, room[:, None])
    end = start + length - 1
    p = positions[:, None]
    inside = (window <= last[:, None]) & (start <= p) & (p <= end)
    score = (tf.cast(tf.minimum(p - start, end - p), tf.float64)
             + 0.01 * tf.cast(length, tf.float64))
    score = tf.where(inside, score, -float("inf"))
    best = tf.reduce_max(score, axis=1, keepdims=True)
    never = tf.constant(tf.int64.max, tf.int64)
    return tf.reduce_min(tf.where(inside & (score == best), window, never), axis=1)


class SquadHead(ServingHead):
    """BertSpanLabeler -> the best answer over all windows of the context (serving_default),
    or per-window logits and spans (serve_features, serve_examples); see the module
    docstring."""

    kind = "squad"
    text_names = ("question", "context")

    def __init__(self, model, vocab_tokens, lower_case, seq_length,
                 max_query_length=MAX_QUERY_LENGTH, max_answer_length=MAX_ANSWER_LENGTH,
                 doc_stride=DOC_STRIDE):
        super().__init__(model, seq_length)
        if not 1 <= max_query_length <= seq_length - 4:
            raise ValueError(f"max_query_length={max_query_length} must be in [1, "
                             f"seq_length - 4 = {seq_length - 4}] so the context gets a token")
        if max_answer_length < 1:
            raise ValueError(f"max_answer_length must be >= 1, got {max_answer_length}")
        if doc_stride < 1:
            raise ValueError(f"doc_stride must be >= 1, got {doc_stride}")
        self.max_query_length = int(max_query_length)
        self.max_answer_length = int(max_answer_length)
        self.doc_stride = int(doc_stride)
        self.tokenizer = _tokenizer(vocab_tokens, lower_case)
        special = self.tokenizer.special_ids()
        self.cls_id, self.sep_id = special[_vocab.CLS], special[_vocab.SEP]

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        return cls(model, vocab_tokens, lower_case, seq_length, options.max_query_length,
                   options.max_answer_length, options.doc_stride)

    def encode(self, texts):
        """(question, context) [B] -> features [W, seq_length] of every window of every row
        (rows in order, windows in context order) and extras: per-token byte offsets into the
        context and max-context flags [W, seq_length], each window's row and index in it [W],
        num_windows [B]."""
        question, context = tokenize_together(self.tokenizer, texts, with_offsets=True)
        question = {k: v[:, :self.max_query_length] for k, v in question.items()}
        ids = context["token_ids"]
        context_length = ids.row_lengths()                                       # [B]
        room = self.seq_length - 3 - question["token_ids"].row_lengths()        # [B], >= 1
        step = tf.minimum(room, self.doc_stride)
        num_windows = 1 + tf.maximum(context_length - room + step - 1, 0) // step
        row = tf.repeat(tf.range(tf.size(num_windows, out_type=tf.int64)), num_windows)  # [W]
        index = tf.ragged.range(num_windows).flat_values                         # [W]
        start = index * tf.gather(step, row)
        length = tf.maximum(tf.minimum(tf.gather(context_length, row) - start,
                                       tf.gather(room, row)), 0)

        token_row = ids.value_rowids()                                           # [T]
        owner = max_context_windows(
            tf.range(tf.size(ids.flat_values, out_type=tf.int64))
            - tf.gather(ids.row_splits, token_row),
            *(tf.gather(v, token_row) for v in (context_length, room, step, num_windows)))
        # Each window's context tokens, as indices into the flat context tokens: [W, None].
        first = tf.gather(ids.row_splits, row) + start
        flat = tf.ragged.range(first, first + length)

        def window_values(values):
            return flat.with_flat_values(tf.gather(values, flat.flat_values))

        owned = tf.cast(tf.gather(owner, flat.flat_values)
                        == tf.gather(index, flat.value_rowids()), tf.int64)
        asked = {k: tf.gather(v, row) for k, v in question.items()}
        features, (starts, ends, max_context) = packing.pack(
            [asked["token_ids"], window_values(ids.flat_values)], self.seq_length,
            self.cls_id, self.sep_id,
            ((asked["start_offsets"], window_values(context["start_offsets"].flat_values)),
             (asked["end_offsets"], window_values(context["end_offsets"].flat_values)),
             (tf.zeros_like(asked["start_offsets"]), flat.with_flat_values(owned))))
        in_context = tf.equal(features["segment_ids"], 1)
        extras = {"token_start_offsets": tf.where(in_context, starts, -1),
                  "token_end_offsets": tf.where(in_context, ends, -1),
                  "max_context": in_context & (max_context > 0),
                  "window_row": row, "window_index": index, "num_windows": num_windows}
        return features, extras

    def outputs(self, predictions, features):
        ids = features["input_ids"]
        candidates = ((features["segment_ids"] == 1) & (features["input_mask"] == 1)
                      & (ids != self.sep_id) & (ids != self.cls_id))
        start, end, score = best_span(predictions["start_logits"], predictions["end_logits"],
                                      candidates, self.max_answer_length)
        return {"start_logits": predictions["start_logits"],
                "end_logits": predictions["end_logits"],
                "answer_token_start": start, "answer_token_end": end, "score": score}

    def text_outputs(self, predictions, features, extras, texts):
        start_logits, end_logits = predictions["start_logits"], predictions["end_logits"]
        starts, ends = extras["token_start_offsets"], extras["token_end_offsets"]
        token_start, token_end, score = best_span(
            start_logits, end_logits, starts >= 0, self.max_answer_length,
            starts=extras["max_context"])                                        # [W]
        rows = extras["window_row"]
        batch = tf.shape(texts[1], out_type=tf.int64)[0]
        windows = tf.size(rows, out_type=tf.int64)
        # The row's best window: the first one whose span has the row's highest score.
        found = token_start >= 0
        scored = tf.where(found, score, -float("inf"))
        row_best = tf.math.unsorted_segment_max(scored, rows, batch)           # [B]
        top = found & tf.equal(scored, tf.gather(row_best, rows))
        chosen = tf.math.unsorted_segment_min(tf.where(top, tf.range(windows), windows),
                                              rows, batch)                      # [B]
        has = chosen < windows
        pick = tf.minimum(chosen, windows - 1)
        answer_token_start = tf.where(has, tf.gather(token_start, pick), -1)
        answer_token_end = tf.where(has, tf.gather(token_end, pick), -1)
        answer_start = tf.where(has, _at(tf.gather(starts, pick), answer_token_start), -1)
        answer_end = tf.where(has, _at(tf.gather(ends, pick), answer_token_end), -1)
        return {
            "answer_text": tf.strings.substr(texts[1], tf.maximum(answer_start, 0),
                                             tf.maximum(answer_end - answer_start, 0)),
            "answer_start": answer_start, "answer_end": answer_end,
            "score": tf.where(has, tf.gather(score, pick), 0.0),
            "answer_window": tf.where(has, tf.cast(tf.gather(extras["window_index"], pick),
                                                   tf.int32), -1),
            "answer_token_start": answer_token_start, "answer_token_end": answer_token_end,
            "null_score": tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0],
                                                       rows, batch),
            "num_windows": tf.cast(extras["num_windows"], tf.int32)}

    def warmup_texts(self):
        long = " ".join(["warm-up"] * self.seq_length)
        return {"question": ["Which request warms up the server?", long],
                "context": ["The first request warms up the server.", long]}

    def info(self):
        return dict(super().info(), max_query_length=self.max_query_length,
                    max_answer_length=self.max_answer_length, doc_stride=self.doc_stride)
