"""FullTokenizer: google-research/bert's end-to-end tokenizer, made fast.

Output is identical to the original on every input. Speed comes from three things:
* After cleaning (deleting control characters) and spacing CJK ideographs, the original's
  result for a text is the concatenation of its results for each whitespace-separated word,
  and a word's result depends on nothing else. So words are tokenized once and memoised.
* Cleaning can be skipped when a regex finds nothing to clean (almost always), and ASCII text
  needs no CJK pass.
* Large batches go through the in-graph tokenizer (graph_tokenizer, C++ WordPiece), which
  gives the same ids; Python only reads the result back into lists.
"""

from concurrent import futures
import contextlib
import gc
import itertools
import os
from typing import Iterable

from bert_tf.tokenization import basic, text as _text, vocab as _vocab, wordpiece

DEFAULT_CACHE_SIZE = 1 << 18  # memoised words; the cache is emptied when full
GRAPH_MIN_BATCH = 256  # batches at least this long use the in-graph tokenizer
GRAPH_CHUNK = 1024  # texts per in-graph call
GRAPH_THREADS = min(8, (os.cpu_count() or 1) + 1)  # in-graph calls in flight


def split_words(text):
    """Whitespace-separated words of `text` after cleaning and CJK spacing (str in, list out).

    Equivalent to the original's clean + CJK spacing + whitespace split: every character the
    original maps to a space is one str.split() breaks on, and the characters str.split()
    additionally breaks on are either deleted by cleaning or (U+2028, U+2029) also broken on
    by the original's final split."""
    if text.isascii():
        if _text.ASCII_DELETE_RE.search(text):
            text = _text.ASCII_DELETE_RE.sub("", text)
        return text.split()
    deleted = _text.delete_re()
    if deleted.search(text):
        text = deleted.sub("", text)
    if _text.CJK_RE.search(text):
        text = _text.CJK_RE.sub(r" \g<0> ", text)
    return text.split()


