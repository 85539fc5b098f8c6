"""run_classifier's task distillation: a student initialised from some of a checkpoint's
layers (--student_layers), the soft-target loss, the teacher's checks, and a tiny student
trained from a tiny fine-tuned teacher end to end."""

import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import save_weights
from bert_tf.config import BertConfig
from bert_tf.jobs.classifier import ClassifierOptions, build_model, run
from bert_tf.metrics.results import read_eval_results
from bert_tf.jobs.distillation import matched_teacher_layers
from bert_tf.objectives.distillation import DistillationObjective, hidden_loss, soft_loss
from bert_tf.plots import read_scalars
from bert_tf.training.setup import init_from_checkpoint
from helpers import assert_alpha_0_student_trains_as_alone, minilm_dir, shared_path

TINY = dict(vocab_size=30522, max_position_embeddings=128)


def _options(**kwargs):
    values = dict(vocab_file=str(minilm_dir() / "vocab.txt"), do_lower_case=True,
                  max_seq_length=64, seed=1, train_batch_size=8, eval_batch_size=16,
                  iterations_per_loop=5)
    values.update(kwargs)
    keras.utils.set_random_seed(values["seed"])
    return ClassifierOptions(**values)


@pytest.fixture(scope="module")
def mrpc_small(tmp_path_factory):
    """The first 40 MRPC training pairs as train and dev set, the first 10 test pairs."""
    folder = tmp_path_factory.mktemp("mrpc")
    mrpc = shared_path("data/glue/MRPC")
    for name, rows in (("train.tsv", 40), ("dev.tsv", 40), ("test.tsv", 10)):
        source = "test.tsv" if name == "test.tsv" else "train.tsv"
        with open(mrpc / source, encoding="utf-8") as f:
            lines = [line for _, line in zip(range(rows + 1), f)]
        (folder / name).write_text("".join(lines), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def teacher(mrpc_small, tmp_path_factory):
    """A 2-layer classifier fine-tuned on the 40 MRPC pairs (10 steps): its output_dir."""
    out = tmp_path_factory.mktemp("teacher")
    run(_options(config=BertConfig.from_preset("L-2_H-32_A-2", **TINY), task_name="MRPC",
                 data_dir=str(mrpc_small), output_dir=str(out), do_train=True,
                 num_train_epochs=2, learning_rate=1e-3), tf.distribute.get_strategy())
    return out


def _student_options(teacher, mrpc_small, output_dir, **kwargs):
    """The options of the `student_run` (kwargs: the options that differ)."""
    config = BertConfig.from_json_file(teacher / "bert_config.json").replace(
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)   # a deterministic student
    values = dict(config=config, task_name="MRPC", data_dir=str(mrpc_small),
                  output_dir=str(output_dir), init_checkpoint=str(teacher), student_layers=["1"],
                  teacher_checkpoint=str(teacher), distill_alpha=0.7,
                  distill_hidden_weight=100.0, do_train=True, do_eval=True, do_predict=True,
                  num_train_epochs=4, learning_rate=1e-3, eval_every_steps=5)
    values.update(kwargs)
    return _options(**values)


@pytest.fixture(scope="module")
def student_run(teacher, mrpc_small, tmp_path_factory):
    """One layer of the teacher's two (its second block, dropout off) trained 20 steps on the
    teacher's soft targets (alpha 0.7) and [CLS] vectors (--distill_hidden_weight=100),
    evaluated every 5 steps, predicting the test set: {"output_dir", "result"} (run()'s).
    Read-only: a test that trains on copies it first."""
    out = tmp_path_factory.mktemp("student")
    result = run(_student_options(teacher, mrpc_small, out), tf.distribute.get_strategy())
    return {"output_dir": out, "result": result}


# --------------------------------------------------------------------------- student layers
def test_student_layers_copy_exactly_the_chosen_layers(tmp_path):
    config = BertConfig.from_preset("L-4_H-32_A-2", **TINY)
    keras.utils.set_random_seed(3)
    source = build_model(_options(config=config, task_name="MRPC", output_dir=str(tmp_path)), 2)
    save_weights(source, tmp_path / "ckpt", "native")
    opts = _options(config=config, task_name="MRPC", output_dir=str(tmp_path),
                    init_checkpoint=str(tmp_path / "ckpt"), student_layers=["1", "3"])
    assert opts.student_layers == [1, 3] and opts.config.num_hidden_layers == 2
    student = build_model(opts, 2)
    init_from_checkpoint(student, opts.init_checkpoint, opts.student_layers)

    def same(a, b):
        assert len(a.weights) == len(b.weights)
        for x, y in zip(a.weights, b.weights):
            np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=x.path)

    same(student.encoder.blocks[0], source.encoder.blocks[1])
    same(student.encoder.blocks[1], source.encoder.blocks[3])
    same(student.encoder.embeddings, source.encoder.embeddings)
    same(student.encoder.pooler, source.encoder.pooler)
    same(student.classifier, source.classifier)


