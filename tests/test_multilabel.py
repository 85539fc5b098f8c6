"""Multi-label classification (run_classifier --multi_label): label-set parsing, multi-hot
features, the sigmoid cross-entropy loss, micro/macro metrics, threshold tuning, and the whole
run (train, eval, predict, export, serve) on sentences of real CoNLL-2003 data labelled with the
set of entity types they mention."""

import importlib
import json
import math
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.data.classification import BadRowError, DataFormatError, InputExample
from bert_tf.data.classification.multilabel import (MultiLabelColumns, MultiLabelProcessor,
                                                    format_label_set, multi_hot,
                                                    parse_label_set)
from bert_tf.jobs.classifier import ClassifierOptions, run
from bert_tf.metrics import multilabel as metrics
from bert_tf.metrics.results import read_eval_results
from bert_tf.objectives.classification import ClassificationObjective
from bert_tf import processes
from helpers import REPO, minilm_dir, shared_path

TINY = dict(vocab_size=30522, max_position_embeddings=128)
LABELS = ["LOC", "MISC", "ORG", "PER"]


# --------------------------------------------------------------------------- label sets
def test_label_cells_parse_into_sets():
    assert parse_label_set("PER,LOC") == ("PER", "LOC")
    assert parse_label_set(" PER , LOC ,PER ") == ("PER", "LOC")          # spaces, repeats
    assert parse_label_set("") == () and parse_label_set("   ") == ()      # no label
    assert parse_label_set("PER;LOC", separator=";") == ("PER", "LOC")
    assert parse_label_set("PER,LOC", separator=";") == ("PER,LOC",)
    assert parse_label_set(["ORG", "PER"]) == ("ORG", "PER")               # JSONL list
    assert parse_label_set(None) == () and parse_label_set(7) == ("7",)
    with pytest.raises(ValueError, match="empty label in 'PER,,LOC'"):
        parse_label_set("PER,,LOC")
    with pytest.raises(ValueError, match=r"unknown label\(s\) \['GPE'\]"):
        parse_label_set("PER,GPE", labels=LABELS)
    assert format_label_set([True, False, True, False], LABELS) == "LOC,ORG"
    assert format_label_set([False] * 4, LABELS, ";") == ""


def test_processor_reads_label_sets_and_infers_the_sorted_union(tmp_path):
    (tmp_path / "train.tsv").write_text(
        "text\ttags\nPeter went to Paris .\tPER,LOC\nNothing here .\t\n"
        "The UN met .\tORG\n")
    (tmp_path / "dev.tsv").write_text("text\ttags\nIn Rome .\tLOC\nBad row .\tLOC,GPE\n")
    (tmp_path / "test.tsv").write_text("text\nA test row .\n")
    processor = MultiLabelProcessor("text", "tags")
    train = processor.get_train_examples(tmp_path)
    assert [e.label for e in train] == [("PER", "LOC"), (), ("ORG",)]
    assert processor.get_labels() == ["LOC", "ORG", "PER"]
    assert processor.info.primary_metric == "micro_f1"
    # an unknown label stops the read with the file and line ...
    with pytest.raises(BadRowError, match=r"dev.tsv:3: column 'tags': unknown label\(s\) "
                                          r"\['GPE'\]"):
        processor.get_dev_examples(tmp_path)
    # ... or is skipped and counted
    skipping = MultiLabelProcessor("text", "tags", skip_bad_rows=True)
    assert [e.label for e in skipping.get_dev_examples(tmp_path)] == [("LOC",)]
    assert skipping.last_read.num_skipped == 1
    assert processor.get_test_examples(tmp_path) == [InputExample("test-0", "A test row .")]
    # the separator is a flag; given labels keep their order and are checked on train too
    # integer labels are sorted as numbers, as the single-label generic task sorts them
    (tmp_path / "numbers.tsv").write_text("text\ttags\na .\t10,2\nb .\t1\n")
    numbers = MultiLabelProcessor("text", "tags", train_file="numbers.tsv")
    assert numbers.get_labels(tmp_path) == ["1", "2", "10"]
    (tmp_path / "semi.tsv").write_text("text\ttags\nx .\tPER;LOC\ny .\tMISC\n")
    given = MultiLabelProcessor("text", "tags", label_separator=";", train_file="semi.tsv",
                                labels=["PER", "LOC"])
    with pytest.raises(BadRowError, match=r"semi.tsv:3: .*unknown label\(s\) \['MISC'\]"):
        given.get_train_examples(tmp_path)