@contextlib.contextmanager
def _gc_paused():
    """Pauses the cyclic garbage collector while building many small lists (it would
    otherwise rescan every list made so far, several times per batch)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _Memo(dict):
    """dict that computes missing values with `fn` and empties itself when it holds `limit`."""

    def __init__(self, fn, limit):
        super().__init__()
        self.fn, self.limit = fn, limit

    def __missing__(self, key):
        if len(self) >= self.limit:
            self.clear()
        value = self[key] = self.fn(key)
        return value


class FullTokenizer:
    """google-research/bert's FullTokenizer (same names, same tokens) with fast batch entry
    points and character offsets.

    Args:
      vocab_file: WordPiece vocabulary, one token per line. It must hold [PAD], [UNK], [CLS],
        [SEP] and [MASK]; a malformed file raises VocabularyError naming the line.
      do_lower_case: lower case and strip accents (uncased models) or not (cased models).
      cache_size: number of distinct words memoised.
      graph_min_batch: tokenize_batch / encode_batch calls with at least this many texts run
        the in-graph tokenizer (built on first use, about 3 s); None: always Python.
    """

    def __init__(self, vocab_file: str | os.PathLike, do_lower_case: bool = True,
                 cache_size: int = DEFAULT_CACHE_SIZE,
                 graph_min_batch: int | None = GRAPH_MIN_BATCH) -> None:
        self.vocabulary = _vocab.Vocabulary.from_file(vocab_file)
        self.vocabulary.require()
        self.vocab = self.vocabulary.token_to_id
        self.inv_vocab = dict(enumerate(self.vocabulary.id_to_token))
        self.do_lower_case = do_lower_case
        self.basic_tokenizer = basic.BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = wordpiece.WordpieceTokenizer(vocab=self.vocab)
        self._tokens_of = _Memo(self._tokenize_word, cache_size).__getitem__
        self._ids_of = _Memo(self._encode_word, cache_size).__getitem__
        self.graph_min_batch = graph_min_batch
        self._graph_fn = None

    @property
    def special_ids(self) -> dict[str, int]:
        """{"[PAD]": id, "[UNK]": id, "[CLS]": id, "[SEP]": id, "[MASK]": id}."""
        return self.vocabulary.special_ids()

    # -- one word of cleaned text -> tokens / ids
    def _tokenize_word(self, word):
        if word.isascii():  # nothing to decompose; every non-alphanumeric is punctuation
            pieces = basic.ASCII_PIECES.findall(word.lower() if self.do_lower_case else word)
        else:
            pieces = basic.normalize_word(word, self.do_lower_case)
        out = []
        for piece in pieces:
            out.extend(wordpiece.wordpiece_word(piece, self.vocab, _vocab.UNK))
        return tuple(out)

    def _encode_word(self, word):
        vocab = self.vocab
        return tuple(vocab[t] for t in self._tokens_of(word))

    # -- google-research API
    def tokenize(self, text: str | bytes) -> list[str]:
        """List of WordPiece tokens of `text` (str, or bytes decoded as UTF-8)."""
        words = split_words(_text.convert_to_unicode(text))
        return list(itertools.chain.from_iterable(map(self._tokens_of, words)))

    def convert_tokens_to_ids(self, tokens: Iterable[str]) -> list[int]:
        return _vocab.convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        return _vocab.convert_by_vocab(self.inv_vocab, ids)

    # -- fast entry points
    def encode(self, text: str | bytes) -> list[int]:
        """Ids of tokenize(text), without [CLS]/[SEP]."""
        words = split_words(_text.convert_to_unicode(text))
        return list(itertools.chain.from_iterable(map(self._ids_of, words)))

    def tokenize_batch(self, texts: Iterable[str | bytes]) -> list[list[str]]:
        """[tokenize(t) for t in texts], faster."""
        texts = list(texts)
        ids = self._graph_encode(texts)
        tokens_of, chain, to_str = self._tokens_of, itertools.chain.from_iterable, \
            _text.convert_to_unicode
        with _gc_paused():
            if ids is not None:
                token_of = self.vocabulary.id_to_token.__getitem__
                return [list(map(token_of, row)) for row in ids]
            return [list(chain(map(tokens_of, split_words(to_str(t))))) for t in texts]

    def encode_batch(self, texts: Iterable[str | bytes]) -> list[list[int]]:
        """[encode(t) for t in texts], faster."""
        texts = list(texts)
        ids = self._graph_encode(texts)
        if ids is not None:
            return ids
        ids_of, chain, to_str = self._ids_of, itertools.chain.from_iterable, \
            _text.convert_to_unicode
        with _gc_paused():
            return [list(chain(map(ids_of, split_words(to_str(t))))) for t in texts]

    def _graph_encode(self, texts):
        """Ids of `texts` from the in-graph tokenizer, or None when the batch is too small or
        holds a str that is not encodable as UTF-8 (lone surrogates)."""
        if self.graph_min_batch is None or len(texts) < self.graph_min_batch:
            return None
        try:
            data = [t if isinstance(t, bytes) else t.encode("utf-8") for t in texts]
        except (UnicodeEncodeError, AttributeError):
            return None
        if self._graph_fn is None:
            import tensorflow as tf

            from bert_tf.tokenization.graph_tokenizer import GraphWordpiece
            graph = GraphWordpiece.shared(tuple(self.vocabulary.id_to_token),
                                          self.do_lower_case)

            @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
            def encode(strings):
                ids = graph.tokenize(strings)
                return ids.flat_values, ids.row_splits

            self._graph_fn = lambda chunk: encode(tf.constant(chunk, tf.string))
        chunks = [data[i:i + GRAPH_CHUNK] for i in range(0, len(data), GRAPH_CHUNK)]
        out = []
        # The graph calls release the GIL: a few run in threads while this one turns finished
        # chunks into lists (1.6x the throughput of one call at a time on 2 cores).
        with _gc_paused(), futures.ThreadPoolExecutor(GRAPH_THREADS) as pool:
            for values, splits in pool.map(self._graph_fn, chunks):
                values, splits = values.numpy().tolist(), splits.numpy().tolist()
                out.extend(values[a:b] for a, b in zip(splits[:-1], splits[1:]))
        return out

    def tokenize_with_offsets(self, text: str | bytes
                              ) -> tuple[list[str], list[int], list[int]]:
        """(tokens, starts, ends): tokenize(text) plus, for each token, the character span
        [start, end) of `text` (after convert_to_unicode) it comes from. A piece covers the
        characters it was made of, a [UNK] its whole word; characters deleted by cleaning
        belong to no token."""
        text = _text.convert_to_unicode(text)
        tokens, starts, ends = [], [], []
        for word, index in _words_with_index(text):
            chars, first, last = _normalize_with_index(word, index, self.do_lower_case)
            for lo, hi in _punctuation_spans(chars):
                piece_word = chars[lo:hi]
                pieces = wordpiece.wordpiece_word(piece_word, self.vocab, _vocab.UNK)
                if pieces == [_vocab.UNK]:
                    spans = [(lo, hi)]
                else:
                    spans, at = [], lo
                    for p in pieces:
                        n = len(p) - (len(wordpiece.SUFFIX_INDICATOR) if at > lo else 0)
                        spans.append((at, at + n))
                        at += n
                for p, (a, b) in zip(pieces, spans):
                    tokens.append(p)
                    starts.append(first[a])
                    ends.append(last[b - 1] + 1)
        return tokens, starts, ends


def _words_with_index(text):
    """(word, [index of each char in text]) for each word of the cleaned, CJK-spaced text."""
    word, index = [], []
    for i, c in enumerate(text):
        if _text.is_deleted(c):
            continue
        if c.isspace() or _text.is_whitespace(c) or _text.is_cjk_char(ord(c)):
            if word:
                yield "".join(word), index
                word, index = [], []
            if _text.is_cjk_char(ord(c)):
                yield c, [i]
            continue
        word.append(c)
        index.append(i)
    if word:
        yield "".join(word), index


def _normalize_with_index(word, index, do_lower_case):
    """The word as normalize_word sees it before punctuation splitting, with the first and
    last source index of each normalized character."""
    if not do_lower_case:
        return word, index, index
    lowered = word.lower()
    chars, src, at = [], [], 0
    for c, i in zip(word, index):
        low = c.lower()
        if c == "\u03a3":  # capital sigma: final or not depends on the word, take it from there
            low = lowered[at]
        at += len(low)
        for n in basic.strip_accents(low):
            chars.append(n)
            src.append(i)
    normalized = basic.strip_accents(lowered)
    if "".join(chars) != normalized:
        # NFD reordered spacing combining marks across characters (a few Mc code points with
        # a non-zero combining class): give every character the whole word's span.
        n = len(normalized)
        return normalized, [index[0]] * n, [index[-1]] * n
    return normalized, src, src


def _punctuation_spans(chars):
    """[lo, hi) spans of the pieces split_on_punctuation makes of `chars`."""
    spans, lo = [], None
    for k, c in enumerate(chars):
        if _text.is_punctuation(c):
            if lo is not None:
                spans.append((lo, k))
                lo = None
            spans.append((k, k + 1))
        elif lo is None:
            lo = k
    if lo is not None:
        spans.append((lo, len(chars)))
    return spans
