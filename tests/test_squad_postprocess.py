"""Logits -> answers as google-research/bert's write_predictions does it: candidate validity,
max context, the v2.0 null score, n-best probabilities, get_final_text and its fallbacks, the
fixed all-null case, and the output files."""

import json
import math

import numpy as np
import pytest

from bert_tf.data.squad import (NULL_ONLY_SCORE_DIFF, RawResult, SquadExample,
                                compute_predictions, convert_examples_to_features,
                                get_final_text, write_predictions)
from helpers import shared_path

NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
           "fourteen fifteen sixteen seventeen eighteen nineteen").split()
LOW = -10.0


@pytest.fixture(scope="module")
def tokenizer():
    from bert_tf import tokenization
    return tokenization.FullTokenizer(str(shared_path("data/reference/vocab.txt")),
                                      do_lower_case=True)


def _features(tokenizer, words, max_seq_length=64, doc_stride=32, question="Who led?"):
    example = SquadExample("q1", question, words)
    return example, convert_examples_to_features([example], tokenizer, max_seq_length,
                                                 doc_stride, 8, False)


def _pos(feature, token):
    """Feature position of `token` in the document part of the window."""
    for position in feature.token_to_orig_map:
        if feature.tokens[position] == token:
            return position
    raise AssertionError(f"{token} not in window {feature.doc_span_index}")


def _result(feature, start, end):
    """RawResult with LOW logits except at the given {position: logit} entries."""
    def logits(hot):
        values = [LOW] * len(feature.input_ids)
        for position, value in hot.items():
            values[position] = value
        return values
    return RawResult(feature.unique_id, logits(start), logits(end))


def _predict(example, features, results, v2=False, **kwargs):
    options = dict(n_best_size=20, max_answer_length=30, do_lower_case=True,
                   version_2_with_negative=v2)
    options.update(kwargs)
    return compute_predictions([example], features, results, **options)


def test_get_final_text_trims_the_original_words_to_the_prediction():
    assert get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert get_final_text("1895", "(1895-1943).", True) == "1895"
    assert get_final_text("naive", "Naïve,", True) == "Naïve"


def test_get_final_text_falls_back_to_the_original_words():
    # prediction not found in the re-tokenized original
    assert get_final_text("jones", "Steve Smith's", True) == "Steve Smith's"
    # lengths differ once spaces are removed (the tokenizer drops the zero-width space)
    assert get_final_text("foobar", "foo\u200bbar", True) == "foo\u200bbar"
    # an end of the prediction falls on a space of the tokenized text
    assert get_final_text(" smith", "Steve Smith's", True) == "Steve Smith's"
    assert get_final_text("steve ", "Steve Smith's", True) == "Steve Smith's"
    # cased: "Steve" is not found in the original when it is not lower-cased
    assert get_final_text("steve", "Steve", False) == "Steve"
    assert get_final_text("Ste", "Steve", False) == "Ste"


def test_best_span_is_projected_back_to_the_original_text(tokenizer):
    example, [f] = _features(tokenizer, "The leader was John Smith's (1895-1943).".split())
    john, smith = _pos(f, "john"), _pos(f, "smith")
    out = _predict(example, [f], [_result(f, {john: 5.0}, {smith: 4.0})])
    assert out.predictions == {"q1": "John Smith"}
    assert out.null_odds is None
    best = out.nbest["q1"][0]
    assert (best["text"], best["start_logit"], best["end_logit"]) == ("John Smith", 5.0, 4.0)
    assert list(best) == ["text", "probability", "start_logit", "end_logit"]
    nbest = out.nbest["q1"]
    assert len(nbest) == 20 and len({e["text"] for e in nbest}) == 20
    scores = [e["start_logit"] + e["end_logit"] for e in nbest]
    assert scores == sorted(scores, reverse=True)
    expected = np.exp(np.array(scores) - max(scores))
    np.testing.assert_allclose([e["probability"] for e in nbest], expected / expected.sum())

    year = _pos(f, "1895")
    out = _predict(example, [f], [_result(f, {year: 5.0}, {year: 5.0})])
    assert out.predictions["q1"] == "1895"


