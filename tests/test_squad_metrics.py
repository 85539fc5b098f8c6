"""Official SQuAD metrics: hand-built cases whose values follow from evaluate-v1.1 /
evaluate-v2.0, and real dev files scored against an independent implementation of the rules."""

import json
import random
import re
import string

import pytest

from bert_tf.metrics.squad import (evaluate, evaluate_v1, evaluate_v2, exact_match, f1_score,
                                   has_gold_answers, load_dataset, normalize_answer,
                                   write_eval_results)
from helpers import shared_path


def _dataset(*qas):
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": [
        {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
        for qid, golds in qas]}]}]


@pytest.mark.parametrize("text, expected", [
    ("The  Quick, Brown-fox!", "quick brownfox"),
    ("An apple a day", "apple day"),
    ("theory of the anthem", "theory of anthem"),
    ("a-the b", "athe b"),  # punctuation goes first, so "a-the" is one word
    ("\u201cQuoted\u201d \u2014 text", "\u201cquoted\u201d \u2014 text"),  # only ASCII punctuation
    ("\u2014the end", "\u2014 end"),  # an article next to a non-word character is a word
    ("\tTHE\n", ""),
])
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_compares_normalised_text():
    assert exact_match("The Denver Broncos.", "denver broncos") == 1
    assert exact_match("Denver", "denver broncos") == 0
    assert exact_match("", "the") == 1


def test_f1_counts_shared_tokens_as_multisets():
    assert f1_score("the cat sat", "cat sat on mat") == pytest.approx(2 / 3)
    assert f1_score("x x y", "x y y") == pytest.approx(2 / 3)
    assert f1_score("x x", "x") == pytest.approx(2 / 3)
    assert f1_score("x", "y") == 0


def test_f1_of_empty_answers_differs_between_v1_and_v2():
    assert f1_score("", "") == 0  # v1.1: no common token
    assert f1_score("", "", empty_answers_match=True) == 1
    assert f1_score("the", "", empty_answers_match=True) == 1  # both normalise to nothing
    assert f1_score("x", "", empty_answers_match=True) == 0


def test_v1_hand_built():
    dataset = _dataset(("a1", ["Denver Broncos", "The Denver Broncos"]),
                       ("a2", ["Santa Clara, California", "Levi's Stadium"]),
                       ("a3", ["Santa Clara"]))
    preds = {"a1": "denver broncos.", "a2": "Levi's Stadium in Santa Clara"}  # a3 unanswered
    # a2: vs "levis stadium": P 2/5, R 1 -> F1 4/7; vs "santa clara california": 1/2
    result = evaluate_v1(dataset, preds)
    assert result == {"exact_match": pytest.approx(100 / 3),
                      "f1": pytest.approx(100 * (1 + 4 / 7) / 3)}


def _v2_dataset():
    return _dataset(("q1", ["Paris"]), ("q2", ["blue whale", "the blue whale"]),
                    ("q3", []), ("q4", []))


V2_PREDS = {"q1": "paris", "q2": "whale", "q3": "", "q4": "London"}


def test_v2_hand_built_scores_and_best_thresholds():
    na_probs = {"q1": -1.0, "q2": -2.0, "q3": 0.5, "q4": -1.8}
    result = evaluate_v2(_v2_dataset(), V2_PREDS, na_probs)
    # exact: q1 1, q2 0, q3 1, q4 0; f1: 1, 2/3, 1, 0
    # sweep in na order q2, q4, q1, q3 from 2 (no-answer count):
    #   exact 2 -> 2 -> 1 -> 2 -> 2: never above 2, threshold stays 0.0
    #   f1    2 -> 2.667 (best, -2.0) -> 1.667 -> 2.667 -> 2.667
    assert result == {
        "exact": 50.0, "f1": pytest.approx(100 * (2 + 2 / 3) / 4), "total": 4,
        "HasAns_exact": 50.0, "HasAns_f1": pytest.approx(100 * (1 + 2 / 3) / 2),
        "HasAns_total": 2,
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
        "best_exact": 50.0, "best_exact_thresh": 0.0,
        "best_f1": pytest.approx(100 * (2 + 2 / 3) / 4), "best_f1_thresh": -2.0}
    assert list(result)[:3] == ["exact", "f1", "total"]


