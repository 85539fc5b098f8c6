"""Every runner turns bad input into one line on stderr, `<runner>: error: <message>`, naming the
file and line, or the flag or field, at fault, and exits with status 1; only bugs show a
traceback (bert_tf/cli.py).

Each runner case runs the script on a small input, mostly a few lines of ../shared data with one
fault, that stops it before any training: as `python <script>` runs it (its absl flags,
cli.run, exit status and stderr) but in this process (scripts_in_process.run_script), and in
a process of its own (bert_tf/processes.py) for run_classifier.py and the two data-preparation
scripts, which show the exit status and the single stderr line of a real process."""

import json
import os
import re
import sys

import numpy as np
import pytest

from bert_tf.cli import bad_input_message
from bert_tf.config import ConfigError
from scripts_in_process import run_script
from bert_tf import processes
from helpers import REPO, shared_path


def run_runner(runner, *flags):
    """`python <runner> <flags>` in its own process (forked from a warm interpreter)."""
    return processes.run([sys.executable, runner, *flags], cwd=REPO, capture_output=True,
                         text=True, timeout=300,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def error_line(done, runner):
    """The runner's one error line, after checking the exit status and that no traceback
    was shown."""
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    [line] = [line for line in done.stderr.splitlines()
              if line.startswith(f"{runner}: error: ")]
    return line


def head(rel, lines):
    """The first `lines` lines of a ../shared file."""
    with open(shared_path(rel), encoding="utf-8-sig") as f:
        return [next(f) for _ in range(lines)]


@pytest.fixture
def vocab():
    return str(shared_path("data/reference/vocab.txt"))


@pytest.fixture
def training_flags(vocab, tmp_path):
    return ["--model_preset=tiny", f"--vocab_file={vocab}", "--do_train",
            f"--output_dir={tmp_path / 'out'}"]


# --------------------------------------------------------------------------- run_classifier
def test_classifier_names_the_line_of_a_row_with_missing_columns(tmp_path, training_flags):
    rows = head("data/glue/MRPC/train.tsv", 5)
    rows[3] = "\t".join(rows[3].split("\t")[:3]) + "\n"
    (tmp_path / "train.tsv").write_text("".join(rows), encoding="utf-8")
    done = run_runner("run_classifier.py", "--task_name=mrpc", f"--data_dir={tmp_path}",
                      *training_flags)
    line = error_line(done, "run_classifier.py")
    assert f"{tmp_path / 'train.tsv'}:4: 3 fields where the header has 5" in line


@pytest.mark.parametrize("config,message", [
    ({"hidden_size": 128, "num_hidden_layers": 2}, "missing required field vocab_size"),
    ({"vocab_size": 30522, "hidden_size": "128"},
     "hidden_size must be a positive integer, got '128'"),
    ('{"vocab_size": 30522,\n "hidden_size": 128,\n}', "not valid JSON (line 3"),
], ids=["missing field", "wrong type", "bad json"])
def test_classifier_names_the_bert_config_field_at_fault(tmp_path, vocab, config, message):
    path = tmp_path / "bert_config.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
    done = run_script("run_classifier.py", "--task_name=mrpc", f"--data_dir={tmp_path}",
                      f"--bert_config_file={path}", f"--vocab_file={vocab}", "--do_train",
                      f"--output_dir={tmp_path / 'out'}")
    assert f"{path}: {message}" in error_line(done, "run_classifier.py")


def test_classifier_names_a_missing_vocab_file(tmp_path):
    done = run_script("run_classifier.py", "--task_name=mrpc", f"--data_dir={tmp_path}",
                      "--model_preset=tiny", f"--vocab_file={tmp_path / 'vocab.txt'}",
                      "--do_train", f"--output_dir={tmp_path / 'out'}")
    line = error_line(done, "run_classifier.py")
    assert f"--vocab_file {tmp_path / 'vocab.txt'} does not exist" in line


# --------------------------------------------------------------------------- run_squad
def test_squad_names_the_question_without_its_text(tmp_path, training_flags):
    document = json.loads(shared_path("data/squad/train-v1.1.first44articles.json").read_text(
        encoding="utf-8"))
    question = document["data"][0]["paragraphs"][0]["qas"][0]
    del question["question"]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    done = run_script("run_squad.py", f"--train_file={path}", *training_flags)
    line = error_line(done, "run_squad.py")
    assert str(path) in line and f"question id '{question['id']}': missing key 'question'" in line


# --------------------------------------------------------------------------- run_ner
def test_ner_names_the_conll_line_with_missing_columns(tmp_path, training_flags):
    lines = head("data/conll2003/eng.train", 8)
    lines[5] = lines[5].split()[0] + "\n"
    path = tmp_path / "train.txt"
    path.write_text("".join(lines), encoding="utf-8")
    done = run_script("run_ner.py", f"--train_file={path}", *training_flags)
    assert f"{path}:6: 1 columns" in error_line(done, "run_ner.py")


# --------------------------------------------------------------------------- run_swag
def test_swag_names_the_file_of_an_unknown_header(tmp_path, training_flags):
    rows = head("data/swag/train.first999.csv", 3)
    rows[0] = rows[0].replace("ending0", "ending_zero")
    path = tmp_path / "train.csv"
    path.write_text("".join(rows), encoding="utf-8")
    done = run_script("run_swag.py", f"--train_file={path}", *training_flags)
    assert f"{path}:1: header " in error_line(done, "run_swag.py")


# --------------------------------------------------------------------------- run_embedding
def test_embedding_names_the_line_of_a_row_without_its_positive(tmp_path, training_flags):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"anchor": "a", "positive": "b"}\n{"anchor": "c"}\n', encoding="utf-8")
    done = run_script("run_embedding.py", f"--train_file={path}", *training_flags)
    assert f"{path}:2: has no 'positive'" in error_line(done, "run_embedding.py")


