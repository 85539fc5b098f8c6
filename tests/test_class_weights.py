"""--class_weights: 'auto' balances the classes of the real training labels, explicit weights are
checked against the label list, and the classifier's loss becomes the weighted mean."""

import csv

import numpy as np
import pytest
import tensorflow as tf

from helpers import minilm_dir, shared_path


def sst2_labels(limit=2000):
    with open(shared_path("data/glue/SST-2/train.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:limit + 1]
    return np.array([int(r[1]) for r in rows])


def test_auto_gives_each_class_the_same_total_weight():
    from bert_tf.training.class_weights import resolve_class_weights
    labels = sst2_labels()
    keep = np.concatenate([np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)[:100]])
    imbalanced = labels[keep]                                   # ~10:1 positives
    weights = resolve_class_weights("auto", ["0", "1"], imbalanced)
    totals = [weights[k] * np.sum(imbalanced == k) for k in (0, 1)]
    np.testing.assert_allclose(totals, [len(imbalanced) / 2] * 2, rtol=1e-6)
    assert weights[0] > 5 * weights[1]


def test_explicit_weights_must_match_the_labels():
    from bert_tf.training.class_weights import resolve_class_weights
    np.testing.assert_allclose(resolve_class_weights("1,4.5", ["a", "b"]), [1.0, 4.5])
    with pytest.raises(ValueError, match="3 weights for 2 labels"):
        resolve_class_weights("1,2,3", ["a", "b"])
    with pytest.raises(ValueError, match="> 0"):
        resolve_class_weights("1,0", ["a", "b"])
    with pytest.raises(ValueError, match="comma-separated numbers"):
        resolve_class_weights("1,x", ["a", "b"])


def test_auto_needs_every_label_in_the_training_data():
    from bert_tf.training.class_weights import resolve_class_weights
    with pytest.raises(ValueError, match=r"\['c'\] never occur"):
        resolve_class_weights("auto", ["a", "b", "c"], np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="needs --do_train"):
        resolve_class_weights("auto", ["a", "b"], None)


def test_weighted_loss_is_the_weighted_mean_cross_entropy():
    from bert_tf.objectives.classification import ClassificationObjective
    logits = np.array([[2.0, -1.0], [0.5, 0.2], [-1.0, 1.5], [0.0, 0.0]], np.float32)
    labels = np.array([0, 1, 1, 0], np.int32)
    weights = np.array([3.0, 0.5], np.float32)
    objective = ClassificationObjective(class_weights=weights)
    features = {"label_ids": tf.constant(labels)}
    loss = (objective.numerators({"logits": tf.constant(logits)}, features)["classification"]
            / objective.denominators(features)["classification"]).numpy()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    per_example = -log_probs[np.arange(4), labels]
    expected = np.sum(weights[labels] * per_example) / np.sum(weights[labels])
    assert loss == pytest.approx(expected, rel=1e-5)
    unweighted = ClassificationObjective()
    plain = (unweighted.numerators({"logits": tf.constant(logits)}, features)["classification"]
             / unweighted.denominators(features)["classification"]).numpy()
    assert plain == pytest.approx(per_example.mean(), rel=1e-5)


def test_classifier_ignores_class_weights_without_training(tmp_path, caplog):
    """run_classifier --class_weights=auto --do_eval --do_predict without --do_train: the
    weights only weigh the training loss, so they are ignored (logged) rather than counted on
    training labels that are not read. The run records its label list (label_list.txt)."""
    import keras

    from bert_tf.checkpoints import save_weights
    from bert_tf.config import BertConfig
    from bert_tf.jobs.classifier import ClassifierOptions, run
    from bert_tf.model import BertClassifier, BertEncoder
    with open(shared_path("data/glue/SST-2/dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:13]
    data = tmp_path / "data"
    data.mkdir()
    for split, part in (("train", rows[:8]), ("dev", rows[8:]), ("test", rows[8:])):
        (data / f"{split}.tsv").write_text("sentence\tlabel\n" + "".join(
            f"{sentence}\t{label}\n" for sentence, label in part), encoding="utf-8")
    keras.utils.set_random_seed(3)
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=30522,
                                    max_position_embeddings=64)
    vocab = str(minilm_dir() / "vocab.txt")
    model = BertClassifier(BertEncoder(config), 2)
    ids = np.ones((1, 8), np.int32)
    model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})
    checkpoint = save_weights(model, str(tmp_path / "init"), "native", vocab_file=vocab)
    opts = ClassifierOptions(
        config=config, vocab_file=vocab, init_checkpoint=checkpoint, task_name="generic",
        processor_options=dict(text_a_column="sentence", label_column="label"),
        data_dir=str(data), output_dir=str(tmp_path / "out"), do_eval=True, do_predict=True,
        class_weights="auto", max_seq_length=32, eval_batch_size=4, predict_batch_size=4)
    with caplog.at_level("INFO", logger="bert_tf"):
        result = run(opts, tf.distribute.get_strategy())
    assert "--class_weights weights the training loss: unused without --do_train" in caplog.text
    assert 0.0 <= result["eval"]["eval_accuracy"] <= 1.0
    assert (tmp_path / "out" / "label_list.txt").read_text() == "0\n1\n"
    predictions = (tmp_path / "out" / "test_predictions.tsv").read_text().splitlines()
    assert predictions[0] == "index\tprediction" and len(predictions) == 5