def test_v2_na_prob_above_one_counts_as_a_null_answer():
    na_probs = {"q1": -1.0, "q2": -2.0, "q3": 0.5, "q4": 2.0}
    result = evaluate_v2(_v2_dataset(), V2_PREDS, na_probs)
    # q4 (no answer, predicted "London") has na_prob 2.0 > 1.0: scored as answered null
    assert (result["exact"], result["NoAns_exact"]) == (75.0, 100.0)
    assert result["f1"] == pytest.approx(100 * (3 + 2 / 3) / 4)
    # sweep q2, q1, q3, q4: exact 2 -> 2 -> 3 (best, -1.0) -> 3 -> 2
    assert (result["best_exact"], result["best_exact_thresh"]) == (75.0, -1.0)
    assert result["best_f1"] == pytest.approx(100 * (3 + 2 / 3) / 4)
    assert result["best_f1_thresh"] == -1.0


def test_v2_without_na_probs_has_no_sweep_and_skips_missing_predictions():
    preds = {"q1": "paris", "q3": "x"}
    result = evaluate_v2(_v2_dataset(), preds)
    assert result == {"exact": 50.0, "f1": 50.0, "total": 2,
                      "HasAns_exact": 100.0, "HasAns_f1": 100.0, "HasAns_total": 1,
                      "NoAns_exact": 0.0, "NoAns_f1": 0.0, "NoAns_total": 1}
    with pytest.raises(ValueError, match="na_probs has no entry for question id 'q3'"):
        evaluate_v2(_v2_dataset(), preds, {"q1": 0.0})


def test_gold_answers_that_normalise_to_nothing_are_dropped_in_v2():
    dataset = _dataset(("mixed", ["The", "Paris"]), ("blank", ["!"]))
    preds = {"mixed": "", "blank": ""}
    # v2.0 keeps only "Paris" for "mixed" and scores "blank" against ""
    assert evaluate_v2(dataset, preds)["exact"] == 50.0
    # v1.1 compares with every gold answer; its F1 of empty texts is 0
    assert evaluate_v1(dataset, preds) == {"exact_match": 100.0, "f1": 0.0}


def test_evaluate_dispatches_on_version_and_results_are_written(tmp_path):
    v1 = evaluate(_dataset(("a", ["x"])), {"a": "x"}, version_2_with_negative=False)
    assert v1 == {"exact_match": 100.0, "f1": 100.0}
    v2 = evaluate(_v2_dataset(), V2_PREDS, True, null_odds={q: 0.0 for q in V2_PREDS})
    assert "best_f1_thresh" in v2
    path = tmp_path / "out" / "eval_results.json"
    write_eval_results(path, v2)
    assert json.loads(path.read_text()) == pytest.approx(dict(v2))
    assert path.read_text().endswith("}\n")
    assert sorted(p.name for p in path.parent.iterdir()) == ["eval_results.json"]


def test_has_gold_answers():
    assert has_gold_answers(_v2_dataset())
    assert not has_gold_answers(_dataset(("q", [])))
    assert not has_gold_answers([{"paragraphs": [{"qas": [{"id": "q", "question": "?"}]}]}])


# --- an independent, literal implementation of the official rules -------------------------

def _norm(s):
    s = s.lower().translate(str.maketrans("", "", string.punctuation))
    # \b(a|an|the)\b == a maximal run of word characters equal to an article
    pieces = [" " if p in ("a", "an", "the") else p for p in re.findall(r"\w+|\W+", s)]
    return " ".join("".join(pieces).split())


def _f1(pred, gold, v2):
    p, g = _norm(pred).split(), _norm(gold).split()
    if v2 and (not p or not g):
        return float(p == g)
    same = sum(min(p.count(t), g.count(t)) for t in set(p))
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _qas(dataset):
    return [qa for article in dataset for par in article["paragraphs"] for qa in par["qas"]]


def _reference_v1(dataset, preds):
    qas = _qas(dataset)
    em = f1 = 0.0
    for qa in qas:
        if qa["id"] in preds:
            golds = [a["text"] for a in qa["answers"]]
            em += max(float(_norm(preds[qa["id"]]) == _norm(g)) for g in golds)
            f1 += max(_f1(preds[qa["id"]], g, False) for g in golds)
    return {"exact_match": 100 * em / len(qas), "f1": 100 * f1 / len(qas)}


