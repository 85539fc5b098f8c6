"""--eval_every_steps / --keep_best_metric / --early_stopping_patience / --load_best_at_end
through bert_tf.jobs.finetune.train_with_evaluation: the loop itself with scripted metrics, then
run_ner, run_swag, run_squad and run_pretraining on real data slices, each keeping best/ and
eval_history.jsonl on its default metric."""

import csv
import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.metrics.results import read_eval_results
from helpers import conll_head, minilm_dir, shared_path

STRATEGY = tf.distribute.get_strategy


def _history(folder):
    return [json.loads(line) for line in (folder / "eval_history.jsonl").read_text().splitlines()]


def _check_best(out, metric, lower=False):
    """best/ holds the best evaluation of the history on `metric`; returns its step."""
    history = _history(out)
    values = [h[metric] for h in history]
    best = history[int(np.argmin(values) if lower else np.argmax(values))]   # first of equals
    saved = read_eval_results(out / "best" / "eval_results.txt")
    assert (saved["best_metric"], saved["global_step"]) == (metric, best["step"])
    assert saved[metric] == pytest.approx(best[metric])
    for name in ("bert_config.json", "vocab.txt", "ckpt.index"):
        assert (out / "best" / name).exists(), name
    return best["step"]


# --------------------------------------------------------------------------- the loop
CONFIG = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=200, max_position_embeddings=32)


def _tagging_setup(tmp_path, **options):
    from bert_tf.training.setup import arrays_dataset_fn, build_trainer
    from bert_tf.jobs.finetune import FinetuneOptions
    from bert_tf.model import BertEncoder, BertTokenClassifier
    from bert_tf.objectives.tagging import TaggingObjective
    keras.utils.set_random_seed(3)
    options.setdefault("save_checkpoints_steps", 100)
    opts = FinetuneOptions(config=CONFIG, output_dir=str(tmp_path), do_train=True,
                           vocab_file=str(shared_path("data/reference/vocab.txt")),
                           learning_rate=1e-2, **options)
    opts.validate_evaluation()
    setup = build_trainer(opts, STRATEGY(), lambda: BertTokenClassifier(BertEncoder(CONFIG), 3),
                          TaggingObjective(), num_train_steps=10)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 200, (32, 16)).astype(np.int32)
    arrays = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": ids * 0,
              "label_ids": ids % 3, "label_weights": np.ones(ids.shape, np.float32)}
    return opts, setup, arrays_dataset_fn(arrays, 8, True, seed=1)


def _scripted_run(tmp_path, metric_values, on_evaluate=None, **options):
    """train_with_evaluation for 10 steps with an evaluate callback returning
    metric_values[step] (and calling on_evaluate(step)); also returns the tagger kernel seen at
    each evaluation and the steps of the evaluations the plan's keep_evaluations kept."""
    from bert_tf.jobs.finetune import TrainingPlan, train_with_evaluation
    opts, setup, train_fn = _tagging_setup(tmp_path, **options)
    kernels, kept = {}, set()

    def evaluate(step):
        kernels[step] = setup.model.tagger.weights[0].numpy().copy()
        kept.add(step)
        if on_evaluate:
            on_evaluate(step)
        return {"f1": metric_values[step], "loss": 1.0}

    trained = train_with_evaluation(opts, setup, TrainingPlan(
        train_fn, 10, 0, "32 rows", "tagger", evaluate=evaluate, default_metric="f1",
        keep_evaluations=kept.intersection_update))
    return trained, setup, kernels, kept


@pytest.fixture(scope="module")
def loops_run(tmp_path_factory):
    """10 steps with iterations_per_loop 6, an evaluation every 4 steps and a checkpoint every
    6: loops end at 4, 6 (the checkpoint), 8 and the last step 10; f1 is best at step 8."""
    folder = tmp_path_factory.mktemp("loops")
    return folder, _scripted_run(folder, {4: 0.5, 8: 0.9, 10: 0.6}, iterations_per_loop=6,
                                 eval_every_steps=4, save_checkpoints_steps=6)


