"""SQuAD v1.1 / v2.0 JSON -> `SquadExample`s, with the word split of google-research/bert.

The context is split on whitespace (space, tab, CR, LF and U+202F only, as the original does);
`char_to_word_offset` maps every character to its word so character answers become word spans.
Malformed records raise `SquadFormatError` naming the question id, or are skipped and counted
with `skip_bad=True`.
"""

import dataclasses
import json
import logging

import tensorflow as tf

logger = logging.getLogger(__name__)

_WHITESPACE = frozenset(" \t\r\n\u202f")


class SquadFormatError(ValueError):
    """A SQuAD JSON file breaks the schema; the message names the file and question id."""


@dataclasses.dataclass
class SquadExample:
    """One question on one context. Training positions are word indexes into `doc_tokens`
    (-1 for impossible questions); they are None in prediction mode."""

    qas_id: str
    question_text: str
    doc_tokens: list
    orig_answer_text: str | None = None
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False


@dataclasses.dataclass
class SquadReadResult:
    """Examples read from one file and what was left out.

    skipped_bad: (question id or location, reason) of malformed questions skipped (skip_bad=True).
    num_answer_not_found: training questions dropped because the whitespace-joined words of the
      answer span do not contain the whitespace-cleaned answer (the original's "Could not find
      answer" case, usually odd Unicode whitespace).
    """

    examples: list
    num_questions: int = 0
    skipped_bad: list = dataclasses.field(default_factory=list)
    num_answer_not_found: int = 0


def split_context(text):
    """(doc_tokens, char_to_word_offset) for a context, as the original run_squad.py splits it."""
    doc_tokens = []
    char_to_word_offset = []
    prev_is_whitespace = True
    for c in text:
        if c in _WHITESPACE:
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def _require(record, key, kind, where):
    """record[key], checked to exist and be of type `kind`; `where` prefixes the error."""
    if not isinstance(record, dict):
        raise SquadFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if key not in record:
        raise SquadFormatError(f"{where}: missing key '{key}'")
    value = record[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SquadFormatError(
            f"{where}: '{key}' must be {getattr(kind, '__name__', kind)}, "
            f"got {type(value).__name__} {value!r:.60}")
    return value


def _check_answer(answer, context, where):
    """Validates one {"text", "answer_start"} record against its context."""
    text = _require(answer, "text", str, where)
    start = _require(answer, "answer_start", int, where)
    if not text.strip():
        raise SquadFormatError(f"{where}: empty answer text")
    if start < 0 or start + len(text) > len(context):
        raise SquadFormatError(
            f"{where}: answer_start {start} + len(text) {len(text)} is outside the context "
            f"(length {len(context)})")
    if context[start:start + len(text)] != text:
        raise SquadFormatError(
            f"{where}: answer text {text!r:.80} does not match the context at answer_start {start} "
            f"({context[start:start + len(text)]!r:.80})")
    return text, start


def read_squad_examples(input_file, is_training, version_2_with_negative=False, skip_bad=False):
    """Reads a SQuAD JSON file (local or any tf.io.gfile path) into a `SquadReadResult`.

    is_training: answers become word positions (exactly one answer per answerable question, as
      the original requires); in prediction mode answers are validated but not used.
    version_2_with_negative: training questions must carry a boolean `is_impossible`.
    skip_bad: skip malformed questions (counted in `skipped_bad`) instead of raising
      `SquadFormatError`. Structural errors above question level (no `data`, a paragraph without
      `context` or `qas`) always raise.
    """
    input_file = str(input_file)
    try:
        with tf.io.gfile.GFile(input_file, "r") as f:
            document = json.load(f)
    except json.JSONDecodeError as e:
        raise SquadFormatError(f"{input_file}: not valid JSON ({e})") from e
    data = _require(document, "data", list, input_file)

    result = SquadReadResult(examples=[])
    seen_ids = set()
    for a, article in enumerate(data):
        paragraphs = _require(article, "paragraphs", list, f"{input_file}: data[{a}]")
        for p, paragraph in enumerate(paragraphs):
            where = f"{input_file}: data[{a}].paragraphs[{p}]"
            context = _require(paragraph, "context", str, where)
            qas = _require(paragraph, "qas", list, where)
            doc_tokens, char_to_word_offset = split_context(context)
            for q, qa in enumerate(qas):
                result.num_questions += 1
                qid = qa.get("id") if isinstance(qa, dict) else None
                label = (f"{input_file}: question id {qid!r}" if isinstance(qid, str)
                         else f"{where}.qas[{q}]")
                try:
                    example = _make_example(qa, label, context, doc_tokens, char_to_word_offset,
                                            is_training, version_2_with_negative, seen_ids)
                except SquadFormatError as e:
                    if not skip_bad:
                        raise
                    result.skipped_bad.append((qid if isinstance(qid, str) else label, str(e)))
                    continue
                if example is None:
                    result.num_answer_not_found += 1
                    continue
                seen_ids.add(example.qas_id)
                result.examples.append(example)
    if result.skipped_bad:
        logger.warning("%s: skipped %d malformed questions, first: %s", input_file,
                       len(result.skipped_bad), result.skipped_bad[0][1])
    if result.num_answer_not_found:
        logger.warning("%s: skipped %d training questions whose answer could not be recovered "
                       "from the whitespace-split context", input_file,
                       result.num_answer_not_found)
    return result


def _make_example(qa, label, context, doc_tokens, char_to_word_offset, is_training,
                  version_2_with_negative, seen_ids):
    """One SquadExample, or None when the answer cannot be recovered (the original's skip)."""
    qas_id = _require(qa, "id", str, label)
    question_text = _require(qa, "question", str, label)
    if qas_id in seen_ids:
        raise SquadFormatError(f"{label}: duplicate question id")
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise SquadFormatError(f"{label}: 'answers' must be a list, got {type(answers).__name__}")
    if is_training:
        _require(qa, "answers", list, label)
    for i, answer in enumerate(answers):
        _check_answer(answer, context, f"{label} answers[{i}]")

    is_impossible = False
    if is_training and version_2_with_negative:
        is_impossible = _require(qa, "is_impossible", bool, label)
    if not is_training:
        return SquadExample(qas_id, question_text, doc_tokens)
    if is_impossible:
        return SquadExample(qas_id, question_text, doc_tokens, "", -1, -1, True)
    if len(answers) != 1:
        raise SquadFormatError(
            f"{label}: for training, each answerable question needs exactly 1 answer, "
            f"got {len(answers)}")
    text, offset = answers[0]["text"], answers[0]["answer_start"]
    start_position = char_to_word_offset[offset]
    end_position = char_to_word_offset[offset + len(text) - 1]
    actual_text = " ".join(doc_tokens[start_position:end_position + 1])
    cleaned_answer_text = " ".join(text.split())
    if actual_text.find(cleaned_answer_text) == -1:
        logger.debug("Could not find answer for %s: %r vs. %r", qas_id, actual_text,
                     cleaned_answer_text)
        return None
    return SquadExample(qas_id, question_text, doc_tokens, text, start_position, end_position,
                        False)