@pytest.mark.parametrize("layers, message", [
    (["0", "4"], r"--student_layers=0,4: layer 4 is not one of --init_checkpoint's 4 layers "
                 r"\(0-3"),
    (["2", "1"], r"--student_layers=2,1: the layers must be strictly increasing"),
    (["0", "two"], r"--student_layers=0,two: expected layer numbers"),
])
def test_a_wrong_student_layers_names_the_flag(tmp_path, layers, message):
    with pytest.raises(ValueError, match=message):
        _options(config=BertConfig.from_preset("L-4_H-32_A-2", **TINY), task_name="MRPC",
                 output_dir=str(tmp_path), init_checkpoint=str(tmp_path),
                 student_layers=layers)


# --------------------------------------------------------------------------- the loss
def test_the_soft_loss_is_the_tempered_kl_divergence_times_t_squared():
    student = np.array([[1.0, -0.5, 2.0], [0.0, 3.0, -1.0]])
    teacher = np.array([[2.0, 0.0, 1.0], [-1.0, 1.5, 0.5]])
    t = 2.5

    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    p, q = softmax(teacher / t), softmax(student / t)
    expected = (p * np.log(p / q)).sum(axis=-1) * t * t
    np.testing.assert_allclose(soft_loss(student, teacher, t, False).numpy(), expected,
                               rtol=1e-5)
    # regression: the squared distance to the teacher's score, whatever the temperature
    np.testing.assert_allclose(soft_loss([[0.5], [2.0]], [[1.5], [1.0]], t, True).numpy(),
                               [1.0, 1.0])


def test_the_training_loss_mixes_label_and_soft_loss_by_alpha():
    logits = tf.constant([[1.0, -1.0], [0.5, 0.25]])
    features = {"label_ids": tf.constant([0, 1]),
                "teacher_logits": tf.constant([[0.0, 2.0], [1.0, 1.0]])}
    objective = DistillationObjective(False, temperature=2.0, alpha=0.3)
    numerators = objective.numerators({"logits": logits}, features)
    denominators = objective.denominators(features)
    loss = sum(float(numerators[t]) / float(denominators[t]) for t in objective.loss_terms)
    hard = float(tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        features["label_ids"], logits)))
    soft = float(tf.reduce_mean(soft_loss(logits, features["teacher_logits"], 2.0, False)))
    assert loss == pytest.approx(0.7 * hard + 0.3 * soft, rel=1e-6)


