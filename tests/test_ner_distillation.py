"""run_ner's task distillation: the teacher's word logits placed in the student's windows, the
tagging soft loss, and a tiny student tagger trained from a tiny fine-tuned teacher."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.data.arrays import arrays_dataset
from bert_tf.data.ner import encode_units
from bert_tf.jobs.ner import NerOptions, run
from bert_tf.jobs.ner_distillation import window_teacher_logits
from bert_tf.objectives.distillation import TaggingDistillationObjective, soft_loss
from bert_tf.tokenization import FullTokenizer
from helpers import assert_alpha_0_student_trains_as_alone, minilm_dir, shared_path

TINY = dict(vocab_size=30522, max_position_embeddings=64)


def _options(**kwargs):
    values = dict(vocab_file=str(minilm_dir() / "vocab.txt"), do_lower_case=True,
                  max_seq_length=32, seed=1, train_batch_size=8, eval_batch_size=16,
                  iterations_per_loop=5, learning_rate=1e-3, save_checkpoints_steps=1000)
    values.update(kwargs)
    keras.utils.set_random_seed(values["seed"])
    return NerOptions(**values)


@pytest.fixture(scope="module")
def conll_small(tmp_path_factory):
    """The first 60 sentences of CoNLL-2003's training file, as train and eval file."""
    blocks = open(shared_path("data/conll2003/eng.train"), encoding="utf-8").read().split("\n\n")
    path = tmp_path_factory.mktemp("conll") / "train.txt"
    path.write_text("\n\n".join(blocks[:60]) + "\n\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def teacher(conll_small, tmp_path_factory):
    """A 2-layer tagger fine-tuned on the 60 sentences: its output_dir."""
    out = tmp_path_factory.mktemp("ner_teacher")
    run(_options(config=BertConfig.from_preset("L-2_H-32_A-2", **TINY), train_file=conll_small,
                 output_dir=str(out), do_train=True, num_train_epochs=2),
        tf.distribute.get_strategy())
    return out


def test_each_words_teacher_logits_sit_at_its_first_sub_token_in_every_window():
    """Two overlapping windows over one unit: a word in both gets its logits in both, at the
    position of its first WordPiece there."""
    tokenizer = FullTokenizer(str(minilm_dir() / "vocab.txt"), do_lower_case=True)
    words = ["Unbelievably", "the", "EU", "rejects", "German", "call", "to", "boycott", "lamb"]
    features = encode_units([words], tokenizer, max_seq_length=10, stride=4)
    assert features.num_windows >= 2
    word_logits = [np.arange(len(words) * 3, dtype=np.float32).reshape(len(words), 3)]
    logits = window_teacher_logits(features, word_logits, 3)
    assert logits.shape == (features.num_windows, 10, 3)
    for i, window in enumerate(features.windows):
        for k, position in enumerate(window.positions):
            np.testing.assert_array_equal(logits[i, position],
                                          word_logits[0][window.first_word + k])
        others = np.setdiff1d(np.arange(10), window.positions)
        assert not logits[i, others].any()


def test_per_token_arrays_are_cut_with_the_batch():
    """Arrays of [N, S, C] (teacher logits) lose the same padding as input_ids [N, S]."""
    arrays = {"input_ids": np.ones((4, 32), np.int32), "input_mask": np.zeros((4, 32), np.int32),
              "teacher_logits": np.ones((4, 32, 5), np.float32),
              "window_index": np.arange(4, dtype=np.int32)}
    arrays["input_mask"][:, :11] = 1
    batch = next(iter(arrays_dataset(arrays, 4, is_training=False)))
    assert batch["input_ids"].shape == (4, 16)          # 11 rounded up to a multiple of 8
    assert batch["teacher_logits"].shape == (4, 16, 5)
    assert batch["window_index"].shape == (4,)


def test_the_tagging_loss_mixes_word_losses_by_alpha_over_labelled_words_only():
    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(size=(2, 4, 3)), tf.float32)
    teacher = tf.constant(rng.normal(size=(2, 4, 3)), tf.float32)
    weights = np.array([[0, 1, 1, 0], [0, 1, 0, 0]], np.float32)        # 3 labelled words
    features = {"label_ids": tf.constant([[0, 2, 1, 0], [0, 1, 0, 0]]),
                "label_weights": tf.constant(weights), "teacher_logits": teacher}
    objective = TaggingDistillationObjective(temperature=2.0, alpha=0.3)
    numerators = objective.numerators({"logits": logits}, features)
    denominators = objective.denominators(features)
    loss = sum(float(numerators[t]) / float(denominators[t]) for t in objective.loss_terms)
    hard = tf.nn.sparse_softmax_cross_entropy_with_logits(features["label_ids"], logits).numpy()
    soft = soft_loss(logits, teacher, 2.0, False).numpy()
    expected = (0.7 * (hard * weights).sum() + 0.3 * (soft * weights).sum()) / 3
    assert loss == pytest.approx(expected, rel=1e-6)
    metrics = objective.metrics({"logits": logits}, features)
    assert float(metrics["distill_loss"][0]) / float(metrics["distill_loss"][1]) == \
        pytest.approx((soft * weights).sum() / 3, rel=1e-6)


