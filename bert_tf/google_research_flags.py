"""google-research/bert's command-line scripts, their flags and defaults (its last release,
commit eedf571 of 2020-03-11), and a note for each flag bert_tf treats differently. Data only:
bert_tf.flag_reference turns it and the options' own defaults and help into
docs/google_research.md.

A default is written as google-research's script declares it (None: no default).
"""

SCRIPTS = {
    "run_classifier.py": [
        ("data_dir", None), ("bert_config_file", None), ("task_name", None),
        ("vocab_file", None), ("output_dir", None), ("init_checkpoint", None),
        ("do_lower_case", True), ("max_seq_length", 128), ("do_train", False),
        ("do_eval", False), ("do_predict", False), ("train_batch_size", 32),
        ("eval_batch_size", 8), ("predict_batch_size", 8), ("learning_rate", 5e-5),
        ("num_train_epochs", 3.0), ("warmup_proportion", 0.1),
        ("save_checkpoints_steps", 1000), ("iterations_per_loop", 1000), ("use_tpu", False),
        ("tpu_name", None), ("tpu_zone", None), ("gcp_project", None), ("master", None),
        ("num_tpu_cores", 8),
    ],
    "run_pretraining.py": [
        ("bert_config_file", None), ("input_file", None), ("output_dir", None),
        ("init_checkpoint", None), ("max_seq_length", 128), ("max_predictions_per_seq", 20),
        ("do_train", False), ("do_eval", False), ("train_batch_size", 32),
        ("eval_batch_size", 8), ("learning_rate", 5e-5), ("num_train_steps", 100000),
        ("num_warmup_steps", 10000), ("save_checkpoints_steps", 1000),
        ("iterations_per_loop", 1000), ("max_eval_steps", 100), ("use_tpu", False),
        ("tpu_name", None), ("tpu_zone", None), ("gcp_project", None), ("master", None),
        ("num_tpu_cores", 8),
    ],
    "run_squad.py": [
        ("bert_config_file", None), ("vocab_file", None), ("output_dir", None),
        ("train_file", None), ("predict_file", None), ("init_checkpoint", None),
        ("do_lower_case", True), ("max_seq_length", 384), ("doc_stride", 128),
        ("max_query_length", 64), ("do_train", False), ("do_predict", False),
        ("train_batch_size", 32), ("predict_batch_size", 8), ("learning_rate", 5e-5),
        ("num_train_epochs", 3.0), ("warmup_proportion", 0.1),
        ("save_checkpoints_steps", 1000), ("iterations_per_loop", 1000), ("n_best_size", 20),
        ("max_answer_length", 30), ("use_tpu", False), ("tpu_name", None), ("tpu_zone", None),
        ("gcp_project", None), ("master", None), ("num_tpu_cores", 8),
        ("verbose_logging", False), ("version_2_with_negative", False),
        ("null_score_diff_threshold", 0.0),
    ],
    "create_pretraining_data.py": [
        ("input_file", None), ("output_file", None), ("vocab_file", None),
        ("do_lower_case", True), ("do_whole_word_mask", False), ("max_seq_length", 128),
        ("max_predictions_per_seq", 20), ("random_seed", 12345), ("dupe_factor", 10),
        ("masked_lm_prob", 0.15), ("short_seq_prob", 0.1),
    ],
    "extract_features.py": [
        ("input_file", None), ("output_file", None), ("layers", "-1,-2,-3,-4"),
        ("bert_config_file", None), ("max_seq_length", 128), ("init_checkpoint", None),
        ("vocab_file", None), ("do_lower_case", True), ("batch_size", 32), ("use_tpu", False),
        ("master", None), ("num_tpu_cores", 8), ("use_one_hot_embeddings", False),
    ],
}

# What bert_tf does differently with one of those flags, in every script that has it.
NOTES = {
    "bert_config_file": "Also reads HuggingFace's config.json. Optional when the checkpoint "
                        "has a config beside it; --model_preset names a size instead.",
    "init_checkpoint": "Also takes a HuggingFace folder or a bert_tf output folder. Weights "
                       "the checkpoint lacks start fresh, and the run logs which.",
    "vocab_file": "Optional: vocab.txt beside --init_checkpoint.",
    "iterations_per_loop": "Steps per tf.function call and per progress line, on every "
                           "device, not only on TPU.",
    "use_tpu": "Same as --strategy=tpu; --strategy also offers one_device, mirrored and "
               "multi_worker.",
    "num_tpu_cores": "Accepted and ignored: TPUStrategy uses every core.",
    "use_one_hot_embeddings": "Accepted and ignored.",
}

# The same for one script only (overrides NOTES).
SCRIPT_NOTES = {
    ("run_pretraining.py", "do_eval"): "Evaluates on --eval_input_file when given, else on "
                                       "the training files as google-research does.",
    ("run_squad.py", "do_predict"): "Writes the same files; --do_eval also scores them with "
                                    "the official v1.1 / v2.0 metrics.",
    ("run_squad.py", "num_train_epochs"): "An epoch passes over every window of every "
                                          "question; --epochs_over=examples counts questions "
                                          "as google-research does.",
    ("run_classifier.py", "max_seq_length"): "Texts are truncated as before, unless "
                                             "--doc_stride cuts them into windows.",
    ("run_classifier.py", "task_name"): "Adds generic: your own TSV, CSV or JSONL files, "
                                        "described by the column flags.",
    ("create_pretraining_data.py", "input_file"): "Read by --num_workers processes in "
                                                  "parallel; a rerun resumes.",
    ("extract_features.py", "output_file"): "JSON lines as before; --compact_file writes "
                                            ".npz or .tfrecord features instead.",
}

# New flags whose default changes what a google-research command line does.
CHANGED_BEHAVIOUR = {
    "optimizer": ("run_classifier.py run_pretraining.py run_squad.py",
                  "AdamW without bias correction (optimization.py); --optimizer=adamw gives "
                  "it back"),
    "lr_decay_from": ("run_classifier.py run_pretraining.py run_squad.py",
                      "a linear decay from the peak at step 0; --lr_decay_from=start gives it "
                      "back"),
    "epochs_over": ("run_squad.py",
                    "an epoch counts questions; --epochs_over=examples gives it back"),
    "pad_to_max_length": ("run_classifier.py",
                          "every batch padded to max_seq_length; --pad_to_max_length gives "
                          "it back"),
}

# google-research's other files and what takes their place.
MODULES = [
    ("modeling.py: BertConfig, BertModel",
     "bert_tf.BertConfig (also reads config.json), bert_tf.BertEncoder (a Keras model) and "
     "the task models"),
    ("tokenization.py", "bert_tf.tokenization: the same names and the same tokens"),
    ("optimization.py", "--optimizer=adamw, with --lr_decay_from=start for its exact "
                        "learning-rate curve"),
    ("bert_model.ckpt", "--init_checkpoint reads it as it is; python -m bert_tf.convert "
                        "writes it back"),
    ("TPUEstimator", "tf.distribute: --strategy=tpu, mirrored, multi_worker or one_device"),
    ("SQuAD's separate evaluation script", "run_squad.py --do_eval (eval_results.json)"),
]
