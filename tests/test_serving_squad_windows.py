"""SQuAD serving_default reads every window of a long context as run_squad does.

The in-graph windows are run_squad's features (ids, segments, max-context flags) for many
window settings; and with a tiny seeded span labeler (test_serving_support.tiny_config: what is
checked is the windowing and the post-processing, which no weights change), exported by
export_savedmodel.py with seq_length 96 and doc_stride 32, the answers served for real SQuAD
dev questions over long contexts (several dev paragraphs joined) are run_squad's predictions on
the same model: its features, the Keras model's logits and its post-processing."""

import json

import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from bert_tf.data.squad import (RawResult, SquadExample, compute_predictions,
                                convert_examples_to_features, read_squad_examples,
                                split_context)
from helpers import shared_path

SEQ, QUERY, STRIDE, ANSWER = 96, 24, 32, 16
PARAGRAPHS = 3          # dev paragraphs per long context


def _dev_articles():
    with open(shared_path("data/squad/dev-v1.1.half-a.json"), encoding="utf-8") as f:
        return json.load(f)["data"]


def long_context_file(path, articles=8, per_article=3):
    """A SQuAD file of long contexts: for the first question of paragraph j of an article
    (j = PARAGRAPHS - 1, PARAGRAPHS, ...), paragraphs j - PARAGRAPHS + 1 .. j joined by
    spaces, so each question has its own context and its answer lies in its last paragraph
    (answer offsets moved along). Returns (path, the contexts in question order)."""
    data = []
    for article in _dev_articles()[:articles]:
        paragraphs = article["paragraphs"]
        for j in range(PARAGRAPHS - 1, PARAGRAPHS - 1 + per_article):
            context = " ".join(p["context"] for p in paragraphs[j - PARAGRAPHS + 1:j + 1])
            shift = len(context) - len(paragraphs[j]["context"])
            qa = paragraphs[j]["qas"][0]
            qa = dict(qa, answers=[dict(a, answer_start=a["answer_start"] + shift)
                                   for a in qa["answers"]])
            data.append({"title": article["title"],
                         "paragraphs": [{"context": context, "qas": [qa]}]})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "1.1", "data": data}, f)
    return path, [p["context"] for d in data for p in d["paragraphs"]]


def short_context_file(path, count=6):
    """Dev questions asked on just the sentence holding their answer (one window); returns
    (path, the contexts in question order)."""
    data = []
    for article in _dev_articles()[:count]:
        paragraph = article["paragraphs"][0]
        qa = paragraph["qas"][0]
        answer = qa["answers"][0]
        text = paragraph["context"]
        begin = text.rfind(". ", 0, answer["answer_start"])
        begin = 0 if begin < 0 else begin + 2
        end = text.find(". ", answer["answer_start"] + len(answer["text"]))
        sentence = text[begin:end + 1 if end >= 0 else len(text)]
        data.append({"title": article["title"], "paragraphs": [{"context": sentence, "qas": [
            dict(qa, answers=[dict(answer, answer_start=answer["answer_start"] - begin)])]}]})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "1.1", "data": data}, f)
    return path, [p["context"] for d in data for p in d["paragraphs"]]


@pytest.fixture(scope="module")
def span_model():
    """A tiny span labeler with seeded random weights; read-only."""
    return support.build_model("squad", seed=20)


@pytest.fixture(scope="module")
def export(span_model, tmp_path_factory):
    """span_model's TF1 checkpoint exported by export_savedmodel.py (run in this process) with
    --max_seq_length 96 --max_query_length 24 --max_answer_length 16 --doc_stride 32:
    {"info": its export_info.json, "loaded": the SavedModel loaded back in this process}."""
    from bert_tf.checkpoints import save_weights
    folder = tmp_path_factory.mktemp("squad_windows")
    prefix = save_weights(span_model, str(folder / "ckpt"), "tf1",
                          vocab_file=support.vocab_file())
    path, info = support.run_export_script(
        prefix, str(folder / "export"), "--task=squad", f"--max_seq_length={SEQ}",
        f"--max_query_length={QUERY}", f"--max_answer_length={ANSWER}",
        f"--doc_stride={STRIDE}", in_process=True)
    return {"info": info, "loaded": support.loaded_path(path)}