def test_the_hidden_loss_sums_squared_distances_of_unit_cls_vectors_over_layers():
    rng = np.random.default_rng(0)
    student, teacher = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))

    def unit(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    expected = ((unit(student) - unit(teacher)) ** 2).sum(axis=(1, 2))
    np.testing.assert_allclose(hidden_loss(student, teacher).numpy(), expected, rtol=1e-5)
    # scale-free: a student 10x larger is as far from the teacher
    np.testing.assert_allclose(hidden_loss(10 * student, teacher).numpy(), expected, rtol=1e-5)


def test_the_hidden_term_is_added_with_its_weight():
    features = {"label_ids": tf.constant([0, 1]),
                "teacher_logits": tf.constant([[0.0, 2.0], [1.0, 1.0]]),
                "teacher_cls": tf.constant([[[1.0, 0.0]], [[0.0, 2.0]]])}
    outputs = {"logits": tf.constant([[1.0, -1.0], [0.5, 0.25]]),
               "layer_cls": tf.constant([[[0.0, 3.0]], [[0.0, 1.0]]])}

    def loss(objective):
        numerators = objective.numerators(outputs, features)
        denominators = objective.denominators(features)
        return sum(float(numerators[t]) / float(denominators[t]) for t in objective.loss_terms)

    plain = DistillationObjective(False, temperature=2.0, alpha=0.3)
    with_hidden = DistillationObjective(False, temperature=2.0, alpha=0.3, hidden_weight=10.0)
    assert with_hidden.loss_terms == ("classification", "distillation", "hidden")
    # example 1: orthogonal unit vectors, distance^2 2; example 2: the same direction, 0
    assert loss(with_hidden) == pytest.approx(loss(plain) + 10.0 * (2.0 + 0.0) / 2, rel=1e-6)
    assert "hidden_loss" in with_hidden.metric_names and "hidden" not in plain.loss_terms


@pytest.mark.parametrize("teacher_layers, student_layers, matched", [
    (6, 3, [1, 3, 5]), (12, 6, [1, 3, 5, 7, 9, 11]), (6, 4, [0, 2, 3, 5]), (4, 4, [0, 1, 2, 3]),
    (12, 3, [3, 7, 11])])
def test_student_blocks_are_matched_to_evenly_spaced_teacher_blocks_ending_together(
        teacher_layers, student_layers, matched):
    assert matched_teacher_layers(teacher_layers, student_layers) == matched


def test_the_classifier_outputs_every_blocks_cls_vector_when_asked():
    config = BertConfig.from_preset("L-2_H-32_A-2", **TINY)
    keras.utils.set_random_seed(0)
    model = build_model(_options(config=config, task_name="MRPC", output_dir="/tmp"), 2,
                        layer_cls=True)
    inputs = {"input_ids": tf.constant([[101, 2023, 102, 0]]),
              "input_mask": tf.constant([[1, 1, 1, 0]]),
              "segment_ids": tf.constant([[0, 0, 0, 0]])}
    outputs = model(inputs, training=False)
    encoded = model.encoder(inputs, training=False)["encoder_outputs"]
    assert outputs["layer_cls"].shape == (1, 2, 32)
    for layer in range(2):
        np.testing.assert_allclose(outputs["layer_cls"][:, layer], encoded[layer][:, 0],
                                   rtol=1e-6)
    assert type(model).from_config(model.get_config()).layer_cls


# --------------------------------------------------------------------------- the teacher
@pytest.mark.parametrize("student, message", [
    (dict(task_name="generic", processor_options=dict(labels=["1", "0"], text_a_column="0")),
     r"the teacher's labels \['0', '1'\] .* are not the task's labels \['1', '0'\] \(generic\)"),
    (dict(task_name="STS-B"), r"is a classifier of 2 labels, but the task sts-b is a "
                              r"regression"),
])
def test_a_teacher_of_other_labels_is_refused(teacher, tmp_path, student, message):
    opts = _options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY), data_dir=str(tmp_path),
                    output_dir=str(tmp_path / "student"), do_train=True,
                    teacher_checkpoint=str(teacher), **student)
    with pytest.raises(ValueError, match=message):
        run(opts, tf.distribute.get_strategy())


