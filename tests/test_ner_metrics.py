"""Entity-level scores with conlleval semantics, against hand-computed cases."""

import pytest

from bert_tf.metrics.ner import chunks, score


def test_chunks_are_read_with_conlleval_rules():
    assert chunks(["B-PER", "I-PER", "O", "B-LOC"]) == {(0, 1, "PER"), (3, 3, "LOC")}
    # I- after O or after another type starts a chunk; B- ends the previous one.
    assert chunks(["O", "I-PER", "I-LOC", "B-LOC", "I-LOC"]) == {
        (1, 1, "PER"), (2, 2, "LOC"), (3, 4, "LOC")}
    assert chunks(["I-ORG"]) == {(0, 0, "ORG")}
    assert chunks([]) == set()


def test_exact_match_scores_one():
    tags = [["B-PER", "I-PER", "O"], ["B-LOC", "O", "B-ORG"]]
    s = score(tags, tags)
    assert (s.overall.precision, s.overall.recall, s.overall.f1) == (1.0, 1.0, 1.0)
    assert s.accuracy == 1.0


def test_partial_overlap_earns_nothing():
    # Gold "Peter Blackburn" (PER); predicted only "Peter": right type, wrong end.
    s = score([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])
    assert (s.overall.correct, s.overall.predicted, s.overall.gold) == (0, 1, 1)
    assert s.overall.f1 == 0.0
    assert s.accuracy == pytest.approx(2 / 3)


def test_type_error_counts_against_both_types():
    s = score([["B-LOC", "O"]], [["B-ORG", "O"]])
    assert s.per_type["LOC"].gold == 1 and s.per_type["LOC"].predicted == 0
    assert s.per_type["ORG"].predicted == 1 and s.per_type["ORG"].correct == 0
    assert s.overall.f1 == 0.0


def test_hand_computed_mixture():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "O"],
            ["B-ORG", "I-ORG", "I-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG", "B-MISC"],      # PER right, LOC typed ORG,
                 ["B-ORG", "I-ORG", "O", "O"]]                    # spurious MISC, ORG too short
    s = score(gold, predicted)
    # 3 gold entities, 4 predicted, 1 correct.
    assert (s.overall.correct, s.overall.predicted, s.overall.gold) == (1, 4, 3)
    assert s.overall.precision == pytest.approx(1 / 4)
    assert s.overall.recall == pytest.approx(1 / 3)
    assert s.overall.f1 == pytest.approx(2 / 7)
    assert s.per_type["PER"].f1 == 1.0
    assert (s.per_type["ORG"].correct, s.per_type["ORG"].predicted, s.per_type["ORG"].gold) == (
        0, 2, 1)
    assert s.per_type["MISC"].precision == 0.0 and s.per_type["MISC"].recall == 0.0
    assert s.per_type["LOC"].recall == 0.0
    assert s.accuracy == pytest.approx(6 / 9)
    values = s.as_dict()
    assert values["f1"] == pytest.approx(2 / 7) and values["f1_PER"] == 1.0
    assert values["num_predicted_entities"] == 4


def test_ill_formed_prediction_is_scored_like_conlleval():
    # "I-PER I-PER" after O is one PER chunk for conlleval, so it matches gold B-PER I-PER.
    s = score([["O", "B-PER", "I-PER"]], [["O", "I-PER", "I-PER"]])
    assert s.overall.correct == 1 and s.overall.f1 == 1.0


def test_entities_do_not_cross_sentence_boundaries():
    # Gold has one PER at the end of sentence 1 and one at the start of sentence 2.
    s = score([["O", "B-PER"], ["I-PER", "O"]], [["O", "B-PER"], ["I-PER", "O"]])
    assert s.overall.gold == 2 and s.overall.correct == 2


def test_report_has_conlleval_summary_lines():
    report = score([["B-PER", "O"]], [["B-PER", "B-LOC"]]).report()
    lines = report.splitlines()
    assert lines[0] == "processed 2 tokens with 1 phrases; found: 2 phrases; correct: 1."
    assert lines[1] == "accuracy:  50.00%; precision:  50.00%; recall: 100.00%; FB1:  66.67"
    assert lines[3].strip() == "PER: precision: 100.00%; recall: 100.00%; FB1: 100.00  1"


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="sentence 0: 1 predicted tags for 2 gold tags"):
        score([["O", "O"]], [["O"]])
