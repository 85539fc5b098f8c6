"""Start/end logits per window -> answer texts, n-best lists and null odds (google-research/bert's
write_predictions algorithm, with its all-null SQuAD 2.0 crash fixed).

Per example: the top n_best_size start and end positions of every window are paired; a pair is
kept if both lie in the window's document part, the start has maximum context in this window,
end >= start and the span has at most max_answer_length WordPieces. For SQuAD 2.0 the null
candidate is the [CLS] start+end score of the window where it is lowest. Candidates are ranked
by start_logit + end_logit, mapped back to the original text with get_final_text, de-duplicated
and cut to n_best_size; the probabilities are a softmax over the n-best scores.
"""

import collections
import dataclasses
import functools
import json
import logging
import math

import numpy as np

from bert_tf.fileio import atomic_write_text
from bert_tf.tokenization import BasicTokenizer

logger = logging.getLogger(__name__)

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])

# null_odds.json value when a SQuAD 2.0 example has no valid non-null candidate at all (the
# original crashes there): the example is answered "" at every sensible threshold.
NULL_ONLY_SCORE_DIFF = 1e6

_Prelim = collections.namedtuple(
    "_Prelim", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"])
_Nbest = collections.namedtuple("_Nbest", ["text", "start_logit", "end_logit"])
# SQuAD 2.0's null answer: the lowest [CLS] score of an example's windows, and where.
_Null = collections.namedtuple("_Null", ["score", "feature_index", "start_logit", "end_logit"])


@dataclasses.dataclass
class SquadPredictions:
    """predictions: qas_id -> answer text; nbest: qas_id -> list of {text, probability,
    start_logit, end_logit}; null_odds: qas_id -> null score minus best non-null score (SQuAD 2.0
    only, else None). All keep example order."""

    predictions: dict
    nbest: dict
    null_odds: dict | None = None


def get_best_indexes(logits, n_best_size):
    """Indexes of the n_best_size largest logits, largest first (ties keep position order)."""
    order = np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:n_best_size]]


