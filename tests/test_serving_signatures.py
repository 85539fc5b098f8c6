"""Exported SavedModels in a fresh Python process (TensorFlow + tensorflow_text, no bert_tf):
every signature of every task returns what the in-process Keras model returns on real inputs
(MRPC and STS-B pairs, CoNLL-2003 sentences, SQuAD questions), the graphs hold only the ops a
stock model server has, and the warm-up requests parse and replay."""

import numpy as np
import pytest

import test_serving_support as support
from bert_tf.serving import graph_ops
from bert_tf.tokenization import serving_ops
from helpers import shared_path

SIGNATURES = ("serving_default", "serve_features", "serve_examples")
FEATURES = ("input_ids", "input_mask", "segment_ids")
TOLERANCE = dict(rtol=1e-4, atol=1e-5)
SQUAD_WINDOW_SIGNATURES = ("serve_features", "serve_examples")   # one packed window per row


def _job(kind, texts, features, unique_ids=None):
    inputs = {f"serving_default/{k}": np.array(v, object) for k, v in texts.items()}
    inputs.update({f"serve_features/{k}": features[k] for k in FEATURES})
    inputs["serve_examples/examples"] = support.serialized_examples(features, unique_ids)
    return {"path": support.exported(kind)[1], "inputs": inputs,
            "calls": {"serving_default": sorted(texts), "serve_features": list(FEATURES),
                      "serve_examples": ["examples"]}}


def _squad_reference():
    """run_squad's windows of each sample question (Python FullTokenizer features); the first
    window of each feeds serve_features and serve_examples."""
    from bert_tf.data.squad.examples import read_squad_examples
    from bert_tf.data.squad.features import convert_examples_to_features
    questions = support.squad_questions()
    wanted = {qid for qid, _, _ in questions}
    examples = [e for e in read_squad_examples(shared_path("data/squad/dev-v1.1.half-a.json"),
                                               is_training=False).examples
                if e.qas_id in wanted]
    order = [qid for qid, _, _ in questions]
    examples.sort(key=lambda e: order.index(e.qas_id))
    features = convert_examples_to_features(
        examples, support.full_tokenizer(), support.SQUAD_SEQ, doc_stride=support.SQUAD_STRIDE,
        max_query_length=support.SQUAD_QUERY, is_training=False)
    first = [next(f for f in features if f.example_index == i) for i in range(len(examples))]
    windows = [sum(f.example_index == i for f in features) for i in range(len(examples))]
    arrays = {k: np.array([getattr(f, k) for f in first], np.int32) for k in FEATURES}
    return questions, examples, features, first, windows, arrays


@pytest.fixture(scope="module")
def served():
    """Inputs, in-process references and the fresh process's outputs and report."""
    refs = {}
    a, b = support.mrpc_pairs()
    refs["classifier"] = support.classifier_features(a, b)
    sa, sb = support.stsb_pairs()
    refs["regression"] = support.classifier_features(sa, sb)
    sentences = support.conll_sentences()
    refs["tagger"] = support.classifier_features(sentences)
    refs["encoder"] = support.classifier_features(a)
    questions, examples, all_windows, first, windows, squad_features = _squad_reference()
    refs["squad"] = squad_features
    unique_ids = [f.unique_id for f in first]
    jobs = {
        "classifier": _job("classifier", {"text_a": a, "text_b": b}, refs["classifier"]),
        "regression": _job("regression", {"text_a": sa, "text_b": sb}, refs["regression"]),
        "tagger": _job("tagger", {"text_a": sentences}, refs["tagger"]),
        "encoder": _job("encoder", {"text_a": a}, refs["encoder"]),
        "squad": _job("squad", {"question": [q for _, q, _ in questions],
                                "context": [c for _, _, c in questions]},
                      squad_features, unique_ids),
    }
    op_types = {}
    for kind, job in jobs.items():
        for signature in SIGNATURES:
            op_types[f"{kind}/{signature}"] = graph_ops.signature_op_types(job["path"], signature)
        op_types[f"{kind}/*"] = serving_ops.saved_model_op_types(job["path"])
    report, results = support.run_fresh_process(jobs, op_types, serving_ops.TF_TEXT_OPS)
    keras = {kind: support.keras_outputs(support.exported(kind)[0], refs[kind]) for kind in jobs}
    return {"report": report, "results": results, "keras": keras, "refs": refs,
            "op_types": op_types, "sentences": sentences, "questions": questions,
            "examples": examples, "all_windows": all_windows, "first": first,
            "windows": windows,
            "unique_ids": unique_ids}


