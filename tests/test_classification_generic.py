"""GenericProcessor: user TSV/CSV/JSONL files with named or numbered columns."""

import json

import pytest

from bert_tf.data.classification import (BadRowError, DataFormatError, GenericProcessor,
                                         InputExample, get_processor)


def test_tsv_by_name_infers_labels_numerically_sorted(tmp_path):
    (tmp_path / "train.tsv").write_text(
        "id\tquery\tdoc\tgrade\nq1\tA ?\tDoc a .\t10\nq2\tB ?\tDoc b .\t2\nq3\tC ?\tDoc c .\t1\n")
    (tmp_path / "dev.tsv").write_text("id\tquery\tdoc\tgrade\nd1\tD ?\tDoc d .\t2\n")
    (tmp_path / "test.tsv").write_text("id\tquery\tdoc\nt1\tE ?\tDoc e .\n")
    processor = get_processor("generic", text_a_column="query", text_b_column="doc",
                              label_column="grade", id_column="id")
    assert processor.get_train_examples(tmp_path)[0] == InputExample("train-q1", "A ?",
                                                                     "Doc a .", "10")
    assert processor.get_labels() == ["1", "2", "10"]
    assert processor.info.labels == ("1", "2", "10")
    assert processor.get_dev_examples(tmp_path) == [InputExample("dev-d1", "D ?", "Doc d .", "2")]
    # test files need no label column
    assert processor.get_test_examples(tmp_path) == [InputExample("test-t1", "E ?", "Doc e .")]


def test_dev_labels_are_checked_against_those_inferred_from_train(tmp_path):
    (tmp_path / "train.tsv").write_text("text\tlabel\na .\tpos\nb .\tneg\n")
    (tmp_path / "dev.tsv").write_text("text\tlabel\nc .\tpos\nd .\tmixed\n")
    processor = GenericProcessor("text", "label")
    # dev first: the label list is inferred from train.tsv on the way
    with pytest.raises(BadRowError, match=r"dev.tsv:3: unknown label 'mixed'; expected one of "
                                          r"\['neg', 'pos'\]"):
        processor.get_dev_examples(tmp_path)
    assert processor.get_labels() == ["neg", "pos"]


def test_given_labels_are_kept_in_their_order(tmp_path):
    (tmp_path / "train.tsv").write_text("text\tlabel\na .\tpos\nb .\tneg\n")
    processor = GenericProcessor("text", "label", labels=["pos", "neg", "neutral"])
    assert processor.get_labels() == ["pos", "neg", "neutral"]
    processor.get_train_examples(tmp_path)
    assert processor.get_labels() == ["pos", "neg", "neutral"]


def test_label_list_unknown_without_data(tmp_path):
    with pytest.raises(ValueError, match="label list is unknown"):
        GenericProcessor("text", "label").get_labels()
    (tmp_path / "train.tsv").write_text("text\tlabel\na .\tpos\nb .\tpos\n")
    with pytest.raises(DataFormatError, match="at least 2 distinct labels"):
        GenericProcessor("text", "label").get_labels(tmp_path)


def test_headerless_tsv_by_position_accepts_digit_strings(tmp_path):
    (tmp_path / "train.tsv").write_text("1\tfirst .\n0\tsecond .\n1\tthird .\tx\n")
    processor = GenericProcessor(text_a_column="1", label_column=0, has_header=False)
    with pytest.raises(BadRowError, match=r"train.tsv:3: 3 fields where line 1 \(the first "
                                          r"row\) has 2"):
        processor.get_train_examples(tmp_path)
    processor = GenericProcessor("1", 0, has_header=False, skip_bad_rows=True)
    assert processor.get_train_examples(tmp_path) == [
        InputExample("train-0", "first .", None, "1"),
        InputExample("train-1", "second .", None, "0")]
    assert processor.last_read.num_skipped == 1


def test_column_names_need_a_header():
    with pytest.raises(ValueError, match="'text' is a name but has_header=False"):
        GenericProcessor("text", 0, has_header=False)


def test_csv_with_quoted_commas_quotes_and_newlines(tmp_path):
    (tmp_path / "train.csv").write_text(
        'sentence,label\n'
        '"Hello, world",greeting\n'
        '"She said ""hi""\nthen left",story\n'
        'plain,greeting\n'
        ',story\n')
    processor = GenericProcessor("sentence", "label", fmt="csv")
    with pytest.raises(BadRowError, match=r"train.csv:6: empty text in column 'sentence'"):
        processor.get_train_examples(tmp_path)  # line 6: the multi-line record counts twice
    processor = GenericProcessor("sentence", "label", fmt="csv", skip_bad_rows=True)
    assert [e.text_a for e in processor.get_train_examples(tmp_path)] == [
        "Hello, world", 'She said "hi"\nthen left', "plain"]
    assert processor.last_read.skipped == [(6, "empty text in column 'sentence'")]


def test_csv_syntax_error_names_the_record(tmp_path):
    (tmp_path / "train.csv").write_text('text,label\nok,a\n"broken"x,b\n')
    with pytest.raises(DataFormatError, match=r"train.csv:3: CSV syntax error"):
        GenericProcessor("text", "label", fmt="csv").get_train_examples(tmp_path)


def test_jsonl_records(tmp_path):
    rows = [{"premise": "A .", "hypothesis": "B .", "y": 1},
            {"premise": "C .", "hypothesis": "D .", "y": 0}]
    lines = [json.dumps(r) for r in rows] + ["{not json", json.dumps({"premise": "E ."}),
                                             json.dumps(["a list"])]
    (tmp_path / "train.jsonl").write_text("\n".join(lines) + "\n")
    processor = GenericProcessor("premise", "y", "hypothesis", fmt="jsonl")
    with pytest.raises(BadRowError, match=r"train.jsonl:3: invalid JSON"):
        processor.get_train_examples(tmp_path)
    processor = GenericProcessor("premise", "y", "hypothesis", fmt="jsonl", skip_bad_rows=True)
    assert processor.get_train_examples(tmp_path) == [
        InputExample("train-0", "A .", "B .", "1"), InputExample("train-1", "C .", "D .", "0")]
    assert [line for line, _ in processor.last_read.skipped] == [3, 4, 5]
    assert "missing key(s) ['hypothesis', 'y']" in processor.last_read.skipped[1][1]
    assert processor.get_labels() == ["0", "1"]


def test_jsonl_columns_are_keys_not_positions():
    with pytest.raises(ValueError, match="JSONL columns are keys"):
        GenericProcessor(0, "label", fmt="jsonl")


def test_regression_and_custom_file_names(tmp_path):
    (tmp_path / "scores.tsv").write_text("a\tb\ts\nx .\ty .\t0.25\nz .\tw .\t-1e-3\n")
    processor = GenericProcessor("a", "s", "b", is_regression=True, train_file="scores.tsv")
    assert [e.label for e in processor.get_train_examples(tmp_path)] == [0.25, -0.001]
    assert processor.is_regression and processor.num_labels == 1
    assert processor.get_labels() == []
    assert processor.info.metric_task == "regression"
    assert processor.info.primary_metric == "corr"


def test_missing_label_column_for_training(tmp_path):
    (tmp_path / "train.tsv").write_text("text\na .\n")
    with pytest.raises(ValueError, match="label_column is required to read the train set"):
        GenericProcessor("text", labels=["a", "b"]).get_train_examples(tmp_path)
