"""run_classifier end to end on the real GLUE files: fine-tuning, GLUE and per-class metrics,
the confusion matrix, periodic evaluation with the best checkpoint, prediction files,
regression, validation errors."""

import contextlib
import glob
import json
import logging
import os
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import load_weights
from bert_tf.config import BertConfig
from bert_tf.jobs.classifier import ClassifierOptions, build_model, run
from bert_tf.metrics.results import read_eval_results
from bert_tf import processes
from helpers import REPO, minilm_dir, shared_path

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
TINY = dict(vocab_size=30522, max_position_embeddings=128)


def _head(path, rows):
    """The header and first `rows` data lines of a shared GLUE file."""
    with open(path, encoding="utf-8") as f:
        return "".join(line for _, line in zip(range(rows + 1), f))


def _glue_folder(folder, task, train_rows, test_rows=None):
    """`folder` in GLUE's layout: the first `train_rows` training rows of a shared GLUE task as
    train.tsv and dev.tsv, and its first `test_rows` test rows (all of them if None)."""
    source = shared_path(f"data/glue/{task}")
    train = _head(source / "train.tsv", train_rows)
    (folder / "train.tsv").write_text(train, encoding="utf-8")
    (folder / "dev.tsv").write_text(train, encoding="utf-8")
    if test_rows is None:
        os.symlink(source / "test.tsv", folder / "test.tsv")
    else:
        (folder / "test.tsv").write_text(_head(source / "test.tsv", test_rows), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def mrpc_small(tmp_path_factory):
    """The first 24 MRPC training pairs (also used as the dev set) and the first 16 test
    pairs, in GLUE's layout."""
    return _glue_folder(tmp_path_factory.mktemp("mrpc"), "MRPC", 24, 16)


def _options(**kwargs):
    defaults = dict(vocab_file=str(minilm_dir() / "vocab.txt"), do_lower_case=True,
                    max_seq_length=128, seed=1)
    defaults.update(kwargs)
    keras.utils.set_random_seed(defaults["seed"])
    return ClassifierOptions(**defaults)


def _scalars(folder, tag):
    values = {}
    for path in glob.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    values[event.step] = float(tf.make_ndarray(value.tensor))
    return values


@pytest.fixture(scope="module")
def minilm_mrpc(mrpc_small, tmp_path_factory):
    """all-MiniLM-L6-v2 fine-tuned on 24 real MRPC pairs (4 epochs of 3 steps, sequence
    length 32), evaluated on them, and its predictions on 16 test pairs."""
    out = tmp_path_factory.mktemp("minilm_mrpc")
    opts = _options(config=BertConfig.from_json_file(minilm_dir() / "config.json"),
                    task_name="MRPC", data_dir=str(mrpc_small), output_dir=str(out),
                    init_checkpoint=str(minilm_dir()), do_train=True, do_eval=True,
                    do_predict=True, train_batch_size=8, eval_batch_size=16,
                    predict_batch_size=16, learning_rate=5e-4, num_train_epochs=4,
                    iterations_per_loop=4, save_checkpoints_steps=12, max_seq_length=32)
    return out, run(opts, tf.distribute.get_strategy())


def test_fine_tuning_minilm_on_real_mrpc_lowers_the_loss(minilm_mrpc):
    out, result = minilm_mrpc
    train_loss = _scalars(out / "train", "loss")
    assert sorted(train_loss) == [4, 8, 12]
    first_loop = train_loss[4]                    # fresh head: about ln 2
    assert 0.5 < first_loop < 0.9, train_loss
    # Measured: the loss on the 24 pairs falls from 0.69 (first 4 steps) to 0.10 in 12 steps.
    assert result["eval"]["eval_loss"] < 0.5 * first_loop, (train_loss, result["eval"])
    assert result["eval"]["eval_accuracy"] >= 0.9


def test_eval_results_hold_the_glue_mrpc_metrics(minilm_mrpc):
    out, result = minilm_mrpc
    written = read_eval_results(out / "eval_results.txt")
    per_class = {f"{m}_{label}" for m in ("precision", "recall", "f1", "support")
                 for label in "01"}
    assert set(written) == {"eval_accuracy", "f1", "acc_and_f1", "eval_loss", "loss",
                            "global_step", "macro_f1", "prediction_majority_share",
                            "collapsed"} | per_class
    assert written["f1_1"] == written["f1"]
    assert written["global_step"] == 12
    assert written["acc_and_f1"] == pytest.approx((written["eval_accuracy"] + written["f1"]) / 2)
    assert _scalars(out / "eval", "f1") == {12: pytest.approx(written["f1"], rel=1e-6)}


def test_predictions_follow_the_test_file_rows_and_index_column(minilm_mrpc, mrpc_small):
    out, _ = minilm_mrpc
    probabilities = np.loadtxt(out / "test_results.tsv", delimiter="\t")
    assert probabilities.shape == (16, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
    submission = (out / "MRPC.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction" and len(submission) == 17
    test_rows = (mrpc_small / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    assert [line.split("\t")[0] for line in submission[1:]] == [r.split("\t")[0]
                                                                for r in test_rows]
    assert [line.split("\t")[1] for line in submission[1:]] == [
        str(int(p)) for p in probabilities.argmax(axis=1)]


def _count_rows(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip()) - 1          # minus the header


def _exported(export_dir):
    """export_info.json of the first version in export_dir, which must hold a saved_model.pb."""
    assert (export_dir / "1" / "saved_model.pb").is_file()
    return json.loads((export_dir / "1" / "assets.extra" / "export_info.json").read_text())


@pytest.fixture(scope="module")
def sst2_small(tmp_path_factory):
    """The first 40 SST-2 training sentences (also used as the dev set) and all 1,821 SST-2 test
    rows, in GLUE's layout."""
    return _glue_folder(tmp_path_factory.mktemp("sst2"), "SST-2", 40)


@pytest.fixture(scope="module")
def sst2_run(sst2_small, tmp_path_factory):
    """A tiny BERT trained 6 steps on them (1.2 epochs), evaluated every 2 steps keeping the
    lowest eval loss in best/, then predicting the whole test set and exporting."""
    out = tmp_path_factory.mktemp("sst2_run")
    opts = _options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY), task_name="SST-2",
                    data_dir=str(sst2_small), output_dir=str(out / "run"), do_train=True,
                    do_predict=True, train_batch_size=8, num_train_epochs=1.2,
                    learning_rate=1e-3, iterations_per_loop=2, eval_every_steps=2,
                    keep_best_metric="eval_loss", predict_batch_size=50,  # 1821 = 36x50+21
                    export_dir=str(out / "export"))
    return out, run(opts, tf.distribute.get_strategy())


def test_predict_writes_one_submission_line_per_real_sst2_and_cola_test_row(sst2_run, tmp_path):
    out, result = sst2_run
    sst2 = out / "run"
    rows = _count_rows(shared_path("data/glue/SST-2/test.tsv"))
    assert rows == 1821
    assert _count_rows(sst2 / "SST-2.tsv") == rows
    assert len((sst2 / "test_results.tsv").read_text().splitlines()) == rows
    assert set(result["predict"]) == {"test_results.tsv", "SST-2.tsv"}
    # --export_dir: SST-2 is a single-sentence task.
    assert result["export"] == str(out / "export" / "1")
    info = _exported(out / "export")
    assert (info["task"], info["labels"], info["text_inputs"]) == ("classifier", ["0", "1"],
                                                                   ["text_a"])
    # Predict-only, initialised from the SST-2 run's checkpoint.
    cola = tmp_path / "cola"
    config = BertConfig.from_preset("L-1_H-32_A-2", **TINY)
    opts = _options(config=config, task_name="CoLA", data_dir=str(shared_path("data/glue/CoLA")),
                    output_dir=str(cola), init_checkpoint=str(sst2), do_predict=True,
                    predict_batch_size=64)
    run(opts, tf.distribute.get_strategy())
    rows = _count_rows(shared_path("data/glue/CoLA/test.tsv"))
    assert _count_rows(cola / "CoLA.tsv") == rows == 1063
    indices = [line.split("\t")[0] for line in (cola / "CoLA.tsv").read_text().splitlines()[1:]]
    assert indices == [str(i) for i in range(rows)]


def test_sts_b_regression_through_the_runner_on_two_replicas(tmp_path):
    """The runner's flags, the regression head and metrics, and prediction spread over two
    replicas (MirroredStrategy on two CPU devices) without losing or repeating a row."""
    stsb = shared_path("data/glue/STS-B")
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text(_head(stsb / "train.tsv", 64), encoding="utf-8")
    (data / "dev.tsv").write_text(_head(stsb / "dev.tsv", 100), encoding="utf-8")
    # 301 test rows: 5 prediction batches of 64 over 2 replicas, the last one short and odd.
    (data / "test.tsv").write_text(_head(stsb / "test.tsv", 301), encoding="utf-8")
    out = tmp_path / "out"
    args = [sys.executable, str(REPO / "run_classifier.py"), "--task_name=STS-B",
            f"--data_dir={data}", f"--vocab_file={minilm_dir() / 'vocab.txt'}",
            "--model_preset=L-1_H-32_A-2", f"--output_dir={out}", "--do_train", "--do_eval",
            "--do_predict", "--train_batch_size=16", "--num_train_epochs=1",
            "--learning_rate=1e-3", "--eval_batch_size=32", "--predict_batch_size=64",
            "--strategy=mirrored", "--num_cpu_devices=2", "--max_seq_length=64",
            f"--export_dir={tmp_path / 'export'}"]
    done = processes.run(args, env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MirroredStrategy with 2 replica(s)" in done.stderr
    written = read_eval_results(out / "eval_results.txt")
    assert set(written) == {"pearson", "spearman", "corr", "eval_loss", "loss", "global_step"}
    assert written["global_step"] == 4 and -1 <= written["pearson"] <= 1
    rows = _count_rows(data / "test.tsv")
    lines = (out / "STS-B.tsv").read_text().splitlines()
    assert len(lines) == rows + 1 == 302
    assert [line.split("\t")[0] for line in lines[1:]] == [str(i) for i in range(rows)]
    scores = np.loadtxt(out / "test_results.tsv")
    assert scores.shape == (rows,)
    np.testing.assert_allclose([float(line.split("\t")[1]) for line in lines[1:]], scores,
                               atol=1e-6)
    info = _exported(tmp_path / "export")                  # STS-B: a pair regression
    assert (info["task"], info["text_inputs"]) == ("regression", ["text_a", "text_b"])
    assert f"exported: {tmp_path / 'export' / '1'}" in done.stdout


def test_early_stopping_keeps_the_best_checkpoint(sst2_small, tmp_path):
    # Learning rate 0: the dev loss never improves after the first evaluation, so patience 2
    # stops training at the third evaluation (step 6 of 40).
    config = BertConfig.from_preset("L-1_H-32_A-2", **TINY)
    opts = _options(config=config, task_name="SST-2", data_dir=str(sst2_small),
                    output_dir=str(tmp_path), do_train=True, do_eval=True, train_batch_size=8,
                    num_train_epochs=8, learning_rate=0.0, iterations_per_loop=10,
                    eval_every_steps=2, keep_best_metric="eval_loss", early_stopping_patience=2)
    result = run(opts, tf.distribute.get_strategy())
    assert result["train"]["stopped_early"] and result["train"]["step"] == 6
    history = [json.loads(line) for line in
               (tmp_path / "eval_history.jsonl").read_text().splitlines()]
    assert [(h["step"], h["improved"]) for h in history] == [(2, True), (4, False), (6, False)]
    best = read_eval_results(tmp_path / "best" / "eval_results.txt")
    assert best["global_step"] == 2 and best["best_metric"] == "eval_loss"
    assert best["eval_loss"] == pytest.approx(result["eval"]["eval_loss"])
    assert set(_scalars(tmp_path / "eval", "eval_loss")) == {2, 4, 6}
    model = build_model(opts, 2)
    report = load_weights(model, tmp_path / "best")
    assert not report.missing


def test_best_checkpoint_follows_the_metric(sst2_run):
    out = sst2_run[0] / "run"
    history = [json.loads(line) for line in
               (out / "eval_history.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [2, 4, 6]
    best = min(history, key=lambda h: h["eval_loss"])
    saved = read_eval_results(out / "best" / "eval_results.txt")
    assert saved["global_step"] == best["step"]
    assert saved["eval_loss"] == pytest.approx(best["eval_loss"])
    assert [h["improved"] for h in history] == [
        h["eval_loss"] < min([g["eval_loss"] for g in history[:i]], default=np.inf)
        for i, h in enumerate(history)]


@pytest.fixture(scope="module")
def sst2_generic(tmp_path_factory):
    """40 real SST-2 training rows and the next 24 as dev set, as generic TSV files whose
    labels are "bad" (0) and "very good" (1)."""
    folder = tmp_path_factory.mktemp("sst2_generic")
    lines = _head(shared_path("data/glue/SST-2/train.tsv"), 64).splitlines()
    names = {"0": "bad", "1": "very good"}
    rows = [line.rsplit("\t", 1) for line in lines[1:]]
    rows = [f"{text}\t{names[label]}\n" for text, label in rows]
    (folder / "train.tsv").write_text(lines[0] + "\n" + "".join(rows[:40]), encoding="utf-8")
    (folder / "dev.tsv").write_text(lines[0] + "\n" + "".join(rows[40:]), encoding="utf-8")
    return folder


def _generic_options(data_dir, output_dir, **kwargs):
    return _options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY), task_name="generic",
                    data_dir=str(data_dir), output_dir=str(output_dir), do_train=True,
                    processor_options=dict(text_a_column="sentence", label_column="label"),
                    train_batch_size=8, eval_batch_size=16, iterations_per_loop=2,
                    eval_every_steps=2, **kwargs)


@contextlib.contextmanager
def _warnings_logged():
    """The messages bert_tf logs at WARNING or above inside the block, as a list."""
    messages = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())
    logger = logging.getLogger("bert_tf")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture(scope="module")
def macro_f1_run(sst2_generic, tmp_path_factory):
    """A tiny BERT trained 10 steps on the generic SST-2 files at a high learning rate,
    evaluated every 2 steps keeping the best macro F1; also the warnings the run logged."""
    out = tmp_path_factory.mktemp("macro_f1")
    opts = _generic_options(sst2_generic, out, do_eval=True, num_train_epochs=2,
                            learning_rate=3e-3, keep_best_metric="macro_f1")
    with _warnings_logged() as warnings:
        result = run(opts, tf.distribute.get_strategy())
    return out, result, warnings


def test_macro_f1_picks_the_best_checkpoint_and_the_confusion_matrix_follows_it(macro_f1_run):
    # Measured: macro F1 0.27 (all "very good") at step 2, 0.38 (all "bad") at step 4, then
    # 0.27 again: the best is step 4 and the last evaluation's matrix differs from it.
    out, result, _ = macro_f1_run
    history = [json.loads(line) for line in
               (out / "eval_history.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [2, 4, 6, 8, 10]
    best = max(history, key=lambda h: h["macro_f1"])              # the first of equals
    saved = read_eval_results(out / "best" / "eval_results.txt")
    assert (saved["best_metric"], saved["global_step"]) == ("macro_f1", best["step"])
    assert set(_scalars(out / "eval", "f1_very_good")) == {2, 4, 6, 8, 10}
    # eval_results.txt and confusion_matrix.tsv are both those of the best step
    written = read_eval_results(out / "eval_results.txt")
    assert written["global_step"] == best["step"] == result["eval"]["global_step"]
    assert written["macro_f1"] == pytest.approx(best["macro_f1"])
    lines = (out / "confusion_matrix.tsv").read_text().splitlines()
    assert lines[0] == "gold/predicted\tbad\tvery good"
    assert [line.split("\t")[0] for line in lines[1:]] == ["bad", "very good"]
    counts = np.array([[int(c) for c in line.split("\t")[1:]] for line in lines[1:]])
    assert counts.sum() == 24
    np.testing.assert_array_equal(counts.sum(axis=1),
                                  [written["support_bad"], written["support_very_good"]])
    assert np.trace(counts) / 24 == pytest.approx(written["eval_accuracy"])
    predicted_bad = counts[:, 0].sum()
    assert written["precision_bad"] == pytest.approx(
        counts[0, 0] / predicted_bad if predicted_bad else 0.0)
    recalls = np.diag(counts) / counts.sum(axis=1)
    assert (written["recall_bad"], written["recall_very_good"]) == pytest.approx(tuple(recalls))


def test_a_run_whose_predictions_collapse_says_so_in_its_log_and_eval_results(macro_f1_run):
    # Measured: at step 4 (the best macro F1, whose evaluation eval_results.txt holds) every
    # dev sentence is predicted "bad" (gold: 62.5%)
    out, _, warnings = macro_f1_run
    written = read_eval_results(out / "eval_results.txt")
    assert (written["collapsed"], written["prediction_majority_share"]) == (1, 1.0)
    assert written["support_bad"] / (written["support_bad"] + written["support_very_good"]) \
        == 0.625
    assert "eval@4: predictions collapsed to one class: 100.0% are 'bad' (gold: 62.5%)" \
        in warnings


def test_an_unknown_keep_best_metric_names_the_available_ones(sst2_generic, tmp_path):
    opts = _generic_options(sst2_generic, tmp_path, num_train_epochs=0.2,   # 1 step
                            keep_best_metric="f1_good")
    with pytest.raises(ValueError, match=r"--keep_best_metric=f1_good is not an eval metric "
                                         r"of this task; choose one of .*f1_bad, f1_very_good"):
        run(opts, tf.distribute.get_strategy())


# --------------------------------------------------------------------------- validation
def _tiny_options(tmp_path, **kwargs):
    values = dict(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY), task_name="mrpc",
                  data_dir=str(tmp_path), output_dir=str(tmp_path),
                  vocab_file=str(minilm_dir() / "vocab.txt"))
    values.update(kwargs)
    return ClassifierOptions(**values)


def test_a_do_flag_is_required(tmp_path):
    with pytest.raises(ValueError, match="At least one of `do_train`, `do_eval` or `do_predict"):
        _tiny_options(tmp_path).validate()


def test_sequences_longer_than_the_position_table_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="Cannot use sequence length 256 because the BERT "
                                         "model was only trained up to sequence length 128"):
        _tiny_options(tmp_path, do_train=True, max_seq_length=256).validate()


def test_casing_must_match_a_released_checkpoint(tmp_path):
    ckpt = str(tmp_path / "uncased_L-12_H-768_A-12" / "bert_model.ckpt")
    with pytest.raises(ValueError, match="--do_lower_case=False does not match"):
        _tiny_options(tmp_path, do_train=True, do_lower_case=False,
                      init_checkpoint=ckpt).validate()
    _tiny_options(tmp_path, do_train=True, do_lower_case=True, init_checkpoint=ckpt).validate()


def test_a_url_export_dir_is_accepted_without_touching_local_folders(tmp_path):
    _tiny_options(tmp_path, do_train=True, export_dir="gs://b/m").validate()
    assert not os.path.exists("gs:") and os.listdir(tmp_path) == []


def test_a_portable_export_format_checks_its_precision_before_training(tmp_path):
    _tiny_options(tmp_path, do_train=True, export_dir="out", export_format="onnx",
                  export_precision="int8").validate()
    with pytest.raises(ValueError, match="--export_precision of a litert export must be one of "
                                         "fp32, fp16, int8, got 'bf16'"):
        _tiny_options(tmp_path, do_train=True, export_dir="out", export_format="litert",
                      export_precision="bf16").validate()


def test_best_keeping_needs_periodic_evaluation(tmp_path):
    with pytest.raises(ValueError, match="need --eval_every_steps"):
        _tiny_options(tmp_path, do_train=True, early_stopping_patience=3).validate()
    with pytest.raises(ValueError, match="needs --do_train"):
        _tiny_options(tmp_path, do_eval=True, eval_every_steps=10).validate()


def test_a_wrong_vocabulary_for_the_model_is_rejected(tmp_path):
    opts = _tiny_options(tmp_path, do_eval=True, data_dir=str(shared_path("data/glue/MRPC")),
                         config=BertConfig.from_preset("L-1_H-32_A-2", vocab_size=1000))
    with pytest.raises(ValueError, match="has 30522 tokens but the model's vocab_size is 1000"):
        run(opts, tf.distribute.get_strategy())


def test_mnli_from_tfds_evaluates_matched_and_mismatched_and_predicts_all_three(tmp_path):
    """--tfds_name path, MNLI's companions (mismatched dev/test, AX diagnostic): TFDS mock
    data stand in for the real dataset (offline)."""
    import tensorflow_datasets as tfds
    config = BertConfig.from_preset("L-1_H-32_A-2", **TINY)
    opts = _options(config=config, task_name=None, tfds_name="glue/mnli", output_dir=str(tmp_path),
                    do_train=True, do_eval=True, do_predict=True, train_batch_size=8,
                    num_train_epochs=1, eval_batch_size=16, predict_batch_size=16)
    with tfds.testing.mock_data(num_examples=12):
        result = run(opts, tf.distribute.get_strategy())
    per_class = {f"{m}_{label}" for m in ("precision", "recall", "f1", "support")
                 for label in ("entailment", "neutral", "contradiction")} | {
        "macro_f1", "prediction_majority_share", "collapsed"}
    assert set(result["eval"]) == {"eval_accuracy", "eval_loss", "loss", "eval_accuracy_mm",
                                   "eval_loss_mm", "loss_mm", "global_step"} | per_class | {
        f"{name}_mm" for name in per_class}
    header = (tmp_path / "confusion_matrix_mm.tsv").read_text().splitlines()[0]
    assert header == "gold/predicted\tcontradiction\tentailment\tneutral"
    for name in ("MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv"):
        lines = (tmp_path / name).read_text().splitlines()
        assert len(lines) == 13, name
        assert {line.split("\t")[1] for line in lines[1:]} <= {"entailment", "neutral",
                                                               "contradiction"}
    assert len((tmp_path / "test_results_mnli-mm.tsv").read_text().splitlines()) == 12