# --------------------------------------------------------------------------- run_pretraining
def test_pretraining_names_an_input_that_is_text_not_records(tmp_path, training_flags):
    corpus = str(shared_path("data/corpus/sample_text.txt"))
    done = run_script("run_pretraining.py", f"--input_file={corpus}", *training_flags)
    assert f"{corpus}: not a TFRecord file" in error_line(done, "run_pretraining.py")


@pytest.fixture
def static_records(tmp_path):
    """A pre-training TFRecord file of one statically masked record: length 64, 10 masks."""
    import tensorflow as tf

    def ints(n):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * n))
    features = {name: ints(64) for name in ("input_ids", "input_mask", "segment_ids")}
    features.update(masked_lm_positions=ints(10), masked_lm_ids=ints(10),
                    next_sentence_labels=ints(1), masked_lm_weights=tf.train.Feature(
                        float_list=tf.train.FloatList(value=[1.0] * 10)))
    path = str(tmp_path / "train.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(tf.train.Example(features=tf.train.Features(
            feature=features)).SerializeToString())
    return path


def test_pretraining_records_of_another_length_name_the_flag(static_records):
    from bert_tf.data.pretraining.dataset import check_first_record
    check_first_record(static_records, 64, 10)
    with pytest.raises(ValueError, match=re.escape(
            f"{static_records}: input_ids has 64 values, not --max_seq_length=128")):
        check_first_record(static_records, 128, 10)


def test_pretraining_masked_records_are_refused_for_dynamic_masking(static_records):
    from bert_tf.data.pretraining.dataset import check_first_record
    with pytest.raises(ValueError, match="masked already"):
        check_first_record(static_records, 64, 10, dynamic_masking=True)


# --------------------------------------------------------------------------- data preparation
def test_create_pretraining_data_names_a_missing_vocab_file(tmp_path):
    done = run_runner("create_pretraining_data.py",
                      f"--input_file={shared_path('data/corpus/sample_text.txt')}",
                      f"--output_file={tmp_path / 'out.tfrecord'}",
                      f"--vocab_file={tmp_path / 'vocab.txt'}")
    line = error_line(done, "create_pretraining_data.py")
    assert f"vocab_file not found: {tmp_path / 'vocab.txt'}" in line