def _reference_v2(dataset, preds, na_probs):
    has_ans, em, f1 = {}, {}, {}
    for qa in _qas(dataset):
        has_ans[qa["id"]] = len(qa["answers"]) > 0
        if qa["id"] in preds:
            golds = [a["text"] for a in qa["answers"] if _norm(a["text"])] or [""]
            em[qa["id"]] = max(float(_norm(preds[qa["id"]]) == _norm(g)) for g in golds)
            f1[qa["id"]] = max(_f1(preds[qa["id"]], g, True) for g in golds)
    out = {}
    for name, raw in (("exact", em), ("f1", f1)):
        final = {q: (float(not has_ans[q]) if na_probs[q] > 1.0 else s) for q, s in raw.items()}
        out[name] = 100 * sum(final.values()) / len(final)
        for prefix, want in (("HasAns", True), ("NoAns", False)):
            subset = [q for q in final if has_ans[q] == want]
            out[f"{prefix}_{name}"] = 100 * sum(final[q] for q in subset) / len(subset)
            out[f"{prefix}_total"] = len(subset)
        # prefix sums over questions in na_prob order; the first strict maximum wins
        order = [q for q in sorted(na_probs, key=na_probs.get) if q in raw]
        gains = [raw[q] if has_ans[q] else -float(bool(preds[q])) for q in order]
        totals = [sum(not v for v in has_ans.values())]
        for g in gains:
            totals.append(totals[-1] + g)
        best_k = max(range(len(totals)), key=lambda k: (totals[k], -k))
        out[f"best_{name}"] = 100 * totals[best_k] / len(raw)
        out[f"best_{name}_thresh"] = na_probs[order[best_k - 1]] if best_k else 0.0
    out["total"] = len(em)
    return out


def _perturb(rng, i, gold, other):
    kind = i % 8
    if kind == 0:
        return gold
    if kind == 1:
        return gold.upper() + "."
    if kind == 2:
        return "the " + gold + "!!"
    if kind == 3:
        words = gold.split()
        return " ".join(words[:-1]) if len(words) > 1 else gold + " extra"
    if kind == 4:
        return gold + " and " + other
    if kind == 5:
        return other
    if kind == 6:
        return "\u201c" + gold + "\u201d"
    return "".join(rng.sample(gold, len(gold)))


def test_v1_on_real_dev_predictions_matches_the_reference():
    dataset, version = load_dataset(shared_path("data/squad/dev-v1.1.half-a.json"))
    assert version == "1.1"
    rng = random.Random(7)
    qas = _qas(dataset)
    preds = {}
    for i, qa in enumerate(qas):
        if i % 50 == 49:
            continue  # unanswered
        gold = rng.choice(qa["answers"])["text"]
        preds[qa["id"]] = _perturb(rng, i, gold, rng.choice(qas)["answers"][0]["text"])
    ours, reference = evaluate_v1(dataset, preds), _reference_v1(dataset, preds)
    assert ours == pytest.approx(reference, abs=1e-9)
    assert 25 < ours["exact_match"] < 60 and ours["exact_match"] < ours["f1"] < 90
    assert evaluate_v1(dataset, {qa["id"]: qa["answers"][0]["text"] for qa in qas}) == {
        "exact_match": 100.0, "f1": 100.0}


def test_v2_on_real_dev_predictions_matches_the_reference():
    dataset, version = load_dataset(shared_path("data/squad/dev-v2.0.first5articles.json"))
    assert version == "v2.0"
    rng = random.Random(11)
    qas = _qas(dataset)
    preds, na_probs = {}, {}
    for i, qa in enumerate(qas):
        if qa["answers"]:
            gold = rng.choice(qa["answers"])["text"]
            pred = "" if i % 9 == 0 else _perturb(rng, i, gold, rng.choice(qas)["question"])
        else:
            pred = "" if i % 2 else qa["plausible_answers"][0]["text"]
        preds[qa["id"]] = pred
        na_probs[qa["id"]] = rng.randrange(-20, 20) / 4  # many ties, some above 1.0
    ours, reference = evaluate_v2(dataset, preds, na_probs), _reference_v2(dataset, preds,
                                                                           na_probs)
    assert ours == pytest.approx(reference, abs=1e-9)
    assert ours["total"] == 1407 and ours["NoAns_total"] == 702
    # the sweep passes through "answer every question with na_prob <= 1.0"
    assert ours["best_f1"] >= ours["f1"] - 1e-9 and ours["best_exact"] >= ours["exact"] - 1e-9
    assert ours["best_f1"] > 100 * 702 / 1407  # better than answering everything null
