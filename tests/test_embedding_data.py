"""run_embedding's input: pairs, scored pairs and corpus texts from TSV/CSV/JSONL (bad rows
named by file and line), the in-graph tokenized batches, and the SQuAD-derived retrieval set."""

import json

import numpy as np
import pytest

from bert_tf.data.classification.examples import DataFormatError
from bert_tf.data.embedding import (PAIRS, SCORED, read_rows, read_squad_pairs,
                                    write_squad_retrieval)
from bert_tf.data.embedding.pipeline import make_preprocessor, texts_dataset, training_dataset
from bert_tf.jobs.embedding import read_retrieval_set
from helpers import shared_path


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_glue_sts_b_is_read_as_scored_pairs():
    table = read_rows(shared_path("data/glue/STS-B/dev.tsv"), SCORED)
    assert len(table["score"]) == 1500
    assert table["text_a"][0] == "A man with a hard hat is dancing."
    assert table["text_b"][0] == "A man wearing a hard hat is dancing."
    assert table["score"][:2] == [5.0, 4.75]


@pytest.mark.parametrize("name, text", [
    ("p.tsv", "anchor\tpositive\tnegative\na\tb\tc\n"),
    ("p.csv", 'anchor,positive,negative\n"a",b,c\n'),
    ("p.jsonl", '{"anchor": "a", "positive": "b", "negative": "c", "id": 7}\n'),
])
def test_pairs_with_hard_negatives_in_every_format(tmp_path, name, text):
    table = read_rows(write(tmp_path / name, text), PAIRS)
    assert table == {"anchor": ["a"], "positive": ["b"], "negative": ["c"]}


def test_the_negative_column_is_optional(tmp_path):
    table = read_rows(write(tmp_path / "p.jsonl", '{"anchor": "a", "positive": "b"}\n'), PAIRS)
    assert table == {"anchor": ["a"], "positive": ["b"]}


@pytest.mark.parametrize("name, text, layout, message", [
    ("p.tsv", "anchor\tnegative\na\tb\n", PAIRS, ":1: the header has no column 'positive'"),
    ("p.tsv", "anchor\tpositive\na\tb\nc\n", PAIRS, ":3: expected 2 fields like the header, "
     "got 1"),
    ("p.jsonl", '{"anchor": "a", "positive": "b"}\n{"anchor": "a",\n', PAIRS, ":2: invalid JSON"),
    ("p.jsonl", '{"anchor": "a", "positive": "b", "negative": "n"}\n'
     '{"anchor": "a", "positive": "b"}\n', PAIRS, ":2: has no 'negative' (line 1 has one"),
    ("p.jsonl", '{"anchor": "a", "positive": " "}\n', PAIRS, ":1: empty positive"),
    ("s.csv", "text_a,text_b,score\na,b,high\n", SCORED, ":2: score 'high' is not a number"),
    ("s.csv", "text_a,text_b,score\n", SCORED, ":1: no rows"),
])
def test_bad_rows_are_named_by_file_and_line(tmp_path, name, text, layout, message):
    path = write(tmp_path / name, text)
    with pytest.raises(DataFormatError) as error:
        read_rows(path, layout)
    assert str(error.value).startswith(path + message)


def test_a_score_outside_its_range_is_named(tmp_path):
    path = write(tmp_path / "s.tsv", "sentence1\tsentence2\tscore\na\tb\t5.5\n")
    with pytest.raises(DataFormatError, match=r"s.tsv:2: score 5.5 is outside \[0.0, 5.0\]"):
        read_rows(path, SCORED, score_range=(0.0, 5.0))


def test_an_unknown_extension_is_refused(tmp_path):
    with pytest.raises(ValueError, match="name it .tsv, .csv or .jsonl"):
        read_rows(write(tmp_path / "p.txt", "anchor\tpositive\n"), PAIRS)


def test_squad_questions_point_to_their_paragraphs():
    pairs, paragraphs = read_squad_pairs(shared_path("data/squad/dev-v1.1.half-a.json"), 1)
    assert pairs[0]["anchor"] == "Which NFL team represented the AFC at Super Bowl 50?"
    assert pairs[0]["positive"] == paragraphs[0]["text"]
    assert paragraphs[0]["id"] == "Super_Bowl_50/0"
    assert {p["positive"] for p in pairs} == {p["text"] for p in paragraphs}


def test_the_squad_retrieval_set_is_deterministic_and_searches_every_dev_paragraph(tmp_path):
    train = shared_path("data/squad/train-v1.1.first44articles.json")
    dev = shared_path("data/squad/dev-v1.1.half-a.json")
    counts = write_squad_retrieval(train, dev, tmp_path / "a", max_articles=2)
    write_squad_retrieval(train, dev, tmp_path / "b", max_articles=2)
    for name in counts:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    data = read_retrieval_set(str(tmp_path / "a" / "dev.jsonl"),
                              str(tmp_path / "a" / "dev_corpus.jsonl"))
    assert len(data.corpus) == counts["dev_corpus.jsonl"]
    first = json.loads((tmp_path / "a" / "dev.jsonl").read_text().splitlines()[0])
    assert data.corpus[data.relevant[0][0]] == first["positive"]


def test_training_batches_tokenize_every_column_to_one_length():
    vocab = str(shared_path("data/reference/vocab.txt"))
    table = {"anchor": ["a question?", "another one"],
             "positive": ["a much longer paragraph " * 3, "short"]}
    batch = next(iter(training_dataset(table, ("anchor", "positive"),
                                       make_preprocessor(vocab, True, 64), 2, seed=1)))
    assert set(batch) == {f"{c}_{k}" for c in ("anchor", "positive")
                          for k in ("input_ids", "input_mask", "segment_ids")}
    assert batch["anchor_input_ids"].shape == batch["positive_input_ids"].shape == (2, 16)
    assert np.all(batch["anchor_input_ids"][:, 0] == 101)            # [CLS]


def test_texts_are_embedded_each_once_shortest_first():
    vocab = str(shared_path("data/reference/vocab.txt"))
    texts = ["a rather long sentence of words", "short", "medium length"]
    batches = list(texts_dataset(texts, make_preprocessor(vocab, True, 64), 2))
    order = np.concatenate([b["example_index"].numpy() for b in batches])
    assert order.tolist() == [1, 2, 0]
