"""The multiple_choice (SWAG) and fill_mask (masked LM) SavedModels: in a fresh Python process
(TensorFlow + tensorflow_text, no bert_tf) every signature returns what the in-process Keras
model returns on real inputs (SWAG rows packed as run_swag packs them, MRPC sentences with
masks predicted as predict_masked.py predicts them); only the allowed ops; warm-up replays; bad
requests get a clear error or a defined result."""

import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from helpers import export_savedmodel
from bert_tf.serving import graph_ops
from bert_tf.tokenization import serving_ops

# Slow as a whole: the exports these tests read are built by the first test of a worker that
# needs them (test_serving_support's process-wide cache, not a fixture the profile could time).
pytestmark = pytest.mark.slow

SIGNATURES = ("serving_default", "serve_features", "serve_examples")
FEATURES = ("input_ids", "input_mask", "segment_ids")
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- references
def _swag_reference():
    """SWAG rows and run_swag's features of them (encode_swag, Python FullTokenizer)."""
    from bert_tf.data.swag import encode_swag
    examples = support.swag_examples()
    arrays = encode_swag(examples, support.full_tokenizer(), support.CHOICE_SEQ)
    texts = {"context": [e.context for e in examples],
             "endings": [[second for _, second in e.choice_texts()] for e in examples]}
    return examples, texts, {k: arrays[k] for k in FEATURES}


def _special_ids():
    from bert_tf.tokenization.vocab import special_token_ids
    return special_token_ids(support.full_tokenizer().vocabulary.id_to_token)


def _fill_mask_reference(model, texts):
    """predict_masked.py's packing and top-k of `texts` (bert_tf.jobs.fill_mask), features
    padded to FILL_SEQ."""
    from bert_tf.jobs.fill_mask import _batch_arrays, encode_masked, make_predict_fn
    items = [encode_masked(support.full_tokenizer(), i, t, support.FILL_SEQ)
             for i, t in enumerate(texts)]
    ids, mask, segments, positions = _batch_arrays(items)
    values, top_ids = (t.numpy() for t in make_predict_fn(model, support.TOP_K, _special_ids())(
        ids, mask, segments, positions))
    pad = support.FILL_SEQ - ids.shape[1]
    features = {k: np.pad(v, ((0, 0), (0, pad))) for k, v in
                zip(FEATURES, (ids, mask, segments))}
    return items, features, values, top_ids


def _job(kind, texts, features):
    inputs = {f"serving_default/{k}": np.array(v, object) for k, v in texts.items()}
    inputs.update({f"serve_features/{k}": features[k] for k in FEATURES})
    inputs["serve_examples/examples"] = support.serialized_examples(
        {k: v.reshape(len(v), -1) for k, v in features.items()})    # choice-major for [B, N, S]
    return {"path": support.exported(kind)[1], "inputs": inputs,
            "calls": {"serving_default": list(texts), "serve_features": list(FEATURES),
                      "serve_examples": ["examples"]}}


@pytest.fixture(scope="module")
def served():
    examples, swag_texts, swag_features = _swag_reference()
    texts = support.fill_mask_texts()
    fill_model = support.exported("fill_mask")[0]
    items, fill_features, values, top_ids = _fill_mask_reference(fill_model, texts)
    jobs = {"multiple_choice": _job("multiple_choice", swag_texts, swag_features),
            "fill_mask": _job("fill_mask", {"text": texts}, fill_features)}
    op_types = {}
    for kind, job in jobs.items():
        for signature in SIGNATURES:
            op_types[f"{kind}/{signature}"] = graph_ops.signature_op_types(job["path"], signature)
        op_types[f"{kind}/*"] = serving_ops.saved_model_op_types(job["path"])
    report, results = support.run_fresh_process(jobs, op_types, serving_ops.TF_TEXT_OPS)
    return {"report": report, "results": results, "op_types": op_types,
            "swag": (examples, swag_texts, swag_features),
            "choice_logits": support.keras_outputs(support.exported("multiple_choice")[0],
                                                   swag_features)["logits"],
            "fill": (texts, items, values, top_ids)}


