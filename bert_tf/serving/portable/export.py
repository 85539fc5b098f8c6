"""The portable export itself: export()'s serve_features computation written by Keras 3's
Model.export as a LiteRT (.tflite), ONNX or OpenVINO IR file, for the runtimes built for single
requests and small devices (ai-edge-litert and MediaPipe Tasks, onnxruntime, OpenVINO Runtime
and Model Server). A mediapipe export is a LiteRT one with one output (a classifier's
probabilities, or the embedding) and the metadata MediaPipe Tasks reads
(bert_tf.serving.portable.mediapipe_metadata).

Token ids in: int32 input_ids, input_mask and segment_ids [batch, length], any batch and any
length up to the recorded seq_length (a request padded to its longest row costs what it
holds). Out: the SavedModel's serve_features outputs by the same names, less the string ones
(`label`, `labels`), which these runtimes lack: the labels are in export_info.json. The
tokenizer stays with the caller (bert_tf's FullTokenizer on the version's vocab.txt, or any
WordPiece tokenizer with the same vocabulary and casing).

A version folder holds model.tflite, model.onnx or model.xml and model.bin, vocab.txt and
export_info.json (kind, casing, sequence length, labels, inputs, outputs, format and
precision; text_inputs and the head's settings as a SavedModel records them, so that
`python -m bert_tf.predict --model=<folder>` tokenizes raw text for it as serving_default
would).
"""

import json
import logging
import os
import shutil
import tempfile

import tensorflow as tf

from bert_tf import fileio, names
from bert_tf.model.precision import with_dtype_policy
from bert_tf.serving.portable import mediapipe_metadata
from bert_tf.serving.heads import make_head
from bert_tf.serving.options import FORMAT_PRECISIONS

logger = logging.getLogger("bert_tf")

FILES = names.PORTABLE_FILES
KINDS = ("classifier", "regression", "multi_label", "embedding", "squad")
_PACKAGES = {"onnx": "tf2onnx==1.17.0 onnx==1.23.2 onnxruntime==1.32.0",
             "openvino": "openvino==2026.4.1 nncf==3.4.0"}
_POOLED_KINDS = ("classifier", "regression", "multi_label")
_ONLY_OUTPUT = {"classifier": "probabilities", "embedding": "embedding"}     # mediapipe


def check_portable_options(fmt, kind, precision, jit_compile,
                           flags=("format", "precision", "jit_compile")):
    """Raises ValueError (naming `flags`) for a kind, precision or XLA that the `fmt` export
    lacks."""
    kinds = mediapipe_metadata.KINDS if fmt == "mediapipe" else KINDS
    if kind not in kinds:
        raise ValueError(f"{flags[0]}={fmt} exports {', '.join(kinds)}, not {kind}")
    allowed = FORMAT_PRECISIONS[fmt]
    if precision is not None and precision not in allowed:
        raise ValueError(f"{flags[1]} of a {fmt} export must be one of {', '.join(allowed)}, "
                         f"got {precision!r}")
    if jit_compile:
        raise ValueError(f"{flags[2]} applies to SavedModels, not to {flags[0]}={fmt}")


def feature_model(head, only=None):
    """A serving head's serve_features as a Keras model (what Model.export takes): the task
    model's predictions through the head's outputs, without the string outputs (or only the
    output named `only`)."""
    import keras

    class FeatureModel(keras.Model):
        def __init__(self):
            super().__init__(name=f"{head.kind}_features")
            self.task_model = head.model       # tracked: its weights become the export's
            self._heads = [head]               # in a list: Keras leaves the tf.Module alone

        def call(self, features):
            outputs = self._heads[0].outputs(self._heads[0].predict(features), features)
            return {k: v for k, v in outputs.items()
                    if v.dtype != tf.string and only in (None, k)}

    return FeatureModel()


