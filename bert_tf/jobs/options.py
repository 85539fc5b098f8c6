"""The options every job that runs a BERT model takes (model, runtime, training) and their
checks. Every option() field is also a command-line flag (bert_tf.options): runners define
their flags from their job's options class and build it back from them."""

import dataclasses
import logging
import os

import keras

from bert_tf import fileio, kinds
from bert_tf.config import BertConfig
from bert_tf.contract import MAX_SEQ_LENGTH, InferenceContract
from bert_tf.jobs.checks import check_seq_length, check_vocab_file, default_vocab_file
from bert_tf.options import option
from bert_tf.serving.options import EXPORT_PRECISIONS, FORMATS, ExportSettings

logger = logging.getLogger("bert_tf")

EXPORT_HELP = {
    "precision": "fp32, or bf16: bfloat16 weights and matmuls (float32 LayerNorm, softmax and "
                 "outputs; faster on CPUs with AVX512_BF16 or AMX, see "
                 "benchmarks/results/serving.md), or int8: int8 weights and run-time-quantized "
                 "activations in every Dense projection, the rest float32 (x86-64 CPUs with "
                 "AVX-512 VNNI; tensorflow_model_server >= 2.17, see docs/serving.md), or "
                 "int8_bf16: int8 with attention's score and value matmuls in bfloat16 (where "
                 "bf16 is native too); default: as trained.",
    "format": "saved_model: a SavedModel for TensorFlow Serving (raw text in); litert: a .tflite "
              "file (ai-edge-litert), onnx: an .onnx file (onnxruntime), openvino: OpenVINO IR "
              "(model.xml and model.bin: OpenVINO Runtime, OpenVINO Model Server), all token ids "
              "in (input_ids, input_mask, segment_ids), for classifier, regression, multi_label, "
              "embedding and squad; mediapipe: a .tflite with MediaPipe Tasks metadata "
              "(vocabulary, labels) that TextClassifier and TextEmbedder load as it is, for "
              "uncased single-text classifier (probabilities only) and embedding models; "
              "precision fp32, fp16 (litert, mediapipe), bf16 (openvino: the fp32 IR computed in "
              "bfloat16 where the CPU has AVX512_BF16 or AMX) or int8 (int8 weights; "
              "activations quantized at run time, for openvino with scales from calibration "
              "text); see docs/serving.md.",
    "jit_compile": "XLA-compile the model function (requests are padded to a few bucket "
                   "shapes; the warm-up requests compile batch 1 at each length while the "
                   "server loads); tensorflow_model_server needs "
                   "--xla_cpu_compilation_enabled=true.",
    "version": "Version number (default: the next free one).",
    "warmup": "Write assets.extra/tf_serving_warmup_requests.",
    "text_signatures": "Include serving_default (raw text; needs two TensorFlow Text ops, "
                       "present in stock tensorflow_model_server); false exports only "
                       "core-TensorFlow signatures.",
    "int8_smoothing": "LiteRT, MediaPipe or OpenVINO int8: move activation "
                      "outliers into the weights before quantizing (SmoothQuant, this alpha in "
                      "[0, 1], for OpenVINO by NNCF; 0: quantize the weights as they are); see "
                      "docs/serving.md.",
    "calibration_file": "LiteRT, MediaPipe or OpenVINO int8: text whose activations set "
                        "the smoothing (and OpenVINO's activation scales), one text per "
                        "line, the first 256 used (e.g. the training texts; default: sentences "
                        "of the Python standard library's docstrings).",
}