def test_transfer_windows_skip_the_tagging_loss_and_accuracy_but_not_the_soft_loss():
    rng = np.random.default_rng(1)
    logits = tf.constant(rng.normal(size=(2, 3, 3)), tf.float32)
    teacher = tf.constant(rng.normal(size=(2, 3, 3)), tf.float32)
    features = {"label_ids": tf.constant([[0, 2, 1], [0, 1, 1]]),
                "label_weights": tf.constant([[0, 1, 1], [0, 1, 1]], tf.float32),
                "label_weight": tf.constant([1, 0], tf.float32),             # row 2: transfer
                "teacher_logits": teacher}
    objective = TaggingDistillationObjective(temperature=1.0, alpha=0.5)
    numerators = objective.numerators({"logits": logits}, features)
    denominators = objective.denominators(features)
    hard = tf.nn.sparse_softmax_cross_entropy_with_logits(features["label_ids"], logits).numpy()
    soft = soft_loss(logits, teacher, 1.0, False).numpy()
    assert float(numerators["tagging"]) / float(denominators["tagging"]) == \
        pytest.approx(0.5 * hard[0, 1:].mean(), rel=1e-6)
    assert float(numerators["distillation"]) / float(denominators["distillation"]) == \
        pytest.approx(0.5 * np.concatenate([soft[0, 1:], soft[1, 1:]]).mean(), rel=1e-6)
    assert float(objective.metrics({"logits": logits}, features)["accuracy"][1]) == 2


def test_a_student_tagger_trains_from_the_teacher_and_records_it(teacher, conll_small,
                                                                tmp_path):
    """One layer of the teacher's two, at a longer window than the teacher's: an ordinary
    run whose run_options.json names the teacher, learning both loss terms."""
    out = tmp_path / "student"
    opts = _options(config=BertConfig.from_json_file(teacher / "bert_config.json"),
                    train_file=conll_small, eval_file=conll_small, output_dir=str(out),
                    init_checkpoint=str(teacher), student_layers=["1"], max_seq_length=48,
                    teacher_checkpoint=str(teacher), distill_alpha=0.7, do_train=True,
                    do_eval=True, num_train_epochs=1)
    result = run(opts, tf.distribute.get_strategy())
    assert 0 < result["train"]["distill_loss"] and 0 < result["train"]["label_loss"]
    assert 0 <= result["eval"]["f1"] <= 1
    assert json.loads((out / "bert_config.json").read_text())["num_hidden_layers"] == 1
    recorded = json.loads((out / "run_options.json").read_text())
    assert recorded["teacher"]["task"] == "tagger"
    assert recorded["teacher"]["labels"] == (teacher / "label_list.txt").read_text().split()


def test_with_alpha_0_the_student_tagger_trains_exactly_as_without_the_teacher(
        teacher, conll_small, tmp_path):
    """Both runs end with the same weights (and optimizer state): the teacher's pass leaves the
    student's initialisation, dropout and window order as they are without it."""
    def train(name, **distillation):
        opts = _options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY),
                        train_file=conll_small, output_dir=str(tmp_path / name), do_train=True,
                        num_train_epochs=1, **distillation)
        run(opts, tf.distribute.get_strategy())
        return tmp_path / name

    # Equal to rounding. Measured: 1 of 976,704 values 4.0e-7 apart (a word-embedding entry,
    # where Adam's normalised step magnifies a rounding difference of a near-zero gradient).
    assert_alpha_0_student_trains_as_alone(train, teacher, atol=1e-6)