def test_a_student_trains_from_the_teacher_and_records_it(student_run, teacher):
    """One layer of the teacher's two, trained on its soft targets: an ordinary run (periodic
    evaluation, best/, prediction) whose run_options.json names the teacher."""
    out, result = student_run["output_dir"], student_run["result"]
    assert result["train"]["step"] == 20
    assert 0 < result["train"]["distill_loss"] and 0 < result["train"]["label_loss"]
    written = read_eval_results(out / "eval_results.txt")
    # evaluated, predicted with: the best of the 4 evaluations, kept in best/
    assert written["global_step"] == result["best_step"] in (5, 10, 15, 20)
    assert 0 <= written["eval_accuracy"] <= 1
    assert (out / "best" / "eval_results.txt").is_file()
    assert len((out / "test_results.tsv").read_text().splitlines()) == 10
    assert json.loads((out / "bert_config.json").read_text())["num_hidden_layers"] == 1
    recorded = json.loads((out / "run_options.json").read_text())
    assert recorded["teacher"] == {"checkpoint": str(teacher), "labels": ["0", "1"],
                                   "task": "classifier"}
    assert {k: recorded["options"][k] for k in ("teacher_checkpoint", "distill_alpha",
                                                "distill_temperature", "student_layers")} == {
        "teacher_checkpoint": str(teacher), "distill_alpha": 0.7, "distill_temperature": 2.0,
        "student_layers": [1]}


def test_a_student_matches_the_teachers_hidden_states_and_learns_them(student_run):
    """With --distill_hidden_weight the training loss has the hidden term, and training brings
    the student's [CLS] vectors nearer the teacher's."""
    scalars = read_scalars(student_run["output_dir"] / "train")
    hidden = [value for _, value in scalars["hidden_loss"]]    # one point per 5 steps
    assert student_run["result"]["train"]["hidden_loss"] > 0 and len(hidden) == 4
    assert hidden[-1] < 0.5 * hidden[0]                # measured: 0.0032 -> 0.00015


@pytest.mark.parametrize("flags, message", [
    (dict(distill_hidden_weight=1.0), "only with --teacher_checkpoint"),
    (dict(distill_hidden_weight=-1.0, teacher="yes"), "--distill_hidden_weight must be >= 0"),
    (dict(distill_hidden_weight=1.0, teacher="yes", config=dict(hidden_size=64)),
     "the teacher's hidden size is 32, the student's 64"),
])
def test_bad_hidden_matching_is_named(teacher, mrpc_small, tmp_path, flags, message):
    if flags.pop("teacher", None):
        flags["teacher_checkpoint"] = str(teacher)
    config = BertConfig.from_json_file(teacher / "bert_config.json")
    config = config.replace(**flags.pop("config", {}))
    with pytest.raises(ValueError, match=message):
        run(_options(config=config, task_name="MRPC", data_dir=str(mrpc_small),
                     output_dir=str(tmp_path / "s"), do_train=True, **flags),
            tf.distribute.get_strategy())


def test_with_alpha_0_the_student_trains_exactly_as_without_the_teacher(teacher, mrpc_small,
                                                                        tmp_path):
    """The teacher's pass leaves the student's initialisation, dropout and data order as they
    are without it: only the loss differs, and with alpha 0 not even that, so both runs end
    with the same weights."""
    def train(name, **distillation):
        opts = _options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY), task_name="MRPC",
                        data_dir=str(mrpc_small), output_dir=str(tmp_path / name),
                        do_train=True, num_train_epochs=1, learning_rate=1e-3, **distillation)
        run(opts, tf.distribute.get_strategy())
        return tmp_path / name

    # Equal to rounding (measured: at most 7e-9 apart, on weights up to 0.04; without the seed
    # set again after the teacher, the student starts elsewhere: 0.08 apart).
    assert_alpha_0_student_trains_as_alone(train, teacher, atol=1e-8)


