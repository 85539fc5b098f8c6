"""Reading SQuAD JSON into examples: the original word split, answer word spans, v2.0
impossible questions, and clear errors (or counted skips) for malformed files."""

import json

import pytest

from bert_tf.data.squad import SquadFormatError, read_squad_examples, split_context
from helpers import shared_path


def _write(tmp_path, paragraphs, version="1.1"):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"version": version,
                                "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return path


def _qa(qid, answers, question="Who?", **extra):
    return {"id": qid, "question": question, "answers": answers, **extra}


def test_split_context_maps_every_character_to_its_word():
    tokens, offsets = split_context(" The  cat\tsat.\n")
    assert tokens == ["The", "cat", "sat."]
    #                    ' '  T  h  e ' ' ' ' c  a  t '\t' s  a  t  .  '\n'
    assert offsets == [-1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]


def test_split_context_splits_only_on_the_original_whitespace_set():
    # U+202F splits (as in run_squad.py); the no-break space U+00A0 does not.
    tokens, _ = split_context("a\u202fb c\u00a0d")
    assert tokens == ["a", "b", "c\u00a0d"]


def test_training_answer_becomes_a_word_span(tmp_path):
    context = "The leader was John Smith (1895-1943)."
    path = _write(tmp_path, [{"context": context, "qas": [
        _qa("q1", [{"text": "John Smith", "answer_start": context.index("John")}]),
        _qa("q2", [{"text": "1895", "answer_start": context.index("1895")}])]}])
    examples = read_squad_examples(path, is_training=True).examples
    assert [(e.qas_id, e.start_position, e.end_position) for e in examples] == [
        ("q1", 3, 4), ("q2", 5, 5)]
    assert examples[1].orig_answer_text == "1895"
    assert examples[0].doc_tokens is examples[1].doc_tokens  # one split per paragraph


def test_prediction_mode_keeps_no_positions(tmp_path):
    context = "Paris is in France."
    path = _write(tmp_path, [{"context": context, "qas": [
        _qa("q1", [{"text": "Paris", "answer_start": 0}, {"text": "Paris", "answer_start": 0}]),
        _qa("q2", [])]}])
    examples = read_squad_examples(path, is_training=False).examples
    assert [e.qas_id for e in examples] == ["q1", "q2"]
    assert all(e.start_position is None and not e.is_impossible for e in examples)


def test_v2_impossible_questions_are_labelled_minus_one(tmp_path):
    context = "Paris is in France."
    path = _write(tmp_path, [{"context": context, "qas": [
        _qa("q1", [], is_impossible=True,
            plausible_answers=[{"text": "France", "answer_start": 12}]),
        _qa("q2", [{"text": "France", "answer_start": 12}], is_impossible=False)]}], "v2.0")
    examples = read_squad_examples(path, True, version_2_with_negative=True).examples
    assert [(e.is_impossible, e.start_position, e.end_position, e.orig_answer_text)
            for e in examples] == [(True, -1, -1, ""), (False, 3, 3, "France")]


def test_training_skips_and_counts_answers_lost_by_the_word_split(tmp_path):
    # The answer's no-break space becomes a plain space once whitespace-cleaned, so it is not
    # found in the context words: the original's "Could not find answer" skip.
    context = "It cost 10\u00a0000 dollars."
    path = _write(tmp_path, [{"context": context, "qas": [
        _qa("lost", [{"text": "10\u00a0000", "answer_start": 8}]),
        _qa("kept", [{"text": "dollars", "answer_start": 15}])]}])
    result = read_squad_examples(path, is_training=True)
    assert [e.qas_id for e in result.examples] == ["kept"]
    assert result.num_answer_not_found == 1
    assert result.num_questions == 2