def _each(served, kind, output):
    for signature in SIGNATURES:
        yield signature, served["results"][f"{kind}/{signature}/{output}"]


def _assert_same_top_k(values, ids, expected_values, expected_ids, where):
    """Equal probabilities; equal ids except where two neighbouring probabilities tie (a
    different padding length may reorder them)."""
    np.testing.assert_allclose(values, expected_values, **TOLERANCE, err_msg=where)
    for j in np.flatnonzero(ids != expected_ids):
        neighbours = expected_values[max(j - 1, 0):j + 2]
        assert np.ptp(neighbours) < 1e-5, (where, j, ids, expected_ids)


# --------------------------------------------------------------------------- multiple choice
def test_fresh_process_never_imports_bert_tf(served):
    assert served["report"]["bert_tf_imported"] is False


def test_multiple_choice_packs_pairs_exactly_as_run_swag(served):
    from bert_tf.serving.heads import make_head
    from bert_tf.serving.options import HeadOptions
    _, texts, expected = served["swag"]
    lengths = expected["input_mask"].sum(-1)
    assert (lengths == support.CHOICE_SEQ).any() and (lengths < support.CHOICE_SEQ).any(), \
        "the sample should hold truncated and short pairs"
    task = make_head("multiple_choice", support.exported("multiple_choice")[0],
                     support.full_tokenizer().vocabulary.id_to_token, True, support.CHOICE_SEQ,
                     HeadOptions(num_choices=support.NUM_CHOICES))
    features, _ = task.encode((tf.constant(texts["context"]), tf.constant(texts["endings"])))
    for k in FEATURES:
        np.testing.assert_array_equal(features[k].numpy(), expected[k], err_msg=k)


def test_multiple_choice_signatures_match_keras_on_swag(served):
    logits = served["choice_logits"]
    assert logits.shape == (len(served["swag"][0]), support.NUM_CHOICES)
    assert len(set(logits.argmax(-1))) > 1, "the sample should exercise several choices"
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for signature, value in _each(served, "multiple_choice", "logits"):
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, logits, **TOLERANCE, err_msg=signature)
    for signature, value in _each(served, "multiple_choice", "probabilities"):
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, probabilities, **TOLERANCE, err_msg=signature)
        np.testing.assert_allclose(value.sum(-1), 1.0, rtol=1e-5)
    for signature, value in _each(served, "multiple_choice", "choice"):
        assert value.dtype == np.int32
        np.testing.assert_array_equal(value, logits.argmax(-1), err_msg=signature)


# --------------------------------------------------------------------------- fill mask
def test_fill_mask_packing_and_positions_are_predict_masked_ones(served):
    texts, items, _, _ = served["fill"]
    results = served["results"]
    for signature in SIGNATURES:
        counts = results[f"fill_mask/{signature}/num_masks"]
        positions = results[f"fill_mask/{signature}/mask_positions"]
        assert list(counts) == [len(item.positions) for item in items], signature
        assert positions.shape == (len(texts), max(counts))
        for row, item in enumerate(items):
            assert list(positions[row]) == item.positions + [-1] * (max(counts) - counts[row])
    assert not results["fill_mask/serving_default/masks_truncated"].any()


def test_fill_mask_top_k_matches_predict_masked(served):
    texts, items, values, ids = served["fill"]
    vocab = support.full_tokenizer().vocabulary.id_to_token
    for signature in SIGNATURES:
        out = {k: served["results"][f"fill_mask/{signature}/{k}"]
               for k in ("probabilities", "token_ids", "tokens")}
        assert out["probabilities"].dtype == np.float32 and out["token_ids"].dtype == np.int32
        assert out["probabilities"].shape[2] == support.TOP_K
        for row, item in enumerate(items):
            for m in range(len(item.positions)):
                where = f"{signature} text {row} mask {m}"
                _assert_same_top_k(out["probabilities"][row, m], out["token_ids"][row, m],
                                   values[row, m], ids[row, m], where)
                assert [t.decode() for t in out["tokens"][row, m]] == [
                    vocab[i] for i in out["token_ids"][row, m]], where