def test_the_teachers_targets_are_kept_and_a_resumed_run_reuses_them(student_run, teacher,
                                                                    mrpc_small, tmp_path,
                                                                    monkeypatch):
    kept = np.load(student_run["output_dir"] / "teacher_targets.npz")
    assert kept["teacher_logits"].shape == (40, 2) and kept["teacher_logits"].any()

    def no_second_pass(*args):
        raise AssertionError("the teacher scored the examples again")

    monkeypatch.setattr("bert_tf.jobs.teachers.teacher_targets", no_second_pass)
    resumed = tmp_path / "student"
    shutil.copytree(student_run["output_dir"], resumed)
    opts = _student_options(teacher, mrpc_small, resumed, num_train_epochs=5, do_eval=False,
                            do_predict=False, eval_every_steps=0)
    assert run(opts, tf.distribute.get_strategy())["train"]["step"] == 25    # resumed at 20


def test_kept_targets_of_other_examples_or_another_teacher_are_computed_again(tmp_path):
    from bert_tf.jobs.teachers import cached_targets
    path = str(tmp_path / "teacher_targets.npz")
    first = cached_targets(path, {"examples": "a"}, lambda: {"t": np.ones((2, 2), np.float32)})
    again = cached_targets(path, {"examples": "a"}, lambda: pytest.fail("computed again"))
    assert (again["t"] == first["t"]).all() and list(again) == ["t"]
    other = cached_targets(path, {"examples": "b"}, lambda: {"t": np.zeros((3, 2), np.float32)})
    assert other["t"].shape == (3, 2)
    assert cached_targets(path, {"examples": "b"}, lambda: pytest.fail("computed again"))[
        "t"].shape == (3, 2)


# --------------------------------------------------------------------------- augmentation
def test_augmented_copies_drop_words_keep_labels_and_follow_the_seed():
    from bert_tf.data.classification.examples import InputExample
    from bert_tf.data.classification.augmentation import augmented_examples
    examples = [InputExample("train-0", "the quick brown fox jumps over the lazy dog", "a b c",
                             "1"), InputExample("train-1", "one", None, "0")]
    got = augmented_examples(examples, 2, 0.5, seed=3)
    assert got[:2] == examples and len(got) == 6
    assert [e.guid for e in got[2:]] == ["train-0-aug1", "train-1-aug1", "train-0-aug2",
                                         "train-1-aug2"]
    assert [e.label for e in got[2:]] == ["1", "0", "1", "0"]
    for copy in got[2::2]:                    # words of the original, in order, at least one
        words = copy.text_a.split()
        assert words and len(words) < 9
        original = iter(examples[0].text_a.split())
        assert all(w in original for w in words)
    assert got[3].text_a == "one" and got[3].text_b is None
    assert augmented_examples(examples, 2, 0.5, seed=3) == got
    assert augmented_examples(examples, 2, 0.5, seed=4) != got


def _student_training(opts):
    """What run() trains the student of `opts` on, built in-process without training: its
    training steps (the driver's training_plan: the task's training data, examples and copies
    scored by the teacher, and the step count) and the mean distill_loss of the student (initialised as run() does)
    over those batches, as the trainer's metric computes it."""
    from bert_tf.data.classification.pipeline import MODEL_KEYS
    from bert_tf.jobs.classifier import ClassifierTask
    from bert_tf.jobs.driver import training_plan
    from bert_tf.jobs.options import start
    task = ClassifierTask(opts)
    start(opts)
    task.prepare()
    training, steps, _ = training_plan(task)
    model = task.build_model()
    init_from_checkpoint(model, opts.init_checkpoint, opts.student_layers)
    objective = task.loss(training)
    total, count, seen = 0.0, 0.0, 0
    for features in training.dataset_fn(tf.distribute.InputContext()).take(steps):
        outputs = model({k: features[k] for k in MODEL_KEYS}, training=False)
        loss, examples = objective.metrics(outputs, features)["distill_loss"]
        total, count, seen = total + float(loss), count + float(examples), seen + 1
    assert seen == steps                  # the dataset holds the batches of every step
    return steps, total / count


@pytest.mark.parametrize("copies, sets", [(dict(distill_augment=2), 3),
                                          (dict(distill_neighbours=1), 2)])
