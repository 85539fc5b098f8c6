"""run_squad's task distillation: the span soft loss, a student that learns the synthetic reading
task from a fine-tuned teacher's start and end logits alone, and the checks on the teacher."""

import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.jobs.squad import SquadOptions, run
from bert_tf.objectives.distillation import SpanDistillationObjective, soft_loss
from test_run_squad import synthetic  # noqa: F401 (the synthetic SQuAD files, a fixture)


def _options(vocab, output_dir, layers=1, **kwargs):
    size = len(open(vocab).read().split())
    values = dict(config=BertConfig.from_preset(f"L-{layers}_H-32_A-2", vocab_size=size,
                                                max_position_embeddings=64),
                  vocab_file=vocab, output_dir=str(output_dir), max_seq_length=64,
                  doc_stride=24, max_query_length=16, train_batch_size=16,
                  predict_batch_size=32, iterations_per_loop=25, save_checkpoints_steps=1000,
                  epochs_over="examples", learning_rate=1e-2, seed=3)
    values.update(kwargs)
    keras.utils.set_random_seed(values["seed"])
    return SquadOptions(**values)


@pytest.fixture(scope="module")
def teacher(synthetic, tmp_path_factory):
    """A 2-layer span labeler fine-tuned on the 160 synthetic questions (exact match >= 90 on
    the 60 dev questions): its output_dir."""
    out = tmp_path_factory.mktemp("squad_teacher")
    result = run(_options(synthetic["vocab"], out, layers=2, train_file=synthetic["train"],
                          predict_file=synthetic["dev"], do_train=True, do_predict=True,
                          do_eval=True, num_train_epochs=15.0),
                 tf.distribute.get_strategy())
    assert result["eval"]["exact_match"] >= 90, result["eval"]
    return out


def test_the_span_loss_mixes_gold_and_soft_start_and_end_losses_by_alpha():
    rng = np.random.default_rng(0)
    outputs = {f"{end}_logits": tf.constant(rng.normal(size=(3, 6)), tf.float32)
               for end in ("start", "end")}
    features = {"input_ids": tf.zeros((3, 6), tf.int32),
                "start_positions": tf.constant([1, 0, 4]), "end_positions": tf.constant([2, 0, 5]),
                **{f"teacher_{end}_logits": tf.constant(rng.normal(size=(3, 6)), tf.float32)
                   for end in ("start", "end")}}
    objective = SpanDistillationObjective(temperature=2.0, alpha=0.3)
    numerators = objective.numerators(outputs, features)
    denominators = objective.denominators(features)
    loss = sum(float(numerators[t]) / float(denominators[t]) for t in objective.loss_terms)
    hard = sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
        features[f"{end}_positions"], outputs[f"{end}_logits"]).numpy().mean()
        for end in ("start", "end")) / 2
    soft = sum(soft_loss(outputs[f"{end}_logits"], features[f"teacher_{end}_logits"], 2.0,
                         False).numpy().mean() for end in ("start", "end")) / 2
    assert loss == pytest.approx(0.7 * hard + 0.3 * soft, rel=1e-6)
    metrics = objective.metrics(outputs, features)
    assert float(metrics["distill_loss"][0]) / float(metrics["distill_loss"][1]) == \
        pytest.approx(soft, rel=1e-6)
    assert float(metrics["label_loss"][0]) / float(metrics["label_loss"][1]) == \
        pytest.approx(hard, rel=1e-6)


def test_a_student_learns_the_task_from_the_teachers_spans_alone(teacher, synthetic, tmp_path):
    """alpha 1: no gold span reaches the loss, so a fresh 1-layer student that answers the dev
    questions has read the teacher's logits at the right windows and positions (a window
    given another window's logits learns nothing; measured: exact match 0 untrained)."""
    out = tmp_path / "student"
    result = run(_options(synthetic["vocab"], out, train_file=synthetic["train"],
                          predict_file=synthetic["dev"], do_train=True, do_predict=True,
                          do_eval=True, num_train_epochs=15.0,
                          teacher_checkpoint=str(teacher), distill_alpha=1.0,
                          distill_temperature=1.0),
                 tf.distribute.get_strategy())
    assert result["train"]["distill_loss"] > 0
    assert result["eval"]["exact_match"] >= 80, result["eval"]
    recorded = json.loads((out / "run_options.json").read_text())
    assert recorded["teacher"] == {"checkpoint": str(teacher), "labels": None, "task": "squad"}


def test_a_student_of_the_teachers_layers_records_its_shape(teacher, synthetic, tmp_path):
    out = tmp_path / "student"
    result = run(_options(synthetic["vocab"], out, layers=2, train_file=synthetic["train"],
                          do_train=True, num_train_epochs=1.0, init_checkpoint=str(teacher),
                          student_layers=["1"], teacher_checkpoint=str(teacher)),
                 tf.distribute.get_strategy())
    assert result["train"]["label_loss"] > 0 and result["train"]["distill_loss"] > 0
    assert json.loads((out / "bert_config.json").read_text())["num_hidden_layers"] == 1