def test_fill_mask_probabilities_are_a_ranked_part_of_the_softmax(served):
    special = set(_special_ids())
    for signature in SIGNATURES:
        probabilities = served["results"][f"fill_mask/{signature}/probabilities"]
        ids = served["results"][f"fill_mask/{signature}/token_ids"]
        counts = served["results"][f"fill_mask/{signature}/num_masks"]
        for row, count in enumerate(counts):
            shown = probabilities[row, :count]
            assert (shown > 0).all() and (np.diff(shown, axis=-1) <= 0).all(), signature
            assert (shown.sum(-1) <= 1.0 + 1e-6).all(), signature
            assert not special & set(ids[row, :count].ravel().tolist()), signature
            # padding rows of texts with fewer masks than the batch's most
            assert (probabilities[row, count:] == 0).all() and (ids[row, count:] == -1).all()


def test_fill_mask_offsets_point_at_each_mask_in_the_text(served):
    texts = served["fill"][0]
    starts = served["results"]["fill_mask/serving_default/mask_start_offsets"]
    ends = served["results"]["fill_mask/serving_default/mask_end_offsets"]
    for row, text in enumerate(texts):
        data = text.encode("utf-8")
        expected, at = [], data.find(b"[MASK]")
        while at >= 0:
            expected.append((at, at + 6))
            at = data.find(b"[MASK]", at + 6)
        found = [(s, e) for s, e in zip(starts[row], ends[row]) if s >= 0]
        assert found == expected, (row, text)


# --------------------------------------------------------------------------- graphs, warm-up
def test_serve_features_hold_only_core_tensorflow_ops(served):
    report = served["report"]
    assert report["tf_text_imported_in_phase1"] is False
    for kind in ("multiple_choice", "fill_mask"):
        for signature in ("serve_features", "serve_examples"):
            assert served["op_types"][f"{kind}/{signature}"], "no ops listed"
            assert report["non_core"][f"{kind}/{signature}"] == [], (kind, signature)


def test_raw_text_signatures_need_only_the_documented_tensorflow_text_ops(served):
    report = served["report"]
    for kind in ("multiple_choice", "fill_mask"):
        assert set(report["non_core"][f"{kind}/serving_default"]) == set(
            serving_ops.TF_TEXT_OPS), kind
        assert set(report["non_core"][f"{kind}/*"]) <= set(serving_ops.TF_TEXT_OPS), kind


def test_warmup_requests_replay_every_signature(served):
    from bert_tf.serving.warmup import read_warmup
    for kind in ("multiple_choice", "fill_mask"):
        replayed = served["report"]["replay"][kind]
        assert sorted({s for s, _ in replayed}) == sorted(SIGNATURES), kind
        path = support.exported(kind)[1] + "/assets.extra/tf_serving_warmup_requests"
        requests = read_warmup(path)
        assert [s for s, _ in requests] == [s for s, _ in replayed]
        for signature, outputs in replayed:
            assert outputs == sorted(k.split("/")[2] for k in served["results"]
                                     if k.startswith(f"{kind}/{signature}/")), (kind, signature)
    # the fill-mask warm-up texts hold masks, so the top-k path is what gets warmed up
    text = [inputs["text"] for s, inputs in read_warmup(
        support.exported("fill_mask")[1] + "/assets.extra/tf_serving_warmup_requests")
        if s == "serving_default"]
    assert all(b"[MASK]" in t for batch in text for t in batch)


