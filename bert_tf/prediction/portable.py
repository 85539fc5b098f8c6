"""bert_tf.predict on LiteRT, ONNX and OpenVINO exports (bert_tf.serving.portable): the export's
serving head, rebuilt from the contract in its export_info.json, tokenizes raw text in
TensorFlow as the SavedModel's serving_default does, and its model is the exported file run by
ai-edge-litert, onnxruntime or OpenVINO on each batch cut to its longest row. OpenVINO computes
an fp32 export in float32 (it would otherwise use bfloat16 on CPUs that have it), and a bf16
export in bfloat16 where the CPU has it, else in float32.
The rows therefore get the same JSON lines as from a SavedModel of the same model (a mediapipe
export's classifier gives log-probabilities as its logits: the file outputs probabilities
only)."""

import json
import logging
import os

import numpy as np

from bert_tf import fileio, names
from bert_tf.names import EXPORT_INFO
from bert_tf.prediction.inputs import InputError

logger = logging.getLogger("bert_tf")

FILES = names.PORTABLE_FILES
_INSTALL = {"litert": "pip install ai-edge-litert==2.3.0",
            "mediapipe": "pip install ai-edge-litert==2.3.0",
            "onnx": "pip install onnxruntime==1.32.0",
            "openvino": "pip install openvino==2026.4.1"}


def portable_version(path):
    """The LiteRT, MediaPipe, ONNX or OpenVINO version folder `path` names (itself, its model
    file, or its export_dir's highest numeric version), or None."""
    from bert_tf.prediction.loading import version_folder
    path = os.fspath(path)

    def is_portable(folder):
        return any(fileio.exists(os.path.join(folder, f)) for f in FILES.values()) and \
            fileio.exists(os.path.join(folder, EXPORT_INFO))
    if path.endswith(tuple(FILES.values())) and fileio.exists(path):
        path = os.path.dirname(path) or "."
    return version_folder(path, is_portable)


class RuntimeModel:
    """Stands in for the task model inside the serving head: the exported file, run on the
    head's int32 features by its runtime, returning the model's outputs (logits; start and end
    logits; the embedding) as the Keras model would. LiteRT runs in a LiteRTRunner (one
    compiled model per input shape) on as many threads as the process may use."""

    variables = ()

    def __init__(self, folder, info):
        self.kind, fmt = info["task"], info["format"]
        self.num_classes = len(info.get("labels") or ()) or 1
        self.pooling_mode, self.normalize = info.get("pooling"), info.get("normalize")
        path = os.path.join(folder, FILES[fmt])
        try:
            if fmt in ("litert", "mediapipe"):
                from bert_tf.prediction.litert_runner import LiteRTRunner
                self.litert = LiteRTRunner(path)
                self._run = lambda features: self.litert(**features)
            elif fmt == "openvino":
                self._run = _openvino_runner(path, info.get("precision"))
            else:
                import onnxruntime
                session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
                outputs = [o.name for o in session.get_outputs()]
                self._run = lambda features: dict(zip(outputs, session.run(None, features)))
        except ImportError:
            raise InputError(f"--model {folder} is a {fmt} export: {_INSTALL[fmt]}") from None

    def __call__(self, features, training=False):
        import tensorflow as tf
        features = {k: np.asarray(features[k], np.int32) for k in names.FEATURE_KEYS}
        out = self._run(cut_to_longest_row(features))
        if self.kind == "squad":         # per token: zero past the longest row, as the
            length = features["input_mask"].shape[1]     # SavedModel's serve_features gives
            found = {k: _zero_padded(out[k], length) for k in ("start_logits", "end_logits")}
        elif self.kind == "embedding":
            found = {"embedding": out["embedding"]}
        elif self.kind == "regression":
            found = {"logits": out["score"][:, None]}
        elif "logits" in out:
            found = {"logits": out["logits"]}
        else:       # a mediapipe classifier: probabilities only, so logits are log-probabilities
            found = {"logits": np.log(np.maximum(out["probabilities"], np.finfo(np.float32).tiny))}
        return {k: tf.constant(v) for k, v in found.items()}


def cut_to_longest_row(features):
    """int32 features [B, S] cut to the length the SavedModel would run them at without buckets
    (bert_tf.serving.padding.used_length): the head packs every text to the sequence length,
    and the runtime would compute on the padding."""
    from bert_tf.serving.padding import used_length
    used = max(int(used_length(features["input_mask"])), 1)
    return {k: v[:, :used] for k, v in features.items()}


def _zero_padded(values, length):
    """[B, n] -> [B, length], zeros after the n values."""
    return np.pad(values, [(0, 0), (0, length - values.shape[1])])


def openvino_hint(precision, capabilities):
    """OpenVINO's inference precision hint for an export of `precision` on a CPU with
    `capabilities` (its OPTIMIZATION_CAPABILITIES): "f32" for fp32, and for bf16 where the CPU
    has no native bfloat16 (OpenVINO would emulate it, far slower than float32); "bf16" for
    bf16 where it has; None (OpenVINO's default) for int8."""
    if precision == "bf16":
        if "BF16" in capabilities:
            return "bf16"
        logger.warning("a bf16 OpenVINO export on a CPU without AVX512_BF16 or AMX: computed "
                       "in float32")
        return "f32"
    return "f32" if precision == "fp32" else None


def _openvino_runner(path, precision):
    """A function of int32 features -> {output name: array} running the OpenVINO IR at `path`
    on the CPU in the precision openvino_hint gives."""
    import openvino as ov
    import openvino.properties.hint as hints
    core = ov.Core()
    hint = openvino_hint(precision, core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    config = {hints.inference_precision: getattr(ov.Type, hint)} if hint else {}
    compiled = core.compile_model(path, "CPU", config)
    request = compiled.create_infer_request()

    def run(features):
        out = request.infer(features)
        return {name: out[port] for port in compiled.outputs for name in port.get_names()}
    return run


def load_portable(folder):
    """Predictor of a LiteRT, MediaPipe, ONNX or OpenVINO version folder."""
    from bert_tf.contract import InferenceContract
    from bert_tf.prediction.loading import Predictor, check_predictable
    from bert_tf.tokenization import vocab
    where = os.path.join(folder, EXPORT_INFO)
    with fileio.open_binary(where) as f:
        info = json.loads(f.read().decode("utf-8"))
    check_predictable(info.get("task"), f"--model {folder}")
    contract = InferenceContract.from_info(info, where)
    vocab_file = os.path.join(folder, names.VOCAB_ASSET)
    head = contract.spec.load("serving").build(
        RuntimeModel(folder, info), vocab.Vocabulary.from_file(vocab_file).id_to_token,
        contract.do_lower_case, contract.max_seq_length, contract)

    def serving_default(**texts):
        return head.serve_text(tuple(texts[name] for name in head.text_names))

    predictor = Predictor(info, vocab_file, {names.SERVING_DEFAULT: serving_default},
                          f"{info['format']} export {folder}")
    predictor._head = head
    return predictor