def run_squad(model, path):
    """run_squad's prediction path on `path`: (examples, features, v1.1 predictions, v2.0
    predictions), n-best wide enough that every valid span of a window is considered (the
    serving signature scores them all)."""
    examples = read_squad_examples(path, is_training=False).examples
    features = convert_examples_to_features(examples, support.full_tokenizer(), SEQ, STRIDE,
                                            QUERY, is_training=False)
    results = []
    for i in range(0, len(features), 64):
        batch = features[i:i + 64]
        out = model({k: tf.constant([getattr(f, k) for f in batch], tf.int32)
                     for k in ("input_ids", "input_mask", "segment_ids")}, training=False)
        results += [RawResult(f.unique_id, s, e) for f, s, e in
                    zip(batch, out["start_logits"].numpy(), out["end_logits"].numpy())]

    def predict(v2):
        return compute_predictions(examples, features, results, n_best_size=SEQ,
                                   max_answer_length=ANSWER, do_lower_case=True,
                                   version_2_with_negative=v2)

    return examples, features, predict(False), predict(True)


def serve(signature, examples, contexts):
    """serving_default on the examples' questions and `contexts` -> numpy outputs."""
    out = signature(question=tf.constant([e.question_text for e in examples]),
                    context=tf.constant(contexts))
    return {k: v.numpy() for k, v in out.items()}


@pytest.fixture(scope="module")
def long_run(span_model, export, tmp_path_factory):
    path, contexts = long_context_file(tmp_path_factory.mktemp("long") / "dev.json")
    examples, features, v1, v2 = run_squad(span_model, path)
    served = serve(export["loaded"].signatures["serving_default"], examples, contexts)
    return {"examples": examples, "contexts": contexts, "features": features, "v1": v1,
            "v2": v2, "served": served}


def test_long_context_answers_are_run_squads(long_run):
    examples, served, v1, v2 = (long_run[k] for k in ("examples", "served", "v1", "v2"))
    assert len(examples) == 24
    windows = [sum(f.example_index == i for f in long_run["features"])
               for i in range(len(examples))]
    assert served["num_windows"].tolist() == windows
    assert min(windows) >= 3, "the contexts should span several windows"
    for row, example in enumerate(examples):
        best = v1.nbest[example.qas_id][0]
        assert served["answer_text"][row].decode() == v1.predictions[example.qas_id], row
        assert served["score"][row] == pytest.approx(best["start_logit"] + best["end_logit"],
                                                     abs=2e-4)
        # SQuAD 2.0: run_squad's null odds are the lowest [CLS] score minus the best span's.
        assert (served["null_score"][row] - served["score"][row]
                == pytest.approx(v2.null_odds[example.qas_id], abs=2e-4))
        context = long_run["contexts"][row].encode()
        start, end = served["answer_start"][row], served["answer_end"][row]
        assert served["answer_text"][row] == context[start:end]


def test_answers_come_from_later_windows(long_run):
    """Most answers lie past the first window: only reading every window finds them."""
    examples, features, served = (long_run[k] for k in ("examples", "features", "served"))
    past_first = 0
    for row, (example, context) in enumerate(zip(examples, long_run["contexts"])):
        first = next(f for f in features if f.example_index == row)
        last_word = max(first.token_to_orig_map.values())
        # The byte offset where the first window's last word ends in the context.
        word_start = split_context(context)[1].index(last_word)
        first_end = len(context[:word_start + len(example.doc_tokens[last_word])].encode())
        if served["answer_start"][row] >= first_end:
            past_first += 1
            assert served["answer_window"][row] > 0
        assert 0 <= served["answer_window"][row] < served["num_windows"][row]
    assert past_first >= len(examples) // 2, past_first


