"""Per kind of model, a runner: which fields a row needs, how a batch of rows goes through
the serving signatures, and the JSON object written for each row.

  classifier       {"label", "probabilities": {label: p}}          (serving_default)
  regression       {"score"}                                        (serving_default)
  multi_label      {"labels": [the labels whose p >= the threshold, in label order],
                   "probabilities": {label: p}} (sigmoid per label; serving_default)
  squad            {"answer", "start", "end", "score", "null_score"}: start/end are character
                   offsets into the context, [start, end); no answer: "", null, null
                   (serving_default, which reads long contexts in windows)
  tagger           {"words", "tags", "entities": [{"type", "start_word", "end_word", "text",
                   "start", "end"}]}: words are the text split on whitespace (as CoNLL
                   columns), one tag per word, entities are word spans [start_word,
                   end_word) read from the tags with conlleval's rules, start/end their
                   character offsets in the text (serve_features on run_ner's windows)
  multiple_choice  {"choice", "choice_text", "probabilities": [p per choice]} (serving_default)
  embedding        {"embedding": [H floats]} (serving_default)

The tagger runs on run_ner's features rather than on serving_default: each word is
tokenized on its own and labelled by its first WordPiece, and a text longer than the model's
sequence length is read in overlapping windows of whole words (each word predicted from the
window where it has the most context), so every word gets a tag and the tags are the ones
run_ner --do_predict would write.

Classifier, regression, multi_label and embedding models read a long text in windows when the
SavedModel was exported with them, or the checkpoint is given --doc_stride: serving_default
then cuts the first text into windows and combines their logits (bert_tf.serving.heads), as
run_classifier --doc_stride does (an embedding model averages its windows' embeddings);
nothing changes here.
"""

import re

import numpy as np

from bert_tf import kinds, names
from bert_tf.contract import WORD_WINDOW_STRIDE
from bert_tf.prediction.inputs import InputError

_WORD = re.compile(r"\S+")


# --------------------------------------------------------------------------- fields
def _missing(row, field, why):
    ignored = f"; ignored on this line: {', '.join(row.ignored)}" if row.ignored else ""
    return InputError(f"{row.where(field)}: missing ({why}{ignored})")


def _unused(row, fields, kind, takes):
    for field in fields:
        if getattr(row, field) is not None:
            raise InputError(f"{row.where(field)}: not an input of a {kind} model (it takes "
                             f"{takes})")


def row_inputs(kind, row):
    """The row's inputs for a model of kind `task`, checked for presence: (text, text_pair or
    None) for classifier/regression/multi_label, (question, context) for squad, (text,) for
    tagger, (context, choices) for multiple_choice (its runner's row_inputs)."""
    runner = kinds.get(kind).load("prediction")
    if runner is None:
        raise ValueError(f"no predictions for task {kind!r}")
    return runner.row_inputs(kind, row)


# --------------------------------------------------------------------------- NER spans
def split_words(text):
    """(word, start, end) of each whitespace-separated word of `text` (character offsets)."""
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _as_chunk_tag(tag):
    """A tag for conlleval's chunk rules: O, B-X and I-X as they are; any other label X
    (an IO scheme such as PER, LOC) as I-X, so equal neighbours form one entity."""
    from bert_tf.data.ner import split_tag
    from bert_tf.data.ner.tags import TagError
    if not tag or tag == "O":
        return "O"
    try:
        split_tag(tag)
    except TagError:
        return f"I-{tag}"
    return tag


def word_entities(words, tags, text=None, offsets=None):
    """Entities of one text as word spans: [{"type", "start_word", "end_word" (exclusive),
    "text"}] in text order, read from per-word `tags` (BIO, IOB1 or plain labels) with
    conlleval's rules (bert_tf.metrics.ner.chunks). With the original `text` and each word's
    (start, end) character `offsets`, an entity's text is the text's own characters between
    its first and last word, and "start"/"end" give their offsets; else its words joined by
    single spaces."""
    from bert_tf.metrics.ner import chunks
    if len(words) != len(tags):
        raise ValueError(f"{len(words)} words but {len(tags)} tags")
    out = []
    for first, last, kind in sorted(chunks([_as_chunk_tag(t) for t in tags])):
        entity = {"type": kind, "start_word": first, "end_word": last + 1}
        if text is not None and offsets is not None:
            start, end = offsets[first][0], offsets[last][1]
            entity.update(text=text[start:end], start=start, end=end)
        else:
            entity["text"] = " ".join(words[first:last + 1])
        out.append(entity)
    return out


