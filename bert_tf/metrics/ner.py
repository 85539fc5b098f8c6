"""Entity-level precision, recall and F1 with conlleval semantics.

An entity (chunk) counts as correct only when its type, first token and last token all match a
gold entity. Chunks are read from the tags with conlleval's rules, so IOB1, BIO and ill-formed
BIO (an `I-X` after `O` or after another type starts a chunk) are scored exactly as the
conlleval script scores them. Sentence boundaries end chunks. Token accuracy counts every token
whose predicted tag equals the gold tag.
"""

import dataclasses


def _parts(tag):
    if tag == "O" or not tag:
        return "O", ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def _ends(prev_prefix, prefix, prev_type, kind):
    if prev_prefix in ("B", "I") and prefix in ("B", "O"):
        return True
    return prev_prefix != "O" and prev_type != kind


def _starts(prev_prefix, prefix, prev_type, kind):
    if prefix == "B":
        return True
    if prev_prefix == "O" and prefix == "I":
        return True
    return prefix != "O" and prev_type != kind


def chunks(tags):
    """Set of (first, last, type) chunks of one sentence's tags, by conlleval's rules."""
    found, start = set(), None
    prev_prefix, prev_type = "O", ""
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, kind = _parts(tag)
        if start is not None and _ends(prev_prefix, prefix, prev_type, kind):
            found.add((start, i - 1, prev_type))
            start = None
        if _starts(prev_prefix, prefix, prev_type, kind):
            start = i
        prev_prefix, prev_type = prefix, kind
    return found


@dataclasses.dataclass
class Counts:
    correct: int = 0      # predicted chunks that match a gold chunk exactly
    predicted: int = 0
    gold: int = 0

    @property
    def precision(self):
        return self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self):
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self):
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclasses.dataclass
class NerScores:
    overall: Counts
    per_type: dict        # type -> Counts
    tokens: int
    correct_tokens: int

    @property
    def accuracy(self):
        return self.correct_tokens / self.tokens if self.tokens else 0.0

    def as_dict(self):
        """Flat values for eval_results.txt: precision/recall/f1 overall and `<metric>_<TYPE>`
        per type, token accuracy and the counts."""
        values = {"precision": self.overall.precision, "recall": self.overall.recall,
                  "f1": self.overall.f1, "accuracy": self.accuracy,
                  "num_gold_entities": self.overall.gold,
                  "num_predicted_entities": self.overall.predicted,
                  "num_correct_entities": self.overall.correct}
        for kind, counts in sorted(self.per_type.items()):
            values[f"precision_{kind}"] = counts.precision
            values[f"recall_{kind}"] = counts.recall
            values[f"f1_{kind}"] = counts.f1
        return values

    def report(self):
        """The summary conlleval prints (percentages)."""
        o = self.overall
        lines = [f"processed {self.tokens} tokens with {o.gold} phrases; found: {o.predicted} "
                 f"phrases; correct: {o.correct}.",
                 f"accuracy: {100 * self.accuracy:6.2f}%; precision: {100 * o.precision:6.2f}%; "
                 f"recall: {100 * o.recall:6.2f}%; FB1: {100 * o.f1:6.2f}"]
        for kind, c in sorted(self.per_type.items()):
            lines.append(f"{kind:>17}: precision: {100 * c.precision:6.2f}%; recall: "
                         f"{100 * c.recall:6.2f}%; FB1: {100 * c.f1:6.2f}  {c.predicted}")
        return "\n".join(lines) + "\n"


def score(gold_sentences, predicted_sentences):
    """NerScores of predicted tag lists against gold tag lists (one list per sentence)."""
    gold_sentences, predicted_sentences = list(gold_sentences), list(predicted_sentences)
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(f"{len(predicted_sentences)} predicted sentences for "
                         f"{len(gold_sentences)} gold ones")
    overall, per_type = Counts(), {}
    tokens = correct_tokens = 0
    for n, (gold, predicted) in enumerate(zip(gold_sentences, predicted_sentences)):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence {n}: {len(predicted)} predicted tags for "
                             f"{len(gold)} gold tags")
        tokens += len(gold)
        correct_tokens += sum(g == p for g, p in zip(gold, predicted))
        gold_chunks, predicted_chunks = chunks(gold), chunks(predicted)
        for chunk in gold_chunks:
            per_type.setdefault(chunk[2], Counts()).gold += 1
        for chunk in predicted_chunks:
            per_type.setdefault(chunk[2], Counts()).predicted += 1
        for chunk in gold_chunks & predicted_chunks:
            per_type[chunk[2]].correct += 1
        overall.gold += len(gold_chunks)
        overall.predicted += len(predicted_chunks)
        overall.correct += len(gold_chunks & predicted_chunks)
    return NerScores(overall, per_type, tokens, correct_tokens)