def compute_softmax(scores):
    """Softmax of a list of floats as a list (empty for empty input)."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def get_final_text(pred_text, orig_text, do_lower_case, basic_tokenizer=None,
                   verbose_logging=False):
    """Projects normalised predicted text (joined WordPieces) back onto orig_text, the original
    words of the span, e.g. "steve smith" in "Steve Smith's" -> "Steve Smith".

    orig_text is run through BasicTokenizer; if the prediction is not found in it, or the
    tokenized and original texts differ in length once spaces are removed, or an end of the
    prediction cannot be mapped, orig_text is returned unchanged.
    """
    tokenizer = basic_tokenizer or BasicTokenizer(do_lower_case=do_lower_case)
    tok_text = " ".join(tokenizer.tokenize(orig_text))
    return _project(pred_text, orig_text, tok_text, verbose_logging)


def _project(pred_text, orig_text, tok_text, verbose_logging):
    """get_final_text given tok_text, the space-joined basic tokens of orig_text.

    Characters are aligned one to one after removing spaces from both texts."""
    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logger.info("Unable to find text: %r in %r", pred_text, orig_text)
        return orig_text
    end_position = start_position + len(pred_text) - 1

    orig_non_space = [i for i, c in enumerate(orig_text) if c != " "]
    if len(orig_non_space) != len(tok_text) - tok_text.count(" "):
        if verbose_logging:
            logger.info("Length not equal after stripping spaces: %r vs %r", orig_text, tok_text)
        return orig_text

    def to_orig(position):
        """orig_text index of the character at tok_text[position] (None for a space)."""
        if not 0 <= position < len(tok_text) or tok_text[position] == " ":
            return None
        return orig_non_space[position - tok_text.count(" ", 0, position)]

    orig_start = to_orig(start_position)
    if orig_start is None:
        if verbose_logging:
            logger.info("Couldn't map start position")
        return orig_text
    orig_end = to_orig(end_position)
    if orig_end is None:
        if verbose_logging:
            logger.info("Couldn't map end position")
        return orig_text
    return orig_text[orig_start:orig_end + 1]


def _detokenize(tok_tokens):
    """Joins WordPieces into normalised text ("john ##son" -> "johnson")."""
    text = " ".join(tok_tokens).replace(" ##", "").replace("##", "")
    return " ".join(text.strip().split())


def compute_predictions(all_examples, all_features, all_results, n_best_size,
                        max_answer_length, do_lower_case, version_2_with_negative=False,
                        null_score_diff_threshold=0.0, basic_tokenizer=None,
                        verbose_logging=False):
    """SquadPredictions for all_examples from their features and RawResults (matched by
    unique_id; a feature without a result raises ValueError).

    SQuAD 1.1: the answer is the best n-best entry ("empty" if no candidate is valid, as in the
    original). SQuAD 2.0: "" when null score - best non-null score > null_score_diff_threshold,
    else the best non-null text. Fixed: when no non-null candidate exists the original crashes;
    here the answer is "", the n-best holds only the null entry and the null odds are
    NULL_ONLY_SCORE_DIFF.
    """
    basic_tokenizer = basic_tokenizer or BasicTokenizer(do_lower_case=do_lower_case)
    # Basic tokens of a span = those of its words joined: tokenize each distinct word once.
    word_tokens = functools.lru_cache(maxsize=1 << 16)(
        lambda word: " ".join(basic_tokenizer.tokenize(word)))
    features_by_example = collections.defaultdict(list)
    for feature in all_features:
        features_by_example[feature.example_index].append(feature)
    result_by_id = {int(r.unique_id): r for r in all_results}

    out = SquadPredictions(collections.OrderedDict(), collections.OrderedDict(),
                           collections.OrderedDict() if version_2_with_negative else None)
    for example_index, example in enumerate(all_examples):
        features = features_by_example[example_index]
        prelim, null = _candidates(example, features, result_by_id, n_best_size,
                                   max_answer_length, version_2_with_negative)
        nbest = _nbest(example, features, prelim, null, n_best_size, word_tokens,
                       verbose_logging)
        probs = compute_softmax([e.start_logit + e.end_logit for e in nbest])
        out.nbest[example.qas_id] = [
            collections.OrderedDict(text=e.text, probability=p, start_logit=e.start_logit,
                                    end_logit=e.end_logit)
            for e, p in zip(nbest, probs)]
        if not version_2_with_negative:
            out.predictions[example.qas_id] = nbest[0].text
            continue
        best_non_null = next((e for e in nbest if e.text), None)
        if best_non_null is None:
            out.null_odds[example.qas_id] = NULL_ONLY_SCORE_DIFF
            out.predictions[example.qas_id] = ""
            continue
        score_diff = null.score - best_non_null.start_logit - best_non_null.end_logit
        out.null_odds[example.qas_id] = score_diff
        out.predictions[example.qas_id] = (
            "" if score_diff > null_score_diff_threshold else best_non_null.text)
    return out


def _candidates(example, features, result_by_id, n_best_size, max_answer_length,
                version_2_with_negative):
    """(the valid spans of the example's windows among each window's n_best_size best starts
    and ends, best first; SQuAD 2.0's _Null: the window with the lowest [CLS] score, or None
    for SQuAD 1.1)."""
    prelim = []
    null = _Null(None, 0, 0.0, 0.0) if version_2_with_negative else None
    for feature_index, feature in enumerate(features):
        result = result_by_id.get(int(feature.unique_id))
        if result is None:
            raise ValueError(f"No RawResult for feature unique_id {feature.unique_id} "
                             f"(question id {example.qas_id!r})")
        start_logits = np.asarray(result.start_logits, dtype=np.float64).tolist()
        end_logits = np.asarray(result.end_logits, dtype=np.float64).tolist()
        if version_2_with_negative:
            score = start_logits[0] + end_logits[0]
            if null.score is None or score < null.score:
                null = _Null(score, feature_index, start_logits[0], end_logits[0])
        num_tokens = len(feature.tokens)
        end_indexes = get_best_indexes(end_logits, n_best_size)
        for start_index in get_best_indexes(start_logits, n_best_size):
            if (start_index >= num_tokens or start_index not in feature.token_to_orig_map
                    or not feature.token_is_max_context.get(start_index, False)):
                continue
            for end_index in end_indexes:
                if (end_index >= num_tokens or end_index not in feature.token_to_orig_map
                        or end_index < start_index
                        or end_index - start_index + 1 > max_answer_length):
                    continue
                prelim.append(_Prelim(feature_index, start_index, end_index,
                                      start_logits[start_index], end_logits[end_index]))
    if null is not None:
        prelim.append(_Prelim(null.feature_index, 0, 0, null.start_logit, null.end_logit))
    prelim.sort(key=lambda p: p.start_logit + p.end_logit, reverse=True)
    return prelim, null


def _nbest(example, features, prelim, null, n_best_size, word_tokens, verbose_logging):
    """The n-best answers of the candidates `prelim`: their texts in the original context,
    each text once (SQuAD 2.0: with the null answer; none at all: "empty")."""
    seen, nbest = set(), []
    for pred in prelim:
        if len(nbest) >= n_best_size:
            break
        if pred.start_index > 0:
            feature = features[pred.feature_index]
            tok_text = _detokenize(feature.tokens[pred.start_index:pred.end_index + 1])
            orig_start = feature.token_to_orig_map[pred.start_index]
            orig_end = feature.token_to_orig_map[pred.end_index]
            orig_words = example.doc_tokens[orig_start:orig_end + 1]
            text = _project(tok_text, " ".join(orig_words),
                            " ".join(t for t in map(word_tokens, orig_words) if t),
                            verbose_logging)
            if text in seen:
                continue
        else:
            text = ""
        seen.add(text)
        nbest.append(_Nbest(text, pred.start_logit, pred.end_logit))
    if null is not None and "" not in seen:
        nbest.append(_Nbest("", null.start_logit, null.end_logit))
    if not nbest:
        nbest.append(_Nbest("empty", 0.0, 0.0))
    return nbest


def write_predictions(squad_predictions, prediction_file, nbest_file, null_odds_file=None):
    """Writes predictions.json, nbest_predictions.json and (SQuAD 2.0) null_odds.json atomically,
    formatted like run_squad.py (indent 4)."""
    if squad_predictions.null_odds is not None and not null_odds_file:
        raise ValueError("SQuAD 2.0 predictions need a null_odds_file to write null odds to")
    atomic_write_text(prediction_file, json.dumps(squad_predictions.predictions, indent=4) + "\n")
    atomic_write_text(nbest_file, json.dumps(squad_predictions.nbest, indent=4) + "\n")
    if squad_predictions.null_odds is not None:
        atomic_write_text(null_odds_file, json.dumps(squad_predictions.null_odds, indent=4) + "\n")