def test_evaluations_end_loops_and_the_best_weights_come_back(loops_run):
    # without the evaluations the first loop would run 6 steps; the evaluations run at 4, 8
    # and 10, and the best (step 8) is loaded at the end.
    folder, (trained, setup, kernels, kept) = loops_run
    assert sorted(trained.evaluated) == [4, 8, 10] and trained.train["step"] == 10
    assert (trained.best_step, trained.step, trained.loaded_best) == (8, 8, True)
    assert trained.evaluation()["f1"] == 0.9 and trained.evaluation()["global_step"] == 8
    assert sorted(kept) == [8, 10]                         # the best and the latest only
    assert not np.array_equal(kernels[8], kernels[10])
    np.testing.assert_array_equal(setup.model.tagger.weights[0].numpy(), kernels[8])
    assert [h["improved"] for h in _history(folder)] == [True, True, False]


PATIENCE_VALUES = {2: 0.5, 4: 0.4, 6: 0.3, 8: 0.2, 10: 0.1}
PATIENCE_OPTIONS = dict(iterations_per_loop=2, eval_every_steps=2, early_stopping_patience=2,
                        load_best_at_end=False)


@pytest.fixture(scope="module")
def patience_run(tmp_path_factory):
    """Evaluations every 2 steps whose f1 only falls, patience 2, best weights not loaded at
    the end."""
    folder = tmp_path_factory.mktemp("patience")
    return folder, _scripted_run(folder, PATIENCE_VALUES, **PATIENCE_OPTIONS)


def test_patience_stops_training_and_load_best_at_end_can_be_declined(patience_run):
    folder, (trained, setup, kernels, _) = patience_run
    assert trained.train["stopped_early"] and trained.train["step"] == 6
    assert (trained.best_step, trained.step, trained.loaded_best) == (2, 6, False)
    np.testing.assert_array_equal(setup.model.tagger.weights[0].numpy(), kernels[6])
    assert tf.train.latest_checkpoint(str(folder)).endswith("ckpt-6")   # saved on stopping


def test_checkpoint_steps_do_not_shift_the_evaluations(loops_run):
    # a loop also ends at the checkpoint of step 6; the next one must still end at 8
    _, (trained, _, _, _) = loops_run
    assert sorted(trained.evaluated) == [4, 8, 10]


def test_a_rerun_after_early_stopping_does_not_train_on(patience_run, tmp_path):
    shutil.copytree(patience_run[0], tmp_path, dirs_exist_ok=True)   # the same command again
    again, setup, kernels, _ = _scripted_run(tmp_path, PATIENCE_VALUES, **PATIENCE_OPTIONS)
    assert again.train["step"] == 6 and again.train["stopped_early"]
    assert kernels == {} and again.best_step == 2          # no evaluation ran again
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-6")


def test_sigterm_during_an_evaluation_saves_that_step(tmp_path):
    import signal

    def terminate(step):
        if step == 4:
            os.kill(os.getpid(), signal.SIGTERM)   # the trainer's handler asks to stop
    trained, _, _, _ = _scripted_run(tmp_path, {2: 0.1, 4: 0.2}, on_evaluate=terminate,
                                     iterations_per_loop=2, eval_every_steps=2,
                                     save_checkpoints_steps=100)
    assert trained.preempted and trained.train["step"] == 4
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-4")