# --------------------------------------------------------------------------- runners
def _strings(values):
    return np.array(list(values), dtype=object)


def _floats(values):
    return [float(v) for v in values]


class _Runner:
    """Checks rows against the model and predicts batches of them."""

    signature = names.SERVING_DEFAULT

    def __init__(self, predictor, options):
        self.predictor = predictor
        self.info = predictor.info
        self.options = options

    @staticmethod
    def row_inputs(kind, row):
        """The inputs of `row` for a model of kind `task` (bert_tf.kinds), checked for
        presence."""
        raise NotImplementedError

    def check(self, row, inputs):
        """Raises InputError when the (present) inputs do not fit this model."""

    def predict(self, batch):
        """[(row, inputs)] -> one JSON-able dict per row."""
        raise NotImplementedError


class _TextRunner(_Runner):
    @staticmethod
    def row_inputs(kind, row):
        _unused(row, ("question", "context", "choices"), kind, "text and, for pairs, "
                                                               "text_pair")
        if row.text is None:
            raise _missing(row, "text", f"a {kind} row needs a text")
        return row.text, row.text_pair

    def check(self, row, inputs):
        pair_model = "text_b" in self.info["text_inputs"]
        if inputs[1] is not None and not pair_model:
            raise InputError(f"{row.where('text_pair')}: this {self.predictor.kind} model takes "
                             f"a single text (its inputs: {', '.join(self.info['text_inputs'])})")
        if inputs[1] is None and pair_model:
            raise _missing(row, "text_pair", f"this {self.predictor.kind} model takes text "
                                             f"pairs")

    def _call(self, batch):
        inputs = {"text_a": _strings(i[0] for _, i in batch)}
        if "text_b" in self.info["text_inputs"]:
            inputs["text_b"] = _strings(i[1] for _, i in batch)
        return self.predictor.call(self.signature, inputs)


class ClassifierRunner(_TextRunner):
    def predict(self, batch):
        out = self._call(batch)
        labels = self.info["labels"]
        return [{"label": label.decode("utf-8"),
                 "probabilities": dict(zip(labels, _floats(probabilities)))}
                for label, probabilities in zip(out["label"], out["probabilities"])]


class MultiLabelRunner(_TextRunner):
    """The labels the export selected (probability >= its threshold), in label order."""

    def predict(self, batch):
        out = self._call(batch)
        labels = self.info["labels"]
        return [{"labels": [labels[k] for k in np.flatnonzero(selected)],
                 "probabilities": dict(zip(labels, _floats(probabilities)))}
                for selected, probabilities in zip(out["selected"], out["probabilities"])]


class RegressionRunner(_TextRunner):
    def predict(self, batch):
        return [{"score": float(score)} for score in self._call(batch)["score"]]


def _char_offset(text, encoded, byte_offset):
    """Character offset in `text` of a byte offset into its UTF-8 `encoded` form."""
    return len(encoded[:byte_offset].decode("utf-8", errors="strict"))


class SquadRunner(_Runner):
    @staticmethod
    def row_inputs(kind, row):
        _unused(row, ("choices",), "SQuAD", "question and context, or text and text_pair")
        if row.question is not None or row.context is not None:
            for field in ("text", "text_pair"):
                if getattr(row, field) is not None:
                    raise InputError(f"{row.where(field)}: give the question and the context "
                                     f"as question/context or as text/text_pair, not both")
            for field in ("question", "context"):
                if getattr(row, field) is None:
                    raise _missing(row, field, "SQuAD takes a question and a context")
            return row.question, row.context
        for field in ("text", "text_pair"):
            if getattr(row, field) is None:
                raise _missing(row, field, "SQuAD takes a question and a context: question "
                                           "and context, or text (the question) and text_pair "
                                           "(the context)")
        return row.text, row.text_pair

    def predict(self, batch):
        out = self.predictor.call(self.signature, {
            "question": _strings(i[0] for _, i in batch),
            "context": _strings(i[1] for _, i in batch)})
        results = []
        for k, (_, (_, context)) in enumerate(batch):
            score, null_score = float(out["score"][k]), float(out["null_score"][k])
            start, end = int(out["answer_start"][k]), int(out["answer_end"][k])
            answered = start >= 0 and not (
                self.options.version_2_with_negative
                and null_score - score > self.options.null_score_diff_threshold)
            if answered:
                encoded = context.encode("utf-8")
                start, end = (_char_offset(context, encoded, start),
                              _char_offset(context, encoded, end))
                results.append({"answer": context[start:end], "start": start, "end": end,
                                "score": score, "null_score": null_score})
            else:
                results.append({"answer": "", "start": None, "end": None, "score": score,
                                "null_score": null_score})
        return results


