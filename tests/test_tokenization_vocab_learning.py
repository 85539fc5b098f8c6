"""Vocabulary learning (build_vocab.py): released layout of special tokens, usable output."""

import itertools
import os
import sys

from bert_tf import tokenization
from bert_tf.tokenization import vocab_learning
from tests.helpers import REPO, shared_path
from bert_tf import processes


def test_reserved_layout_matches_released_uncased_vocabulary():
    with open(shared_path("data/reference/vocab.txt"), encoding="utf-8") as f:
        released = [line.rstrip("\n") for line in f]
    reserved = vocab_learning.reserved_tokens()
    assert len(reserved) == 999
    assert reserved == released[:999]


def test_build_vocab_runner_learns_a_usable_vocabulary(tmp_path):
    corpus = tmp_path / "corpus.txt"
    with open(shared_path("data/corpus/bert_format/inaugural.sentences.txt"),
              encoding="utf-8") as f:
        corpus.write_text("".join(itertools.islice(f, 400)), encoding="utf-8")
    out = tmp_path / "vocab.txt"
    result = processes.run(
        [sys.executable, str(REPO / "build_vocab.py"), f"--input_file={corpus}",
         f"--output_file={out}", "--vocab_size=400", "--num_unused=120", "--lower_thresh=2"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "counted 400 lines" in result.stderr and "wrote" in result.stderr
    tokens = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert 200 < len(tokens) <= 400
    assert tokens[:2] == ["[PAD]", "[unused0]"]
    assert tokens[99:105] == ["[unused98]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused99]"]
    assert tokens[124] == "[unused119]" and not tokens[125].startswith("[unused")
    tok = tokenization.FullTokenizer(str(out))
    ids = tok.encode("Fellow citizens of the Senate and of the House of Representatives")
    assert tok.special_ids["[UNK]"] not in ids and len(ids) > 10


def test_build_vocab_runner_reports_missing_input(tmp_path):
    result = processes.run(
        [sys.executable, str(REPO / "build_vocab.py"), f"--input_file={tmp_path}/none*.txt",
         f"--output_file={tmp_path}/v.txt"], capture_output=True, text=True, cwd=REPO,
        timeout=300)
    assert result.returncode != 0 and "no file matches" in result.stderr
    assert not (tmp_path / "v.txt").exists()
