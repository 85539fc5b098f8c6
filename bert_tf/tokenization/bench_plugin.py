"""Tokenizer entry for ../shared/bench/bench_tokenizers.py (`--impls project`); the lead
re-exports build_tokenizer from bert_tf/bench_api.py."""

from bert_tf.tokenization.full import FullTokenizer


def build_tokenizer(vocab_path, lower_case):
    """callable(list[str]) -> list[list[int]]: google-research ids without [CLS]/[SEP], via
    FullTokenizer.encode_batch (the in-graph tokenizer for batches of 256 texts or more)."""
    return FullTokenizer(vocab_path, do_lower_case=lower_case).encode_batch
