"""bert_tf.training.best.BestKeeper on its own: improvement, lower-is-better metrics, patience,
NaN, state resumed from best/ + eval_history.jsonl, and what best/ holds for a real model."""

import json

import keras
import numpy as np
import pytest

from bert_tf import BertConfig
from bert_tf.metrics.results import read_eval_results
from bert_tf.training.best import BestKeeper, minimised
from helpers import shared_path


def _scripted(values, metric="f1"):
    """evaluate_fn returning the scripted `values` of `metric` by step (plus another key)."""
    return lambda step: {metric: values[step], "other": 1.0, "global_step": step}


def _saver(saved):
    """A save_fn that records which step's weights it was asked to save."""
    def save(folder):
        saved.append(folder)
        with open(f"{folder}/weights.txt", "w") as f:
            f.write(str(len(saved)))
    return save


def _history(folder):
    return [json.loads(line) for line in (folder / "eval_history.jsonl").read_text().splitlines()]


def test_a_higher_value_is_an_improvement_and_best_holds_its_step(tmp_path):
    saved = []
    keeper = BestKeeper(str(tmp_path), "f1", _scripted({2: 0.5, 4: 0.7, 6: 0.6, 8: 0.7}),
                        save_fn=_saver(saved), files={"label_list.txt": "O\nB-X\n"})
    assert not any(keeper(step) for step in (2, 4, 6, 8))
    assert [(h["step"], h["improved"]) for h in _history(tmp_path)] == [
        (2, True), (4, True), (6, False), (8, False)]         # a tie is no improvement
    assert (keeper.best, keeper.best_step, len(saved)) == (0.7, 4, 2)
    best = read_eval_results(tmp_path / "best" / "eval_results.txt")
    assert (best["global_step"], best["f1"], best["best_metric"]) == (4, 0.7, "f1")
    assert (tmp_path / "best" / "weights.txt").read_text() == "2"
    assert (tmp_path / "best" / "label_list.txt").read_text() == "O\nB-X\n"
    assert sorted(keeper.results) == [2, 4, 6, 8]


def test_a_file_of_best_may_be_written_from_its_own_evaluation(tmp_path):
    """A `files` entry that is a function gets the evaluation's values: best/inference.json
    holds the multi-label threshold tuned at the best step, not the run's first one."""
    keeper = BestKeeper(str(tmp_path), "f1", _scripted({1: 0.5, 2: 0.7, 3: 0.6}),
                        save_fn=_saver([]), files={"values.txt": lambda v: f"{v['f1']}\n"})
    for step in (1, 2, 3):
        keeper(step)
    assert (tmp_path / "best" / "values.txt").read_text() == "0.7\n"


def test_a_loss_is_minimised_and_nan_never_improves(tmp_path):
    assert minimised("masked_lm_loss") and minimised("eval_loss") and not minimised("f1")
    keeper = BestKeeper(str(tmp_path), "masked_lm_loss",
                        _scripted({1: 2.0, 2: float("nan"), 3: 1.5, 4: 1.7}, "masked_lm_loss"),
                        save_fn=_saver([]))
    for step in (1, 2, 3, 4):
        keeper(step)
    assert [h["improved"] for h in _history(tmp_path)] == [True, False, True, False]
    assert (keeper.best, keeper.best_step) == (1.5, 3)
    # lower_is_better overrides the name rule
    other = BestKeeper(str(tmp_path / "o"), "f1", _scripted({1: 0.9, 2: 0.8}),
                       save_fn=_saver([]), lower_is_better=True)
    other(1)
    other(2)
    assert other.best_step == 2


def test_patience_counts_evaluations_in_a_row_without_improvement(tmp_path):
    keeper = BestKeeper(str(tmp_path), "f1",
                        _scripted({1: 0.5, 2: 0.4, 3: 0.6, 4: 0.6, 5: 0.1}),
                        save_fn=_saver([]), patience=2)
    assert [keeper(step) for step in (1, 2, 3, 4, 5)] == [False, False, False, False, True]
    assert keeper.evaluations_without_improvement() == 2