def test_invalid_candidates_are_skipped(tokenizer):
    example, [f] = _features(tokenizer, NUMBERS[:10])
    question, sep = 1, f.tokens.index("[SEP]")  # "who" in the query, the first [SEP]
    two, three, four, seven = (_pos(f, w) for w in ("two", "three", "four", "seven"))
    beyond = len(f.tokens) + 3  # padding
    start = {question: 9.0, sep: 9.0, beyond: 9.0, three: 8.0, two: 1.0}
    end = {beyond: 9.0, question: 9.0, two: 8.5, seven: 7.0, four: 6.0}
    # three..two ends before it starts; three..seven is 5 tokens > max_answer_length 3
    out = _predict(example, [f], [_result(f, start, end)], max_answer_length=3, n_best_size=5)
    assert out.predictions["q1"] == "three four"
    assert [e["text"] for e in out.nbest["q1"]] == ["three four", "two", "two three four"]


def test_starts_without_max_context_are_skipped(tokenizer):
    # query "who led ?" = 3 tokens; 16 - 6 = 10 doc tokens per window, windows 0-9 and 5-14, ...
    example, features = _features(tokenizer, NUMBERS, max_seq_length=16, doc_stride=5)
    w0, w1 = features[0], features[1]
    assert not w1.token_is_max_context[_pos(w1, "six")]  # 'six' is better centred in window 0
    assert w0.token_is_max_context[_pos(w0, "three")]
    results = [_result(w0, {_pos(w0, "three"): 1.0}, {_pos(w0, "four"): 1.0}),
               _result(w1, {_pos(w1, "six"): 9.0}, {_pos(w1, "eight"): 9.0})]
    results += [_result(f, {}, {}) for f in features[2:]]
    out = _predict(example, features, results)
    assert out.predictions["q1"] == "three four"


def test_v2_null_score_is_the_lowest_cls_score_over_windows(tokenizer):
    example, features = _features(tokenizer, NUMBERS, max_seq_length=16, doc_stride=5)
    w0, w1 = features[0], features[1]
    results = [_result(w0, {0: 2.0, _pos(w0, "two"): 1.5}, {0: 1.0, _pos(w0, "three"): 1.0}),
               _result(w1, {0: 0.5}, {0: 0.25})]
    results += [_result(f, {0: 3.0}, {0: 3.0}) for f in features[2:]]
    out = _predict(example, features, results, v2=True)
    score_null, best = 0.5 + 0.25, 1.5 + 1.0
    assert out.null_odds == {"q1": pytest.approx(score_null - best)}
    assert out.predictions["q1"] == "two three"
    null_entries = [e for e in out.nbest["q1"] if e["text"] == ""]
    assert [(e["start_logit"], e["end_logit"]) for e in null_entries] == [(0.5, 0.25)]

    out = _predict(example, features, results, v2=True, null_score_diff_threshold=-2.0)
    assert out.predictions["q1"] == ""  # -1.75 > -2.0


def test_v2_null_entry_is_added_when_outside_the_nbest(tokenizer):
    example, [f] = _features(tokenizer, NUMBERS[:10])
    two, three = _pos(f, "two"), _pos(f, "three")
    out = _predict(example, [f], [_result(f, {0: -20.0, two: 3.0, three: 2.0},
                                          {0: -20.0, two: 3.0, three: 2.0})],
                   v2=True, n_best_size=2)
    assert [e["text"] for e in out.nbest["q1"]] == ["two", "two three", ""]
    assert out.null_odds["q1"] == pytest.approx(-40.0 - 6.0)


def test_v2_example_with_only_the_null_candidate_predicts_no_answer(tokenizer):
    # The original crashes here (no non-null entry): every top start is in the query.
    example, [f] = _features(tokenizer, NUMBERS[:10])
    out = _predict(example, [f], [_result(f, {0: 1.0, 1: 5.0}, {0: 2.0, 1: 5.0})],
                   v2=True, n_best_size=1)
    assert out.predictions == {"q1": ""}
    assert out.nbest["q1"] == [{"text": "", "probability": 1.0, "start_logit": 1.0,
                                "end_logit": 2.0}]
    assert out.null_odds == {"q1": NULL_ONLY_SCORE_DIFF}