def test_copies_enlarge_the_training_set_the_steps_count(teacher, mrpc_small, tmp_path, copies,
                                                          sets):
    opts = _options(config=BertConfig.from_json_file(teacher / "bert_config.json"),
                    task_name="MRPC", data_dir=str(mrpc_small), output_dir=str(tmp_path / "s"),
                    init_checkpoint=str(teacher), student_layers=["0"],
                    teacher_checkpoint=str(teacher), do_train=True, num_train_epochs=1,
                    learning_rate=1e-3, **copies)
    steps, distill_loss = _student_training(opts)
    assert steps == 40 * sets // 8                              # 40 pairs and their copies
    assert np.isfinite(distill_loss) and distill_loss > 0


def test_cross_pairs_enlarge_the_training_set_the_steps_count(teacher, mrpc_small, tmp_path):
    from bert_tf.data.cross_pairs import cross_pairs
    with open(mrpc_small / "train.tsv", encoding="utf-8") as f:
        pairs = [tuple(line.rstrip("\n").split("\t")[3:5]) for line in list(f)[1:]]
    crossed = len(cross_pairs(pairs))
    assert crossed > 0
    opts = _options(config=BertConfig.from_json_file(teacher / "bert_config.json"),
                    task_name="MRPC", data_dir=str(mrpc_small), output_dir=str(tmp_path / "s"),
                    init_checkpoint=str(teacher), student_layers=["0"],
                    teacher_checkpoint=str(teacher), do_train=True, num_train_epochs=1,
                    learning_rate=1e-3, distill_cross_pairs=True)
    steps, distill_loss = _student_training(opts)
    assert steps == (40 + 2 * crossed) // 8                    # both orders of each pair
    assert np.isfinite(distill_loss)


def test_neighbour_copies_follow_the_labelled_examples_unlabelled(teacher):
    """--distill_neighbours copies the task's examples (not the dropout copies) with words
    from the teacher's vocabulary in place of its own, after every labelled example."""
    from types import SimpleNamespace

    from bert_tf.data.classification.examples import InputExample
    from bert_tf.jobs.distillation import student_examples
    from bert_tf.jobs.teachers import read_teacher
    examples = [InputExample("train-0", "the company reported strong profits", "profits rose",
                             "1"), InputExample("train-1", "shares fell sharply", None, "0")]
    opts = SimpleNamespace(distill_augment=1, distill_augment_drop=0.1, distill_neighbours=2,
                           distill_neighbour_rate=1.0, distill_cross_pairs=False,
                           distill_transfer_file=None, seed=1)
    found = read_teacher(str(teacher), ["0", "1"], False, "MRPC")
    got, labelled = student_examples(examples, opts, found, "0")
    assert labelled == 4 and [e.guid for e in got[4:]] == [
        "train-0-nbr1", "train-1-nbr1", "train-0-nbr2", "train-1-nbr2"]
    assert [e.label for e in got[4:]] == ["0"] * 4 and got[5].text_b is None
    vocab = set(open(found.vocab_file, encoding="utf-8").read().split())
    for copy in got[4:]:
        original = next(e for e in examples if copy.guid.startswith(e.guid))
        for text, before in ((copy.text_a, original.text_a), (copy.text_b, original.text_b)):
            for new, old in zip((text or "").split(), (before or "").split()):
                # Every word of 4 letters or more is another word of the vocabulary.
                assert (new == old) == (len(old) < 4) and new in vocab


def _cross_options(**flags):
    from types import SimpleNamespace
    return SimpleNamespace(**dict(dict(
        distill_augment=1, distill_augment_drop=0.1, distill_neighbours=0,
        distill_cross_pairs=True, distill_cross_similarity=0.3, distill_transfer_file=None,
        seed=1), **flags))