def _each_signature(served, kind, output):
    for signature in SIGNATURES:
        yield signature, served["results"][f"{kind}/{signature}/{output}"]


def test_fresh_process_never_imports_bert_tf(served):
    assert served["report"]["bert_tf_imported"] is False


def test_classifier_signatures_match_keras_on_mrpc(served):
    logits = served["keras"]["classifier"]["logits"]
    label_id = logits.argmax(-1)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    assert len(set(label_id)) == 2, "the sample should exercise both labels"
    for signature, value in _each_signature(served, "classifier", "logits"):
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, logits, **TOLERANCE, err_msg=signature)
    for signature, value in _each_signature(served, "classifier", "probabilities"):
        np.testing.assert_allclose(value, probabilities, **TOLERANCE, err_msg=signature)
    for signature, value in _each_signature(served, "classifier", "label_id"):
        np.testing.assert_array_equal(value, label_id, err_msg=signature)
    for signature, value in _each_signature(served, "classifier", "label"):
        assert [v.decode() for v in value] == [support.MRPC_LABELS[i] for i in label_id]


def test_regression_signatures_match_keras_on_stsb(served):
    expected = served["keras"]["regression"]["logits"][:, 0]
    for signature, value in _each_signature(served, "regression", "score"):
        assert value.dtype == np.float32 and value.shape == expected.shape
        np.testing.assert_allclose(value, expected, **TOLERANCE, err_msg=signature)


def test_encoder_signatures_match_keras(served):
    """Per-token outputs match at the tokens; at padding (which the served model skips, and
    past each request's longest row, which it never sees) they are zero."""
    keras = served["keras"]["encoder"]
    tokens = served["refs"]["encoder"]["input_mask"] == 1
    for signature, value in _each_signature(served, "encoder", "pooled_output"):
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, keras["pooled_output"], **TOLERANCE,
                                   err_msg=signature)
    for signature, value in _each_signature(served, "encoder", "sequence_output"):
        assert value.dtype == np.float32 and value.shape == keras["sequence_output"].shape
        np.testing.assert_allclose(value[tokens], keras["sequence_output"][tokens], **TOLERANCE,
                                   err_msg=signature)
        assert not value[~tokens].any(), signature
    np.testing.assert_array_equal(served["results"]["encoder/serving_default/input_mask"],
                                  served["refs"]["encoder"]["input_mask"])


def test_tagger_signatures_match_keras_on_conll(served):
    logits = served["keras"]["tagger"]["logits"]
    mask = served["refs"]["tagger"]["input_mask"]
    tokens = mask == 1
    for signature, value in _each_signature(served, "tagger", "logits"):
        assert value.shape == logits.shape
        np.testing.assert_allclose(value[tokens], logits[tokens], **TOLERANCE, err_msg=signature)
    for signature, value in _each_signature(served, "tagger", "label_id"):
        np.testing.assert_array_equal(value[tokens], logits.argmax(-1)[tokens],
                                      err_msg=signature)
    tokens = served["results"]["tagger/serving_default/tokens"]
    labels = served["results"]["tagger/serving_default/label"]
    starts = served["results"]["tagger/serving_default/token_start_offsets"]
    ends = served["results"]["tagger/serving_default/token_end_offsets"]
    tok = support.full_tokenizer()
    for row, sentence in enumerate(served["sentences"]):
        n = int(mask[row].sum())
        expected = ["[CLS]"] + tok.tokenize(sentence)[:support.SEQ - 2] + ["[SEP]"]
        assert [t.decode() for t in tokens[row][:n]] == expected
        assert all(t == b"" for t in tokens[row][n:])
        text = sentence.encode("utf-8")
        for i in range(1, n - 1):     # every WordPiece points at its own characters
            piece = text[starts[row, i]:ends[row, i]].decode().lower()
            assert piece == expected[i].removeprefix("##"), (row, i)
            assert labels[row, i].decode() == support.CONLL_LABELS[logits[row, i].argmax()]
        assert starts[row, 0] == -1 and labels[row, 0] == b"" and labels[row, n - 1] == b""