def test_jsonl_lists_and_bad_configurations(tmp_path):
    (tmp_path / "train.jsonl").write_text(
        json.dumps({"t": "a .", "y": ["B", "A"]}) + "\n" + json.dumps({"t": "b .", "y": []})
        + "\n" + json.dumps({"t": "c .", "y": "A,C"}) + "\n")
    processor = MultiLabelProcessor("t", "y", fmt="jsonl")
    assert [e.label for e in processor.get_train_examples(tmp_path)] == [("B", "A"), (),
                                                                          ("A", "C")]
    assert processor.get_labels() == ["A", "B", "C"]
    (tmp_path / "empty.tsv").write_text("t\ty\na .\t\n")
    with pytest.raises(DataFormatError, match="no labels at all"):
        MultiLabelProcessor("t", "y", train_file="empty.tsv").get_labels(tmp_path)
    with pytest.raises(ValueError, match="--multi_label and --is_regression"):
        MultiLabelProcessor("t", "y", is_regression=True)


def test_multi_hot_label_ids_through_the_input_pipeline():
    from bert_tf.data.classification import pipeline
    examples = [InputExample("train-0", "Peter went to Paris .", label=("PER", "LOC")),
                InputExample("train-1", "Nothing .", label=()),
                InputExample("train-2", "The UN met in Geneva .", label=("ORG", "LOC")),
                InputExample("test-3", "No label yet .")]
    columns = MultiLabelColumns(examples, LABELS)
    assert columns.label_ids.dtype == np.float32 and columns.label_ids.shape == (4, 4)
    np.testing.assert_array_equal(columns.label_ids, [[1, 0, 0, 1], [0, 0, 0, 0],
                                                      [1, 0, 1, 0], [0, 0, 0, 0]])
    preprocessor = pipeline.make_preprocessor(str(minilm_dir() / "vocab.txt"), True, 32)
    for training in (True, False):
        batch = next(iter(pipeline.classifier_dataset(columns, 4, is_training=training,
                                                      max_seq_length=32,
                                                      preprocessor=preprocessor, seed=1)))
        assert batch["label_ids"].dtype == tf.float32 and batch["label_ids"].shape == (4, 4)
        order = batch["example_index"].numpy()
        np.testing.assert_array_equal(batch["label_ids"].numpy(), columns.label_ids[order])
    with pytest.raises(ValueError, match="example train-0: label 'GPE' is not in the label"):
        multi_hot([("GPE",)], LABELS, ["train-0"])


# --------------------------------------------------------------------------- loss and metrics
LOGITS = np.array([[2.0, -1.0, 0.0], [0.5, 3.0, -2.0]], np.float32)
TARGETS = np.array([[1, 0, 1], [0, 1, 0]], np.float32)


def _hand_bce():
    total = 0.0
    for x, z in zip(LOGITS.ravel().tolist(), TARGETS.ravel().tolist()):
        p = 1.0 / (1.0 + math.exp(-x))
        total -= z * math.log(p) + (1 - z) * math.log(1 - p)
    return total / LOGITS.size


def test_sigmoid_cross_entropy_loss_matches_a_hand_computation():
    objective = ClassificationObjective(multi_label=True)
    features = {"label_ids": tf.constant(TARGETS)}
    outputs = {"logits": tf.constant(LOGITS)}
    loss = (objective.numerators(outputs, features)["classification"]
            / objective.denominators(features)["classification"])
    assert float(loss) == pytest.approx(_hand_bce(), rel=1e-6)
    assert metrics.binary_cross_entropy(LOGITS, TARGETS) == pytest.approx(_hand_bce(), rel=1e-9)
    # training "accuracy" = exact match at probability 0.5 (logit >= 0): row 0 predicts
    # {0, 2} = gold, row 1 predicts {0, 1} != gold {1}
    total, count = objective.metrics(outputs, features)["accuracy"]
    assert (float(total), float(count)) == (1.0, 2.0)