def test_cross_pairs_follow_the_copies_unlabelled_in_both_orders():
    """--distill_cross_pairs pairs a training sentence with its nearest sentence of another
    training pair (not its own partner), after the labelled examples, with no gold label."""
    from bert_tf.data.classification.examples import InputExample
    from bert_tf.jobs.distillation import student_examples
    examples = [InputExample("train-0", "shares of the bank fell", "the bank lost", "1"),
                InputExample("train-1", "the bank's shares fell", "it rained", "0")]
    got, labelled = student_examples(examples, _cross_options(), None, "0")
    assert labelled == 4
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in got[4:]] == [
        ("cross-0", "shares of the bank fell", "the bank's shares fell", "0"),
        ("cross-0-swapped", "the bank's shares fell", "shares of the bank fell", "0")]


def test_cross_pairs_never_rebuild_an_evaluation_pair():
    from bert_tf.data.classification.examples import InputExample
    from bert_tf.jobs.distillation import student_examples
    examples = [InputExample("train-0", "shares of the bank fell", "the bank lost", "1"),
                InputExample("train-1", "the bank's shares fell", "it rained", "0")]
    dev = [InputExample("dev-0", "the bank's shares fell", "shares of the bank fell", "1")]
    got, labelled = student_examples(examples, _cross_options(), None, "0", dev)
    assert labelled == 4 and len(got) == 4


def test_cross_pairs_need_a_sentence_pair_task():
    from bert_tf.data.classification.examples import InputExample
    from bert_tf.jobs.distillation import student_examples
    with pytest.raises(ValueError, match="--distill_cross_pairs pairs the sentences of a "
                                         "sentence-pair task"):
        student_examples([InputExample("train-0", "a film", None, "1")], _cross_options(),
                         None, "0")


@pytest.mark.parametrize("flags, message", [
    (dict(distill_augment=1), "only with --teacher_checkpoint"),
    (dict(distill_augment=-1, teacher="yes"), "--distill_augment must be >= 0"),
    (dict(distill_augment=1, distill_augment_drop=1.0, teacher="yes"),
     "--distill_augment_drop must be in"),
    (dict(distill_neighbours=1), "only with --teacher_checkpoint"),
    (dict(distill_neighbours=-1, teacher="yes"), "--distill_neighbours must be >= 0"),
    (dict(distill_neighbours=1, distill_neighbour_rate=0.0, teacher="yes"),
     r"--distill_neighbour_rate must be in \(0, 1\]"),
    (dict(distill_cross_pairs=True), "only with --teacher_checkpoint"),
    (dict(distill_cross_pairs=True, distill_cross_similarity=1.5, teacher="yes"),
     r"--distill_cross_similarity must be in \(0, 1\)"),
])
def test_bad_augmentation_flags_are_named(teacher, mrpc_small, tmp_path, flags, message):
    if flags.pop("teacher", None):
        flags["teacher_checkpoint"] = str(teacher)
    with pytest.raises(ValueError, match=message):
        run(_options(config=BertConfig.from_json_file(teacher / "bert_config.json"),
                     task_name="MRPC", data_dir=str(mrpc_small), output_dir=str(tmp_path / "s"),
                     do_train=True, **flags), tf.distribute.get_strategy())


# --------------------------------------------------------------------------- transfer set
def test_transfer_examples_skip_the_gold_label_loss_and_accuracy():
    logits = tf.constant([[1.0, -1.0], [0.5, 0.25], [-2.0, 2.0]])
    features = {"label_ids": tf.constant([0, 1, 0]), "label_weight": tf.constant([1.0, 1.0, 0.0]),
                "teacher_logits": tf.constant([[0.0, 2.0], [1.0, 1.0], [3.0, -1.0]])}
    objective = DistillationObjective(False, temperature=2.0, alpha=0.3)
    numerators = objective.numerators({"logits": logits}, features)
    denominators = objective.denominators(features)
    loss = sum(float(numerators[t]) / float(denominators[t]) for t in objective.loss_terms)
    hard = float(tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        features["label_ids"][:2], logits[:2])))             # the labelled two only
    soft = float(tf.reduce_mean(soft_loss(logits, features["teacher_logits"], 2.0, False)))
    assert loss == pytest.approx(0.7 * hard + 0.3 * soft, rel=1e-6)
    correct, count = objective.metrics({"logits": logits}, features)["accuracy"]
    assert (float(correct), float(count)) == (1.0, 2.0)      # the third, wrong, not counted