# --------------------------------------------------------------------------- bad requests
def _call(kind, signature, **inputs):
    function = support.loaded(kind).signatures[signature]
    return {k: v.numpy() for k, v in function(**inputs).items()}


def _endings(rows, choices=support.NUM_CHOICES):
    return tf.constant([[f"ending {c} of row {r}" for c in range(choices)] for r in range(rows)])


def test_endings_must_have_num_choices_columns():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"endings \[2,3\] is not compatible with expected shape \[\?,4\]"):
        _call("multiple_choice", "serving_default", context=tf.constant(["a", "b"]),
              endings=_endings(2, 3))
    ids = tf.zeros([1, 3, 8], tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"(input_ids|input_mask|segment_ids) \[1,3,8\] is not compatible "
                             r"with expected shape \[\?,4,\?\]"):
        _call("multiple_choice", "serve_features", input_ids=ids, input_mask=ids,
              segment_ids=ids)


def test_context_and_endings_batches_must_agree():
    with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
        _call("multiple_choice", "serving_default", context=tf.constant(["a", "b"]),
              endings=_endings(1))


def test_multiple_choice_example_must_hold_every_choice():
    one_choice = support.serialized_examples(
        {k: np.zeros((1, support.CHOICE_SEQ), np.int32) for k in FEATURES})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Key: (input_ids|input_mask|segment_ids).* Values size: 32 but "
                             r"output shape: \[4,32\]"):
        _call("multiple_choice", "serve_examples", examples=tf.constant(one_choice))


def test_multiple_choice_empty_batch_and_empty_strings():
    out = _call("multiple_choice", "serving_default", context=tf.constant([], tf.string),
                endings=tf.zeros([0, support.NUM_CHOICES], tf.string))
    assert out["logits"].shape == (0, support.NUM_CHOICES) and out["choice"].shape == (0,)
    out = _call("multiple_choice", "serving_default", context=tf.constant([""]),
                endings=tf.constant([["", "", "", "Something."]]))
    from bert_tf.data.swag import SwagExample, encode_swag
    arrays = encode_swag([SwagExample("x", "", "", ["", "", "", "Something."])],
                         support.full_tokenizer(), support.CHOICE_SEQ)
    expected = support.keras_outputs(support.exported("multiple_choice")[0],
                                     {k: arrays[k] for k in FEATURES})
    np.testing.assert_allclose(out["logits"], expected["logits"], **TOLERANCE)


def test_text_without_a_mask_gets_no_predictions():
    out = _call("fill_mask", "serving_default", text=tf.constant(["No mask here."]))
    assert out["num_masks"].tolist() == [0]
    assert out["tokens"].shape == (1, 0, support.TOP_K)
    assert out["mask_positions"].shape == (1, 0) and not out["masks_truncated"].any()
    # "[mask]" is not the mask token (predict_masked.py reads the literal "[MASK]" only)
    out = _call("fill_mask", "serving_default",
                text=tf.constant(["a [mask] here", "The [MASK] is here."]))
    assert out["num_masks"].tolist() == [0, 1]
    assert list(out["tokens"][0, 0]) == [b""] * support.TOP_K
    assert (out["token_ids"][0] == -1).all() and (out["probabilities"][0] == 0).all()
    assert out["mask_start_offsets"][0, 0] == -1 and out["mask_start_offsets"][1, 0] == 4


def test_fill_mask_empty_batch():
    out = _call("fill_mask", "serving_default", text=tf.constant([], tf.string))
    assert out["tokens"].shape == (0, 0, support.TOP_K) and out["num_masks"].shape == (0,)
    ids = tf.zeros([0, support.FILL_SEQ], tf.int32)
    out = _call("fill_mask", "serve_features", input_ids=ids, input_mask=ids, segment_ids=ids)
    assert out["probabilities"].shape == (0, 0, support.TOP_K)


