"""What an export takes besides the model and its InferenceContract (bert_tf.contract), each
idea declared once: Precision (what an export precision means for the exported copy of the
model), the formats and their precisions, and ExportSettings (how the export is written)."""

import dataclasses

from bert_tf.contract import InferenceContract


# What a serving head needs besides the model, vocabulary, casing and sequence length is the
# model's InferenceContract (bert_tf.contract); HeadOptions is the name export()'s `head`
# argument had before the contract declared it.
HeadOptions = InferenceContract


@dataclasses.dataclass(frozen=True)
class Precision:
    """What an export precision does to the exported copy of the model.

      dtype_policy: the copy's Keras dtype policy (None: the model's own).
      int8: every Dense projection multiplies int8 weights by int8-quantized activations
        (bert_tf.model.int8; x86-64 only, tensorflow_model_server >=
        serving_ops.MIN_TF_SERVING_VERSION_INT8).
      attention_dtype: int8 copies: the dtype of attention's score and value matmuls (None:
        float32).
    """

    dtype_policy: str = None
    int8: bool = False
    attention_dtype: str = None


# bf16 stores the weights in bfloat16 too: "mixed_bfloat16" would cast every float32 variable
# on every call, which made single requests slower than fp32. LayerNorm and the attention
# softmax still compute in float32, and outputs are float32.
PRECISIONS = {None: Precision(), "fp32": Precision("float32"), "bf16": Precision("bfloat16"),
              "int8": Precision("float32", int8=True),
              "int8_bf16": Precision("float32", int8=True, attention_dtype="bfloat16")}


# The precisions of each export format: the SavedModel's are PRECISIONS (bert_tf's own compute);
# LiteRT and ONNX quantize in their converters (bert_tf.serving.portable): fp16 weights, or int8
# weights with activations quantized at run time; OpenVINO by NNCF's post-training quantization
# (int8 weights and activations, scales from calibration text), and its bf16 is the fp32 IR
# computed in bfloat16 where the CPU has AVX512_BF16 or AMX (float32 elsewhere).
FORMAT_PRECISIONS = {"saved_model": tuple(p for p in PRECISIONS if p),
                     "litert": ("fp32", "fp16", "int8"), "mediapipe": ("fp32", "fp16", "int8"),
                     "onnx": ("fp32", "int8"), "openvino": ("fp32", "bf16", "int8")}
FORMATS = tuple(FORMAT_PRECISIONS)
# Every precision some format has, in the order the flags list them.
EXPORT_PRECISIONS = tuple(dict.fromkeys(p for ps in FORMAT_PRECISIONS.values() for p in ps))


@dataclasses.dataclass(frozen=True)
class ExportSettings:
    """How export() computes and writes the model.

      format: "saved_model" (TensorFlow Serving: raw text, features and tf.Example in), or
        "litert" (.tflite) or "onnx" (.onnx): token ids in, for ai-edge-litert and onnxruntime,
        or "mediapipe": a .tflite with MediaPipe Tasks metadata, or "openvino" (model.xml):
        bert_tf.serving.portable; precision fp32, fp16 (LiteRT), bf16 (OpenVINO) or int8; the
        SavedModel-only settings below do not apply).

      precision: a PRECISIONS name: "fp32" (float32 throughout), "bf16" (bfloat16 weights and
        matmuls; LayerNorm and softmax in float32, float32 outputs: faster on CPUs with
        AVX512_BF16 or AMX, and on TPUs and recent GPUs, half the size), "int8" (every Dense
        projection of the encoder and heads in int8, the rest in float32: faster on x86-64 CPUs
        with AVX-512 VNNI), "int8_bf16" (int8, with attention's score and value matmuls in
        bfloat16: faster where bf16 is native); None keeps the model's own dtype policy.
      jit_compile: XLA-compile the model function (each request batch is padded to a power of
        two and a bucket length, so few shapes compile); tensorflow_model_server must then run
        with --xla_cpu_compilation_enabled=true. Not for fill_mask (its [MASK] gather has
        data-dependent shapes) nor int8.
      version: the version number (default: the next free one).
      warmup: write assets.extra/tf_serving_warmup_requests (needs tensorflow-serving-api).
      text_signatures: include serving_default (raw text, needs the two tensorflow-text ops of
        bert_tf.tokenization.serving_ops); False exports core-TensorFlow-only signatures.
      int8_smoothing: LiteRT, MediaPipe and OpenVINO int8: the SmoothQuant alpha with which
        activation outliers move into the weights before quantization
        (bert_tf.serving.portable.smoothing; OpenVINO: NNCF's); 0 quantizes the weights as they
        are.
      calibration_file: the text (one per line, the first 256 used) whose activations set that
        smoothing and OpenVINO int8's activation scales (default:
        bert_tf.serving.portable.calibration's docstring sentences).
    """

    format: str = "saved_model"
    precision: str = None
    jit_compile: bool = False
    version: int = None
    warmup: bool = True
    text_signatures: bool = True
    int8_smoothing: float = 0.5      # SmoothQuant's default
    calibration_file: str = None