def test_micro_and_macro_metrics_on_a_hand_computed_case():
    gold = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 1]])
    probabilities = np.array([[0.9, 0.2, 0.7], [0.1, 0.8, 0.3], [0.4, 0.1, 0.2],
                              [0.6, 0.3, 0.45]])
    # predicted at 0.5: {A, C}, {B}, {}, {A}. A: tp 2; B: tp 1, fn 1; C: fp 1, fn 1
    values = metrics.multi_label_metrics(probabilities, gold, ["A", "B", "C"], 0.5)
    expected = {"micro_precision": 3 / 4, "micro_recall": 3 / 5, "micro_f1": 2 / 3,
                "macro_precision": 2 / 3, "macro_recall": 1 / 2, "macro_f1": 5 / 9,
                "exact_match": 1 / 2, "eval_accuracy": 1 / 2, "label_accuracy": 9 / 12,
                "precision_A": 1.0, "recall_A": 1.0, "f1_A": 1.0, "support_A": 2,
                "precision_B": 1.0, "recall_B": 0.5, "f1_B": 2 / 3, "support_B": 2,
                "precision_C": 0.0, "recall_C": 0.0, "f1_C": 0.0, "support_C": 1,
                "threshold": 0.5}
    assert values == pytest.approx(expected)
    assert set(values) == set(expected)
    # a lower threshold adds C on row 3 (0.45): C becomes tp 1, fp 1
    assert metrics.multi_label_metrics(probabilities, gold, ["A", "B", "C"],
                                       0.45)["f1_C"] == pytest.approx(2 / 3)


def test_threshold_tuning_picks_the_best_grid_value():
    gold = np.array([[1, 0], [1, 0], [1, 0]])
    probabilities = np.array([[0.33, 0.1], [0.6, 0.28], [0.9, 0.31]])
    # >= 0.30 keeps the 3 positives and one negative (F1 6/7); 0.35 loses a positive (4/5)
    threshold, scores = metrics.tune_threshold(probabilities, gold)
    assert threshold == 0.3 and scores[0.3] == pytest.approx(6 / 7)
    assert scores[0.35] == pytest.approx(4 / 5) and scores[0.05] == pytest.approx(2 / 3)
    assert len(scores) == 19 and min(scores) == 0.05 and max(scores) == 0.95
    # a plateau of perfect thresholds: the one closest to the preferred value
    separated = np.array([[0.9, 0.1], [0.8, 0.2]])
    perfect = np.array([[1, 0], [1, 0]])
    assert metrics.tune_threshold(separated, perfect)[0] == 0.5
    assert metrics.tune_threshold(separated, perfect, prefer=0.1)[0] == 0.25
    # against brute force on random data
    rng = np.random.default_rng(0)
    probabilities, gold = rng.random((200, 5)), rng.random((200, 5)) < 0.3
    threshold, _ = metrics.tune_threshold(probabilities, gold)
    brute = {t: metrics.multi_label_metrics(probabilities, gold, list("abcde"), t)["micro_f1"]
             for t in metrics.THRESHOLD_GRID}
    assert brute[threshold] == pytest.approx(max(brute.values()))


# --------------------------------------------------------------------------- the run
def _options(**kwargs):
    import keras
    keras.utils.set_random_seed(1)
    defaults = dict(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY),
                    vocab_file=str(minilm_dir() / "vocab.txt"), do_lower_case=True,
                    max_seq_length=64, seed=1, task_name="generic", multi_label=True,
                    processor_options=dict(text_a_column="sentence", label_column="entities"))
    defaults.update(kwargs)
    return ClassifierOptions(**defaults)


def test_options_refuse_what_multi_label_cannot_do(tmp_path):
    def validate(**kwargs):
        _options(data_dir=str(tmp_path), output_dir=str(tmp_path), do_train=True,
                 **kwargs).validate()

    with pytest.raises(ValueError, match="--multi_label needs --task_name=generic"):
        validate(task_name="MRPC")
    with pytest.raises(ValueError, match="--feature_cache_dir .* --multi_label"):
        validate(feature_cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="--class_weights .* --multi_label"):
        validate(class_weights="auto")
    with pytest.raises(ValueError, match=r"--multi_label_threshold must be in \(0, 1\)"):
        validate(multi_label_threshold=1.0)
    with pytest.raises(ValueError, match="^--label_separator applies only with --multi_label"):
        validate(multi_label=False, label_separator=";")
    with pytest.raises(ValueError, match="^--tune_threshold applies only with --multi_label"):
        validate(multi_label=False, tune_threshold=False)
    with pytest.raises(ValueError, match="^--multi_label_threshold, --tune_threshold apply only "
                                         "with --multi_label"):
        validate(multi_label=False, multi_label_threshold=0.3, tune_threshold=False)
    validate(multi_label=False)
    validate()


