"""The google-research/bert tokenization.py API: names, helpers and documented behaviour."""

import pytest

from bert_tf import tokenization
from tests.helpers import shared_path

GOOGLE_NAMES = ["FullTokenizer", "BasicTokenizer", "WordpieceTokenizer", "load_vocab",
                "convert_to_unicode", "printable_text", "whitespace_tokenize",
                "validate_case_matches_checkpoint", "convert_by_vocab",
                "convert_tokens_to_ids", "convert_ids_to_tokens"]


@pytest.fixture(scope="module")
def tokenizer():
    return tokenization.FullTokenizer(str(shared_path("data/reference/vocab.txt")), True)


def test_module_exposes_google_names():
    missing = [n for n in GOOGLE_NAMES if not hasattr(tokenization, n)]
    assert missing == []


def test_full_tokenizer_attributes(tokenizer):
    assert len(tokenizer.vocab) == 30522 and tokenizer.vocab["[UNK]"] == 100
    assert tokenizer.inv_vocab[101] == "[CLS]"
    assert isinstance(tokenizer.basic_tokenizer, tokenization.BasicTokenizer)
    assert isinstance(tokenizer.wordpiece_tokenizer, tokenization.WordpieceTokenizer)


def test_convert_to_unicode_drops_undecodable_bytes():
    assert tokenization.convert_to_unicode(b"caf\xc3\xa9 \xff\xfeok") == "café ok"
    assert tokenization.printable_text(b"a\x80b") == "ab"
    assert tokenization.convert_to_unicode("já") == "já"
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenization.convert_to_unicode(3)


def test_tokenize_accepts_invalid_utf8_bytes(tokenizer):
    assert tokenizer.tokenize(b"hello \xff\xfewor\x80ld") == ["hello", "world"]


def test_whitespace_tokenize():
    assert tokenization.whitespace_tokenize("  a\tb\n c  ") == ["a", "b", "c"]
    assert tokenization.whitespace_tokenize("   ") == []


def test_basic_tokenizer_examples():
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    assert basic.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are",
                                                             "you", "?"]
    assert basic.tokenize("H\u00e9llo") == ["hello"]
    assert basic.tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]
    cased = tokenization.BasicTokenizer(do_lower_case=False)
    assert cased.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["HeLLo", "!", "how", "Are",
                                                             "yoU", "?"]


def test_wordpiece_tokenizer_greedy_longest_match_and_limit():
    vocab = {t: i for i, t in enumerate(["[UNK]", "want", "##want", "##ed", "wa", "un",
                                         "runn", "##ing"])}
    wp = tokenization.WordpieceTokenizer(vocab=vocab)
    assert wp.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert wp.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert wp.tokenize("") == []
    assert wp.max_input_chars_per_word == 200
    assert tokenization.WordpieceTokenizer(vocab, max_input_chars_per_word=3).tokenize(
        "want") == ["[UNK]"]


def test_words_over_200_characters_are_unknown(tokenizer):
    assert tokenizer.tokenize("a" * 200) != ["[UNK]"]
    assert tokenizer.tokenize("a" * 201) == ["[UNK]"]


def test_convert_unknown_token_names_it(tokenizer):
    with pytest.raises(KeyError, match="notatoken"):
        tokenizer.convert_tokens_to_ids(["hello", "notatoken"])
    with pytest.raises(KeyError, match="99999"):
        tokenizer.convert_ids_to_tokens([99999])


@pytest.mark.parametrize("lower,ckpt", [
    (False, "gs://bucket/uncased_L-12_H-768_A-12/bert_model.ckpt"),
    (True, "/models/cased_L-24_H-1024_A-16/bert_model.ckpt"),
    (True, "multi_cased_L-12_H-768_A-12/bert_model.ckpt"),
])
def test_validate_case_rejects_contradicting_flag(lower, ckpt):
    with pytest.raises(ValueError, match="do_lower_case"):
        tokenization.validate_case_matches_checkpoint(lower, ckpt)


@pytest.mark.parametrize("lower,ckpt", [
    (True, "gs://bucket/uncased_L-12_H-768_A-12/bert_model.ckpt"),
    (False, "cased_L-12_H-768_A-12/bert_model.ckpt"),
    (False, "/my/own_model/bert_model.ckpt"),
    (True, ""), (True, None), (False, "/path/model.ckpt-1000"),
])
def test_validate_case_accepts_consistent_or_unknown(lower, ckpt):
    tokenization.validate_case_matches_checkpoint(lower, ckpt)


def test_special_ids_found_by_name(tokenizer):
    assert tokenizer.special_ids == {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102,
                                     "[MASK]": 103}
    assert tokenizer.vocabulary.mask_id == 103


def test_tokenize_with_offsets_spans_source_characters(tokenizer):
    text = "Ünbelievable, naïve\u200b ΣΊΣΥΦΟΣ 東京"
    tokens, starts, ends = tokenizer.tokenize_with_offsets(text)
    assert tokens == tokenizer.tokenize(text)
    assert list(zip(tokens, [text[s:e] for s, e in zip(starts, ends)])) == [
        ("unbelievable", "Ünbelievable"), (",", ","), ("naive", "naïve"), ("σ", "Σ"),
        ("##ι", "Ί"), ("##σ", "Σ"), ("##υ", "Υ"), ("##φ", "Φ"), ("##ος", "ΟΣ"),
        ("東", "東"), ("京", "京")]