def write_portable(model, contract, folder, vocab_file, vocab, settings):
    """Writes the `settings.format` export of `model` (checked by export()) into local
    `folder`: the model file, vocab.txt and export_info.json; returns the info."""
    fmt, precision, kind = settings.format, settings.precision or "fp32", contract.kind
    if fmt == "mediapipe":
        mediapipe_metadata.check_mediapipe(kind, contract.do_lower_case, contract.text_pair)
    # No gathers of data-dependent size. LiteRT: every position as a row of 2-D per-token
    # layers (FlatTokens; tf2onnx's reshape folding gets that layout wrong, and onnxruntime and
    # OpenVINO need no help with Dense on [B, S, H]).
    # Heads that read only the pooled output: the last block computes [CLS] alone.
    model = with_dtype_policy(model, "float32", skip_padding=False,
                              flat_tokens=fmt in ("litert", "mediapipe"),
                              pooled_only=kind in _POOLED_KINDS)
    # int8 smoothing: ours on the Keras copy for LiteRT and MediaPipe; NNCF's SmoothQuant, with
    # the same alpha and calibration text, for OpenVINO (_write_openvino), where the smoothed
    # LayerNorm output would feed the residual and the quantizer apart and OpenVINO could not
    # fuse the quantizer into the LayerNorm (docs/serving.md, int8 activation smoothing).
    smoothed = precision == "int8" and fmt != "onnx" and bool(settings.int8_smoothing)
    calibration = None
    if smoothed or (precision, fmt) == ("int8", "openvino"):
        calibration = _calibration(settings, vocab_file, contract)
    if smoothed and fmt != "openvino":
        # Not ONNX: after the residual multiplies, tf2onnx's reshape folding gets the
        # attention heads' shapes wrong (onnxruntime fails on them).
        _smooth(model, settings, calibration)
    if fmt == "openvino":
        from bert_tf.serving.portable.openvino_graph import for_openvino
        for_openvino(model)
    if fmt in ("litert", "mediapipe"):
        from bert_tf.serving.portable.litert_graph import for_litert
        for_litert(model)
    head = make_head(kind, model, vocab.id_to_token, contract.do_lower_case,
                     contract.max_seq_length, contract)
    features = feature_model(head, _ONLY_OUTPUT.get(kind) if fmt == "mediapipe" else None)
    path = os.path.join(folder, FILES[fmt])
    info = _info(head, features, contract, settings, smoothed)
    signature = [{n: tf.TensorSpec([None, None], tf.int32, name=n) for n in names.FEATURE_KEYS}]
    if fmt == "onnx":
        _write_onnx(features, path, signature, precision)
    elif fmt == "openvino":
        _write_openvino(features, path, signature, precision, calibration,
                        settings.int8_smoothing)
    else:
        _write_litert(features, path, signature, precision)
    if fmt == "mediapipe":
        mediapipe_metadata.write_metadata(path, kind, vocab_file, info.get("labels"), info)
    shutil.copyfile(vocab_file, os.path.join(folder, names.VOCAB_ASSET))
    fileio.atomic_write_text(os.path.join(folder, names.EXPORT_INFO),
                             json.dumps(info, indent=2) + "\n")
    logger.info("%s %s export: %s (%.1f MB)", fmt, precision, path,
                os.path.getsize(path) / 1e6)
    return info


def _info(head, features, contract, settings, smoothed):
    """export_info.json of a portable export: the contract as the head records it, the
    format, precision, inputs and outputs (building the feature model on a probe)."""
    seq = contract.max_seq_length
    probe = {"input_ids": tf.zeros([1, seq], tf.int32),
             "input_mask": tf.ones([1, seq], tf.int32),
             "segment_ids": tf.zeros([1, seq], tf.int32)}
    fmt = settings.format
    info = dict(head.info(), format=fmt, precision=settings.precision or "fp32",
                do_lower_case=bool(contract.do_lower_case),
                inputs={n: ["batch", "length"] for n in names.FEATURE_KEYS},
                outputs=sorted(features(probe)), file=FILES[fmt], vocab_file=names.VOCAB_ASSET,
                tensorflow=tf.__version__)
    if smoothed:
        info["int8_smoothing"] = {"alpha": settings.int8_smoothing,
                                  "calibration": os.path.basename(settings.calibration_file)
                                  if settings.calibration_file else "docstrings",
                                  "by": "nncf" if fmt == "openvino" else "bert_tf"}
    return info