@dataclasses.dataclass(kw_only=True)
class RuntimeOptions:
    """Where and how TensorFlow runs: the tf.distribute strategy (google-research's TPU flags
    included), precision, XLA, seeds and determinism."""

    strategy: str = option("default", "tf.distribute strategy.",
                           choices=("default", "one_device", "mirrored", "multi_worker", "tpu"))
    num_cpu_devices: int = option(
        0, "Split the CPU into this many logical devices (for --strategy=mirrored on a machine "
        "without GPUs).")
    mixed_precision: str = option(None, "Mixed precision: bf16, or fp16 with dynamic loss "
                                  "scaling.", choices=("bf16", "fp16"))
    jit_compile: bool = option(False, "Compile the model step with XLA.")
    seed: int = option(12345, "Random seed (weights init, dropout, data order).")
    deterministic: bool = option(False, "Deterministic TensorFlow ops (reproducible runs; "
                                 "slower).")
    use_tpu: bool = option(False, "Whether to use TPU (same as --strategy=tpu).")
    tpu_name: str = option(None, "The Cloud TPU to use for training.")
    tpu_zone: str = option(None, "GCE zone of the Cloud TPU.")
    gcp_project: str = option(None, "GCP project of the Cloud TPU.")
    master: str = option(None, "TensorFlow master URL (overrides tpu_name).")
    num_tpu_cores: int = option(8, "Kept for compatibility: TPUStrategy uses every core of the "
                                "TPU.")

    def start_runtime(self):
        """Logical CPU devices, seeds, determinism, the precision policy and the strategy, in
        the order TensorFlow needs; returns the strategy."""
        import tensorflow as tf

        from bert_tf.training.distribution import (get_strategy, set_mixed_precision,
                                                   split_cpu_devices)
        if self.num_cpu_devices:
            split_cpu_devices(self.num_cpu_devices)
        keras.utils.set_random_seed(self.seed)
        if self.deterministic:
            tf.config.experimental.enable_op_determinism()
        set_mixed_precision(self.mixed_precision)
        return get_strategy(self.strategy, use_tpu=self.use_tpu, tpu_name=self.tpu_name,
                            tpu_zone=self.tpu_zone, gcp_project=self.gcp_project,
                            master=self.master)


@dataclasses.dataclass(kw_only=True)
class ModelOptions:
    """What every job that runs a BERT model takes. Subclasses set `serving_kind` (what
    --export_dir exports) and `min_seq_length`."""

    config: BertConfig
    init_checkpoint: str = option(
        None, "Initial weights: a google-research TF1 checkpoint prefix, a HuggingFace folder "
        "or a native (bert_tf) checkpoint.")
    vocab_file: str = option(
        None, "The vocabulary file the BERT model was trained on (default: vocab.txt beside "
        "--init_checkpoint).")
    do_lower_case: bool = option(
        True, "Lower-case the input (True for uncased models, False for cased ones).")
    max_seq_length: int = option(
        MAX_SEQ_LENGTH, "Maximum total input length after WordPiece tokenization; longer "
        "inputs are truncated.")
    export_dir: str = option(
        None, "After the run, export the model for TensorFlow Serving as the next numbered "
        "version in this folder (raw-text, int32-feature and tf.Example signatures, as "
        "export_savedmodel.py writes them).")
    export_format: str = option("saved_model", "--export_dir: " + EXPORT_HELP["format"],
                                choices=FORMATS)
    export_precision: str = option(None, "--export_dir: " + EXPORT_HELP["precision"],
                                   choices=EXPORT_PRECISIONS)
    export_jit_compile: bool = option(False, "--export_dir: " + EXPORT_HELP["jit_compile"])
    export_version: int = option(None, "--export_dir: " + EXPORT_HELP["version"])
    export_warmup: bool = option(True, "--export_dir: " + EXPORT_HELP["warmup"])
    export_text_signatures: bool = option(True, "--export_dir: " + EXPORT_HELP["text_signatures"])
    export_int8_smoothing: float = option(ExportSettings.int8_smoothing,
                                          "--export_dir: " + EXPORT_HELP["int8_smoothing"])
    export_calibration_file: str = option(None, "--export_dir: "
                                          + EXPORT_HELP["calibration_file"])

    serving_kind = None
    min_seq_length = 3                   # [CLS] token [SEP]

    def resolve_vocab_file(self):
        if not self.vocab_file:
            self.vocab_file = default_vocab_file(self.init_checkpoint)
            if self.vocab_file:
                logger.info("vocab_file: %s (beside --init_checkpoint)", self.vocab_file)

    def validate_model(self):
        """Casing, vocabulary, sequence length and export checks."""
        from bert_tf.tokenization import validate_case_matches_checkpoint
        validate_case_matches_checkpoint(self.do_lower_case, self.init_checkpoint)
        check_vocab_file(self.vocab_file)
        check_seq_length(self.max_seq_length, self.config, self.min_seq_length)
        self.validate_export()

    def export_settings(self):
        """How --export_dir is written (bert_tf.serving.options.ExportSettings)."""
        return ExportSettings(format=self.export_format, precision=self.export_precision,
                              jit_compile=self.export_jit_compile, version=self.export_version,
                              warmup=self.export_warmup,
                              text_signatures=self.export_text_signatures,
                              int8_smoothing=self.export_int8_smoothing,
                              calibration_file=self.export_calibration_file)

    def contract(self, **settings):
        """The InferenceContract of what --export_dir exports (its kind, this run's length and
        casing, and `settings`)."""
        values = dict(kind=self.serving_kind, max_seq_length=self.max_seq_length,
                      do_lower_case=self.do_lower_case)
        return InferenceContract(**dict(values, **settings))

    def validate_export(self):
        if not self.export_dir:
            return
        if self.serving_kind not in kinds.SERVED:
            raise ValueError(f"--export_dir: no {self.serving_kind!r} serving head in this "
                             f"version of bert_tf.serving (it has {', '.join(kinds.SERVED)})")
        check_vocab_file(self.vocab_file)
        from bert_tf.jobs.export import check_settings
        settings = self.export_settings()
        check_settings(settings, self.serving_kind, "--export_")
        if settings.format == "saved_model" and settings.warmup:
            from bert_tf.serving.warmup import require_serving_api
            require_serving_api("--export_dir")     # before training, not after it