def test_build_vocab_names_input_without_words(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n  \n\t\n", encoding="utf-8")
    done = run_runner("build_vocab.py", f"--input_file={path}",
                      f"--output_file={tmp_path / 'vocab.txt'}")
    assert f"{path}: no words" in error_line(done, "build_vocab.py")
    assert not (tmp_path / "vocab.txt").exists()


# --------------------------------------------------------------------------- model runners
def test_extract_features_names_an_input_file_without_text(tmp_path, vocab):
    path = tmp_path / "input.txt"
    path.write_text("\n\n", encoding="utf-8")
    done = run_script("extract_features.py", f"--input_file={path}",
                      f"--output_file={tmp_path / 'features.jsonl'}", "--model_preset=tiny",
                      f"--vocab_file={vocab}", f"--init_checkpoint={tmp_path / 'model'}")
    assert f"{path}: no text" in error_line(done, "extract_features.py")


def test_predict_masked_names_the_line_without_a_mask_before_reading_the_checkpoint(
        tmp_path, vocab):
    path = tmp_path / "probes.txt"
    path.write_text("the [MASK] of the union\n" + head("data/corpus/sample_text.txt", 1)[0],
                    encoding="utf-8")
    done = run_script("predict_masked.py", f"--input_file={path}", "--model_preset=tiny",
                      f"--vocab_file={vocab}", f"--init_checkpoint={tmp_path / 'model'}")
    assert f"{path}:2: no [MASK] in " in error_line(done, "predict_masked.py")


def test_export_savedmodel_names_a_missing_checkpoint(tmp_path, vocab):
    checkpoint = tmp_path / "bert_model.ckpt"
    done = run_script("export_savedmodel.py", f"--export_dir={tmp_path / 'export'}",
                      f"--init_checkpoint={checkpoint}", "--model_preset=tiny",
                      f"--vocab_file={vocab}", "--task=classifier", "--labels=no,yes")
    assert f"{checkpoint}: no such checkpoint" in error_line(done, "export_savedmodel.py")


# --------------------------------------------------------------------------- what is bad input
def raised(function, *args):
    try:
        function(*args)
    except Exception as error:
        return error
    raise AssertionError(f"{function} did not raise")


def test_a_missing_file_is_reported_as_path_and_reason(tmp_path):
    error = raised(open, tmp_path / "missing.txt")
    assert bad_input_message(error) == f"{tmp_path / 'missing.txt'}: No such file or directory"


def test_a_library_error_class_is_bad_input_wherever_it_is_raised():
    assert bad_input_message(ConfigError("bert_config.json: missing required field vocab_size")
                             ) == "bert_config.json: missing required field vocab_size"


def test_a_value_error_raised_inside_a_dependency_is_a_bug():
    error = raised(np.reshape, np.zeros(3), (2, 2))
    assert isinstance(error, ValueError) and bad_input_message(error) is None


def test_other_exception_types_are_bugs():
    assert bad_input_message(raised({}.__getitem__, "vocab_size")) is None


def test_an_existing_path_is_bad_input(tmp_path):
    error = raised(os.mkdir, tmp_path)
    assert bad_input_message(error) == f"{tmp_path}: File exists"


def test_a_value_error_from_a_raise_statement_of_ours_is_bad_input():
    from bert_tf.serving.padding import length_buckets
    assert bad_input_message(raised(length_buckets, 0)) == "max_length must be >= 1, got 0"


def test_a_value_error_from_a_failing_expression_of_ours_is_a_bug():
    import bert_tf
    code = compile("first, second = [1, 2, 3]",
                   os.path.join(os.path.dirname(bert_tf.__file__), "jobs", "options.py"), "exec")
    error = raised(exec, code, {})
    assert isinstance(error, ValueError) and bad_input_message(error) is None
