"""google-research/bert's tokenization as TensorFlow ops, with byte offsets.

Two paths, chosen per string:
* Printable ASCII (plus tab, newline, return, and non-ASCII punctuation that normalisation
  leaves alone and ICU also calls punctuation, such as curly quotes and dashes): lower casing
  is ASCII lower casing, and tensorflow-text's FastWordpieceTokenizer, splitting words
  itself, splits exactly like the original (same punctuation, ASCII whitespace; a word holds
  only ASCII letters and digits, so its bytes are its characters).
* Anything else: code points are cleaned, lower cased (final sigma included), NFD-decomposed,
  canonically reordered and stripped of Mn marks with lookup tables built from Python's
  unicodedata (graph_tables); words are split with a regex built from the same tables; each
  word goes through FastWordpieceTokenizer without its own splitting; words longer than 200
  characters become [UNK].
Offsets are byte offsets into the original strings: the second path keeps, for every byte of
the normalised text, the span of the original character it came from.

Ops used (see serving_ops.py): core TensorFlow ops, RegexSplitWithOffsets and
FastWordpieceTokenizeWithOffsets.
"""

import functools

import numpy as np
import tensorflow as tf
import tensorflow_text as tft

from bert_tf.tokenization import graph_tables, text as _text, wordpiece


def _lookup(keys, x):
    """(index, found): position of each x in the sorted int32 constant `keys`."""
    keys = tf.constant(keys)
    if keys.shape[0] == 0:
        return tf.zeros_like(x), tf.zeros_like(x, tf.bool)
    idx = tf.minimum(tf.searchsorted(keys, x, side="left"), keys.shape[0] - 1)
    return idx, tf.equal(tf.gather(keys, idx), x)


@functools.lru_cache(maxsize=None)
def simple_text_pattern(lower_case):
    """RE2 pattern of the strings the ASCII path takes: printable ASCII, tab, newline, return,
    and the non-ASCII punctuation that normalisation leaves unchanged and that
    FastWordpieceTokenizer (ICU) also splits off as punctuation, checked by running it on
    "x<c>x" for each candidate. Offsets do not depend on the vocabulary, so a two-token one
    serves every tokenizer and the probe runs once per process and casing."""
    candidates = graph_tables.stable_punctuation(lower_case)
    probe = tft.FastWordpieceTokenizer(vocab=["[UNK]", "x"], token_out_type=tf.int64,
                                       support_detokenization=False)
    with tf.init_scope():
        _, starts, ends = probe.tokenize_with_offsets(
            tf.constant([f"x{chr(c)}x" for c in candidates]))
        starts, ends = starts.to_list(), ends.to_list()
    safe = [c for c, s, e in zip(candidates, starts, ends)
            if s == [0, 1, e[1]] and e == [1, e[1], e[1] + 1]
            and e[1] == 1 + len(chr(c).encode("utf-8"))]
    return "[\\t\\n\\r\\x20-\\x7e" + _text.char_class_pattern(safe)[1:-1] + "]*"


# The ragged tensors below are built from splits the ops made, so without validation: checks
# would add Assert ops, which make the traced tokenizer a stateful function, and tf.data
# cannot checkpoint an iterator whose map calls one.
def _regex_split_with_offsets(strings, delim, keep):
    """tft.regex_split_with_offsets of a [B] string tensor: (words, starts, ends), ragged
    [B, (words)]; its op, with tft's own wrapping of the outputs minus the validation."""
    from tensorflow_text.python.ops.regex_split_ops import gen_regex_split_ops
    words, starts, ends, splits = gen_regex_split_ops.regex_split_with_offsets(
        strings, f"({delim})".encode("utf-8"), f"({keep})".encode("utf-8"))
    return tuple(tf.RaggedTensor.from_row_splits(t, splits, validate=False)
                 for t in (words, starts, ends))


def _pieces_per_row(words, pieces, values):
    """values of the flat pieces [P] as ragged [B, (pieces)]: words [B, (words)] of pieces
    [W, (pieces)] merged over the word level."""
    return tf.RaggedTensor.from_row_splits(values, tf.gather(pieces.row_splits, words.row_splits),
                                           validate=False)