def test_a_worker_that_is_not_the_chief_decides_alike_but_writes_nothing(tmp_path):
    """MultiWorkerMirroredStrategy: every worker evaluates and saves (saving may need them
    all), so every worker stops at the same step; only the chief's files stay."""
    scripted = {1: 0.5, 2: 0.7, 3: 0.6, 4: 0.6}
    chief_saves, worker_saves = [], []
    chief = BestKeeper(str(tmp_path / "chief"), "f1", _scripted(scripted),
                       save_fn=_saver(chief_saves), patience=2)
    worker = BestKeeper(str(tmp_path / "worker"), "f1", _scripted(scripted),
                        save_fn=_saver(worker_saves), patience=2, is_chief=False)
    assert [chief(step) for step in scripted] == [worker(step) for step in scripted] == [
        False, False, False, True]
    assert (worker.best, worker.best_step) == (chief.best, chief.best_step) == (0.7, 2)
    assert len(worker_saves) == len(chief_saves) == 2
    assert not (tmp_path / "worker").exists()              # no best/, no history
    assert (tmp_path / "chief" / "best" / "eval_results.txt").exists()
    assert len(_history(tmp_path / "chief")) == 4
    # the worker's best weights: its own local copy, which the chief's writes cannot race
    own = read_eval_results(f"{worker.best_dir}/eval_results.txt")
    assert (own["global_step"], own["f1"]) == (2, 0.7)
    assert str(tmp_path) not in worker.best_dir


def test_a_restarted_keeper_resumes_from_best_and_the_history(tmp_path):
    values = {1: 0.5, 2: 0.8, 3: 0.7, 4: 0.6, 5: 0.75, 6: 0.9}
    first = BestKeeper(str(tmp_path), "f1", _scripted(values), save_fn=_saver([]), patience=3)
    for step in (1, 2, 3, 4):
        first(step)
    # The run was checkpointed at step 3: step 4's entry is dropped (it will be redone); the
    # best (0.8 at step 2) and one evaluation without improvement carry over.
    second = BestKeeper(str(tmp_path), "f1", _scripted(values), save_fn=_saver([]), patience=3,
                        resumed_step=3)
    assert (second.best, second.best_step) == (0.8, 2)
    assert [h["step"] for h in second.history] == [1, 2, 3]
    assert second.evaluations_without_improvement() == 1
    assert not second(4)
    assert second(5)                                    # third miss in a row: stop
    assert [h["step"] for h in _history(tmp_path)] == [1, 2, 3, 4, 5]
    # Another metric ignores best/ (kept for f1) and starts afresh.
    third = BestKeeper(str(tmp_path), "other", _scripted(values), save_fn=_saver([]))
    assert third.best is None and third.best_step is None


def test_an_unknown_metric_names_the_available_ones(tmp_path):
    keeper = BestKeeper(str(tmp_path), "f2", _scripted({1: 0.5}), save_fn=_saver([]))
    with pytest.raises(ValueError, match=r"--keep_best_metric=f2 is not an eval metric of this "
                                         r"task; choose one of f1, other$"):
        keeper(1)


def test_best_holds_a_loadable_native_checkpoint_config_and_vocabulary(tmp_path):
    from bert_tf.model import BertEncoder, BertTokenClassifier
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=30522,
                                    max_position_embeddings=32)
    keras.utils.set_random_seed(1)
    model = BertTokenClassifier(BertEncoder(config), 3)
    vocab = str(shared_path("data/reference/vocab.txt"))
    keeper = BestKeeper(str(tmp_path), "f1", _scripted({5: 0.3}), model=model, vocab_file=vocab)
    keeper(5)
    names = sorted(p.name for p in (tmp_path / "best").iterdir())
    assert {"bert_config.json", "vocab.txt", "eval_results.txt", "ckpt.index"} <= set(names)
    assert not [n for n in (p.name for p in tmp_path.iterdir()) if ".tmp-" in n]
    expected = [w.numpy().copy() for w in model.weights]
    for w in model.weights:
        w.assign(np.zeros(w.shape, w.dtype))
    report = keeper.load_best()
    assert not report.missing
    for w, value in zip(model.weights, expected):
        np.testing.assert_array_equal(w.numpy(), value)
