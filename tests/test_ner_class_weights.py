"""--class_weights for run_ner: the weighted token loss against a hand computation, "auto"
weights counted on the words the loss sees (real CoNLL-2003 sentences), and the runner flag."""

import collections
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.objectives.tagging import TaggingObjective
from bert_tf import processes
from helpers import REPO, conll_head, shared_path

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))


def _batch():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 6, 3)).astype(np.float32)
    label_ids = np.array([[0, 2, 1, 0, 2, 0], [0, 1, 1, 2, 0, 0]], np.int32)
    label_weights = np.array([[0, 1, 1, 0, 1, 0], [0, 1, 0, 1, 1, 0]], np.float32)
    return logits, {"label_ids": label_ids, "label_weights": label_weights}


def _loss(objective, logits, features):
    features = {k: tf.constant(v) for k, v in features.items()}
    outputs = {"logits": tf.constant(logits)}
    return float(objective.numerators(outputs, features)["tagging"]
                 / objective.denominators(features)["tagging"])


def test_class_weights_give_the_weighted_mean_of_the_counted_tokens():
    logits, features = _batch()
    weights = np.array([0.5, 2.0, 4.0], np.float32)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    xent = -np.take_along_axis(log_probs, features["label_ids"][..., None], -1)[..., 0]
    counted = features["label_weights"] > 0
    w = weights[features["label_ids"]][counted]
    by_hand = float((w * xent[counted]).sum() / w.sum())
    assert _loss(TaggingObjective(weights), logits, features) == pytest.approx(by_hand, rel=1e-5)
    unweighted = float(xent[counted].mean())
    assert _loss(TaggingObjective(), logits, features) == pytest.approx(unweighted, rel=1e-5)
    assert abs(by_hand - unweighted) > 0.05
    # Equal weights leave the loss as it was; a batch with nothing to count has loss 0.
    assert _loss(TaggingObjective([3.0] * 3), logits, features) == pytest.approx(unweighted,
                                                                                 rel=1e-5)
    empty = dict(features, label_weights=np.zeros_like(features["label_weights"]))
    assert _loss(TaggingObjective(weights), logits, empty) == 0.0


def test_auto_weights_count_each_word_once_on_real_sentences(tmp_path):
    from bert_tf.data.ner import read_conll
    from bert_tf.jobs.checks import load_tokenizer
    from bert_tf.jobs.ner import NerData, NerOptions, class_weights, resolve_labels
    train = conll_head(shared_path("data/conll2003/eng.train"), tmp_path / "train.txt", 150)
    opts = NerOptions(config=BertConfig.from_preset("L-1_H-32_A-2", vocab_size=30522),
                      output_dir=str(tmp_path / "out"), train_file=train, do_train=True,
                      vocab_file=str(shared_path("data/reference/vocab.txt")),
                      max_seq_length=128, class_weights="auto")
    labels = resolve_labels(opts, read_conll(train, require_labels=True))
    data = NerData(opts, load_tokenizer(opts), train, labels, True, "train")
    weights = class_weights(opts, data.loss_label_ids, labels)
    # One count per word (its first WordPiece), none for [CLS], [SEP], other pieces, padding.
    counts = collections.Counter(tag for tags in data.units.tags for tag in tags)
    total = sum(counts.values())
    assert total < (data.features.arrays["input_mask"] > 0).sum()     # pieces > words
    expected = [total / (len(labels) * counts[label]) for label in labels]
    np.testing.assert_allclose(weights, expected, rtol=1e-6)
    assert weights[labels.index("O")] < 1 < weights[labels.index("B-PER")]


def test_run_ner_takes_the_class_weights_flag(tmp_path):
    train = conll_head(shared_path("data/conll2003/eng.train"), tmp_path / "train.txt", 40)
    config = tmp_path / "bert_config.json"
    BertConfig.from_preset("L-1_H-32_A-2", vocab_size=30522,
                           max_position_embeddings=64).to_json_file(str(config))
    args = [sys.executable, str(REPO / "run_ner.py"), f"--bert_config_file={config}",
            f"--vocab_file={shared_path('data/reference/vocab.txt')}", f"--train_file={train}",
            "--do_train", "--max_seq_length=64", "--train_batch_size=16",
            "--num_train_epochs=1", f"--output_dir={tmp_path / 'out'}"]
    done = processes.run(args + ["--class_weights=auto"], env=ENV, capture_output=True,
                         text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "class weights: O=" in done.stderr
    wrong = processes.run(args + ["--class_weights=1,2", f"--output_dir={tmp_path / 'x'}"],
                          env=ENV, capture_output=True, text=True, timeout=600)
    assert wrong.returncode == 1
    assert "--class_weights: 2 weights for" in wrong.stderr.strip().splitlines()[-1]
