"""Greedy longest-match-first WordPiece, as google-research/bert's WordpieceTokenizer."""

from typing import Mapping

from bert_tf.tokenization import text as _text

SUFFIX_INDICATOR = "##"
MAX_INPUT_CHARS_PER_WORD = 200


def wordpiece_word(word, vocab, unk_token, max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD):
    """WordPiece pieces of one word: the longest vocabulary prefix, then the longest
    "##"-prefixed continuation, and so on; [UNK] alone if any position has no match or the
    word has more than `max_input_chars_per_word` characters."""
    if len(word) > max_input_chars_per_word:
        return [unk_token]
    pieces, start, n = [], 0, len(word)
    while start < n:
        end = n
        while end > start:
            piece = word[start:end] if start == 0 else SUFFIX_INDICATOR + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return [unk_token]
        pieces.append(piece)
        start = end
    return pieces


class WordpieceTokenizer:
    """Splits whitespace-separated, already normalized words into WordPiece tokens."""

    def __init__(self, vocab: Mapping[str, int], unk_token: str = "[UNK]",
                 max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD) -> None:
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text: str | bytes) -> list[str]:
        """WordPiece tokens of each whitespace-separated word of `text`, in order."""
        out = []
        for word in _text.whitespace_tokenize(_text.convert_to_unicode(text)):
            out.extend(wordpiece_word(word, self.vocab, self.unk_token,
                                      self.max_input_chars_per_word))
        return out
