"""Settings of a create_pretraining_data job: google-research/bert's flags plus the scaling ones
(every option() field is a flag of create_pretraining_data.py)."""

import dataclasses
import os

from bert_tf.contract import MAX_SEQ_LENGTH
from bert_tf.options import option


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """What to generate. Field names, defaults and help follow google-research/bert's flags
    (shard_size_mb and dynamic_masking are ours; see job.py)."""

    vocab_file: str = option(None, "The vocabulary file that the BERT model was trained on.",
                             required=True)
    do_lower_case: bool = option(
        True, "Whether to lower case the input text. Should be True for uncased models and "
        "False for cased models.")
    do_whole_word_mask: bool = option(
        False, "Whether to use whole word masking rather than per-WordPiece masking.")
    max_seq_length: int = option(MAX_SEQ_LENGTH, "Maximum sequence length.")
    max_predictions_per_seq: int = option(
        20, "Maximum number of masked LM predictions per sequence.")
    random_seed: int = option(12345, "Random seed for data generation.")
    dupe_factor: int = option(
        10, "Number of times to duplicate the input data (with different masks).")
    masked_lm_prob: float = option(0.15, "Masked LM probability.")
    short_seq_prob: float = option(
        0.1, "Probability of creating sequences which are shorter than the maximum length.")
    shard_size_mb: float = option(
        4.0, "MB of input text a worker handles at once. Bounds memory; instances are "
        "shuffled, and random next documents drawn, within such a shard.")
    dynamic_masking: bool = option(
        False, "Store unmasked sequences (no masked_lm_* features) for masking at read time "
        "(make_pretraining_dataset(..., dynamic_masking=True)).")

    def validate(self):
        """Raises ValueError naming the first unusable setting."""
        if not os.path.isfile(self.vocab_file):
            raise ValueError(f"vocab_file not found: {self.vocab_file}")
        if self.max_seq_length < 5:
            raise ValueError(
                f"max_seq_length={self.max_seq_length} is too small: an instance is "
                "[CLS] A [SEP] B [SEP] with at least one token in A and in B, so it needs >= 5")
        if self.max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq must be >= 1, got "
                             f"{self.max_predictions_per_seq}")
        if not 0.0 < self.masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1], got {self.masked_lm_prob}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob must be in [0, 1], got {self.short_seq_prob}")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor must be >= 1, got {self.dupe_factor}")
        if self.shard_size_mb <= 0:
            raise ValueError(f"shard_size_mb must be > 0, got {self.shard_size_mb}")
        if self.random_seed < 0:
            raise ValueError(f"random_seed must be >= 0, got {self.random_seed}")


@dataclasses.dataclass(frozen=True)
class PretrainingDataFiles:
    """Where a create_pretraining_data job reads and writes, and how many workers it runs."""

    input_file: str = option(None, "Input raw text file (or comma-separated list of "
                             "files/globs).", required=True)
    output_file: str = option(None, "Output TF example file (or comma-separated list of files, "
                              "written round-robin).", required=True)
    num_workers: int = option(None, "Worker processes (default: all available cores). The "
                              "output does not depend on it.")
    beam_pipeline_options: str = option(
        None, "Run as an Apache Beam pipeline with these comma-separated key=value pipeline "
        "options (e.g. runner=FnApiRunner,direct_num_workers=2,"
        "direct_running_mode=multi_processing; runner=DataflowRunner,...): the same output "
        "bytes; needs pip install 'bert_tf[beam]' (docs/scale.md).")