def test_a_batch_of_transfer_examples_alone_has_no_gold_label_loss():
    features = {"label_ids": tf.constant([0, 0]), "label_weight": tf.constant([0.0, 0.0]),
                "teacher_logits": tf.constant([[0.0, 2.0], [1.0, 1.0]])}
    objective = DistillationObjective(False, temperature=1.0, alpha=0.5)
    numerators = objective.numerators({"logits": tf.constant([[1.0, 0.0], [0.0, 1.0]])},
                                      features)
    denominators = objective.denominators(features)
    assert float(numerators["classification"]) / float(denominators["classification"]) == 0.0


def test_transfer_file_lines_become_unlabelled_examples(tmp_path):
    from bert_tf.data.classification.augmentation import transfer_examples
    path = tmp_path / "transfer.tsv"
    path.write_text("A man plays.\tA man is playing.\n\nTwo dogs run.\tA cat sleeps.\r\n",
                    encoding="utf-8")
    got = transfer_examples(str(path), True, "0")
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in got] == [
        ("transfer-1", "A man plays.", "A man is playing.", "0"),
        ("transfer-3", "Two dogs run.", "A cat sleeps.", "0")]


@pytest.mark.parametrize("text, pairs, message", [
    ("one\ttwo\n", False, r"transfer.tsv:1: 2 tab-separated columns; .* text_a alone"),
    ("a\tb\nonly one\n", True, r"transfer.tsv:2: 1 tab-separated columns; .* text_a<TAB>text_b"),
    ("a\t \n", True, r"transfer.tsv:1: an empty text"),
    ("\n\n", True, r"transfer.tsv:1: no examples"),
])
def test_a_bad_transfer_file_names_its_line(tmp_path, text, pairs, message):
    from bert_tf.data.classification import DataFormatError
    from bert_tf.data.classification.augmentation import transfer_examples
    path = tmp_path / "transfer.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        transfer_examples(str(path), pairs, "0")


def test_a_transfer_set_enlarges_the_training_set_and_is_learnt_softly(teacher, mrpc_small,
                                                                      tmp_path):
    pairs = [line.split("\t")[3:5] for line in
             (shared_path("data/glue/MRPC") / "test.tsv").read_text("utf-8").splitlines()[1:17]]
    transfer = tmp_path / "transfer.tsv"
    transfer.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    opts = _options(config=BertConfig.from_json_file(teacher / "bert_config.json"),
                    task_name="MRPC", data_dir=str(mrpc_small), output_dir=str(tmp_path / "s"),
                    init_checkpoint=str(teacher), student_layers=["0"],
                    teacher_checkpoint=str(teacher), distill_transfer_file=str(transfer),
                    do_train=True, num_train_epochs=1, learning_rate=1e-3)
    result = run(opts, tf.distribute.get_strategy())
    assert result["train"]["step"] == (40 + 16) // 8               # 40 labelled, 16 transfer
    scalars = read_scalars(tmp_path / "s" / "train")
    for name in ("label_loss", "distill_loss", "accuracy"):
        assert scalars[name] and all(np.isfinite(v) for _, v in scalars[name])


@pytest.mark.parametrize("flags, message", [
    (dict(distill_transfer_file="x.tsv"), "only with --teacher_checkpoint"),
    (dict(distill_transfer_file="/nonexistent/x.tsv", teacher="yes"),
     "--distill_transfer_file /nonexistent/x.tsv does not exist"),
])
def test_bad_transfer_flags_are_named(teacher, mrpc_small, tmp_path, flags, message):
    if flags.pop("teacher", None):
        flags["teacher_checkpoint"] = str(teacher)
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        run(_options(config=BertConfig.from_json_file(teacher / "bert_config.json"),
                     task_name="MRPC", data_dir=str(mrpc_small), output_dir=str(tmp_path / "s"),
                     do_train=True, **flags), tf.distribute.get_strategy())