def test_squad_logits_match_keras_on_run_squad_features(served):
    """serve_features and serve_examples on run_squad's first windows (at their tokens: the
    served model skips padding); serving_default reads as many windows as run_squad makes."""
    keras = served["keras"]["squad"]
    tokens = served["refs"]["squad"]["input_mask"] == 1
    for output in ("start_logits", "end_logits"):
        for signature in SQUAD_WINDOW_SIGNATURES:
            value = served["results"][f"squad/{signature}/{output}"]
            np.testing.assert_allclose(value[tokens], keras[output][tokens], **TOLERANCE,
                                       err_msg=signature)
    np.testing.assert_array_equal(served["results"]["squad/serve_examples/unique_ids"],
                                  served["unique_ids"])
    num_windows = served["results"]["squad/serving_default/num_windows"]
    assert list(num_windows) == served["windows"]
    assert 1 < max(num_windows) and min(num_windows) == 1, "short and long contexts wanted"


def _best_span(start, end, candidates, max_length):
    best = (-np.inf, -1, -1)
    for i in candidates:
        for j in candidates:
            if i <= j < i + max_length and start[i] + end[j] > best[0]:
                best = (start[i] + end[j], i, j)
    return best


def test_squad_best_span_is_the_best_valid_span(served):
    keras = served["keras"]["squad"]
    for signature in SQUAD_WINDOW_SIGNATURES:
        out = {k: served["results"][f"squad/{signature}/{k}"]
               for k in ("answer_token_start", "answer_token_end", "score")}
        for row, feature in enumerate(served["first"]):
            score, i, j = _best_span(keras["start_logits"][row], keras["end_logits"][row],
                                     sorted(feature.token_to_orig_map), support.SQUAD_ANSWER)
            assert (out["answer_token_start"][row], out["answer_token_end"][row]) == (i, j)
            assert out["score"][row] == pytest.approx(score, rel=1e-5, abs=1e-5)


def test_squad_answer_text_matches_run_squad_postprocessing(served):
    """serving_default's answer over every window is the context's bytes under its span and
    the text google-research's post-processing gives on the same windows (n-best wide enough
    to see every span, as serving_default scores every valid pair)."""
    from bert_tf.data.squad.postprocess import RawResult, compute_predictions
    windows = served["all_windows"]
    logits = support.keras_outputs(
        support.exported("squad")[0],
        {k: np.array([getattr(f, k) for f in windows], np.int32) for k in FEATURES})
    raw = [RawResult(f.unique_id, logits["start_logits"][i], logits["end_logits"][i])
           for i, f in enumerate(windows)]
    python = compute_predictions(served["examples"], windows, raw, n_best_size=support.SQUAD_SEQ,
                                 max_answer_length=support.SQUAD_ANSWER, do_lower_case=True)
    results = served["results"]
    later = 0
    for row, (qid, _, context) in enumerate(served["questions"]):
        start = results["squad/serving_default/answer_start"][row]
        end = results["squad/serving_default/answer_end"][row]
        text = results["squad/serving_default/answer_text"][row]
        assert 0 <= start < end <= len(context.encode("utf-8"))
        assert text == context.encode("utf-8")[start:end]
        assert text.decode("utf-8") == python.predictions[qid], qid
        later += results["squad/serving_default/answer_window"][row] > 0
    assert later, "some answers should come from a window after the first"


def test_serve_features_holds_only_core_tensorflow_ops(served):
    report = served["report"]
    assert report["tf_text_imported_in_phase1"] is False
    for kind in ("classifier", "regression", "squad", "tagger", "encoder"):
        for signature in ("serve_features", "serve_examples"):
            assert served["op_types"][f"{kind}/{signature}"], "no ops listed"
            assert report["non_core"][f"{kind}/{signature}"] == [], (kind, signature)


def test_raw_text_signatures_need_only_the_documented_tensorflow_text_ops(served):
    report = served["report"]
    for kind in ("classifier", "regression", "squad", "tagger", "encoder"):
        non_core = set(report["non_core"][f"{kind}/serving_default"])
        assert non_core == set(serving_ops.TF_TEXT_OPS), kind
        assert set(report["non_core"][f"{kind}/*"]) <= set(serving_ops.TF_TEXT_OPS), kind
    assert all(report["registered_text_ops"].values()), report["registered_text_ops"]


def test_warmup_requests_parse_and_replay(served):
    from bert_tf.serving.warmup import read_warmup
    for kind, replayed in served["report"]["replay"].items():
        signatures = [signature for signature, _ in replayed]
        assert sorted(set(signatures)) == sorted(SIGNATURES), kind
        path = support.exported(kind)[1] + "/assets.extra/tf_serving_warmup_requests"
        assert [s for s, _ in read_warmup(path)] == signatures
        for signature, outputs in replayed:
            expected = served["results"]
            assert outputs == sorted(k.split("/")[2] for k in expected
                                     if k.startswith(f"{kind}/{signature}/")), (kind, signature)
