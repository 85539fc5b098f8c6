"""create_pretraining_data on bad input: clear errors naming the culprit, or a documented,
counted recovery; and the command-line runner's flags and exit codes."""

import json
import os
import sys

import pytest

from bert_tf.data.pretraining import PretrainingDataOptions, create_pretraining_data
from bert_tf.data.pretraining.inputs import InputError
from tests.helpers import REPO, shared_path
from bert_tf import processes


def _options(**kw):
    defaults = dict(vocab_file=str(shared_path("data/reference/vocab.txt")), dupe_factor=2)
    defaults.update(kw)
    return PretrainingDataOptions(**defaults)


def _sample():
    return str(shared_path("data/corpus/sample_text.txt"))


def test_a_missing_input_file_is_named(tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="input file not found: .*nope.txt"):
        create_pretraining_data(f"{_sample()},{missing}", str(tmp_path / "o"), _options())


def test_a_glob_matching_nothing_is_named(tmp_path):
    with pytest.raises(InputError, match=r"pattern '.*\*\.txt' matches no files"):
        create_pretraining_data(str(tmp_path / "*.txt"), str(tmp_path / "o"), _options())


def test_a_directory_given_as_input_file_is_refused(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        create_pretraining_data(str(tmp_path), str(tmp_path / "o"), _options())


def test_writing_over_an_input_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="also an input file"):
        create_pretraining_data(_sample(), _sample(), _options())


@pytest.mark.parametrize("field,value,message", [
    ("max_seq_length", 4, "max_seq_length=4 is too small"),
    ("max_predictions_per_seq", 0, "max_predictions_per_seq must be >= 1"),
    ("masked_lm_prob", 0.0, "masked_lm_prob must be in"),
    ("dupe_factor", 0, "dupe_factor must be >= 1"),
    ("vocab_file", "/no/vocab.txt", "vocab_file not found: /no/vocab.txt"),
])
def test_unusable_settings_are_named(tmp_path, field, value, message):
    with pytest.raises(ValueError, match=message):
        create_pretraining_data(_sample(), str(tmp_path / "o"), _options(**{field: value}))


def test_the_smallest_max_seq_length_works(tmp_path):
    out = str(tmp_path / "o.tfrecord")
    summary = create_pretraining_data(_sample(), out, _options(max_seq_length=5), num_workers=1)
    assert summary["instances"] > 0 and summary["length_histogram"] == {
        "1-5": summary["instances"]}


def test_non_utf8_bytes_are_dropped_counted_and_located(tmp_path, caplog):
    path = tmp_path / "latin1.txt"
    path.write_bytes("First line is fine.\nSecond line too.\n".encode()
                     + "Caf\xe9 au lait, na\xefve.\n".encode("latin-1")
                     + b"\nAnother document starts.\nIt has two lines.\n")
    caplog.set_level("INFO")
    summary = create_pretraining_data(str(path), str(tmp_path / "o"), _options(), num_workers=1)
    assert summary["non_utf8_bytes_dropped"] == 2
    assert summary["non_utf8_places"] == [f"{path}:3"]
    assert f"dropped 2 bytes that are not UTF-8, at {path}:3" in caplog.text
    assert summary["documents"] == 2 and summary["lines"] == 5


def test_empty_documents_are_dropped_and_counted(tmp_path):
    path = tmp_path / "gaps.txt"
    path.write_text("\n\n\nA real first document.\nWith a second sentence.\n\n\n\n"
                    "\x00\x07\n\u200b\n\n"  # a document whose lines hold no token
                    "Second document here.\nAnd more text.\n\n\n", encoding="utf-8")
    summary = create_pretraining_data(str(path), str(tmp_path / "o"), _options(), num_workers=1)
    assert summary["documents"] == 2
    assert summary["empty_documents_dropped"] == 1
    assert summary["lines_without_tokens"] == 2
    assert summary["instances"] > 0


def test_a_single_document_corpus_works_and_is_flagged(tmp_path, caplog):
    path = tmp_path / "one.txt"
    text = shared_path("data/corpus/sample_text.txt").read_text(encoding="utf-8")
    path.write_text(text.split("\n\n")[0] + "\n", encoding="utf-8")
    caplog.set_level("INFO")
    summary = create_pretraining_data(str(path), str(tmp_path / "o"), _options(), num_workers=1)
    assert summary["documents"] == 1 and summary["instances"] > 0
    assert summary["single_document_shards"] == 1
    assert "held a single document" in caplog.text


def test_a_corpus_without_text_is_an_error(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n  \n\t\n\n", encoding="utf-8")
    out = tmp_path / "o"
    with pytest.raises(ValueError, match="no text found"):
        create_pretraining_data(str(path), str(out), _options(), num_workers=1)
    assert sorted(os.listdir(tmp_path)) == ["blank.txt"]  # nothing left behind


def _run(*flags):
    return processes.run([sys.executable, str(REPO / "create_pretraining_data.py"), *flags],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def test_the_runner_takes_the_original_flags(tmp_path):
    out = tmp_path / "out.tfrecord"
    result = _run(f"--input_file={_sample()}", f"--output_file={out}",
                  f"--vocab_file={shared_path('data/reference/vocab.txt')}",
                  "--do_lower_case=True", "--do_whole_word_mask=True", "--max_seq_length=64",
                  "--max_predictions_per_seq=10", "--random_seed=1", "--dupe_factor=2",
                  "--masked_lm_prob=0.2", "--short_seq_prob=0.2", "--num_workers=1")
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out.tfrecord.summary.json").read_text())
    assert f"Wrote {summary['instances']} total instances" in result.stderr
    assert summary["options"]["max_seq_length"] == 64
    assert summary["options"]["do_whole_word_mask"] is True
    assert "shard 1/1" in result.stderr  # progress


def test_the_runner_reports_bad_input_without_a_traceback(tmp_path):
    result = _run(f"--input_file={tmp_path / 'missing.txt'}", f"--output_file={tmp_path / 'o'}",
                  f"--vocab_file={shared_path('data/reference/vocab.txt')}")
    assert result.returncode == 1
    assert "input file not found" in result.stderr and "Traceback" not in result.stderr
