"""Names shared by the exporter, the warm-up writer, runners and clients: tasks, signatures,
feature keys, files of the export layout. (No TensorFlow import: runners define flags with it.)"""

TASKS = ("classifier", "regression", "squad", "tagger", "encoder", "multiple_choice",
         "fill_mask", "multi_label")

SERVING_DEFAULT = "serving_default"
SERVE_FEATURES = "serve_features"
SERVE_EXAMPLES = "serve_examples"

FEATURE_KEYS = ("input_ids", "input_mask", "segment_ids")
EXAMPLES_KEY = "examples"
UNIQUE_IDS = "unique_ids"  # run_squad's per-window id, passed through by serve_examples

VOCAB_ASSET = "vocab.txt"
WARMUP_FILE = "tf_serving_warmup_requests"
ASSETS_EXTRA = "assets.extra"
