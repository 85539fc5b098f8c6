"""CoNLL-2003 reading and IOB1 -> BIO conversion, on the real files."""

import pytest

from bert_tf.data.ner import ConllError, read_conll, to_bio, write_predictions
from bert_tf.metrics.ner import chunks
from helpers import shared_path


@pytest.fixture(scope="module")
def dev():
    return read_conll(shared_path("data/conll2003/eng.testa"))


@pytest.fixture(scope="module")
def train():
    return read_conll(shared_path("data/conll2003/eng.train"))


def _sentence_starting(conll, words):
    return next(s for s in conll.sentences if s.words[:len(words)] == words)


def test_reader_counts_match_the_official_figures(train, dev):
    # ../shared/data/README.md section 3: documents, sentences, tokens of each file.
    for conll, docs, sentences, tokens in ((train, 946, 14041, 203621), (dev, 216, 3250, 51362)):
        assert conll.labelled
        assert conll.num_documents == docs and len(conll.documents()) == docs
        assert len(conll.sentences) == sentences
        assert sum(len(s.words) for s in conll.sentences) == tokens


def test_bio_entity_counts_match_the_official_counts(train, dev):
    # After conversion every entity starts with exactly one B- tag.
    assert train.entity_counts() == {"LOC": 7140, "MISC": 3438, "ORG": 6321, "PER": 6600}
    assert dev.entity_counts() == {"LOC": 1837, "MISC": 922, "ORG": 1341, "PER": 1842}


def test_iob1_i_tags_that_start_entities_become_b(train):
    first = train.sentences[0]
    assert first.words[:4] == ["EU", "rejects", "German", "call"]
    assert [c[-1] for c in first.columns[:4]] == ["I-ORG", "O", "I-MISC", "O"]   # as in the file
    assert first.tags[:4] == ["B-ORG", "O", "B-MISC", "O"]
    peter = _sentence_starting(train, ["Peter", "Blackburn"])
    assert peter.tags == ["B-PER", "I-PER"]


def test_iob1_b_tag_between_adjacent_entities_of_one_type_is_kept(train):
    # eng.train line 1945-1947: "the Golan Heights Israel captured": two LOC entities touching.
    golan = next(s for s in train.sentences if "Golan" in s.words and "Israel" in s.words)
    k = golan.words.index("Golan")
    assert golan.words[k:k + 3] == ["Golan", "Heights", "Israel"]
    assert [c[-1] for c in golan.columns[k:k + 3]] == ["I-LOC", "I-LOC", "B-LOC"]
    assert golan.tags[k:k + 3] == ["B-LOC", "I-LOC", "B-LOC"]
    # line 3453-3454: "a Taleban MiG-19 fighter": two MISC entities of one word each.
    mig = next(s for s in train.sentences if "MiG-19" in s.words)
    k = mig.words.index("MiG-19")
    assert mig.tags[k - 1:k + 1] == ["B-MISC", "B-MISC"]


def test_conversion_keeps_every_conlleval_chunk(train):
    # Scoring the original IOB1 tags and the converted BIO tags gives the same entities.
    for sentence in train.sentences:
        original = [c[-1] for c in sentence.columns]
        assert chunks(original) == chunks(sentence.tags)


def test_bio_input_is_left_unchanged():
    bio = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O", "B-ORG"]
    assert to_bio(bio) == bio
    assert to_bio(["I-PER", "I-LOC", "O", "I-ORG", "I-ORG"]) == [
        "B-PER", "B-LOC", "O", "B-ORG", "I-ORG"]


def test_predictions_file_keeps_the_input_lines_and_adds_a_column(dev, tmp_path):
    predicted = [["O"] * len(s.words) for s in dev.sentences]
    path = write_predictions(tmp_path / "pred.txt", dev, predicted)
    lines = open(path, encoding="utf-8").read().split("\n")
    assert lines[0] == "-DOCSTART- -X- O O O" and lines[1] == ""
    token_lines = [line.split() for line in lines if line and not line.startswith("-DOCSTART-")]
    assert len(token_lines) == 51362
    assert token_lines[0][:3] == dev.sentences[0].columns[0][:3]
    assert all(fields[-1] == "O" for fields in token_lines)
    reread = read_conll(path)
    assert len(reread.sentences) == len(dev.sentences)
    assert reread.num_documents == dev.num_documents
    # The gold column is written as BIO: the second-to-last column re-reads as dev's tags.
    assert [[c[-2] for c in s.columns] for s in reread.sentences] == [s.tags for s in
                                                                         dev.sentences]


def _write(tmp_path, text):
    path = tmp_path / "data.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_words_only_file_is_unlabelled(tmp_path):
    conll = read_conll(_write(tmp_path, "Peter\nBlackburn\n\nBRUSSELS\n"))
    assert not conll.labelled and conll.sentences[1].words == ["BRUSSELS"]
    assert conll.sentences[0].tags is None
    with pytest.raises(ConllError, match="words only"):
        read_conll(_write(tmp_path, "Peter\n"), require_labels=True)


def test_bad_tag_is_reported_with_its_line(tmp_path):
    path = _write(tmp_path, "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP E-ORG\n")
    with pytest.raises(ConllError, match=r"data.txt:4: tag 'E-ORG'"):
        read_conll(path)


def test_ragged_columns_are_reported_with_their_line(tmp_path):
    path = _write(tmp_path, "EU NNP I-NP I-ORG\nrejects O\n")
    with pytest.raises(ConllError, match=r"data.txt:2: 2 columns, but earlier token lines have 4"):
        read_conll(path)


def test_crlf_and_tabs_are_read(tmp_path):
    conll = read_conll(_write(tmp_path, "EU\tI-ORG\r\nsays\tO\r\n\r\n"))
    assert conll.sentences[0].words == ["EU", "says"]
    assert conll.sentences[0].tags == ["B-ORG", "O"]
