"""SWAG csv files of both layouts, and the packed choice features."""

import collections
import csv

import numpy as np
import pytest

from bert_tf.data.swag import SwagError, encode_swag, read_swag, truncate_pair
from bert_tf.tokenization import FullTokenizer
from helpers import shared_path


@pytest.fixture(scope="module")
def regular():
    return read_swag(shared_path("data/swag/train.first999.csv"))


@pytest.fixture(scope="module")
def full():
    return read_swag(shared_path("data/swag/train_full.first998.csv"))


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(str(shared_path("data/reference/vocab.txt")), do_lower_case=True)


def test_regular_layout_is_read_with_its_labels(regular):
    examples, layout, skipped = regular
    assert (layout, len(examples), skipped) == ("regular", 999, 0)
    # ../shared/data/README.md section 4: label counts of the file.
    assert collections.Counter(e.label for e in examples) == {0: 263, 1: 221, 2: 253, 3: 262}
    first = examples[0]
    assert first.example_id == "anetv_jkn6uvmqwh4/3416" and first.line == 2
    assert first.context.startswith("Members of the procession walk down the street")
    assert first.start == "A drum line"
    assert first.endings[first.label] == ("passes by walking down the street playing their "
                                          "instruments.")
    assert first.choice_texts()[0] == (first.context, "A drum line passes by walking down the "
                                       "street playing their instruments.")


def test_full_layout_puts_gold_among_three_distractors(full):
    examples, layout, _ = full
    assert (layout, len(examples)) == ("full", 998)
    rows = list(csv.DictReader(open(shared_path("data/swag/train_full.first998.csv"),
                                    encoding="utf-8")))
    for example, row in zip(examples, rows):
        assert example.endings[example.label] == row["gold-ending"]
        others = example.endings[:example.label] + example.endings[example.label + 1:]
        assert others == [row[f"distractor-{i}"] for i in range(3)]
    # The gold position is spread over the four slots, not always first.
    counts = collections.Counter(e.label for e in examples)
    assert set(counts) == {0, 1, 2, 3} and min(counts.values()) > 150


def test_both_layouts_agree_on_the_same_rows(regular, full):
    # In the released files, 728 of these rows have the gold ending and distractors 0-2 as
    # the four train.csv endings; for those the two readers give the same choice set and gold.
    by_id = {e.example_id: e for e in full[0]}
    same = 0
    for example in regular[0]:
        other = by_id.get(example.example_id)
        if other and set(other.endings) == set(example.endings):
            same += 1
            assert other.endings[other.label] == example.endings[example.label]
            assert (other.context, other.start) == (example.context, example.start)
    assert same == 728


def test_full_layout_with_five_choices_needs_four_distractors(tmp_path):
    examples, _, skipped = read_swag(shared_path("data/swag/train_full.first998.csv"), 5,
                                     skip_bad_rows=True)
    assert all(len(e.endings) == 5 for e in examples)
    assert len(examples) + skipped == 998 and skipped == 385     # distractor-3 empty
    with pytest.raises(SwagError, match=r"train_full.first998.csv:3: 3 non-empty distractors"):
        read_swag(shared_path("data/swag/train_full.first998.csv"), 5)


HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2," \
         "ending3,label\n"


def test_bad_label_is_reported_with_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + "0,v,1,s,A man sits.,He,gold,a,b,c,d,2\n"
                             "1,v,2,s,A man sits.,He,gold,a,b,c,d,7\n", encoding="utf-8")
    with pytest.raises(SwagError, match=r"bad.csv:3: label '7' is not 0, 1, 2 or 3"):
        read_swag(path)
    examples, _, skipped = read_swag(path, skip_bad_rows=True)
    assert len(examples) == 1 and skipped == 1


def test_short_row_and_unknown_header_are_reported(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text(HEADER + "0,v,1,s,A man sits.,He,gold,a,b\n", encoding="utf-8")
    with pytest.raises(SwagError, match=r"short.csv:2: 9 columns, the header has 12"):
        read_swag(path)
    path.write_text("id,question,answer\n1,a,b\n", encoding="utf-8")
    with pytest.raises(SwagError, match="neither SWAG layout"):
        read_swag(path)


def test_unlabelled_test_layout_reads_without_labels(tmp_path):
    path = tmp_path / "test.csv"
    path.write_text(HEADER.replace(",label", "") + "0,v,1,s,A man sits.,He,gold,a,b,c,d\n",
                    encoding="utf-8")
    examples, _, _ = read_swag(path)
    assert examples[0].label is None


def test_choices_are_packed_as_context_then_start_and_ending(regular, tokenizer):
    example = regular[0][0]
    arrays = encode_swag([example], tokenizer, 64)
    assert arrays["input_ids"].shape == (1, 4, 64)
    for c, ending in enumerate(example.endings):
        ids = arrays["input_ids"][0, c][arrays["input_mask"][0, c] == 1]
        a = tokenizer.tokenize(example.context)
        b = tokenizer.tokenize(f"{example.start} {ending}")
        assert tokenizer.convert_ids_to_tokens(ids) == ["[CLS]"] + a + ["[SEP]"] + b + ["[SEP]"]
        segments = arrays["segment_ids"][0, c][: len(ids)]
        assert segments.tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert arrays["label_ids"][0] == example.label


def test_long_pairs_are_truncated_longest_side_first(regular, tokenizer):
    assert truncate_pair([1] * 10, [1] * 4, 8) == (4, 4)
    assert truncate_pair([1] * 3, [1] * 10, 8) == (3, 5)
    assert truncate_pair([1] * 5, [1] * 5, 7) == (4, 3)     # ties drop from the second
    arrays = encode_swag(regular[0][:50], tokenizer, 24)
    lengths = arrays["input_mask"].sum(-1)
    assert lengths.max() == 24
    assert np.all(arrays["input_ids"][..., 0] == tokenizer.special_ids["[CLS]"])
