"""SquadExamples -> fixed-length model features, windowed exactly like google-research/bert.

Each example becomes one feature per document window: `[CLS] query [SEP] doc-window [SEP]`,
segment ids 0 for the query part and 1 for the window, zero-padded to max_seq_length. Windows
of at most max_seq_length - len(query) - 3 WordPieces start every doc_stride WordPieces.
Training labels point at WordPiece positions in the feature; an answer outside the window and
an impossible question are labelled (0, 0), i.e. [CLS].
"""

import collections
import dataclasses
import logging
import time

from bert_tf.data.squad.options import validate_window_options

logger = logging.getLogger(__name__)

FIRST_UNIQUE_ID = 1000000000

DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


@dataclasses.dataclass
class InputFeatures:
    """One window of one example.

    token_to_orig_map: feature position -> word index in example.doc_tokens (window tokens only).
    token_is_max_context: feature position -> whether this window gives that token its maximum
      context (only those positions may start a predicted answer).
    start_position / end_position: training labels (feature positions), None in prediction mode.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False


def make_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    """Sliding windows over num_tokens WordPieces; the last window ends at the last token."""
    spans = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append(DocSpan(start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def check_is_max_context(doc_spans, cur_span_index, position):
    """Whether window cur_span_index is the one giving token `position` its maximum context.

    A window's score for a token is min(left context, right context) + 0.01 * window length; the
    first window with the highest score wins.
    """
    best_score = None
    best_span_index = None
    for span_index, span in enumerate(doc_spans):
        end = span.start + span.length - 1
        if position < span.start or position > end:
            continue
        score = min(position - span.start, end - position) + 0.01 * span.length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


def improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
    """Narrows a WordPiece span to the first, longest sub-span whose tokens equal the tokenized
    answer (e.g. "1895" inside "(1895-1943)."); returns the input span if there is none."""
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start:new_end + 1]) == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def tokenize_doc(doc_tokens, tokenizer):
    """WordPiece-tokenizes whitespace words: (all_doc_tokens, tok_to_orig_index, orig_to_tok_index).

    orig_to_tok_index[i] is the first WordPiece of word i (for a word with no WordPieces, the
    first WordPiece of the next word)."""
    all_doc_tokens, tok_to_orig_index, orig_to_tok_index = [], [], []
    for i, token in enumerate(doc_tokens):
        orig_to_tok_index.append(len(all_doc_tokens))
        for sub_token in tokenizer.tokenize(token):
            tok_to_orig_index.append(i)
            all_doc_tokens.append(sub_token)
    return all_doc_tokens, tok_to_orig_index, orig_to_tok_index


def answer_token_span(example, tokenizer, all_doc_tokens, orig_to_tok_index):
    """The training answer as a WordPiece span of the whole document, (-1, -1) if impossible."""
    if example.is_impossible:
        return -1, -1
    tok_start = orig_to_tok_index[example.start_position]
    if example.end_position < len(example.doc_tokens) - 1:
        tok_end = orig_to_tok_index[example.end_position + 1] - 1
    else:
        tok_end = len(all_doc_tokens) - 1
    return improve_answer_span(all_doc_tokens, tok_start, tok_end, tokenizer,
                               example.orig_answer_text)


def iter_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                  is_training, first_unique_id=FIRST_UNIQUE_ID, progress_every_s=30.0):
    """Yields InputFeatures for every window of every example, unique ids counting up from
    first_unique_id in example order (the original's numbering).

    tokenizer: any object with google-compatible `tokenize(text) -> list[str]` and
      `convert_tokens_to_ids(tokens) -> list[int]`, e.g. bert_tf.tokenization.FullTokenizer.
    Logs progress (examples/s, ETA) every progress_every_s seconds.
    """
    validate_window_options(max_seq_length, max_query_length, doc_stride)
    examples = list(examples)
    # Questions on one paragraph share its doc_tokens list: tokenize each paragraph once and
    # drop it after its last question.
    remaining = collections.Counter(id(e.doc_tokens) for e in examples)
    doc_cache = {}
    unique_id = first_unique_id
    started = last_log = time.monotonic()
    for example_index, example in enumerate(examples):
        key = id(example.doc_tokens)
        if key not in doc_cache:
            doc_cache[key] = tokenize_doc(example.doc_tokens, tokenizer)
        all_doc_tokens, tok_to_orig_index, orig_to_tok_index = doc_cache[key]
        remaining[key] -= 1
        if not remaining[key]:
            del doc_cache[key]

        query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]
        if is_training:
            tok_start, tok_end = answer_token_span(example, tokenizer, all_doc_tokens,
                                                   orig_to_tok_index)
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        doc_spans = make_doc_spans(len(all_doc_tokens), max_tokens_for_doc, doc_stride)
        doc_offset = len(query_tokens) + 2
        for doc_span_index, span in enumerate(doc_spans):
            tokens = ["[CLS]", *query_tokens, "[SEP]"]
            segment_ids = [0] * len(tokens)
            token_to_orig_map = {}
            token_is_max_context = {}
            for i in range(span.start, span.start + span.length):
                token_to_orig_map[len(tokens)] = tok_to_orig_index[i]
                token_is_max_context[len(tokens)] = check_is_max_context(
                    doc_spans, doc_span_index, i)
                tokens.append(all_doc_tokens[i])
            tokens.append("[SEP]")
            segment_ids += [1] * (span.length + 1)

            input_ids = list(tokenizer.convert_tokens_to_ids(tokens))
            input_mask = [1] * len(input_ids)
            padding = max_seq_length - len(input_ids)
            input_ids += [0] * padding
            input_mask += [0] * padding
            segment_ids += [0] * padding

            start_position = end_position = None
            if is_training:
                span_end = span.start + span.length - 1
                if example.is_impossible or not (span.start <= tok_start and tok_end <= span_end):
                    start_position = end_position = 0
                else:
                    start_position = tok_start - span.start + doc_offset
                    end_position = tok_end - span.start + doc_offset

            yield InputFeatures(
                unique_id=unique_id, example_index=example_index,
                doc_span_index=doc_span_index, tokens=tokens,
                token_to_orig_map=token_to_orig_map, token_is_max_context=token_is_max_context,
                input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                start_position=start_position, end_position=end_position,
                is_impossible=example.is_impossible)
            unique_id += 1

        now = time.monotonic()
        if now - last_log >= progress_every_s:
            last_log = now
            done = example_index + 1
            rate = done / (now - started)
            logger.info("SQuAD features: %d/%d examples, %d features, %.1f examples/s, ETA %.0fs",
                        done, len(examples), unique_id - first_unique_id, rate,
                        (len(examples) - done) / rate)


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, first_unique_id=FIRST_UNIQUE_ID):
    """All features of `examples` as a list (see iter_features)."""
    return list(iter_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                              is_training, first_unique_id=first_unique_id))
