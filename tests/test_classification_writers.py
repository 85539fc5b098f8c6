"""Prediction outputs: test_results.tsv, GLUE submission files (checked against the real GLUE
test files) and eval_results.txt."""

import os

import numpy as np
import pytest

from bert_tf.data.classification import (get_processor, read_eval_results, submission_path,
                                         write_eval_results, write_glue_submission,
                                         write_test_results)
from helpers import shared_path


def test_test_results_tsv_has_one_line_of_probabilities_per_row(tmp_path):
    probabilities = np.array([[0.1, 0.9], [0.75, 0.25], [0.5, 0.5]], dtype=np.float32)
    path = write_test_results(tmp_path / "test_results.tsv", probabilities, num_examples=3)
    assert open(path).read() == "0.1\t0.9\n0.75\t0.25\n0.5\t0.5\n"


def test_test_results_for_regression_has_one_score_per_line(tmp_path):
    path = write_test_results(tmp_path / "test_results.tsv", np.array([[4.5], [0.25]]))
    assert open(path).read() == "4.5\n0.25\n"


def test_prediction_count_must_match_the_examples(tmp_path):
    with pytest.raises(ValueError, match="2 predictions for 3 examples"):
        write_test_results(tmp_path / "t.tsv", np.ones((2, 2)), num_examples=3)
    with pytest.raises(ValueError, match="2 predictions for 3 examples"):
        write_glue_submission(tmp_path, "mrpc", [0, 1], num_examples=3)
    assert os.listdir(tmp_path) == []


# Real test files: one submission line per test row, indices copied from the file.
@pytest.mark.parametrize("task,folder,name", [("cola", "CoLA", "CoLA.tsv"),
                                              ("sst-2", "SST-2", "SST-2.tsv"),
                                              ("mrpc", "MRPC", "MRPC.tsv"),
                                              ("sts-b", "STS-B", "STS-B.tsv")])
def test_submission_has_a_line_per_real_test_row(tmp_path, task, folder, name):
    data_dir = shared_path(f"data/glue/{folder}")
    processor = get_processor(task)
    examples = processor.get_test_examples(data_dir)
    rng = np.random.default_rng(0)
    if processor.is_regression:
        predictions = rng.uniform(0, 5, size=(len(examples), 1)).astype(np.float32)
    else:
        predictions = rng.dirichlet([1, 1], size=len(examples)).astype(np.float32)
    path = write_glue_submission(tmp_path, task, predictions, num_examples=len(examples))
    assert path == os.path.join(str(tmp_path), name)

    with open(data_dir / "test.tsv", encoding="utf-8") as f:
        test_rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert lines[0] == "index\tprediction"
    assert len(lines) - 1 == len(test_rows)
    body = [line.split("\t") for line in lines[1:]]
    assert [index for index, _ in body] == [row[0] for row in test_rows]
    if processor.is_regression:
        assert np.allclose([float(p) for _, p in body], predictions[:, 0], atol=1e-6)
    else:
        assert [p for _, p in body] == [str(i) for i in predictions.argmax(axis=1)]


def test_submission_uses_label_strings_and_glue_file_names(tmp_path):
    write_glue_submission(tmp_path, "mnli", np.array([0, 1, 2]))
    write_glue_submission(tmp_path, "mnli-mm", np.array([[0.1, 0.2, 0.7]]))
    write_glue_submission(tmp_path, "ax", np.array([1]))
    write_glue_submission(tmp_path, "rte", np.array([1, 0]), indices=[7, 9])
    assert (tmp_path / "MNLI-m.tsv").read_text() == (
        "index\tprediction\n0\tcontradiction\n1\tentailment\n2\tneutral\n")
    assert (tmp_path / "MNLI-mm.tsv").read_text() == "index\tprediction\n0\tneutral\n"
    assert (tmp_path / "AX.tsv").read_text() == "index\tprediction\n0\tentailment\n"
    assert (tmp_path / "RTE.tsv").read_text() == (
        "index\tprediction\n7\tnot_entailment\n9\tentailment\n")
    assert sorted(os.listdir(tmp_path)) == ["AX.tsv", "MNLI-m.tsv", "MNLI-mm.tsv", "RTE.tsv"]


@pytest.mark.parametrize("task,predictions,match", [
    ("mrpc", np.array([[0.2, 0.3, 0.5]]), "3 columns for 2 labels"),
    ("mrpc", np.array([2]), r"class ids must be in \[0, 2\)"),
    ("mrpc", np.array([0.7]), "integer class ids"),
    ("sts-b", np.array([1.0, np.nan]), "non-finite prediction at row 1"),
    ("xnli", np.array([0]), "not a GLUE task"),
])
def test_bad_submissions_are_refused(tmp_path, task, predictions, match):
    with pytest.raises(ValueError, match=match):
        write_glue_submission(tmp_path, task, predictions)


def test_submission_path():
    assert submission_path("/out", "STS-B") == "/out/STS-B.tsv"


def test_eval_results_original_format_round_trips(tmp_path):
    results = {"eval_loss": 0.5, "eval_accuracy": np.float32(0.75), "global_step": 100,
               "f1": 0.8125}
    path = write_eval_results(tmp_path / "eval_results.txt", results)
    assert open(path).read() == ("eval_accuracy = 0.75\neval_loss = 0.5\nf1 = 0.8125\n"
                                 "global_step = 100\n")
    assert read_eval_results(path) == {"eval_accuracy": 0.75, "eval_loss": 0.5, "f1": 0.8125,
                                       "global_step": 100}


def test_rewriting_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "eval_results.txt"
    write_eval_results(path, {"a": 1})
    write_eval_results(path, {"b": 2})
    assert path.read_text() == "b = 2\n"
    assert os.listdir(tmp_path) == ["eval_results.txt"]


def test_malformed_eval_results_name_the_line(tmp_path):
    (tmp_path / "eval_results.txt").write_text("a = 1\nbroken\n")
    with pytest.raises(ValueError, match=r"eval_results.txt:2: expected 'key = value'"):
        read_eval_results(tmp_path / "eval_results.txt")


def test_writes_through_tf_gfile_urls():
    import tensorflow as tf
    out = "ram://bert_tf_test_writers/out"
    path = write_glue_submission(out, "sst-2", np.array([1, 0]))
    assert path == out + "/SST-2.tsv"
    with tf.io.gfile.GFile(path, "rb") as f:
        assert f.read() == b"index\tprediction\n0\t1\n1\t0\n"
    assert tf.io.gfile.listdir(out) == ["SST-2.tsv"]