def _utf8_length(cp):
    return (1 + tf.cast(cp >= 0x80, tf.int64) + tf.cast(cp >= 0x800, tf.int64)
            + tf.cast(cp >= 0x10000, tf.int64))


class GraphWordpiece:
    """Batch tokenizer made of TF ops: strings [B] -> ragged int64 ids [B, (tokens)], and
    optionally ragged int64 start/end byte offsets. Identical to FullTokenizer.

    Its graph is about 3,000 ops (most for non-ASCII text). Built outside any graph, the
    tokenizer traces it once per `with_offsets` as a tf.function, and every graph that
    tokenizes (a tf.data map, a SavedModel signature) calls that function instead of
    building the ops again: about 1.3 s saved per tokenized text column of a dataset."""

    @classmethod
    @functools.lru_cache(maxsize=16)
    def shared(cls, vocab_tokens, lower_case, unk_token="[UNK]",
               max_chars_per_word=wordpiece.MAX_INPUT_CHARS_PER_WORD):
        """One tokenizer per vocabulary (a tuple) and settings in this process, with its
        traced graphs: layers and datasets of the same vocabulary share them."""
        with tf.init_scope():
            return cls(vocab_tokens, lower_case, unk_token, max_chars_per_word)

    def __init__(self, vocab_tokens, lower_case, unk_token="[UNK]",
                 max_chars_per_word=wordpiece.MAX_INPUT_CHARS_PER_WORD):
        self._traced = {} if not tf.inside_function() else None   # with_offsets -> Function
        self.lower_case = bool(lower_case)
        self.unk_token = unk_token
        self.max_chars_per_word = int(max_chars_per_word)
        common = dict(vocab=list(vocab_tokens), suffix_indicator=wordpiece.SUFFIX_INDICATOR,
                      token_out_type=tf.int64, unknown_token=unk_token,
                      support_detokenization=False)
        # ASCII path: the op splits words; a word's bytes are its characters.
        self.ascii_wordpiece = tft.FastWordpieceTokenizer(
            max_bytes_per_word=self.max_chars_per_word, no_pretokenization=False, **common)
        # General path: one word per input; the character limit is applied before it.
        self.word_wordpiece = tft.FastWordpieceTokenizer(
            max_bytes_per_word=4 * self.max_chars_per_word + 4, no_pretokenization=True,
            **common)
        self._simple_text = simple_text_pattern(self.lower_case)
        self._map = graph_tables.mapping_table(self.lower_case)
        self._deleted = graph_tables.deleted_keys()
        self._split = graph_tables.split_patterns()
        if self.lower_case:
            self._cased, self._ignorable = graph_tables.sigma_context_keys()
            self._marks = graph_tables.nonspacing_marks()
            self._ccc_keys, self._ccc = graph_tables.combining_classes()
            self._spacing = self._ccc_keys[np.isin(self._ccc_keys, self._marks, invert=True)]

    # ------------------------------------------------------------------ public
    def tokenize(self, strings, with_offsets=False):
        """strings: tf.string [B]. Returns ids (ragged int64 [B, None]) or
        (ids, starts, ends) with byte offsets into each string."""
        strings = tf.convert_to_tensor(strings, tf.string)
        if self._traced is None or not tf.inside_function():
            return self._tokenize(strings, with_offsets)
        function = self._traced.get(with_offsets)
        if function is None:
            function = tf.function(functools.partial(self._tokenize, with_offsets=with_offsets),
                                   input_signature=[tf.TensorSpec([None], tf.string)],
                                   autograph=False)
            self._traced[with_offsets] = function
        return function(strings)

    def _tokenize(self, strings, with_offsets):
        simple = tf.strings.regex_full_match(strings, self._simple_text)

        def components(ragged):
            return [t.flat_values for t in ragged] + [ragged[0].row_splits]

        def all_simple():  # the common case: no partitioning needed
            return components(self._tokenize_ascii(strings, with_offsets))

        def mixed():
            simple_idx = tf.reshape(tf.where(simple), [-1])
            other_idx = tf.reshape(tf.where(tf.logical_not(simple)), [-1])
            fast = self._tokenize_ascii(tf.gather(strings, simple_idx), with_offsets)
            slow = self._tokenize_general_if_any(tf.gather(strings, other_idx), with_offsets)
            order = tf.math.invert_permutation(tf.concat([simple_idx, other_idx], 0))
            return components([tf.gather(tf.concat([f, s], 0), order)
                               for f, s in zip(fast, slow)])

        *values, splits = tf.cond(tf.reduce_all(simple), all_simple, mixed)
        out = tuple(tf.RaggedTensor.from_row_splits(v, splits, validate=False) for v in values)
        return out if with_offsets else out[0]

    # ------------------------------------------------------------------ ASCII path
    def _tokenize_ascii(self, strings, with_offsets):
        if self.lower_case:
            strings = tf.strings.lower(strings)  # ASCII-only lower casing: exact here
        if with_offsets:
            return self.ascii_wordpiece.tokenize_with_offsets(strings)
        return (self.ascii_wordpiece.tokenize(strings),)

    # ------------------------------------------------------------------ general path
    def _tokenize_general_if_any(self, strings, with_offsets):
        """_tokenize_general, skipped (no op runs) for an empty batch, the common case."""
        count = 3 if with_offsets else 1

        def run():
            out = self._tokenize_general(strings, with_offsets)
            return [t.flat_values for t in out] + [out[0].row_splits]

        def skip():
            return [tf.zeros([0], tf.int64)] * count + [tf.zeros([1], tf.int64)]

        *values, splits = tf.cond(tf.size(strings) > 0, run, skip)
        return tuple(tf.RaggedTensor.from_row_splits(v, splits, validate=False) for v in values)

    def _tokenize_general(self, strings, with_offsets):
        nrows = tf.shape(strings, out_type=tf.int64)[0]
        normalized, byte_src = self._normalize(strings, nrows, with_offsets)
        delim, keep = self._split
        words, w_start, w_end = _regex_split_with_offsets(normalized, delim, keep)
        flat_words = words.flat_values
        too_long = tf.strings.length(flat_words, unit="UTF8_CHAR") > self.max_chars_per_word
        flat_words = tf.where(too_long, self.unk_token, flat_words)
        if not with_offsets:
            pieces = self.word_wordpiece.tokenize(flat_words)
            return (_pieces_per_row(words, pieces, pieces.flat_values),)
        pieces, p_start, p_end = self.word_wordpiece.tokenize_with_offsets(flat_words)
        word_of_piece = pieces.value_rowids()
        word_start = tf.gather(w_start.flat_values, word_of_piece)
        word_bytes = tf.gather(w_end.flat_values - w_start.flat_values, word_of_piece)
        long_piece = tf.gather(too_long, word_of_piece)  # its single [UNK] spans the word
        start = word_start + tf.where(long_piece, tf.zeros_like(word_bytes), p_start.flat_values)
        end = word_start + tf.where(long_piece, word_bytes, p_end.flat_values)
        map_start, map_end, row_base = byte_src
        base = tf.gather(row_base, tf.gather(words.value_rowids(), word_of_piece))
        start = tf.gather(map_start, base + start)
        end = tf.gather(map_end, base + end - 1)
        return tuple(_pieces_per_row(words, pieces, v) for v in (pieces.flat_values, start, end))

    def _normalize(self, strings, nrows, with_offsets):
        """Normalised strings [b] and, if with_offsets, (original start byte, original end
        byte) of every normalised byte (flat) plus each row's first index into them."""
        cps, starts = tf.strings.unicode_decode_with_offsets(strings, "UTF-8", errors="ignore")
        cp, start, row = cps.flat_values, starts.flat_values, cps.value_rowids()
        _, deleted = _lookup(self._deleted, cp)
        keep = tf.logical_not(deleted)
        cp, start, row = (tf.boolean_mask(t, keep) for t in (cp, start, row))
        end = start + _utf8_length(cp)
        if self.lower_case:
            cp = self._final_sigma(cp, row)
        cp, src = self._apply_mapping(cp)
        if self.lower_case:
            cp, src = self._reorder_and_strip(cp, src, tf.gather(row, src))
        out_row = tf.gather(row, src)
        normalized = tf.strings.unicode_encode(
            tf.RaggedTensor.from_value_rowids(cp, out_row, nrows=nrows, validate=False), "UTF-8")
        if not with_offsets:
            return normalized, None
        nbytes = _utf8_length(cp)
        map_start = tf.repeat(tf.gather(start, src), nbytes)
        map_end = tf.repeat(tf.gather(end, src), nbytes)
        row_bytes = tf.math.unsorted_segment_sum(nbytes, out_row, nrows)
        return normalized, (map_start, map_end, tf.cumsum(row_bytes, exclusive=True))

    def _apply_mapping(self, cp):
        """Replaces each code point by its mapped form (0..3 code points). Returns the new flat
        code points and, for each, the index of the code point it came from."""
        keys, splits, values = self._map
        idx, mapped = _lookup(keys, cp)
        first = tf.gather(tf.constant(splits), idx)
        length = tf.where(mapped, tf.gather(tf.constant(splits), idx + 1) - first, 1)
        src = tf.repeat(tf.range(tf.size(cp)), length)
        within = tf.range(tf.reduce_sum(length)) - tf.gather(tf.cumsum(length, exclusive=True),
                                                             src)
        value_at = tf.minimum(tf.gather(first, src) + within, max(len(values) - 1, 0))
        out = tf.where(tf.gather(mapped, src), tf.gather(tf.constant(values), value_at),
                       tf.gather(cp, src))
        return out, src

    def _final_sigma(self, cp, row):
        """Capital sigma -> final sigma where str.lower() would make it final: a cased letter
        before it and none after it in the same word, skipping case-ignorable characters
        (spaces and CJK are neither cased nor ignorable, so they end the scan like the word
        boundary does)."""
        is_sigma = tf.equal(cp, graph_tables.SIGMA)

        def fix():
            _, cased = _lookup(self._cased, cp)
            _, ignorable = _lookup(self._ignorable, cp)
            anchors = tf.reshape(tf.where(tf.logical_not(ignorable)), [-1])  # sorted positions
            sigmas = tf.reshape(tf.where(is_sigma), [-1])
            count = tf.size(anchors, out_type=tf.int64)
            before = tf.searchsorted(anchors, sigmas, side="left", out_type=tf.int64) - 1
            after = tf.searchsorted(anchors, sigmas, side="right", out_type=tf.int64)
            sig_row = tf.gather(row, sigmas)

            def cased_anchor(i, valid):
                pos = tf.gather(anchors, tf.clip_by_value(i, 0, count - 1))
                return (valid & tf.equal(tf.gather(row, pos), sig_row) & tf.gather(cased, pos))

            final = (cased_anchor(before, before >= 0)
                     & tf.logical_not(cased_anchor(after, after < count)))
            new = tf.where(final, graph_tables.SMALL_FINAL_SIGMA, graph_tables.SIGMA)
            return tf.tensor_scatter_nd_update(cp, sigmas[:, None], new)

        return tf.cond(tf.reduce_any(is_sigma), fix, lambda: cp)

    def _reorder_and_strip(self, cp, src, row):
        """NFD's canonical ordering (stable sort of each run of non-zero combining classes),
        then removal of Mn marks. The sort only matters, and only runs, when the batch holds
        two or more marks that survive stripping."""
        _, spacing = _lookup(self._spacing, cp)

        def reorder():
            idx, has_class = _lookup(self._ccc_keys, cp)
            ccc = tf.where(has_class, tf.gather(tf.constant(self._ccc), idx), 0)
            pos = tf.range(tf.size(cp, out_type=tf.int64))
            row_first = tf.concat([[True], tf.not_equal(row[1:], row[:-1])], 0)
            heads = tf.reshape(tf.where(tf.equal(ccc, 0) | row_first), [-1])
            group = tf.gather(heads, tf.searchsorted(heads, pos, side="right",
                                                     out_type=tf.int64) - 1)
            order = tf.argsort(group * 256 + tf.cast(ccc, tf.int64), stable=True)
            return tf.gather(cp, order), tf.gather(src, order)

        cp, src = tf.cond(tf.reduce_sum(tf.cast(spacing, tf.int32)) >= 2, reorder,
                          lambda: (cp, src))
        _, is_mark = _lookup(self._marks, cp)
        keep = tf.logical_not(is_mark)
        return tf.boolean_mask(cp, keep), tf.boolean_mask(src, keep)
