"""Counters of a create_pretraining_data run: per shard, summed over shards, summarised as JSON."""

import dataclasses

import numpy as np

MAX_INVALID_EXAMPLES = 20  # "path:line" places of non-UTF-8 bytes kept for the summary


@dataclasses.dataclass
class Stats:
    input_bytes: int = 0
    invalid_bytes: int = 0            # non-UTF-8 bytes dropped
    invalid_places: list = dataclasses.field(default_factory=list)
    lines: int = 0                    # non-blank lines
    lines_without_tokens: int = 0     # non-blank lines the tokenizer turned into nothing
    documents: int = 0                # documents with at least one token
    empty_documents: int = 0          # documents dropped because no line had a token
    single_document_shards: int = 0   # shards whose random "next" had to come from the same doc
    instances: int = 0
    tokens: int = 0                   # non-padding positions, [CLS]/[SEP] included
    random_next: int = 0
    random_next_forced: int = 0       # NotNext because the chunk had one sentence (no coin toss)
    masked: int = 0                   # masked-LM predictions (0 with dynamic masking)
    masked_as_mask: int = 0
    masked_as_random: int = 0
    masked_as_kept: int = 0
    length_counts: list = dataclasses.field(default_factory=list)  # instances per length

    def add(self, other):
        """Adds `other`'s counts into this one."""
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if field.name == "invalid_places":
                mine.extend(theirs[:MAX_INVALID_EXAMPLES - len(mine)])
            elif field.name == "length_counts":
                size = max(len(mine), len(theirs))
                total = np.zeros(size, np.int64)
                total[:len(mine)] += np.asarray(mine, np.int64)
                total[:len(theirs)] += np.asarray(theirs, np.int64)
                self.length_counts = total.tolist()
            else:
                setattr(self, field.name, mine + theirs)
        return self

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**data)


def length_histogram(length_counts, bucket=16):
    """{"1-16": n, "17-32": n, ...}: instances per range of sequence lengths (tokens)."""
    counts = np.asarray(length_counts, np.int64)
    out = {}
    for low in range(1, len(counts), bucket):
        high = min(low + bucket - 1, len(counts) - 1)
        n = int(counts[low:high + 1].sum())
        if n:
            out[f"{low}-{high}"] = n
    return out


def summary(stats, seconds):
    """The run summary (also written as JSON beside the output)."""
    instances = max(stats.instances, 1)
    predictions = max(stats.masked, 1)
    return {
        "instances": stats.instances,
        "tokens": stats.tokens,
        "mean_tokens_per_instance": round(stats.tokens / instances, 2),
        "masked_lm_predictions": stats.masked,
        "masked_fraction": round(stats.masked / max(stats.tokens, 1), 5),
        "masked_as_mask_fraction": round(stats.masked_as_mask / predictions, 5),
        "masked_as_random_fraction": round(stats.masked_as_random / predictions, 5),
        "masked_as_kept_fraction": round(stats.masked_as_kept / predictions, 5),
        "next_sentence": {
            "is_next": stats.instances - stats.random_next,
            "random_next": stats.random_next,
            "random_next_fraction": round(stats.random_next / instances, 5),
            # google-research's rule: a chunk of one sentence always takes a random B
            "random_next_forced_by_single_sentence_chunks": stats.random_next_forced},
        "length_histogram": length_histogram(stats.length_counts),
        "documents": stats.documents,
        "empty_documents_dropped": stats.empty_documents,
        "lines": stats.lines,
        "lines_without_tokens": stats.lines_without_tokens,
        "input_bytes": stats.input_bytes,
        "non_utf8_bytes_dropped": stats.invalid_bytes,
        "non_utf8_places": stats.invalid_places,
        "single_document_shards": stats.single_document_shards,
        "seconds": round(seconds, 2),
        "instances_per_second": round(stats.instances / max(seconds, 1e-9), 1),
    }
