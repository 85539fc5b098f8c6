"""Vocabulary files: special tokens found by name, clear errors for malformed files."""

import pytest

from bert_tf import tokenization
from bert_tf.tokenization import VocabularyError
from tests.helpers import shared_path

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _write(tmp_path, content, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def test_released_vocabulary_loads_in_order():
    vocab = tokenization.load_vocab(str(shared_path("data/reference/vocab.txt")))
    assert len(vocab) == 30522
    assert list(vocab)[:2] == ["[PAD]", "[unused0]"] and vocab["[MASK]"] == 103


def test_special_tokens_are_found_by_name_wherever_they_are(tmp_path):
    path = _write(tmp_path, "hello\n[MASK]\n[SEP]\nworld\n[CLS]\n[UNK]\n[PAD]\n")
    tok = tokenization.FullTokenizer(path)
    assert tok.special_ids == {"[PAD]": 6, "[UNK]": 5, "[CLS]": 4, "[SEP]": 2, "[MASK]": 1}
    assert tok.tokenize("Hello hello WORLD x") == ["hello", "hello", "world", "[UNK]"]


@pytest.mark.parametrize("missing", SPECIAL)
def test_missing_special_token_names_file_and_token(tmp_path, missing):
    path = _write(tmp_path, "".join(t + "\n" for t in SPECIAL if t != missing) + "a\n")
    with pytest.raises(VocabularyError) as err:
        tokenization.FullTokenizer(path)
    assert path in str(err.value) and missing in str(err.value)


def test_empty_file(tmp_path):
    path = _write(tmp_path, "")
    with pytest.raises(VocabularyError, match="empty"):
        tokenization.load_vocab(path)


def test_duplicate_entry_names_both_lines(tmp_path):
    path = _write(tmp_path, "[PAD]\nhello\n[UNK]\nhello\n")
    with pytest.raises(VocabularyError, match=r"line 4: duplicate entry 'hello', already on "
                                              r"line 2"):
        tokenization.load_vocab(path)


def test_empty_entry_names_line(tmp_path):
    path = _write(tmp_path, "[PAD]\n\n[UNK]\n")
    with pytest.raises(VocabularyError, match="line 2: empty entry"):
        tokenization.load_vocab(path)


def test_non_utf8_file_names_line(tmp_path):
    path = _write(tmp_path, b"[PAD]\n[UNK]\ncaf\xe9\n")
    with pytest.raises(VocabularyError, match=r"line 3: not valid UTF-8") as err:
        tokenization.load_vocab(path)
    assert path in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(VocabularyError, match="not found"):
        tokenization.load_vocab(str(tmp_path / "nope.txt"))


def test_lines_are_stripped_like_google_and_bom_ignored(tmp_path):
    path = _write(tmp_path, b"\xef\xbb\xbf[PAD]\r\n  hello \n[UNK]")
    assert list(tokenization.load_vocab(path).items()) == [("[PAD]", 0), ("hello", 1),
                                                          ("[UNK]", 2)]
