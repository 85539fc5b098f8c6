"""bert_tf.kinds: one name per kind of model, and where its pieces live."""

import json

import pytest

from bert_tf import kinds
from bert_tf.checkpoints.run_options import RunRecord, read_run_options

PIECES = ("model", "finetune", "serving", "prediction")


@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_every_piece_of_a_kind_is_importable_and_knows_its_kind(name):
    kind = kinds.get(name)
    for piece in PIECES:
        assert (kind.load(piece) is None) == (getattr(kind, piece) is None), piece
    assert all(isinstance(cls, type) for cls in kind.model_classes())
    if kind.serving:
        assert kind.load("serving").kind == name
    if kind.finetune:
        assert kind.load("finetune").kind in kinds.KINDS


def test_export_savedmodel_keeps_its_task_choices_in_order():
    assert kinds.SERVED == ("classifier", "regression", "squad", "tagger", "encoder",
                            "multiple_choice", "fill_mask", "multi_label", "embedding")
    assert kinds.WINDOWED == ("classifier", "regression", "multi_label", "embedding")


def test_an_unknown_kind_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown kind 'tagging': use one of classifier, "):
        kinds.get("tagging")


def test_a_run_classifier_run_trained_every_classifier_kind_and_no_other():
    run = RunRecord("classifier", {}, "run_options.json")
    assert [k for k in kinds.KINDS if run.serves(k)] == ["classifier", "regression",
                                                          "multi_label"]


@pytest.mark.parametrize("written, kind", [("tagging", "tagger"), ("span", "squad"),
                                           ("multiple-choice", "multiple_choice"),
                                           ("tagger", "tagger"), ("classifier", "classifier")])
def test_run_options_of_earlier_versions_are_read_with_kind_names(tmp_path, written, kind):
    (tmp_path / "run_options.json").write_text(
        json.dumps({"task": written, "options": {"max_seq_length": 64}}))
    record = read_run_options(str(tmp_path))
    assert (record.kind, record.options) == (kind, {"max_seq_length": 64})
