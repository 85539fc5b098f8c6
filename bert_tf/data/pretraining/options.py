"""Settings of a create_pretraining_data job: google-research/bert's flags plus the scaling ones."""

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """What to generate. Field names and defaults follow google-research/bert's flags.

    shard_size_mb bounds the input text one worker holds at a time: the instance shuffle and the
    random-next-document draw happen within such a shard (see docs in job.py).
    dynamic_masking stores unmasked sequences (no masked_lm_* features) for masking at read time.
    """

    vocab_file: str
    do_lower_case: bool = True
    do_whole_word_mask: bool = False
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    shard_size_mb: float = 4.0
    dynamic_masking: bool = False

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
