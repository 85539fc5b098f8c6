"""Calibration text for int8 exports (bert_tf.serving.portable.smoothing): a file of the user's
text, one text per line, or by default sentences of the installed Python standard library's
docstrings (English prose on any machine, nothing downloaded), as token-id features."""

import collections
import os

import numpy as np

COUNT = 256
_PACKAGES = ("argparse", "asyncio", "email", "json", "logging", "unittest")


def default_texts(count=COUNT):
    """`count` docstring sentences spread over _PACKAGES, the same on every run of a Python."""
    from bert_tf.data.docstrings import harvest
    sentences = [s for doc in harvest(packages=_PACKAGES) for s in doc.sentences]
    step = max(1, len(sentences) // count)
    return sentences[::step][:count]


def read_texts(path, count=COUNT):
    """The first `count` non-empty lines of the text file `path`; raises ValueError naming the
    file when it has none."""
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                texts.append(line.strip())
                if len(texts) == count:
                    break
    if not texts:
        raise ValueError(f"--calibration_file {os.fspath(path)}: no text in it (one text per "
                         "line)")
    return texts


def features(texts, vocab_file, do_lower_case, seq_length):
    """[CLS] text [SEP] token ids of each text (truncated to seq_length), as feature dicts of
    equal-length rows: no padding, so every calibrated activation is a real token's."""
    from bert_tf.tokenization import FullTokenizer
    tokenizer = FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    by_length = collections.defaultdict(list)
    for text in texts:
        tokens = ["[CLS]"] + tokenizer.tokenize(text)[:seq_length - 2] + ["[SEP]"]
        by_length[len(tokens)].append(tokenizer.convert_tokens_to_ids(tokens))
    batches = []
    for length in sorted(by_length):
        ids = np.array(by_length[length], np.int32)
        batches.append({"input_ids": ids, "input_mask": np.ones_like(ids),
                        "segment_ids": np.zeros_like(ids)})
    return batches
