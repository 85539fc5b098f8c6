"""Windowed SQuAD features as google-research/bert builds them: doc spans, the max-context rule,
_improve_answer_span, labels, padding, option checks, TFRecord round trip and a real slice."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from bert_tf.data.squad import (DocSpan, FeatureWriter, SquadExample, check_is_max_context,
                                convert_examples_to_features, improve_answer_span,
                                make_doc_spans, read_feature_dataset, read_squad_examples,
                                validate_squad_options, validate_window_options)
from bert_tf.data.squad.features import tokenize_doc
from helpers import shared_path

NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
           "fourteen fifteen sixteen seventeen eighteen nineteen").split()


@pytest.fixture(scope="module")
def tokenizer():
    from bert_tf import tokenization
    return tokenization.FullTokenizer(str(shared_path("data/reference/vocab.txt")),
                                      do_lower_case=True)


def _number_example(**kwargs):
    return SquadExample("q", "What number?", list(NUMBERS), **kwargs)


def test_doc_spans_slide_by_stride_and_end_at_the_last_token():
    assert make_doc_spans(10, 4, 3) == [DocSpan(0, 4), DocSpan(3, 4), DocSpan(6, 4)]
    assert make_doc_spans(11, 4, 3) == [(0, 4), (3, 4), (6, 4), (9, 2)]
    assert make_doc_spans(10, 4, 8) == [(0, 4), (4, 4), (8, 2)]  # stride capped at the window
    assert make_doc_spans(3, 4, 3) == [(0, 3)]
    assert make_doc_spans(0, 4, 3) == []


def test_max_context_prefers_the_window_with_more_context_on_the_short_side():
    # "the man went to the store and bought a gallon of milk": 'bought' (7) is in span B (3-7,
    # left 4, right 0) and span C (6-10, left 1, right 3); C gives it more context.
    spans = [DocSpan(0, 5), DocSpan(3, 5), DocSpan(6, 5)]
    assert check_is_max_context(spans, 2, 7)
    assert not check_is_max_context(spans, 1, 7)
    assert check_is_max_context(spans, 0, 0)


def test_max_context_ties_go_to_the_first_window_and_length_breaks_near_ties():
    tied = [DocSpan(0, 5), DocSpan(2, 5)]  # position 3: min(3,1) vs min(1,3)
    assert check_is_max_context(tied, 0, 3) and not check_is_max_context(tied, 1, 3)
    longer_first = [DocSpan(0, 6), DocSpan(3, 4)]  # position 4: 1 + 0.06 vs 1 + 0.04
    assert check_is_max_context(longer_first, 0, 4)


def test_improve_answer_span_finds_the_answer_inside_a_word(tokenizer):
    words = "The leader was John Smith (1895-1943).".split()
    doc, tok_to_orig, orig_to_tok = tokenize_doc(words, tokenizer)
    assert doc[orig_to_tok[5]:] == ["(", "1895", "-", "1943", ")", "."]
    start, end = orig_to_tok[5], len(doc) - 1  # the whole word "(1895-1943)."
    assert improve_answer_span(doc, start, end, tokenizer, "1895") == (start + 1, start + 1)
    assert improve_answer_span(doc, start, end, tokenizer, "1895-1943") == (start + 1, start + 3)
    assert tok_to_orig[start + 1] == 5


def test_improve_answer_span_keeps_the_span_when_wordpieces_cannot_match(tokenizer):
    doc = tokenizer.tokenize("The Japanese electronics industry")
    assert improve_answer_span(doc, 1, 1, tokenizer, "Japan") == (1, 1)


def test_tokenize_doc_maps_both_ways(tokenizer):
    words = ["Johanson", "went", "(home)."]
    doc, tok_to_orig, orig_to_tok = tokenize_doc(words, tokenizer)
    assert len(doc) == len(tok_to_orig)
    for i, first in enumerate(orig_to_tok):
        assert tok_to_orig[first] == i
        assert doc[first:first + len(tokenizer.tokenize(words[i]))] == tokenizer.tokenize(words[i])


def test_features_are_cls_query_sep_window_sep_padded(tokenizer):
    assert [len(tokenizer.tokenize(w)) for w in NUMBERS] == [1] * 20
    # query "what number ?" = 3 tokens; 14 - 3 - 3 = 8 doc tokens per window.
    features = convert_examples_to_features([_number_example()], tokenizer, 14, 5, 8, False)
    assert [(f.doc_span_index, f.unique_id, f.example_index) for f in features] == [
        (0, 1000000000, 0), (1, 1000000001, 0), (2, 1000000002, 0), (3, 1000000003, 0)]
    f1, last = features[1], features[3]
    assert f1.tokens == ["[CLS]", "what", "number", "?", "[SEP]", *NUMBERS[5:13], "[SEP]"]
    assert f1.segment_ids == [0] * 5 + [1] * 9
    assert f1.input_mask == [1] * 14
    assert f1.input_ids == tokenizer.convert_tokens_to_ids(f1.tokens)
    assert last.tokens == ["[CLS]", "what", "number", "?", "[SEP]", *NUMBERS[15:], "[SEP]"]
    assert last.input_ids[11:] == [0, 0, 0] and last.input_mask == [1] * 11 + [0] * 3
    assert last.segment_ids == [0] * 5 + [1] * 6 + [0] * 3
    assert last.token_to_orig_map == {5: 15, 6: 16, 7: 17, 8: 18, 9: 19}
    # 15 and 16 have more context in window 2 (10-17); 17 is centred in window 3 (15-19).
    assert last.token_is_max_context == {5: False, 6: False, 7: True, 8: True, 9: True}
    assert all(f.start_position is None for f in features)


def test_query_is_truncated_to_max_query_length(tokenizer):
    [feature] = convert_examples_to_features([_number_example()], tokenizer, 40, 5, 2, False)
    assert feature.tokens[:4] == ["[CLS]", "what", "number", "[SEP]"]
    assert feature.token_to_orig_map[4] == 0


def test_training_labels_point_inside_the_window_or_at_cls(tokenizer):
    example = _number_example(orig_answer_text="sixteen seventeen", start_position=16,
                              end_position=17)
    features = convert_examples_to_features([example], tokenizer, 14, 5, 8, True)
    # windows start at 0, 5, 10, 15; the doc part starts at feature position 5.
    assert [(f.start_position, f.end_position) for f in features] == [
        (0, 0), (0, 0), (16 - 10 + 5, 17 - 10 + 5), (16 - 15 + 5, 17 - 15 + 5)]
    assert features[3].tokens[6:8] == ["sixteen", "seventeen"]


def test_impossible_examples_are_labelled_at_cls(tokenizer):
    example = _number_example(orig_answer_text="", start_position=-1, end_position=-1,
                              is_impossible=True)
    features = convert_examples_to_features([example], tokenizer, 14, 5, 8, True)
    assert len(features) == 4
    assert all((f.start_position, f.end_position, f.is_impossible) == (0, 0, True)
               for f in features)


def test_window_options_are_validated():
    with pytest.raises(ValueError, match=r"The max_seq_length \(67\) must be greater than "
                                         r"max_query_length \(64\) \+ 3"):
        validate_window_options(67, 64, 128)
    validate_window_options(68, 64, 128)
    with pytest.raises(ValueError, match="doc_stride must be >= 1"):
        validate_window_options(384, 64, 0)


def test_run_options_are_validated(tmp_path):
    train = tmp_path / "train.json"
    train.write_text("{}")
    ok = dict(do_train=True, do_predict=False, train_file=str(train), predict_file=None,
              max_seq_length=384, max_query_length=64, doc_stride=128)
    validate_squad_options(**ok)
    for change, message in [
        (dict(do_train=False), "At least one of `do_train` or `do_predict` must be True"),
        (dict(train_file=None), "`train_file` must be specified"),
        (dict(train_file=str(tmp_path / "nope.json")), "`train_file` .*nope.json does not exist"),
        (dict(do_predict=True), "`predict_file` must be specified"),
        (dict(do_eval=True), "`do_eval` scores the predictions of `do_predict`"),
        (dict(max_position_embeddings=256), "Cannot use sequence length 384 because the BERT "
                                            "model was only trained up to sequence length 256"),
        (dict(max_seq_length=67), "must be greater than max_query_length"),
        (dict(n_best_size=0), "n_best_size must be >= 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate_squad_options(**{**ok, **change})


def test_tfrecord_round_trip_with_run_squad_feature_names(tokenizer, tmp_path):
    examples = [_number_example(orig_answer_text="three", start_position=3, end_position=3),
                _number_example(orig_answer_text="", start_position=-1, end_position=-1,
                                is_impossible=True)]
    features = convert_examples_to_features(examples, tokenizer, 16, 6, 8, True)
    path = tmp_path / "train.tf_record"
    with FeatureWriter(path, is_training=True) as writer:
        for f in features:
            writer.process_feature(f)
    assert writer.num_features == len(features) and list(tmp_path.iterdir()) == [path]

    batches = list(read_feature_dataset(path, 16, True, batch_size=64, shuffle_buffer=0))
    assert len(batches) == 1
    batch = {k: v.numpy() for k, v in batches[0].items()}
    assert set(batch) == {"unique_ids", "input_ids", "input_mask", "segment_ids",
                          "start_positions", "end_positions", "is_impossible"}
    assert batch["unique_ids"].dtype == np.int64 and batch["input_ids"].dtype == np.int32
    np.testing.assert_array_equal(batch["unique_ids"], [f.unique_id for f in features])
    np.testing.assert_array_equal(batch["input_ids"], [f.input_ids for f in features])
    np.testing.assert_array_equal(batch["segment_ids"], [f.segment_ids for f in features])
    np.testing.assert_array_equal(batch["start_positions"], [f.start_position for f in features])
    np.testing.assert_array_equal(batch["is_impossible"], [int(f.is_impossible) for f in features])

    predict_path = tmp_path / "eval.tf_record"
    with FeatureWriter(predict_path, is_training=False) as writer:
        for f in features:
            writer.process_feature(f)
    [predict_batch] = list(read_feature_dataset(predict_path, 16, False, batch_size=64))
    assert set(predict_batch) == {"unique_ids", "input_ids", "input_mask", "segment_ids"}


def test_training_reader_gives_every_window_once_per_epoch_in_a_new_order(tmp_path):
    path = tmp_path / "train.tf_record"
    with FeatureWriter(path, is_training=True) as writer:
        for unique_id in range(40):
            writer.process_feature(SimpleNamespace(
                unique_id=unique_id, input_ids=[unique_id] * 4, input_mask=[1] * 4,
                segment_ids=[0] * 4, start_position=0, end_position=0, is_impossible=False))
    batches = read_feature_dataset(path, 4, True, batch_size=8, drop_remainder=True,
                                   repeat=True, shuffle_buffer=40, seed=3)
    ids = np.concatenate([b["unique_ids"].numpy() for b in batches.take(10)])
    first, second = ids[:40], ids[40:]
    assert sorted(first) == sorted(second) == list(range(40))
    assert list(first) != list(second) and list(first) != list(range(40))


def test_feature_writer_leaves_nothing_when_interrupted(tokenizer, tmp_path):
    [feature] = convert_examples_to_features([_number_example()], tokenizer, 40, 5, 8, False)
    path = tmp_path / "eval.tf_record"
    with pytest.raises(RuntimeError):
        with FeatureWriter(path, is_training=False) as writer:
            writer.process_feature(feature)
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_real_training_slice_windows_and_labels(tokenizer):
    max_seq_length, doc_stride, max_query_length = 128, 64, 32
    examples = read_squad_examples(
        shared_path("data/squad/train-v1.1.first44articles.json"), True).examples[:300]
    features = convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                            max_query_length, True)
    by_example = {}
    for f in features:
        by_example.setdefault(f.example_index, []).append(f)
        assert len(f.input_ids) == len(f.input_mask) == len(f.segment_ids) == max_seq_length
        assert f.tokens[0] == "[CLS]" and f.tokens[-1] == "[SEP]"
        assert sum(f.input_mask) == len(f.tokens)
        assert f.segment_ids[:len(f.tokens)].count(1) == len(f.token_to_orig_map) + 1
    assert [f.unique_id for f in features] == list(range(1000000000, 1000000000 + len(features)))
    assert sorted(by_example) == list(range(len(examples)))

    exact_labels = 0
    for index, example in enumerate(examples):
        windows = by_example[index]
        num_doc_tokens = sum(len(tokenizer.tokenize(w)) for w in example.doc_tokens)
        query_len = min(len(tokenizer.tokenize(example.question_text)), max_query_length)
        window = max_seq_length - query_len - 3
        expected = 1 if num_doc_tokens <= window else 1 + math.ceil(
            (num_doc_tokens - window) / doc_stride)
        assert len(windows) == expected, example.qas_id
        # every document token has exactly one window where it has maximum context
        doc_positions = {}
        for f in windows:
            start = f.doc_span_index * doc_stride
            for pos, is_max in f.token_is_max_context.items():
                doc_positions[start + pos - query_len - 2] = (
                    doc_positions.get(start + pos - query_len - 2, 0) + is_max)
        assert sorted(doc_positions) == list(range(num_doc_tokens))
        assert set(doc_positions.values()) == {1}
        labelled = [f for f in windows if f.start_position > 0]
        assert labelled, example.qas_id  # short answers always fit some window
        answer_tokens = tokenizer.tokenize(example.orig_answer_text)
        for f in labelled:
            span = range(f.start_position, f.end_position + 1)
            assert {f.token_to_orig_map[p] for p in span} <= set(
                range(example.start_position, example.end_position + 1))
        exact_labels += labelled[0].tokens[labelled[0].start_position:
                                           labelled[0].end_position + 1] == answer_tokens
    assert exact_labels >= 0.97 * len(examples)


def test_real_prediction_slice_has_no_labels(tokenizer):
    examples = read_squad_examples(
        shared_path("data/squad/dev-v2.0.first5articles.json"), False, True).examples[:200]
    features = convert_examples_to_features(examples, tokenizer, 192, 64, 64, False)
    assert len(features) >= len(examples)
    assert {f.example_index for f in features} == set(range(len(examples)))
    assert all(f.start_position is None for f in features)