class MultipleChoiceRunner(_Runner):
    @staticmethod
    def row_inputs(kind, row):
        _unused(row, ("text_pair", "question"), "multiple-choice", "context (or text) and "
                                                                    "choices")
        if row.context is not None and row.text is not None:
            raise InputError(f"{row.where('text')}: give the shared first sentence as context "
                             f"or as text, not both")
        context = row.context if row.context is not None else row.text
        if context is None:
            raise _missing(row, "context", "a multiple-choice row needs a context (or text) "
                                           "its choices continue")
        if row.choices is None:
            raise _missing(row, "choices", "a multiple-choice row needs its choices")
        if len(row.choices) < 2:
            raise InputError(f"{row.where('choices')}: {len(row.choices)} choice(s); give at "
                             f"least 2")
        return context, list(row.choices)

    def check(self, row, inputs):
        expected = self.info["num_choices"]
        if len(inputs[1]) != expected:
            raise InputError(f"{row.where('choices')}: {len(inputs[1])} choices, but the model "
                             f"takes {expected} per row"
                             + (" (as exported)" if "SavedModel" in self.predictor.source
                                else " (as many as the first row)"))

    def predict(self, batch):
        out = self.predictor.call(self.signature, {
            "context": _strings(i[0] for _, i in batch),
            "endings": np.array([i[1] for _, i in batch], dtype=object)})
        results = []
        for k, (_, (_, choices)) in enumerate(batch):
            choice = int(out["choice"][k])
            results.append({"choice": choice, "choice_text": choices[choice],
                            "probabilities": _floats(out["probabilities"][k])})
        return results


class TaggerRunner(_Runner):
    """run_ner's windows (bert_tf.data.ner.encode_units) through serve_features."""

    signature = names.SERVE_FEATURES

    @staticmethod
    def row_inputs(kind, row):
        _unused(row, ("text_pair", "question", "context", "choices"), "tagger (NER)",
                "one text, whose whitespace-separated words are tagged")
        if row.text is None:
            raise _missing(row, "text", "an NER row needs a text")
        return (row.text,)

    def __init__(self, predictor, options):
        super().__init__(predictor, options)
        from bert_tf.tokenization import FullTokenizer
        self.tokenizer = FullTokenizer(predictor.vocab_file,
                                       do_lower_case=self.info["do_lower_case"])
        self.seq_length = int(self.info["seq_length"])
        self.stride = (options.doc_stride or self.info.get("window_stride")
                       or WORD_WINDOW_STRIDE)

    def predict(self, batch):
        from bert_tf.data.ner import WordScores, encode_units
        labels = self.info["labels"]
        words = [split_words(inputs[0]) for _, inputs in batch]
        features = encode_units([[w for w, _, _ in ws] for ws in words], self.tokenizer,
                                self.seq_length, self.stride)
        scores = WordScores(features, [len(ws) for ws in words], len(labels))
        arrays = features.arrays
        step = max(1, self.options.batch_size)
        for start in range(0, features.num_windows, step):
            window = slice(start, start + step)
            out = self.predictor.call(self.signature, {
                k: arrays[k][window] for k in names.FEATURE_KEYS})
            for index, logits in zip(arrays["window_index"][window], out["logits"]):
                scores.add(int(index), logits)
        results = []
        for (_, (text,)), ws, unit_scores in zip(batch, words, scores.result()):
            tags = [labels[i] for i in unit_scores.argmax(axis=-1)] if len(ws) else []
            results.append({"words": [w for w, _, _ in ws], "tags": tags,
                            "entities": word_entities([w for w, _, _ in ws], tags, text,
                                                      [(s, e) for _, s, e in ws])})
        return results


class EmbeddingRunner(_TextRunner):
    """One sentence embedding per text."""

    @staticmethod
    def row_inputs(kind, row):
        _unused(row, ("text_pair", "question", "context", "choices"), "text embedding",
                "one text per row")
        if row.text is None:
            raise _missing(row, "text", "an embedding row needs a text")
        return row.text, None

    def predict(self, batch):
        return [{"embedding": _floats(vector)} for vector in self._call(batch)["embedding"]]
