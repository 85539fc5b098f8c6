"""Checks on run_squad options, raising ValueError with the original's messages where it had one."""

import tensorflow as tf

from bert_tf.contract import MAX_ANSWER_LENGTH


def validate_window_options(max_seq_length, max_query_length, doc_stride):
    """Window sizes that make feature creation terminate and fit [CLS] q [SEP] doc [SEP]."""
    if max_query_length < 1:
        raise ValueError(f"max_query_length must be >= 1, got {max_query_length}")
    if max_seq_length <= max_query_length + 3:
        raise ValueError(
            f"The max_seq_length ({max_seq_length}) must be greater than max_query_length "
            f"({max_query_length}) + 3")
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be >= 1, got {doc_stride}")


def validate_squad_options(*, do_train, do_predict, train_file, predict_file, max_seq_length,
                           max_query_length, doc_stride, max_position_embeddings=None,
                           n_best_size=20, max_answer_length=MAX_ANSWER_LENGTH, do_eval=False):
    """The runner's up-front checks: google-research's validate_flags_or_throw plus input files
    that must exist, window sizes, n-best settings and --do_eval needing predictions."""
    if not do_train and not do_predict:
        raise ValueError("At least one of `do_train` or `do_predict` must be True.")
    if do_train and not train_file:
        raise ValueError("If `do_train` is True, then `train_file` must be specified.")
    if do_predict and not predict_file:
        raise ValueError("If `do_predict` is True, then `predict_file` must be specified.")
    if do_eval and not do_predict:
        raise ValueError("`do_eval` scores the predictions of `do_predict`; set `do_predict` too.")
    for flag, path in (("train_file", train_file if do_train else None),
                       ("predict_file", predict_file if do_predict else None)):
        if path and not tf.io.gfile.exists(str(path)):
            raise ValueError(f"`{flag}` {path} does not exist.")
    if max_position_embeddings is not None and max_seq_length > max_position_embeddings:
        raise ValueError(
            f"Cannot use sequence length {max_seq_length} because the BERT model was only "
            f"trained up to sequence length {max_position_embeddings}")
    validate_window_options(max_seq_length, max_query_length, doc_stride)
    if n_best_size < 1:
        raise ValueError(f"n_best_size must be >= 1, got {n_best_size}")
    if max_answer_length < 1:
        raise ValueError(f"max_answer_length must be >= 1, got {max_answer_length}")
