"""run_ner end to end: a small tagger trained from scratch on CoNLL-2003 sentences finds
entities in held-out ones; eval, predict and a predict-only run on its output_dir agree with
each other."""

import json
import logging
import shutil

import keras
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.data.ner import read_conll
from bert_tf.jobs.ner import LABELS_FILE, NerOptions, resolve_labels, run
from bert_tf.metrics.ner import score
from bert_tf.metrics.results import read_eval_results
from helpers import shared_path


def _head(src, dst, sentences):
    """The first `sentences` blank-line-separated blocks of a CoNLL file (DOCSTARTs included)."""
    blocks = open(src, encoding="utf-8").read().split("\n\n")
    dst.write_text("\n\n".join(blocks[:sentences]) + "\n\n", encoding="utf-8")
    return str(dst)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ner")
    train = _head(shared_path("data/conll2003/eng.train"), folder / "train.txt", 400)
    dev = _head(shared_path("data/conll2003/eng.testa"), folder / "dev.txt", 200)
    words_only = folder / "words.txt"
    words_only.write_text("".join(line.split(" ")[0] + "\n" if line.strip() else "\n"
                                  for line in open(dev, encoding="utf-8")), encoding="utf-8")
    vocab = str(shared_path("data/reference/vocab.txt"))
    config = BertConfig.from_preset("L-1_H-128_A-2", vocab_size=30522,
                                    max_position_embeddings=64)
    keras.utils.set_random_seed(1)
    opts = NerOptions(config=config, output_dir=str(folder / "out"), vocab_file=vocab,
                      train_file=train, eval_file=dev, predict_file=str(words_only),
                      do_train=True, do_eval=True, do_predict=True, max_seq_length=64,
                      train_batch_size=32, learning_rate=1e-3, num_train_epochs=8,
                      iterations_per_loop=30, save_checkpoints_steps=1000)
    result = run(opts, tf.distribute.get_strategy())
    return {"result": result, "opts": opts, "dev": dev, "words": str(words_only),
            "vocab": vocab, "out": folder / "out"}


def test_tagger_finds_held_out_entities(trained):
    evaluation = trained["result"]["eval"]
    # Measured: f1 0.22 after 10 epochs (LOC 0.57); predicting only O scores 0.
    assert evaluation["f1"] > 0.05, evaluation
    assert evaluation["num_correct_entities"] > 10
    written = read_eval_results(trained["out"] / "eval_results.txt")
    assert written["global_step"] == trained["result"]["train"]["step"] == 91
    assert set(written) >= {"precision", "recall", "f1", "f1_LOC", "f1_PER", "f1_ORG",
                            "f1_MISC", "accuracy", "loss"}


def test_eval_predictions_file_rescores_to_the_reported_numbers(trained):
    predictions = read_conll(trained["out"] / "eval_predictions.txt")
    gold = [[c[-2] for c in s.columns] for s in predictions.sentences]
    assert gold == [s.tags for s in read_conll(trained["dev"]).sentences]
    rescored = score(gold, [[c[-1] for c in s.columns] for s in predictions.sentences])
    evaluation = trained["result"]["eval"]
    assert rescored.overall.f1 == pytest.approx(evaluation["f1"])
    assert rescored.overall.correct == evaluation["num_correct_entities"]
    report = (trained["out"] / "eval_report.txt").read_text()
    assert report.splitlines()[0].startswith("processed 2450 tokens with 364 phrases")


def test_words_only_file_gets_the_same_tags_as_eval(trained):
    tagged = read_conll(trained["out"] / "test_predictions.txt")
    evaluated = read_conll(trained["out"] / "eval_predictions.txt")
    assert [s.words for s in tagged.sentences] == [s.words for s in evaluated.sentences]
    assert all(len(c) == 2 for s in tagged.sentences for c in s.columns)    # word, prediction
    assert ([[c[-1] for c in s.columns] for s in tagged.sentences]
            == [[c[-1] for c in s.columns] for s in evaluated.sentences])
    labels = (trained["out"] / LABELS_FILE).read_text().split()
    assert labels == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER",
                      "I-PER"]


def test_runner_predicts_with_the_trained_output_dir(trained, tmp_path, caplog):
    """What run_ner.py --do_predict --export_dir does with a copy of the trained output_dir
    and its bert_config.json (in-process: the runner's own process is tested with
    --class_weights in test_ner_class_weights.py)."""
    out = tmp_path / "out"
    shutil.copytree(trained["out"], out)
    opts = NerOptions(config=BertConfig.from_json_file(str(out / "bert_config.json")),
                      output_dir=str(out), vocab_file=trained["vocab"],
                      predict_file=trained["dev"], do_predict=True, max_seq_length=64,
                      predict_batch_size=16, export_dir=str(tmp_path / "export"))
    with caplog.at_level(logging.INFO, logger="bert_tf"):
        run(opts, tf.distribute.get_strategy())
    assert "resumed from" in caplog.text
    again = read_conll(out / "test_predictions.txt")
    evaluated = read_conll(out / "eval_predictions.txt")
    assert ([[c[-1] for c in s.columns] for s in again.sentences]
            == [[c[-1] for c in s.columns] for s in evaluated.sentences])
    assert (out / "test_report.txt").exists()      # the file had tags, so it was scored too
    # --export_dir: a tagger with the run's label list.
    assert (tmp_path / "export" / "1" / "saved_model.pb").is_file()
    info = json.loads((tmp_path / "export" / "1" / "assets.extra" / "export_info.json")
                      .read_text())
    assert info["task"] == "tagger"
    assert info["labels"] == (out / LABELS_FILE).read_text().split()


def test_saved_label_list_must_match(trained):
    opts = trained["opts"]
    other = NerOptions(config=opts.config, output_dir=opts.output_dir, labels=["O", "B-X",
                                                                                "I-X"])
    with pytest.raises(ValueError, match="differs from"):
        resolve_labels(other, None)


def test_label_list_without_b_and_i_is_refused(tmp_path, trained):
    opts = NerOptions(config=trained["opts"].config, output_dir=str(tmp_path),
                      labels=["O", "B-PER"])
    with pytest.raises(ValueError, match="not I-PER"):
        resolve_labels(opts, None)


def test_options_name_the_missing_file(trained, tmp_path):
    opts = NerOptions(config=trained["opts"].config, output_dir=str(tmp_path),
                      vocab_file=trained["vocab"], do_eval=True,
                      eval_file=str(tmp_path / "nope.txt"))
    with pytest.raises(FileNotFoundError, match="--eval_file .*nope.txt does not exist"):
        opts.validate()
    with pytest.raises(ValueError, match="do_train`, `do_eval` or `do_predict"):
        NerOptions(config=trained["opts"].config, output_dir=str(tmp_path)).validate()
