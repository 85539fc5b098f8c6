"""What the Trainer does to the datasets it is given, and the contract it holds objectives to."""

import keras
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertEncoder, BertPretrainer
from bert_tf.objectives.pretraining import PretrainingObjective
from bert_tf.training import trainer as trainer_module
from bert_tf.training.trainer import Trainer, training_autotune, without_autotune
from helpers import pretraining_features


def test_evaluation_datasets_run_without_the_autotuner():
    fn = without_autotune(lambda ctx: tf.data.Dataset.range(4).map(lambda x: x + 1))
    assert fn(None).options().autotune.enabled is False


def test_training_keeps_the_autotuner_unless_the_variable_says_0(monkeypatch):
    monkeypatch.delenv(trainer_module.TRAINING_AUTOTUNE_ENV, raising=False)
    assert training_autotune()
    monkeypatch.setenv(trainer_module.TRAINING_AUTOTUNE_ENV, "0")
    assert not training_autotune()


class _UndeclaredMetric(PretrainingObjective):
    def metrics(self, outputs, features):
        return dict(super().metrics(outputs, features), extra=(tf.constant(1.0),
                                                               tf.constant(1.0)))


def test_a_metric_missing_from_metric_names_is_an_error_naming_both():
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=50, max_position_embeddings=16)
    trainer = Trainer(BertPretrainer(BertEncoder(config)), keras.optimizers.SGD(0.1),
                      _UndeclaredMetric())
    features = pretraining_features()
    with pytest.raises(ValueError, match=r"_UndeclaredMetric: metrics\(\) gave .*'extra/sum'"):
        trainer.train(lambda ctx: tf.data.Dataset.from_tensor_slices(features).batch(8).repeat(),
                      1, 8)


def test_a_sigterm_after_the_loops_last_look_still_saves_the_step_it_stops_at(tmp_path):
    """A SIGTERM that lands after the loop last looked at it (here in after_loop; under load
    also between that look and the loop's condition) must not end training unsaved."""
    import os
    import signal
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=50, max_position_embeddings=16)
    trainer = Trainer(BertPretrainer(BertEncoder(config)), keras.optimizers.SGD(0.1),
                      PretrainingObjective(), output_dir=str(tmp_path), steps_per_loop=2,
                      checkpoint_steps=1000)
    features = pretraining_features()

    def after_loop(step, values):
        if step == 4:
            os.kill(os.getpid(), signal.SIGTERM)
        return False
    result = trainer.train(lambda ctx: tf.data.Dataset.from_tensor_slices(features).batch(8)
                           .repeat(), 10, 8, after_loop=after_loop)
    assert result["preempted"] and result["step"] == 4
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt-4")
