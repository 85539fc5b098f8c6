"""Names shared by runners, jobs, the exporter, the warm-up writer and clients: signatures,
feature keys, files of the export layout and of a run's output folder. (No TensorFlow import:
runners define flags with it.)"""

SERVING_DEFAULT = "serving_default"
SERVE_FEATURES = "serve_features"
SERVE_EXAMPLES = "serve_examples"

FEATURE_KEYS = ("input_ids", "input_mask", "segment_ids")
EXAMPLES_KEY = "examples"
UNIQUE_IDS = "unique_ids"  # run_squad's per-window id, passed through by serve_examples

VOCAB_ASSET = "vocab.txt"
WARMUP_FILE = "tf_serving_warmup_requests"
ASSETS_EXTRA = "assets.extra"
EXPORT_INFO = "export_info.json"      # in ASSETS_EXTRA: the task, labels, lengths, ...
# The model file of a LiteRT, MediaPipe, ONNX or OpenVINO version folder
# (bert_tf.serving.portable; beside its vocab.txt and export_info.json).
PORTABLE_FILES = {"litert": "model.tflite", "mediapipe": "model.tflite", "onnx": "model.onnx",
                  "openvino": "model.xml"}                 # (with model.bin beside it)
LABELS_FILE = "label_list.txt"        # a run's label list, one per line in class-id order
                                      # (run_ner, run_classifier; beside its checkpoints)
RUN_OPTIONS = "run_options.json"      # a fine-tuning run's options (beside its checkpoints):
                                      # what bert_tf.predict reads its input settings from

# A sentence embedding's pooling of the last layer's token vectors (run_embedding.py,
# --task=embedding exports; sentence-transformers' 1_Pooling/config.json modes).
POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len")