def test_masks_beyond_max_seq_length_are_flagged():
    text = "The [MASK] starts. " + " ".join(["word"] * 40) + " and [MASK] ends."
    out = _call("fill_mask", "serving_default", text=tf.constant([text, "[MASK]"]))
    assert out["masks_truncated"].tolist() == [True, False]
    assert out["num_masks"].tolist() == [1, 1]
    assert out["mask_positions"].tolist() == [[2], [1]]


def test_fill_mask_serve_features_predicts_at_mask_ids_only():
    mask_id = support.full_tokenizer().vocabulary.mask_id
    ids = np.array([[101, mask_id, 2003, 102, mask_id]], np.int32)     # last one is padding
    mask = np.array([[1, 1, 1, 1, 0]], np.int32)
    out = _call("fill_mask", "serve_features", input_ids=tf.constant(ids),
                input_mask=tf.constant(mask), segment_ids=tf.zeros_like(ids))
    assert out["mask_positions"].tolist() == [[1]] and out["num_masks"].tolist() == [1]


# --------------------------------------------------------------------------- export arguments
@pytest.mark.parametrize("kind, model, kwargs, message", [
    ("multiple_choice", "classifier", {"num_choices": 4}, "needs a BertMultipleChoice"),
    ("multiple_choice", "multiple_choice", {}, "needs num_choices"),
    ("multiple_choice", "multiple_choice", {"num_choices": 1}, "integer >= 2"),
    ("multiple_choice", "multiple_choice", {"num_choices": 4, "seq_length": 3},
     "seq_length >= 4"),
    ("fill_mask", "encoder", {}, "needs a BertPretrainer .*masked-LM head"),
    ("fill_mask", "fill_mask", {"top_k": 0}, "top_k must be an integer >= 1"),
    ("classifier", "classifier", {"labels": ["0", "1"], "num_choices": 4},
     "num_choices applies to task 'multiple_choice' only"),
])
def test_inconsistent_arguments_are_rejected(tmp_path, kind, model, kwargs, message):
    kwargs.setdefault("seq_length", 16)
    with pytest.raises(ValueError, match=message):
        export_savedmodel(support.build_model(model), kind, str(tmp_path), support.vocab_file(),
                       True, **kwargs)
    assert not (tmp_path / "1").exists()


# --------------------------------------------------------------------------- mixed precision
def _bf16_export(tmp_path, kind, model, **kwargs):
    """serve_features of `model` exported without text signatures; checks no output is
    16-bit."""
    path = export_savedmodel(model, kind, str(tmp_path / kind), support.vocab_file(), True,
                          support.CHOICE_SEQ, text_signatures=False, warmup=False, **kwargs)
    function = support.loaded_path(path).signatures["serve_features"]
    for name, spec in function.structured_outputs.items():
        assert spec.dtype not in (tf.bfloat16, tf.float16), (kind, name)
    return function


def test_mixed_precision_models_serve_float32(tmp_path):
    import keras

    from bert_tf.model import BertEncoder, BertMultipleChoice, BertPretrainer
    keras.utils.set_random_seed(3)
    # One block: what is checked is the dtype policy's outputs, not depth.
    encoder = BertEncoder(support.tiny_config(num_hidden_layers=1), dtype="mixed_bfloat16")
    _, _, swag = _swag_reference()
    choice = BertMultipleChoice(encoder)
    out = _bf16_export(tmp_path, "multiple_choice", choice, num_choices=4)(
        **{k: tf.constant(v) for k, v in swag.items()})
    assert out["logits"].dtype == tf.float32 and out["probabilities"].dtype == tf.float32
    expected = support.keras_outputs(choice, swag, graph=True)
    # bfloat16 matmuls of the served (packed) and Keras (padded) shapes round differently.
    np.testing.assert_allclose(out["logits"], expected["logits"], atol=0.04)
    # fill-mask on the first choice of each SWAG row, its first word replaced by [MASK]
    features = {k: v[:, 0].copy() for k, v in swag.items()}
    features["input_ids"][:, 1] = support.full_tokenizer().vocabulary.mask_id
    out = _bf16_export(tmp_path, "fill_mask", BertPretrainer(encoder))(
        **{k: tf.constant(v) for k, v in features.items()})
    assert out["probabilities"].dtype == tf.float32
    assert out["num_masks"].numpy().tolist() == [1] * len(features["input_ids"])
    assert (out["probabilities"].numpy().sum(-1) <= 1.0 + 1e-6).all()


