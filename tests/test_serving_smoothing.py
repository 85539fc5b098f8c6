"""Activation smoothing of int8 exports (bert_tf.serving.portable.smoothing, calibration): the float
function unchanged, outliers moved into the weights, and a LiteRT int8 export closer to fp32,
on a tiny random model with a planted outlier channel and real MRPC sentences."""

import json
import os

import numpy as np
import pytest

import test_serving_support as support
from helpers import export_savedmodel

OUTLIER = 5              # the hidden channel whose LayerNorm scale is planted 30x the rest


def _classifier_with_outlier():
    """A small random classifier (hidden 128: LiteRT's converter leaves weights of fewer than
    1,024 values in float) shaped as trained BERTs are: one channel of the LayerNorm outputs
    30x the others and the projections reading it 30x smaller on it. Per-token int8
    activations then lose precision on every other channel, which smoothing gives back."""
    import keras

    from bert_tf.model import BertClassifier, BertEncoder
    keras.utils.set_random_seed(7)
    encoder = BertEncoder(support.tiny_config(hidden_size=128, intermediate_size=256,
                                              initializer_range=0.2))
    model = BertClassifier(encoder, len(support.MRPC_LABELS))
    blocks = encoder.blocks
    readers = [(encoder.embeddings.layer_norm, blocks[0].attention)] + [
        (b.output_layer_norm, after.attention) for b, after in zip(blocks, blocks[1:])] + [
        (b.attention_layer_norm, b.intermediate) for b in blocks]
    for layer_norm, reader in readers:
        gamma = layer_norm.gamma.numpy()
        gamma[OUTLIER] *= 30.0
        layer_norm.gamma.assign(gamma)
        for dense in ([reader.query, reader.key, reader.value] if hasattr(reader, "query")
                      else [reader]):
            kernel = dense.kernel.numpy()
            kernel[OUTLIER] /= 30.0
            dense.kernel.assign(kernel)
    return model


def _features(count=12):
    from bert_tf.serving.portable import calibration
    texts = [a for a, _ in zip(*support.mrpc_pairs(count))]
    return calibration.features(texts, support.vocab_file(), True, support.SEQ)


def _float_copy(model, **options):
    from bert_tf.model.precision import with_dtype_policy
    return with_dtype_policy(model, "float32", skip_padding=False, **options)


@pytest.mark.slow            # eager runs of two copies over the calibration text: 2-7 s
@pytest.mark.parametrize("options", [dict(flat_tokens=True, pooled_only=True),
                                     dict(flat_tokens=False)])
def test_smoothing_leaves_the_float_encoders_outputs_as_they_were(options):
    from bert_tf.serving.portable import smoothing
    model = _classifier_with_outlier()
    plain, smoothed = _float_copy(model, **options), _float_copy(model, **options)
    smoothing.smooth(smoothed.encoder, _features(), 0.5)
    assert not np.allclose(plain.encoder.layer_0.attention.query.kernel.numpy(),
                           smoothed.encoder.layer_0.attention.query.kernel.numpy())
    for batch in _features(4):
        a, b = plain.encoder(batch), smoothed.encoder(batch)
        for name in ("sequence_output", "pooled_output"):
            np.testing.assert_allclose(np.asarray(b[name]), np.asarray(a[name]), rtol=1e-5,
                                       atol=2e-5, err_msg=name)
        a, b = plain(batch), smoothed(batch)                  # the classifier's outputs
        for name in a:
            np.testing.assert_allclose(np.asarray(b[name]), np.asarray(a[name]), rtol=1e-5,
                                       atol=2e-5, err_msg=name)


@pytest.mark.slow            # three eager passes over the calibration text: about 2 s
def test_smoothing_moves_the_outlier_channel_into_the_weights():
    from bert_tf.serving.portable import smoothing
    model = _float_copy(_classifier_with_outlier())
    features = _features()
    before = smoothing.input_ranges(model.encoder, features)
    smoothing.smooth(model.encoder, features, 0.5)
    after = smoothing.input_ranges(model.encoder, features)
    for path in ("layer_0/attention/query", "layer_1/attention/query", "layer_1/intermediate"):
        ratio = lambda r: r[path][OUTLIER] / np.median(r[path])  # noqa: E731
        assert ratio(before) > 10 and ratio(after) < ratio(before) / 3, path


