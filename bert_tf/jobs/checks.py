"""Checks every job that runs a BERT model makes on its vocabulary and sequence length, and
the tokenizer they load."""

import os

from bert_tf import fileio


def default_vocab_file(init_checkpoint):
    """vocab.txt beside --init_checkpoint (a folder or a checkpoint prefix), if there is one."""
    if not init_checkpoint:
        return None
    path = os.fspath(init_checkpoint)
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    candidate = os.path.join(folder, "vocab.txt")
    return candidate if os.path.exists(candidate) else None


def check_vocab_file(vocab_file):
    if not vocab_file:
        raise ValueError("--vocab_file is required (or an --init_checkpoint folder holding "
                         "vocab.txt)")
    if not fileio.exists(vocab_file):
        raise FileNotFoundError(f"--vocab_file {vocab_file} does not exist")


def check_seq_length(max_seq_length, config, minimum=None):
    """google-research's check against the position table, and a floor for the packing."""
    if max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {max_seq_length} because the BERT model was "
            f"only trained up to sequence length {config.max_position_embeddings}")
    if minimum and max_seq_length < minimum:
        raise ValueError(f"--max_seq_length must be >= {minimum}, got {max_seq_length}")


def check_vocab_size(num_tokens, opts):
    """A vocabulary larger than the embedding table is the wrong one for this model."""
    if num_tokens > opts.config.vocab_size:
        raise ValueError(f"--vocab_file {opts.vocab_file} has {num_tokens} tokens but the "
                         f"model's vocab_size is {opts.config.vocab_size}: wrong vocabulary "
                         f"for this model")


def load_tokenizer(opts):
    """google-research's FullTokenizer for opts.vocab_file, checked against the model."""
    from bert_tf.tokenization import FullTokenizer
    tokenizer = FullTokenizer(opts.vocab_file, do_lower_case=opts.do_lower_case)
    check_vocab_size(len(tokenizer.vocab), opts)
    return tokenizer