def _alpha_0_options(synthetic, teacher, output_dir):
    """The options of `alpha_0_student`."""
    return _options(synthetic["vocab"], output_dir, train_file=synthetic["train"],
                    do_train=True, num_train_epochs=2.0, teacher_checkpoint=str(teacher),
                    distill_alpha=0.0)


@pytest.fixture(scope="module")
def alpha_0_student(teacher, synthetic, tmp_path_factory):
    """A 1-layer student trained 2 epochs from the teacher with alpha 0: {"output_dir",
    "result"} (run()'s). Read-only: a test that runs in it copies it first."""
    out = tmp_path_factory.mktemp("alpha_0_student")
    result = run(_alpha_0_options(synthetic, teacher, out), tf.distribute.get_strategy())
    return {"output_dir": out, "result": result}


def test_with_alpha_0_the_student_trains_exactly_as_without_the_teacher(alpha_0_student,
                                                                        synthetic, tmp_path):
    alone = run(_options(synthetic["vocab"], tmp_path / "alone", train_file=synthetic["train"],
                         do_train=True, num_train_epochs=2.0), tf.distribute.get_strategy())
    assert alpha_0_student["result"]["train"]["loss"] == \
        pytest.approx(alone["train"]["loss"], rel=1e-6)


def test_a_teacher_with_another_vocabulary_is_refused(teacher, synthetic, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(open(synthetic["vocab"]).read() + "zebra\n")
    with pytest.raises(ValueError, match="its vocabulary .* is not --vocab_file"):
        run(_options(str(vocab), tmp_path / "out", train_file=synthetic["train"], do_train=True,
                     teacher_checkpoint=str(teacher)), tf.distribute.get_strategy())


def test_the_teachers_logits_are_kept_and_reused_by_a_rerun(alpha_0_student, teacher,
                                                             synthetic, tmp_path, monkeypatch):
    kept = np.load(alpha_0_student["output_dir"] / "teacher_targets.npz")
    assert kept["teacher_start_logits"].dtype == np.float16
    assert kept["teacher_start_logits"].shape == kept["teacher_end_logits"].shape
    assert kept["teacher_start_logits"].shape[1] == 64 and kept["teacher_start_logits"].any()

    def no_second_pass(*args):
        raise AssertionError("the teacher scored the windows again")

    monkeypatch.setattr("bert_tf.jobs.squad_distillation.teacher_span_logits", no_second_pass)
    rerun = tmp_path / "student"
    shutil.copytree(alpha_0_student["output_dir"], rerun)
    run(_alpha_0_options(synthetic, teacher, rerun), tf.distribute.get_strategy())


def test_a_teacher_with_other_casing_is_refused(teacher, synthetic, tmp_path):
    with pytest.raises(ValueError, match="do_lower_case=True, this run has "
                                         "--do_lower_case=False"):
        run(_options(synthetic["vocab"], tmp_path / "out", train_file=synthetic["train"],
                     do_train=True, do_lower_case=False, teacher_checkpoint=str(teacher)),
            tf.distribute.get_strategy())


def test_windows_longer_than_the_teachers_positions_are_refused(teacher, synthetic, tmp_path):
    size = len(open(synthetic["vocab"]).read().split())
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=size, max_position_embeddings=128)
    with pytest.raises(ValueError, match="--max_seq_length 96 is longer than the teacher's "
                                         "max_position_embeddings \\(64\\)"):
        run(_options(synthetic["vocab"], tmp_path / "out", config=config, max_seq_length=96,
                     train_file=synthetic["train"], do_train=True,
                     teacher_checkpoint=str(teacher)), tf.distribute.get_strategy())


def test_a_classifier_run_is_refused_as_a_squad_teacher(synthetic, tmp_path):
    folder = tmp_path / "classifier"
    folder.mkdir()
    (folder / "run_options.json").write_text(json.dumps({"task": "classifier", "options": {}}))
    with pytest.raises(ValueError, match="not a run_squad run"):
        run(_options(synthetic["vocab"], tmp_path / "out", train_file=synthetic["train"], do_train=True,
                     teacher_checkpoint=str(folder)), tf.distribute.get_strategy())


def test_distillation_flags_without_a_teacher_are_named(synthetic, tmp_path):
    with pytest.raises(ValueError, match="distill_alpha: only with --teacher_checkpoint"):
        run(_options(synthetic["vocab"], tmp_path / "out", train_file=synthetic["train"], do_train=True,
                     distill_alpha=0.3), tf.distribute.get_strategy())