def test_short_context_is_one_window_answered_as_before(span_model, export, tmp_path):
    """A context that fits one window: num_windows 1, run_squad's prediction, and the span
    serve_features picks in run_squad's single window (the first-window answer of earlier
    versions)."""
    path, contexts = short_context_file(tmp_path / "dev.json")
    examples, features, v1, _ = run_squad(span_model, path)
    assert len(features) == len(examples) == 6
    served = serve(export["loaded"].signatures["serving_default"], examples, contexts)
    assert served["num_windows"].tolist() == [1] * len(examples)
    assert served["answer_window"].tolist() == [0] * len(examples)
    for row, example in enumerate(examples):
        assert served["answer_text"][row].decode() == v1.predictions[example.qas_id]
    window = export["loaded"].signatures["serve_features"](**{
        k: tf.constant([getattr(f, k) for f in features], tf.int32)
        for k in ("input_ids", "input_mask", "segment_ids")})
    for k in ("answer_token_start", "answer_token_end"):
        np.testing.assert_array_equal(served[k], window[k].numpy(), err_msg=k)
    np.testing.assert_allclose(served["score"], window["score"].numpy(), atol=2e-4)


@pytest.mark.parametrize("seq, query, stride", [(96, 24, 32), (40, 10, 7), (64, 30, 100),
                                                (30, 26, 1)])
def test_windows_are_run_squads_features(span_model, seq, query, stride):
    """encode() builds exactly run_squad's windows, in order, with its max-context flags:
    room for several windows, a stride wider than the room, a room of one token; empty,
    one-word and exactly-fitting contexts."""
    from bert_tf.serving.heads import make_head
    from bert_tf.serving.options import HeadOptions
    from bert_tf.tokenization import vocab as _vocab
    task = make_head("squad", span_model,
                     _vocab.Vocabulary.from_file(support.vocab_file()).id_to_token, True, seq,
                     HeadOptions(max_query_length=query, doc_stride=stride))
    questions, contexts = zip(*[(q, c) for _, q, c in support.squad_questions(8)])
    questions += ("", "Who?", "", "")
    contexts += ("", "a", " ".join(["word"] * (seq - 3)), " ".join(["word"] * (seq - 2)))
    features, extras = task.encode((tf.constant(questions), tf.constant(contexts)))
    examples = [SquadExample(str(i), q, split_context(c)[0])
                for i, (q, c) in enumerate(zip(questions, contexts))]
    expected = convert_examples_to_features(examples, support.full_tokenizer(), seq, stride,
                                            query, is_training=False)
    counts = [sum(f.example_index == i for f in expected) for i in range(len(examples))]
    assert counts[-4:] == [0, 1, 1, 2] and max(counts) > 3
    # An empty context still gets a window (without context tokens): it answers nothing.
    assert extras["num_windows"].numpy().tolist() == [max(n, 1) for n in counts]
    rows = extras["window_row"].numpy()
    kept = [w for w in range(len(rows)) if counts[rows[w]]]
    assert len(kept) == len(expected)
    assert [int(extras["window_index"][w]) for w in kept] == [f.doc_span_index
                                                              for f in expected]
    for k in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(tf.gather(features[k], kept).numpy(),
                                      [getattr(f, k) for f in expected], err_msg=k)
    max_context = np.zeros((len(expected), seq), bool)
    for i, f in enumerate(expected):
        for position, value in f.token_is_max_context.items():
            max_context[i, position] = value
    np.testing.assert_array_equal(tf.gather(extras["max_context"], kept).numpy(), max_context)


def test_export_savedmodel_passes_doc_stride(export):
    """export_savedmodel.py --doc_stride (and --max_seq_length) reach the serving head and
    export_info.json."""
    assert export["info"]["doc_stride"] == STRIDE
    # One-token question: windows of 92 context tokens starting every 32 tokens.
    served = export["loaded"].signatures["serving_default"](
        question=tf.constant(["why"] * 3),
        context=tf.constant([" ".join(["word"] * n) for n in (92, 93, 157)]))
    assert served["num_windows"].numpy().tolist() == [1, 2, 4]