@pytest.mark.slow            # two LiteRT conversions: 2-5 s each
def test_a_smoothed_litert_int8_export_is_closer_to_fp32_than_an_unsmoothed_one():
    """Both int8 exports against the float32 Keras model's logits (an fp32 LiteRT export gives
    them to 1e-5: test_serving_portable)."""
    from ai_edge_litert.interpreter import Interpreter
    model = _classifier_with_outlier()
    features = support.classifier_features(support.mrpc_pairs(12)[0])

    def logits(name, **settings):
        path = export_savedmodel(model, "classifier", support.scratch_dir(f"smooth_{name}"),
                                 support.vocab_file(), True, format="litert",
                                 **dict(support.EXPORT_ARGS["classifier"], **settings))
        with open(os.path.join(path, "export_info.json")) as f:
            recorded[name] = json.load(f).get("int8_smoothing")
        runner = Interpreter(model_path=os.path.join(path, "model.tflite")).get_signature_runner(
            "serving_default")
        return runner(**features)["logits"]

    recorded = {}

    reference = np.asarray(model(features)["logits"])
    plain = np.abs(logits("plain", precision="int8", int8_smoothing=0) - reference).mean()
    smoothed = np.abs(logits("smoothed", precision="int8") - reference).mean()
    # Measured (2026-12-04): 0.049 without smoothing, 0.016 with it (fp32 |logits| 2.5-2.9).
    assert smoothed < 0.5 * plain
    assert recorded == {"plain": None, "smoothed": {"alpha": 0.5, "calibration": "docstrings",
                                                    "by": "bert_tf"}}


@pytest.mark.slow            # two OpenVINO int8 exports (NNCF): ~5 s each
def test_openvino_int8_is_smoothed_by_nncf_at_the_same_alpha():
    """OpenVINO int8: NNCF's SmoothQuant, at --int8_smoothing's alpha and on the same
    calibration text, in place of bert_tf's (whose residual multiplies keep OpenVINO from
    fusing the quantizer into the LayerNorm before each projection)."""
    import openvino as ov
    model = _classifier_with_outlier()
    features = support.classifier_features(support.mrpc_pairs(12)[0])

    def logits(name, **settings):
        path = export_savedmodel(model, "classifier", support.scratch_dir(f"smooth_ov_{name}"),
                                 support.vocab_file(), True, format="openvino", precision="int8",
                                 **dict(support.EXPORT_ARGS["classifier"], **settings))
        with open(os.path.join(path, "export_info.json")) as f:
            recorded[name] = json.load(f).get("int8_smoothing")
        compiled = ov.Core().compile_model(os.path.join(path, "model.xml"), "CPU",
                                           {"INFERENCE_PRECISION_HINT": "f32"})
        return compiled.create_infer_request().infer(features)["logits"]

    recorded = {}
    reference = np.asarray(model(features)["logits"])
    plain = np.abs(logits("plain", int8_smoothing=0) - reference).mean()
    smoothed = np.abs(logits("smoothed") - reference).mean()
    # Measured (2026-12-06): 0.064 without smoothing, 0.0074 with it.
    assert smoothed < 0.5 * plain
    assert recorded == {"plain": None, "smoothed": {"alpha": 0.5, "calibration": "docstrings",
                                                    "by": "nncf"}}


def test_calibration_features_hold_real_tokens_only_one_length_per_batch():
    from bert_tf.serving.portable import calibration
    batches = calibration.features(["a b c", "one two three", "a much longer sentence here"],
                                   support.vocab_file(), True, 6)
    assert [b["input_ids"].shape for b in batches] == [(2, 5), (1, 6)]
    for batch in batches:
        assert batch["input_mask"].all() and not batch["segment_ids"].any()
        assert (batch["input_ids"][:, 0] == 101).all() and (batch["input_ids"][:, -1] == 102).all()


def test_a_calibration_file_without_text_is_refused_by_name(tmp_path):
    from bert_tf.serving.portable import calibration
    path = tmp_path / "calib.txt"
    path.write_text("\n  \n")
    with pytest.raises(ValueError, match=f"--calibration_file {path}: no text in it"):
        calibration.read_texts(str(path))


@pytest.mark.parametrize("options, message", [
    (dict(format="litert", precision="int8", int8_smoothing=1.5),
     r"--int8_smoothing must be in \[0, 1\], got 1.5"),
    (dict(format="saved_model", precision="int8", calibration_file="calib.txt"),
     "--calibration_file applies to --precision=int8 with --format=openvino, or litert or "
     "mediapipe with --int8_smoothing > 0"),
    (dict(format="onnx", precision="int8", calibration_file="calib.txt"),
     "--calibration_file applies to --precision=int8 with"),
    (dict(format="litert", precision="int8", int8_smoothing=0, calibration_file="calib.txt"),
     "--calibration_file applies to --precision=int8 with"),
    (dict(format="mediapipe", precision="int8", calibration_file="missing.txt"),
     "--calibration_file missing.txt: no such file"),
])
def test_export_savedmodel_refuses_smoothing_flags_that_cannot_apply(options, message, tmp_path):
    from bert_tf.jobs.export import ExportOptions
    with pytest.raises(ValueError, match=message):
        ExportOptions(export_dir=str(tmp_path), init_checkpoint="ckpt", task="classifier",
                      labels=["0", "1"], vocab_file=support.vocab_file(), **options).resolve()