def test_decision_threshold_falls_back_to_the_best_weights_threshold(tmp_path):
    """A run resumed after a preemption loads best/ from an evaluation it did not run itself:
    prediction and export then use the threshold saved in best/eval_results.txt, not
    --multi_label_threshold."""
    from bert_tf.jobs.multilabel import decision_threshold
    from bert_tf.metrics.results import write_eval_results
    best = tmp_path / "best"
    best.mkdir()
    write_eval_results(str(best / "eval_results.txt"),
                       {"micro_f1": 0.8, "threshold": 0.35, "global_step": 20})
    opts = _options(data_dir=str(tmp_path), output_dir=str(tmp_path), do_train=True,
                    do_predict=True)
    assert decision_threshold(opts, None) == 0.5                     # nothing to go by
    assert decision_threshold(opts, {"micro_f1": 0.1}, best_dir=str(best)) == 0.35
    assert decision_threshold(opts, None, best_dir=str(best)) == 0.35
    # this run's own evaluation of the weights comes first
    assert decision_threshold(opts, {"threshold": 0.6}, best_dir=str(best)) == 0.6
    # best/ without a threshold: --multi_label_threshold
    assert decision_threshold(opts, None, best_dir=str(tmp_path / "nowhere")) == 0.5


@pytest.fixture(scope="module")
def conll_sets(tmp_path_factory):
    """300 CoNLL-2003 training sentences, 100 dev and 40 test sentences (from eng.testa) as
    generic TSV files "sentence<TAB>entities" with the set of entity types of each."""
    sys.path.insert(0, str(REPO / "quality"))
    builder = importlib.import_module("multilabel_conll")
    folder = tmp_path_factory.mktemp("conll_sets")
    splits = builder.build_dataset(folder, shared_path("data/conll2003"), max_train=300,
                                   max_dev=100, max_test=40)
    return folder, splits


@pytest.fixture(scope="module")
def conll_run(conll_sets, tmp_path_factory):
    """A tiny BERT trained 3 epochs on them with evaluation every 20 steps (best checkpoint on
    micro F1), then eval, predict and export."""
    folder, _ = conll_sets
    out = tmp_path_factory.mktemp("conll_run")
    opts = _options(data_dir=str(folder), output_dir=str(out / "run"), do_train=True,
                    do_eval=True, do_predict=True, train_batch_size=16, eval_batch_size=32,
                    predict_batch_size=16, learning_rate=2e-3, num_train_epochs=3,
                    iterations_per_loop=20, eval_every_steps=20,
                    export_dir=str(out / "export"))
    return out, run(opts, tf.distribute.get_strategy())


def test_run_writes_multi_label_metrics_and_the_tuned_threshold(conll_sets, conll_run):
    out, result = conll_run
    written = read_eval_results(out / "run" / "eval_results.txt")
    per_label = {f"{m}_{label}" for m in ("precision", "recall", "f1", "support")
                 for label in LABELS}
    assert set(written) == {"micro_precision", "micro_recall", "micro_f1", "macro_precision",
                            "macro_recall", "macro_f1", "exact_match", "eval_accuracy",
                            "label_accuracy", "threshold", "untuned_micro_f1", "eval_loss",
                            "loss", "global_step"} | per_label
    assert written["threshold"] in metrics.THRESHOLD_GRID
    assert written["micro_f1"] >= written["untuned_micro_f1"]
    dev = conll_sets[1]["dev"]
    assert sum(written[f"support_{label}"] for label in LABELS) == sum(len(k) for _, k in dev)
    # 56 steps of a 1-layer model: the dev loss falls below the chance level of ln 2
    assert written["eval_loss"] < math.log(2)
    # the best checkpoint is chosen on micro F1 and keeps its threshold
    best = read_eval_results(out / "run" / "best" / "eval_results.txt")
    assert best["best_metric"] == "micro_f1" and best["global_step"] == written["global_step"]
    assert best["threshold"] == written["threshold"]
    # the label list, in class-id order, beside the run's checkpoints and in best/
    for folder in (out / "run", out / "run" / "best"):
        assert (folder / "label_list.txt").read_text().splitlines() == LABELS
    history = [json.loads(line) for line in
               (out / "run" / "eval_history.jsonl").read_text().splitlines()]
    assert max(h["micro_f1"] for h in history) == pytest.approx(written["micro_f1"])


def test_predictions_hold_probabilities_and_label_sets(conll_sets, conll_run):
    out, result = conll_run
    assert set(result["predict"]) == {"test_results.tsv", "test_predictions.tsv"}
    lines = (out / "run" / "test_results.tsv").read_text().splitlines()
    assert lines[0].split("\t") == LABELS
    probabilities = np.array([[float(v) for v in line.split("\t")] for line in lines[1:]])
    assert probabilities.shape == (40, 4)
    assert np.all((probabilities > 0) & (probabilities < 1))
    threshold = read_eval_results(out / "run" / "eval_results.txt")["threshold"]
    predictions = (out / "run" / "test_predictions.tsv").read_text().splitlines()
    assert predictions[0] == "index\tprediction" and len(predictions) == 41
    cells = [line.split("\t")[1] for line in predictions[1:]]
    assert [line.split("\t")[0] for line in predictions[1:]] == [str(i) for i in range(40)]
    assert cells == [",".join(label for label, p in zip(LABELS, row) if p >= threshold)
                     for row in probabilities]