# --------------------------------------------------------------------------- runners
def test_run_ner_keeps_the_best_entity_f1_and_evaluates_it_at_the_end(tmp_path):
    from bert_tf.jobs.ner import NerOptions, run
    train = conll_head(shared_path("data/conll2003/eng.train"), tmp_path / "train.txt", 120)
    dev = conll_head(shared_path("data/conll2003/eng.testa"), tmp_path / "dev.txt", 60)
    vocab = str(shared_path("data/reference/vocab.txt"))
    config = BertConfig.from_preset("L-1_H-64_A-2", vocab_size=30522, max_position_embeddings=64)
    keras.utils.set_random_seed(1)
    opts = NerOptions(config=config, output_dir=str(tmp_path / "out"), vocab_file=vocab,
                      train_file=train, eval_file=dev, do_train=True, do_eval=True,
                      max_seq_length=64, train_batch_size=16, learning_rate=3e-3,
                      num_train_epochs=3, iterations_per_loop=100, eval_every_steps=5,
                      early_stopping_patience=1)
    result = run(opts, STRATEGY())
    out = tmp_path / "out"
    # Measured: entity f1 0 at steps 5 and 10 (so early the tagger says O everywhere), so
    # patience 1 stops at step 10 and the step-5 weights come back for the final eval.
    assert result["train"]["stopped_early"]
    last = result["train"]["step"]
    history = {h["step"]: h for h in _history(out)}
    assert sorted(history) == list(range(5, last + 1, 5))
    best = _check_best(out, "f1")
    assert (out / "best" / "label_list.txt").read_text() == (out / "label_list.txt").read_text()
    assert result["best_step"] == best == result["eval"]["global_step"] < last
    written = read_eval_results(out / "eval_results.txt")
    assert written["loss"] == pytest.approx(history[best]["loss"])
    assert written["loss"] != pytest.approx(history[last]["loss"])
    # The final eval was the best weights': evaluating best/ afresh gives the same numbers and
    # the same eval_predictions.txt.
    again = run(NerOptions(config=config, output_dir=str(tmp_path / "again"), vocab_file=vocab,
                           init_checkpoint=str(out / "best"), eval_file=dev, do_eval=True,
                           max_seq_length=64, labels=result_labels(out)), STRATEGY())
    assert again["eval"]["loss"] == pytest.approx(result["eval"]["loss"], rel=1e-5)
    assert again["eval"]["f1"] == pytest.approx(result["eval"]["f1"])
    assert ((tmp_path / "again" / "eval_predictions.txt").read_text()
            == (out / "eval_predictions.txt").read_text())


def result_labels(out):
    return (out / "label_list.txt").read_text().split()


