"""Official SQuAD metrics: evaluate-v1.1 (exact_match, f1) and evaluate-v2.0 (exact, f1,
HasAns_*/NoAns_*, best thresholds from the null-odds sweep), all scaled to 0-100.

Answers are compared after normalisation: lower case, ASCII punctuation (string.punctuation)
removed, the articles a/an/the removed, whitespace collapsed. A prediction scores the maximum
over the gold answers; F1 is over token multisets.

The two scripts differ on empty answers and missing predictions, and both behaviours are kept:
v1.1 gives F1 0 whenever either side has no tokens and counts a missing prediction as 0 over
all questions; v2.0 gives 1 when both are empty, treats a question without gold answers as
gold "", and leaves missing predictions out of the totals.
"""

import collections
import json
import logging
import re
import string

from bert_tf.fileio import atomic_write_text

logger = logging.getLogger(__name__)

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Lower-cases, drops ASCII punctuation and the articles a/an/the, collapses whitespace."""
    text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold):
    """1 if prediction and gold are equal after normalisation, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold, empty_answers_match=False):
    """Token-multiset F1 of normalised texts. With no tokens on either side the result is 0
    (v1.1), or with empty_answers_match=True 1 if both sides are empty, else 0 (v2.0)."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if empty_answers_match and (not pred_tokens or not gold_tokens):
        return int(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _questions(dataset):
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def evaluate_v1(dataset, predictions):
    """evaluate-v1.1 on `dataset` (the file's "data" list) and predictions {id: text}:
    {"exact_match", "f1"}; unanswered questions score 0."""
    exact = f1 = 0.0
    total = missing = 0
    for qa in _questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            missing += 1
            continue
        golds = [a["text"] for a in qa["answers"]]
        if not golds:
            raise ValueError(f"question id {qa['id']!r} has no gold answer; SQuAD 1.1 scoring "
                             "needs at least one (use the v2.0 metrics for unanswerable ones)")
        prediction = predictions[qa["id"]]
        exact += max(exact_match(prediction, g) for g in golds)
        f1 += max(f1_score(prediction, g) for g in golds)
    if missing:
        logger.warning("%d of %d questions have no prediction and score 0", missing, total)
    if not total:
        raise ValueError("the SQuAD dataset has no questions")
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def _raw_scores_v2(dataset, predictions):
    exact, f1, has_answer = {}, {}, {}
    for qa in _questions(dataset):
        qid = qa["id"]
        has_answer[qid] = bool(qa["answers"])
        if qid not in predictions:
            continue
        golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
        prediction = predictions[qid]
        exact[qid] = max(exact_match(prediction, g) for g in golds)
        f1[qid] = max(f1_score(prediction, g, empty_answers_match=True) for g in golds)
    return exact, f1, has_answer


def _mean_percent(scores, qids):
    return 100.0 * sum(scores[q] for q in qids) / len(qids)


def _best_threshold(predictions, scores, na_probs, has_answer):
    """The null-odds sweep of evaluate-v2.0: start from "every question answered null" and, in
    increasing na_prob order, switch each question to its prediction; returns the best
    percentage reached and the na_prob where it was reached (0.0 if never above the start)."""
    current = best = sum(1 for q in has_answer if not has_answer[q])
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda q: na_probs[q]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            current += scores[qid]
        elif predictions[qid]:
            current -= 1
        if current > best:
            best = current
            best_thresh = na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """evaluate-v2.0 on `dataset` and predictions {id: text}, with optional na_probs {id: float}
    (null_odds.json). Returns exact, f1, total, HasAns_*/NoAns_* (when such questions exist) and,
    with na_probs, best_exact(_thresh) and best_f1(_thresh). A question whose na_prob exceeds
    na_prob_thresh counts as answered null. Missing predictions are left out of all totals (the
    official script would crash on them in the HasAns/NoAns split)."""
    exact_raw, f1_raw, has_answer = _raw_scores_v2(dataset, predictions)
    if not exact_raw:
        raise ValueError("no prediction matches a question of the SQuAD dataset")
    missing = len(has_answer) - len(exact_raw)
    if missing:
        logger.warning("%d of %d questions have no prediction; left out of the totals", missing,
                       len(has_answer))
    probs = na_probs if na_probs is not None else {q: 0.0 for q in predictions}
    missing_probs = [q for q in exact_raw if q not in probs]
    if missing_probs:
        raise ValueError(f"na_probs has no entry for question id {missing_probs[0]!r} "
                         f"({len(missing_probs)} missing)")

    def thresholded(raw):
        return {q: float(not has_answer[q]) if probs[q] > na_prob_thresh else s
                for q, s in raw.items()}

    exact, f1 = thresholded(exact_raw), thresholded(f1_raw)
    qids = list(exact)
    out = collections.OrderedDict(
        exact=_mean_percent(exact, qids), f1=_mean_percent(f1, qids), total=len(qids))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        subset = [q for q in qids if has_answer[q] == wanted]
        if subset:
            out[f"{prefix}_exact"] = _mean_percent(exact, subset)
            out[f"{prefix}_f1"] = _mean_percent(f1, subset)
            out[f"{prefix}_total"] = len(subset)
    if na_probs is not None:
        out["best_exact"], out["best_exact_thresh"] = _best_threshold(
            predictions, exact_raw, na_probs, has_answer)
        out["best_f1"], out["best_f1_thresh"] = _best_threshold(
            predictions, f1_raw, na_probs, has_answer)
    return out


def load_dataset(path):
    """(data list, version string) of a SQuAD JSON file; version is "" when absent."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    with tf.io.gfile.GFile(str(path), "r") as f:
        document = json.load(f)
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ValueError(f"{path}: not a SQuAD file (no 'data' list)")
    return document["data"], str(document.get("version", ""))


def has_gold_answers(dataset):
    """True when every question carries an "answers" list and at least one is non-empty, i.e.
    the file can be scored (a hidden test set cannot)."""
    any_answer = False
    for qa in _questions(dataset):
        answers = qa.get("answers")
        if not isinstance(answers, list):
            return False
        any_answer = any_answer or bool(answers)
    return any_answer


def evaluate(dataset, predictions, version_2_with_negative, null_odds=None):
    """The official metrics for run_squad: evaluate_v2 (with null_odds as na_probs) for SQuAD 2.0,
    else evaluate_v1."""
    if version_2_with_negative:
        return evaluate_v2(dataset, predictions, na_probs=null_odds)
    return evaluate_v1(dataset, predictions)


def write_eval_results(path, results):
    """Writes eval_results.json (the metrics dict, indent 4) atomically."""
    atomic_write_text(path, json.dumps(dict(results), indent=4) + "\n")