# --------------------------------------------------------------------------- job and runner
def _tf1_checkpoint(model, folder):
    from bert_tf.checkpoints import save_weights
    return save_weights(model, str(folder), "tf1", vocab_file=support.vocab_file())


def test_job_exports_a_multiple_choice_checkpoint_with_num_choices(tmp_path):
    import dataclasses
    import json

    from bert_tf.data.swag import encode_swag
    from bert_tf.jobs.export import ExportOptions, run
    model = support.build_model("multiple_choice", seed=9)
    prefix = _tf1_checkpoint(model, tmp_path / "ckpt")
    path = run(ExportOptions(export_dir=str(tmp_path / "export"), init_checkpoint=prefix,
                             task="multiple_choice", num_choices=3, max_seq_length=24,
                             warmup=False, text_signatures=False))
    with open(f"{path}/assets.extra/export_info.json") as f:
        assert json.load(f)["num_choices"] == 3
    three = [dataclasses.replace(e, endings=e.endings[:3]) for e in support.swag_examples(4)]
    arrays = encode_swag(three, support.full_tokenizer(), 24)
    features = {k: arrays[k] for k in FEATURES}
    served = support.loaded_path(path).signatures["serve_features"](
        **{k: tf.constant(v) for k, v in features.items()})
    np.testing.assert_allclose(served["logits"], support.keras_outputs(model, features)["logits"],
                               **TOLERANCE)


def test_job_refuses_fill_mask_for_a_checkpoint_without_the_masked_lm_head(tmp_path):
    from bert_tf.jobs.fill_mask import MissingHeadError
    from bert_tf.jobs.export import ExportOptions, run
    from helpers import minilm_dir
    with pytest.raises(MissingHeadError, match="has no masked-LM head"):
        run(ExportOptions(export_dir=str(tmp_path / "export"),
                          init_checkpoint=str(minilm_dir()), task="fill_mask",
                          max_seq_length=16, warmup=False))
    assert not (tmp_path / "export").exists()


def test_runner_exports_a_fill_mask_checkpoint_with_top_k(tmp_path):
    from bert_tf.jobs.fill_mask import encode_masked, make_predict_fn
    model = support.build_model("fill_mask", seed=5)
    prefix = _tf1_checkpoint(model, tmp_path / "ckpt")
    path, info = support.run_export_script(prefix, str(tmp_path / "export"), "--task=fill_mask",
                                           "--top_k=3", "--max_seq_length=16",
                                           "--notext_signatures", in_process=True)
    assert info["top_k"] == 3
    item = encode_masked(support.full_tokenizer(), 0, "the capital of [MASK] is paris .", 16)
    ids = np.array([item.input_ids], np.int32)
    features = dict(input_ids=ids, input_mask=np.ones_like(ids), segment_ids=np.zeros_like(ids))
    served = support.loaded_path(str(path)).signatures["serve_features"](
        **{k: tf.constant(v) for k, v in features.items()})
    values, top_ids = make_predict_fn(model, 3, _special_ids())(
        *features.values(), np.array([item.positions], np.int32))
    assert served["token_ids"].shape == (1, 1, 3)
    _assert_same_top_k(served["probabilities"].numpy()[0, 0], served["token_ids"].numpy()[0, 0],
                       values.numpy()[0, 0], top_ids.numpy()[0, 0], "runner")