def test_the_teachers_word_logits_are_kept_and_reused_by_a_rerun(teacher, conll_small,
                                                                  tmp_path, monkeypatch):
    from bert_tf.data.ner import group_sentences, read_conll
    out = tmp_path / "student"

    def train():
        run(_options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY),
                     train_file=conll_small, output_dir=str(out), do_train=True,
                     num_train_epochs=1, teacher_checkpoint=str(teacher)),
            tf.distribute.get_strategy())

    train()
    kept = np.load(out / "teacher_targets.npz")
    words = sum(len(w) for w in group_sentences(read_conll(conll_small), "sentence").words)
    labels = (teacher / "label_list.txt").read_text().split()
    assert kept["word_logits"].shape == (words, len(labels)) and kept["word_logits"].any()

    def no_second_pass(*args):
        raise AssertionError("the teacher scored the words again")

    monkeypatch.setattr("bert_tf.jobs.ner_distillation.teacher_word_logits", no_second_pass)
    train()


@pytest.mark.parametrize("flags, message", [
    ({"distill_alpha": 0.3}, "distill_alpha: only with --teacher_checkpoint"),
    ({"distill_transfer_file": "x.txt"}, "distill_transfer_file: only with --teacher_checkpoint"),
    ({"teacher_checkpoint": "TEACHER", "distill_transfer_file": "missing.txt"},
     "--distill_transfer_file missing.txt does not exist"),
    ({"teacher_checkpoint": "TEACHER", "distill_temperature": 0.0},
     "--distill_temperature must be > 0"),
    ({"teacher_checkpoint": "TEACHER", "labels": "TEACHER'S, REVERSED"},
     "are not the task's labels"),
])
def test_bad_tagger_distillation_flags_are_named(teacher, conll_small, tmp_path, flags,
                                                 message):
    reversed_labels = (teacher / "label_list.txt").read_text().split()[::-1]
    flags = {k: {"TEACHER": str(teacher), "TEACHER'S, REVERSED": reversed_labels}.get(v, v)
             if isinstance(v, str) else v for k, v in flags.items()}
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        opts = _options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY),
                        train_file=conll_small, output_dir=str(tmp_path / "out"),
                        do_train=True, **flags)
        run(opts, tf.distribute.get_strategy())


def test_a_classifier_run_is_refused_as_a_tagger_teacher(conll_small, tmp_path):
    from bert_tf.jobs.teachers import read_tagger_teacher
    folder = tmp_path / "classifier"
    folder.mkdir()
    (folder / "run_options.json").write_text(json.dumps(
        {"task": "classifier", "options": {}}))
    with pytest.raises(ValueError, match="not a run_ner run"):
        read_tagger_teacher(str(folder), ["O"])


def _windows(path):
    """How many windows of 32 WordPieces (stride 64) run_ner cuts the sentences of `path` in."""
    from bert_tf.data.ner import group_sentences, read_conll
    tokenizer = FullTokenizer(str(minilm_dir() / "vocab.txt"), do_lower_case=True)
    units = group_sentences(read_conll(path), "sentence")
    return encode_units(units.words, tokenizer, max_seq_length=32, stride=64).num_windows


def test_a_transfer_file_adds_windows_the_steps_count(teacher, conll_small, tmp_path):
    """30 sentences without tags beside the tagged ones: an epoch counts the windows of both."""
    blocks = open(shared_path("data/conll2003/eng.testa"), encoding="utf-8").read().split("\n\n")
    sentences = [b for b in blocks if b.strip() and not b.startswith("-DOCSTART-")][:30]
    words_only = tmp_path / "transfer.txt"
    words_only.write_text("\n\n".join("\n".join(line.split(" ")[0] for line in b.splitlines())
                                      for b in sentences) + "\n", encoding="utf-8")
    opts = _options(config=BertConfig.from_preset("L-1_H-32_A-2", **TINY),
                    train_file=conll_small, output_dir=str(tmp_path / "out"), do_train=True,
                    teacher_checkpoint=str(teacher), distill_transfer_file=str(words_only),
                    num_train_epochs=1)
    # run()'s training data and step count, built in-process (the teacher scores both files)
    from bert_tf.jobs.driver import training_plan
    from bert_tf.jobs.ner import NerTask
    from bert_tf.jobs.options import start
    task = NerTask(opts)
    start(opts)
    task.prepare()
    _, steps, _ = training_plan(task)
    train, transfer = _windows(conll_small), _windows(str(words_only))
    assert transfer >= 30
    assert steps == (train + transfer) // 8