@dataclasses.dataclass(kw_only=True)
class TrainingOptions(ModelOptions, RuntimeOptions):
    """What every training job (pre-training, fine-tuning) takes: google-research's training
    flags and ours (optimizer, decay, accumulation)."""

    output_dir: str = option(None, "Where checkpoints, results and predictions go.",
                             required=True)
    do_train: bool = option(False, "Whether to run training.")
    do_eval: bool = option(False, "Whether to run eval on the dev set.")
    train_batch_size: int = option(32, "Total batch size for training.")
    eval_batch_size: int = option(8, "Total batch size for eval.")
    learning_rate: float = option(5e-5, "The initial learning rate for Adam.")
    save_checkpoints_steps: int = option(1000, "How often to save the model checkpoint.")
    iterations_per_loop: int = option(1000, "Steps per tf.function call (and per progress "
                                      "line).")
    optimizer: str = option(
        "adamw_torch", "adamw_torch: torch.optim.AdamW / HuggingFace Trainer (bias-corrected, "
        "epsilon 1e-8): steps of the size the learning rate says from the first step; "
        "adamw: google-research's AdamW (no bias correction, epsilon 1e-6: early steps 2-3x "
        "larger, which collapses some runs to one class), to reproduce its published numbers; "
        "lamb: LAMB for large batches. Measurements: quality/results/optimizer_sweep.md.",
        choices=("adamw", "adamw_torch", "lamb"))
    lr_decay_from: str = option(
        "warmup_end", "Where the linear learning-rate decay starts: warmup_end (HuggingFace: "
        "from the peak when warm-up ends) or start (google-research: the line from the peak at "
        "step 0 to 0 at the last step: after warm-up, lower by up to the warm-up share of the "
        "peak).", choices=("warmup_end", "start"))
    gradient_accumulation_steps: int = option(
        1, "Split each batch into this many micro-batches and sum their gradients.")

    positive_fields = ("train_batch_size", "eval_batch_size", "iterations_per_loop",
                       "gradient_accumulation_steps")

    def validate_training(self):
        for name in self.positive_fields:
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(self, name)}")


def start(opts):
    """Fills in the vocabulary, validates, and creates output_dir (local or URL) with
    bert_config.json."""
    opts.resolve_vocab_file()
    opts.validate()
    fileio.makedirs(opts.output_dir)
    opts.config.to_json_file(os.path.join(opts.output_dir, "bert_config.json"))