def test_export_serves_per_label_probabilities_and_the_selected_labels(conll_sets, conll_run):
    import tensorflow_text  # noqa: F401
    out, result = conll_run
    assert result["export"] == str(out / "export" / "1")
    info = json.loads((out / "export" / "1" / "assets.extra" / "export_info.json").read_text())
    threshold = read_eval_results(out / "run" / "eval_results.txt")["threshold"]
    assert (info["task"], info["labels"], info["threshold"]) == ("multi_label", LABELS,
                                                                 threshold)
    served = tf.saved_model.load(result["export"])
    texts = [text for text, _ in conll_sets[1]["test"][:8]]
    outputs = served.signatures["serving_default"](text_a=tf.constant(texts))
    assert outputs["probabilities"].shape == (8, 4) and outputs["selected"].dtype == tf.bool
    assert outputs["labels"].dtype == tf.string and outputs["labels"].shape == (8, 4)
    lines = (out / "run" / "test_results.tsv").read_text().splitlines()[1:9]
    expected = np.array([[float(v) for v in line.split("\t")] for line in lines])
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-5)
    cells = [line.split("\t")[1] for line in
             (out / "run" / "test_predictions.tsv").read_text().splitlines()[1:9]]
    served_cells = [",".join(v.decode() for v in row if v) for row in outputs["labels"].numpy()]
    assert served_cells == cells
    np.testing.assert_array_equal(outputs["selected"].numpy(), outputs["labels"].numpy() != b"")
    # serve_features gives the same probabilities
    from bert_tf.data.classification import pipeline
    preprocessor = pipeline.make_preprocessor(str(minilm_dir() / "vocab.txt"), True, 64)
    features = {k: tf.cast(v, tf.int32) for k, v in preprocessor(tf.constant(texts)).items()}
    by_features = served.signatures["serve_features"](**features)
    np.testing.assert_allclose(by_features["probabilities"].numpy(), expected, atol=1e-5)


def test_export_savedmodel_takes_the_threshold_beside_the_checkpoint(conll_run, tmp_path):
    from bert_tf.jobs.export import ExportOptions
    from bert_tf.jobs.export import run as export_run
    out, _ = conll_run
    path = export_run(ExportOptions(export_dir=str(tmp_path), task="multi_label",
                                    init_checkpoint=str(out / "run" / "best"), labels=LABELS,
                                    max_seq_length=64, warmup=False))
    info = json.loads((tmp_path / "1" / "assets.extra" / "export_info.json").read_text())
    best = read_eval_results(out / "run" / "best" / "eval_results.txt")
    assert path == str(tmp_path / "1") and info["threshold"] == best["threshold"]


def test_runner_predicts_with_the_saved_threshold_and_names_bad_flags(conll_sets, conll_run,
                                                                      tmp_path):
    """run_classifier.py's flags: predict only from the run's best/ folder (weights, config,
    and the threshold tuned there) gives the run's own predictions."""
    import os
    folder, _ = conll_sets
    out, _ = conll_run
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    common = [sys.executable, str(REPO / "run_classifier.py"), "--task_name=generic",
              f"--data_dir={folder}", "--text_a_column=sentence", "--label_column=entities",
              f"--init_checkpoint={out / 'run' / 'best'}", "--max_seq_length=64",
              "--multi_label"]
    done = processes.run(common + [f"--feature_cache_dir={tmp_path}",
                                    f"--output_dir={tmp_path / 'bad'}", "--do_train"],
                         env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert "--feature_cache_dir" in done.stderr and "--multi_label" in done.stderr
    done = processes.run(common + [f"--output_dir={tmp_path / 'predict'}", "--do_predict",
                                    "--predict_batch_size=40"],
                         env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    threshold = read_eval_results(out / "run" / "eval_results.txt")["threshold"]
    assert f"multi-label threshold {threshold:.2f}: the tuned one of" in done.stderr
    assert ((tmp_path / "predict" / "test_predictions.tsv").read_text()
            == (out / "run" / "test_predictions.tsv").read_text())