@pytest.mark.parametrize("qa, message", [
    (_qa("bad", [{"text": "France", "answer_start": 40}]), "outside the context"),
    (_qa("bad", [{"text": "France", "answer_start": 0}]), "does not match the context"),
    (_qa("bad", [{"text": "France", "answer_start": "12"}]), "'answer_start' must be int"),
    (_qa("bad", [{"text": "France", "answer_start": 12.0}]), "'answer_start' must be int"),
    (_qa("bad", [{"answer_start": 12}]), "missing key 'text'"),
    (_qa("bad", [{"text": " ", "answer_start": 5}]), "empty answer text"),
    ({"id": "bad", "answers": []}, "missing key 'question'"),
    (_qa("bad", [{"text": "Paris", "answer_start": 0}, {"text": "France", "answer_start": 12}]),
     "exactly 1 answer"),
])
def test_malformed_question_raises_naming_its_id(tmp_path, qa, message):
    path = _write(tmp_path, [{"context": "Paris is in France.", "qas": [qa]}])
    with pytest.raises(SquadFormatError, match=message) as err:
        read_squad_examples(path, is_training=True)
    assert "question id 'bad'" in str(err.value)
    assert str(path) in str(err.value)


def test_question_without_id_is_named_by_position(tmp_path):
    path = _write(tmp_path, [{"context": "Paris.", "qas": [{"question": "Q?", "answers": []}]}])
    where = r"data\[0\]\.paragraphs\[0\]\.qas\[0\]"
    with pytest.raises(SquadFormatError, match=where + ": missing key 'id'"):
        read_squad_examples(path, is_training=False)


def test_duplicate_id_raises(tmp_path):
    path = _write(tmp_path, [{"context": "Paris.", "qas": [_qa("dup", []), _qa("dup", [])]}])
    with pytest.raises(SquadFormatError, match="question id 'dup': duplicate question id"):
        read_squad_examples(path, is_training=False)


def test_v2_training_needs_a_boolean_is_impossible(tmp_path):
    path = _write(tmp_path, [{"context": "Paris.", "qas": [
        _qa("q", [{"text": "Paris", "answer_start": 0}], is_impossible="no")]}])
    with pytest.raises(SquadFormatError, match="question id 'q': 'is_impossible' must be bool"):
        read_squad_examples(path, True, version_2_with_negative=True)


def test_skip_bad_skips_and_counts_malformed_questions(tmp_path):
    context = "Paris is in France."
    path = _write(tmp_path, [{"context": context, "qas": [
        _qa("ok", [{"text": "France", "answer_start": 12}]),
        _qa("off", [{"text": "France", "answer_start": 99}]),
        _qa("ok", [{"text": "Paris", "answer_start": 0}]),
        _qa("type", [{"text": "Paris", "answer_start": None}])]}])
    result = read_squad_examples(path, is_training=True, skip_bad=True)
    assert [e.qas_id for e in result.examples] == ["ok"]
    assert [qid for qid, _ in result.skipped_bad] == ["off", "ok", "type"]
    assert "duplicate" in result.skipped_bad[1][1]
    assert result.num_questions == 4


def test_structural_errors_name_the_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"version": "1.1", "data": [{"paragraphs": [{"qas": []}]}]}')
    where = r"x\.json: data\[0\]\.paragraphs\[0\]"
    with pytest.raises(SquadFormatError, match=where + ": missing key 'context'"):
        read_squad_examples(path, is_training=False, skip_bad=True)
    path.write_text('{"data": [')
    with pytest.raises(SquadFormatError, match="x.json: not valid JSON"):
        read_squad_examples(path, is_training=False)


@pytest.mark.parametrize("name, is_training, v2, questions, paragraphs, impossible", [
    ("train-v1.1.first44articles.json", True, False, 11877, 2430, 0),
    ("dev-v1.1.half-a.json", False, False, 4961, 913, 0),
    ("dev-v2.0.first5articles.json", False, True, 1407, 173, 0),
    ("train-v2.0.first11articles.json", True, True, 5147, 773, 348),
])
def test_reads_the_shared_squad_files(name, is_training, v2, questions, paragraphs, impossible):
    result = read_squad_examples(shared_path(f"data/squad/{name}"), is_training, v2)
    assert result.num_questions == questions
    assert not result.skipped_bad
    assert len(result.examples) + result.num_answer_not_found == questions
    assert result.num_answer_not_found == 0
    assert len({id(e.doc_tokens) for e in result.examples}) == paragraphs
    assert sum(e.is_impossible for e in result.examples) == impossible
    if is_training:
        for e in result.examples:
            if not e.is_impossible:
                words = " ".join(e.doc_tokens[e.start_position:e.end_position + 1])
                assert " ".join(e.orig_answer_text.split()) in words
