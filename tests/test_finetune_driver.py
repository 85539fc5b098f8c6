"""The one fine-tuning driver (bert_tf.jobs.driver.run_task): it calls a task object's stages in
one order for every task, passing each what earlier ones returned (the training data to the
loss, the eval set to evaluate, an Evaluation record onwards), evaluates each step once (the
final evaluation reuses a periodic one and its artifact), hands predict and export the
evaluation of the weights they use, and stops after a preempted training run. Shown with
SwagTask on real SWAG rows and a 1-layer model."""

import csv
import shutil

import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.jobs.driver import Evaluation, FinetuneTask, TrainingData, run_task
from bert_tf.jobs.swag import SwagOptions, SwagTask
from helpers import shared_path


class RecordingSwag(SwagTask):
    """SwagTask that records the stages the driver calls, in order, and the values they get."""

    def __init__(self, opts):
        super().__init__(opts)
        self.calls = []
        self.contracts = []          # the decision of each contract asked for, in order

    def prepare(self):
        self.calls.append("prepare")
        return super().prepare()

    def training_data(self):
        self.calls.append("training_data")
        training = super().training_data()
        assert isinstance(training, TrainingData)
        return training

    def loss(self, training):
        self.calls.append(("loss", training.count if training else None))
        return super().loss(training)

    def load_eval_data(self):
        self.calls.append("load_eval_data")
        self.eval_set = super().load_eval_data()
        return self.eval_set

    def evaluate(self, trainer, step, eval_set):
        assert eval_set is self.eval_set
        self.calls.append(("evaluate", step))
        evaluation = super().evaluate(trainer, step, eval_set)
        assert (evaluation.step, evaluation.artifact) == (step, None)
        return Evaluation(step, evaluation.metrics, f"artifact@{step}")

    def record_evaluation(self, trainer, evaluation, eval_set, summarized):
        assert eval_set is self.eval_set
        self.calls.append(("record_evaluation", evaluation.step, evaluation.artifact,
                           summarized))
        return super().record_evaluation(trainer, evaluation, eval_set, summarized)

    def decide(self, trained, evaluation):
        self.calls.append(("decide", trained.step))
        return f"decision@{trained.step}"

    def predict(self, trainer, evaluation, eval_set, decision):
        self.calls.append(("predict", decision,
                           None if evaluation is None else evaluation.artifact,
                           None if evaluation is None else evaluation.metrics["eval_accuracy"]))
        return super().predict(trainer, evaluation, eval_set, decision)

    def contract(self, decision=None):
        self.contracts.append(decision)
        return super().contract(decision)


@pytest.fixture(scope="module")
def swag_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("swag_driver")
    with open(shared_path("data/swag/train.first999.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[:17]
    path = folder / "train.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    return folder, str(path)


def _opts(folder, train, name, **overrides):
    config = BertConfig.from_preset("L-1_H-64_A-2", vocab_size=30522, max_position_embeddings=64)
    values = dict(config=config, output_dir=str(folder / name),
                  vocab_file=str(shared_path("data/reference/vocab.txt")), train_file=train,
                  eval_file=train, predict_file=train, do_train=True, do_eval=True,
                  do_predict=True, max_seq_length=48, train_batch_size=8, eval_batch_size=16,
                  num_train_epochs=2, iterations_per_loop=2)
    values.update(overrides)
    return SwagOptions(**values)


def test_stages_run_in_order_and_each_step_is_evaluated_once(swag_files):
    folder, train = swag_files
    task = RecordingSwag(_opts(folder, train, "periodic", eval_every_steps=2,
                               load_best_at_end=False))
    result = run_task(task, tf.distribute.get_strategy())
    assert result["train"]["step"] == 4                 # int(16 rows / 8 * 2 epochs)
    assert task.calls[:4] == ["prepare", "training_data", ("loss", 16), "load_eval_data"]
    assert [c for c in task.calls if c[0] == "evaluate"] == [("evaluate", 2), ("evaluate", 4)]
    # the final evaluation is step 4's periodic one: recorded with its artifact, not rerun;
    # predict gets the recorded evaluation, predict and the contract the one decision of the
    # model (the contract before it, for inference.json and best/, none)
    accuracy = result["eval"]["eval_accuracy"]
    assert task.calls[-3:] == [("record_evaluation", 4, "artifact@4", True), ("decide", 4),
                               ("predict", "decision@4", "artifact@4", accuracy)]
    assert task.contracts[-1] == "decision@4" and set(task.contracts[:-1]) == {None}


def test_with_the_best_weights_loaded_the_final_evaluation_is_the_best_steps(swag_files):
    folder, train = swag_files
    task = RecordingSwag(_opts(folder, train, "best", eval_every_steps=1,
                               load_best_at_end=True))
    result = run_task(task, tf.distribute.get_strategy())
    best = result["best_step"]
    assert [c[1] for c in task.calls if c[0] == "evaluate"] == [1, 2, 3, 4]
    assert ("record_evaluation", best, f"artifact@{best}", True) in task.calls
    assert result["eval"]["global_step"] == best


@pytest.fixture(scope="module")
def final_run(swag_files):
    """A RecordingSwag run that trains 4 steps without periodic evaluation, then evaluates and
    predicts: (the task, its result, its output_dir)."""
    folder, train = swag_files
    task = RecordingSwag(_opts(folder, train, "final"))
    return task, run_task(task, tf.distribute.get_strategy()), folder / "final"


def test_without_periodic_evaluation_the_final_one_runs_after_training(final_run):
    task, result, _ = final_run
    assert [c for c in task.calls if c[0] == "evaluate"] == [("evaluate", 4)]
    assert ("record_evaluation", 4, "artifact@4", False) in task.calls
    assert result["eval"]["global_step"] == 4


def test_predict_only_restores_the_trained_step_and_gets_no_evaluation(swag_files, final_run,
                                                                        tmp_path):
    _, train = swag_files
    shutil.copytree(final_run[2], tmp_path / "restore")       # a trained output_dir
    task = RecordingSwag(_opts(tmp_path, train, "restore", do_train=False, do_eval=False))
    result = run_task(task, tf.distribute.get_strategy())
    assert task.calls == ["prepare", ("loss", None), ("decide", 4),
                          ("predict", "decision@4", None, None)]
    assert task.contracts == ["decision@4"]
    assert result["eval"] is None and result["predict"].endswith("test_predictions.csv")


def test_a_task_must_say_how_it_trains():
    task = FinetuneTask(opts=None)
    with pytest.raises(NotImplementedError):
        task.training_data()
    with pytest.raises(NotImplementedError):
        task.evaluate(None, 0, None)