def test_example_without_windows(tokenizer):
    example = SquadExample("empty-doc", "Who?", [])
    assert convert_examples_to_features([example], tokenizer, 32, 8, 8, False) == []
    v1 = compute_predictions([example], [], [], 20, 30, True)
    assert v1.predictions == {"empty-doc": "empty"}  # the original's nonce answer
    v2 = compute_predictions([example], [], [], 20, 30, True, version_2_with_negative=True)
    assert v2.predictions == {"empty-doc": ""}
    assert v2.null_odds == {"empty-doc": NULL_ONLY_SCORE_DIFF}


def test_v1_without_valid_candidates_answers_the_nonce_empty(tokenizer):
    example, [f] = _features(tokenizer, NUMBERS[:10])
    out = _predict(example, [f], [_result(f, {1: 5.0}, {1: 5.0})], n_best_size=1)
    assert out.nbest["q1"] == [{"text": "empty", "probability": 1.0, "start_logit": 0.0,
                                "end_logit": 0.0}]


def test_candidates_with_the_same_final_text_appear_once(tokenizer):
    example, [f] = _features(tokenizer, ["see", "foo\u200bbar", "now"])
    foo = _pos(f, "foo")
    assert f.tokens[foo + 1] == "##bar"
    # "foo" and "foo ##bar" both fall back to the original word "foo\u200bbar"
    out = _predict(example, [f], [_result(f, {foo: 5.0}, {foo: 4.0, foo + 1: 3.0})],
                   n_best_size=3)
    texts = [e["text"] for e in out.nbest["q1"]]
    assert texts[0] == "foo\u200bbar" and texts.count("foo\u200bbar") == 1


def test_missing_result_is_an_error_naming_the_feature(tokenizer):
    example, [f] = _features(tokenizer, NUMBERS[:5])
    with pytest.raises(ValueError, match=f"unique_id {f.unique_id} .*'q1'"):
        _predict(example, [f], [])


def test_numpy_logits_are_accepted(tokenizer):
    example, [f] = _features(tokenizer, NUMBERS[:5])
    r = _result(f, {_pos(f, "one"): 2.0}, {_pos(f, "two"): 2.0})
    r = RawResult(np.int64(r.unique_id), np.array(r.start_logits, np.float32),
                  np.array(r.end_logits, np.float32))
    out = _predict(example, [f], [r])
    assert out.predictions["q1"] == "one two"
    json.dumps(out.nbest)  # plain floats only


def test_output_files_match_run_squad(tokenizer, tmp_path):
    example, [f] = _features(tokenizer, NUMBERS[:10])
    out = _predict(example, [f], [_result(f, {_pos(f, "two"): 3.0}, {_pos(f, "two"): 3.0})],
                   v2=True)
    paths = [tmp_path / "predictions.json", tmp_path / "nbest_predictions.json",
             tmp_path / "null_odds.json"]
    write_predictions(out, *paths)
    assert sorted(tmp_path.iterdir()) == sorted(paths)
    text = paths[0].read_text()
    assert text == json.dumps({"q1": "two"}, indent=4) + "\n"
    assert json.loads(paths[1].read_text()) == out.nbest
    assert json.loads(paths[2].read_text()) == {"q1": pytest.approx(LOW * 2 - 6.0)}
    with pytest.raises(ValueError, match="null_odds_file"):
        write_predictions(out, paths[0], paths[1])


def test_real_windows_answer_from_gold_logits(tokenizer):
    """Logits peaked on each gold answer's labelled window reproduce the gold text."""
    from bert_tf.data.squad import read_squad_examples
    from bert_tf.metrics.squad import normalize_answer
    examples = read_squad_examples(
        shared_path("data/squad/train-v1.1.first44articles.json"), True).examples[:120]
    features = convert_examples_to_features(examples, tokenizer, 128, 64, 32, True)
    results = []
    for f in features:
        start, end = [LOW] * 128, [LOW] * 128
        if f.start_position > 0:
            start[f.start_position], end[f.end_position] = 8.0, 8.0
        results.append(RawResult(f.unique_id, start, end))
    out = compute_predictions(examples, features, results, 20, 30, True)
    matches = sum(normalize_answer(out.predictions[e.qas_id]) == normalize_answer(
        e.orig_answer_text) for e in examples)
    assert matches >= 0.97 * len(examples)
    assert not math.isnan(sum(e["probability"] for n in out.nbest.values() for e in n))