def _calibration(settings, vocab_file, contract):
    """The calibration features of an int8 export: settings.calibration_file's text, else
    the default calibration text (bert_tf.serving.portable.calibration)."""
    from bert_tf.serving.portable import calibration
    texts = (calibration.read_texts(settings.calibration_file) if settings.calibration_file
             else calibration.default_texts())
    return calibration.features(texts, vocab_file, contract.do_lower_case,
                                contract.max_seq_length)


def _smooth(model, settings, batches):
    """Activation smoothing of the export copy's encoder (bert_tf.serving.portable.smoothing)
    from the calibration features."""
    from bert_tf.serving.portable import smoothing
    encoder = getattr(model, "encoder", model)
    smoothing.smooth(encoder, batches, settings.int8_smoothing)
    logger.info("int8 activation smoothing (alpha %s) from %d calibration texts",
                settings.int8_smoothing, sum(len(b["input_ids"]) for b in batches))


def _write_litert(features, path, signature, precision):
    # Builtin ops only: an op outside them would otherwise pass as a TF-fallback op that
    # ai-edge-litert and MediaPipe cannot run. int8: int8 weights, activations quantized at
    # run time per token (dynamic range); fp16: float16 weights.
    options = {"target_spec": {"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]}}
    if precision != "fp32":
        options["optimizations"] = [tf.lite.Optimize.DEFAULT]
    if precision == "fp16":
        options["target_spec"]["supported_types"] = [tf.float16]
    features.export(path, format="litert", input_signature=signature, verbose=False, **options)


def _calibration_rows(calibration):
    """The calibration features one row at a time (each at its real length: no padding)."""
    for batch in calibration:
        for i in range(len(batch["input_ids"])):
            yield {name: batch[name][i:i + 1] for name in names.FEATURE_KEYS}


def _write_onnx(features, path, signature, precision):
    _require("onnx", ("tf2onnx", "onnx") + (("onnxruntime",) if precision == "int8" else ()))
    from bert_tf.serving.portable import onnx_ops
    onnx_ops.register()
    with tempfile.TemporaryDirectory(prefix="bert_tf-onnx-") as work:
        fp32 = os.path.join(work, "fp32.onnx")
        features.export(fp32, format="onnx", input_signature=signature, verbose=False)
        if precision == "int8":
            # int8 weights per output column, activations quantized at run time per tensor.
            from onnxruntime.quantization import QuantType, quantize_dynamic
            quantize_dynamic(fp32, path, weight_type=QuantType.QInt8, per_channel=True)
        else:
            shutil.copyfile(fp32, path)


def _write_openvino(features, path, signature, precision, calibration, alpha):
    """OpenVINO IR (model.xml and model.bin): Keras 3's export of the feature model (fp32 and
    bf16 alike: bf16 is a compile-time hint, bert_tf.prediction.portable), and for int8 NNCF's
    post-training quantization of it, activation scales from the calibration features, with
    NNCF's SmoothQuant at `alpha` (0: none)."""
    _require("openvino", ("openvino",) + (("nncf",) if precision == "int8" else ()))
    if precision != "int8":
        features.export(path, format="openvino", input_signature=signature, verbose=False)
        return
    import nncf
    import openvino as ov
    # The fp32 IR goes elsewhere first: OpenVINO maps model.bin, so rewriting it in place
    # while the model reads it ends the process (SIGBUS).
    scratch = tempfile.mkdtemp(dir=os.path.dirname(path))
    try:
        fp32 = os.path.join(scratch, "fp32.xml")
        features.export(fp32, format="openvino", input_signature=signature, verbose=False)
        rows = list(_calibration_rows(calibration))
        quantized = nncf.quantize(
            ov.Core().read_model(fp32), nncf.Dataset(rows), subset_size=len(rows),
            model_type=nncf.ModelType.TRANSFORMER,
            advanced_parameters=nncf.AdvancedQuantizationParameters(
                smooth_quant_alphas=nncf.AdvancedSmoothQuantParameters(matmul=alpha or -1)))
        ov.save_model(quantized, path, compress_to_fp16=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _require(fmt, modules):
    import importlib.util
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"a {fmt} export needs {', '.join(missing)}: "
                          f"pip install {_PACKAGES[fmt]}")