def _swag_rows(dst, first, count):
    with open(shared_path("data/swag/train.first999.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    with open(dst, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([rows[0]] + rows[1 + first:1 + first + count])
    return str(dst)


def test_run_swag_keeps_the_best_eval_accuracy(tmp_path):
    from bert_tf.jobs.swag import SwagOptions, run
    train = _swag_rows(tmp_path / "train.csv", 0, 32)
    dev = _swag_rows(tmp_path / "dev.csv", 32, 16)
    config = BertConfig.from_preset("L-1_H-64_A-2", vocab_size=30522, max_position_embeddings=64)
    keras.utils.set_random_seed(2)
    opts = SwagOptions(config=config, output_dir=str(tmp_path / "out"),
                       vocab_file=str(shared_path("data/reference/vocab.txt")),
                       train_file=train, eval_file=dev, do_train=True, do_eval=True,
                       max_seq_length=48, train_batch_size=8, eval_batch_size=16,
                       learning_rate=3e-3, num_train_epochs=3, iterations_per_loop=6,
                       eval_every_steps=4)
    result = run(opts, STRATEGY())
    out = tmp_path / "out"
    assert [h["step"] for h in _history(out)] == [4, 8, 12]
    best = _check_best(out, "eval_accuracy")
    written = read_eval_results(out / "eval_results.txt")
    assert written["global_step"] == best == result["best_step"]
    assert written["eval_loss"] == pytest.approx(_history(out)[best // 4 - 1]["eval_loss"])


def _squad_slice(src, dst, n):
    with open(src, encoding="utf-8") as f:
        document = json.load(f)
    paragraphs, count = [], 0
    for article in document["data"]:
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][:n - count]
            count += len(qas)
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
    dst.write_text(json.dumps({"version": document.get("version", ""),
                               "data": [{"title": "slice", "paragraphs": paragraphs}]}))
    return str(dst)


def test_run_squad_scores_every_few_steps_on_features_written_once(tmp_path, monkeypatch):
    from bert_tf.jobs import squad as squad_job
    from bert_tf.metrics import squad as squad_metrics
    written_sets = []
    write_features = squad_job.write_features

    def counting(opts, tokenizer, examples, path, is_training, keep=False):
        written_sets.append(os.path.basename(path))
        return write_features(opts, tokenizer, examples, path, is_training, keep)
    monkeypatch.setattr(squad_job, "write_features", counting)
    train = _squad_slice(shared_path("data/squad/train-v1.1.first44articles.json"),
                         tmp_path / "train.json", 16)
    dev = _squad_slice(shared_path("data/squad/dev-v1.1.half-a.json"), tmp_path / "dev.json", 12)
    keras.utils.set_random_seed(0)
    opts = squad_job.SquadOptions(
        config=BertConfig.from_preset("L-1_H-32_A-2", vocab_size=30522,
                                      max_position_embeddings=128),
        vocab_file=str(minilm_dir() / "vocab.txt"), output_dir=str(tmp_path / "out"),
        train_file=train, predict_file=dev, do_train=True, do_predict=True, do_eval=True,
        max_seq_length=128, doc_stride=64, train_batch_size=4, num_train_epochs=1.0,
        epochs_over="examples",             # 16 questions / batch 4: 4 steps
        learning_rate=1e-3, iterations_per_loop=4, eval_every_steps=2, predict_batch_size=16)
    result = run_ok(squad_job.run, opts)
    out = tmp_path / "out"
    assert [h["step"] for h in _history(out)] == [2, 4]
    assert written_sets == ["train.tf_record", "eval.tf_record"]   # eval windows: once
    best = _check_best(out, "f1")
    with open(out / "eval_results.json", encoding="utf-8") as f:
        evaluation = json.load(f)
    assert evaluation["global_step"] == best == result["best_step"]
    # predictions.json is the best step's: it rescores to the recorded metrics
    with open(out / "predictions.json", encoding="utf-8") as f:
        predictions = json.load(f)
    data, _ = squad_metrics.load_dataset(dev)
    assert squad_metrics.evaluate_v1(data, predictions)["f1"] == pytest.approx(evaluation["f1"])


def run_ok(run, opts):
    result = run(opts, STRATEGY())
    assert not result["train"]["preempted"]
    return result


def test_run_pretraining_keeps_the_lowest_held_out_masked_lm_loss(small_corpus, tmp_path):
    from bert_tf.jobs.pretraining import PretrainingOptions, run
    from bert_tf.jobs.results import summary_lines
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=small_corpus["vocab_size"],
                                    max_position_embeddings=64)
    out = tmp_path / "out"
    opts = PretrainingOptions(
        config=config, input_file=small_corpus["train"], eval_input_file=small_corpus["eval"],
        output_dir=str(out), do_train=True, do_eval=True, train_batch_size=16,
        eval_batch_size=32, num_train_steps=12, num_warmup_steps=2, learning_rate=1e-3,
        iterations_per_loop=12, eval_every_steps=4, max_eval_steps=4, max_seq_length=64,
        max_predictions_per_seq=10, vocab_file=small_corpus["vocab"], seed=3)
    keras.utils.set_random_seed(opts.seed)
    result = run(opts, STRATEGY())
    assert [h["step"] for h in _history(out)] == [4, 8, 12]
    best = _check_best(out, "masked_lm_loss", lower=True)
    written = read_eval_results(out / "eval_results.txt")
    assert written["global_step"] == best
    assert f"best checkpoint: step {best}" in summary_lines(result)    # what the runner prints
