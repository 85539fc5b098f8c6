"""Convert BERT checkpoints between google-research TF1, HuggingFace and native formats.

  python -m bert_tf.convert SRC DST --to tf1|hf|native [--config CONFIG] [--vocab_file VOCAB]

SRC: a TF1 prefix (.../bert_model.ckpt), a HuggingFace folder (model.safetensors + config.json)
or a native checkpoint; heads present in SRC (pre-training, classifier, SQuAD, ...) are kept.
DST: a folder, written with the target format's file names and a config of its own kind.
"""

import argparse
import logging
import os
import sys

from bert_tf.checkpoints import assign, find_config, read_any, save_weights
from bert_tf.config import BertConfig


def model_for(arrays, config):
    """The encoder or task model whose heads match the google names present in `arrays`."""
    from bert_tf.model import (BertClassifier, BertEncoder, BertMultipleChoice, BertPretrainer,
                               BertSpanLabeler, BertTokenClassifier)
    encoder = BertEncoder(config)
    if "cls/predictions/output_bias" in arrays:
        return BertPretrainer(encoder)
    if "cls/squad/output_weights" in arrays:
        return BertSpanLabeler(encoder)
    if "cls/token_classifier/output_weights" in arrays:
        return BertTokenClassifier(encoder, arrays["cls/token_classifier/output_weights"].shape[0])
    if "cls/multiple_choice/output_weights" in arrays:
        return BertMultipleChoice(encoder)
    if "output_weights" in arrays:
        return BertClassifier(encoder, arrays["output_weights"].shape[0])
    return encoder


def convert(src, dst, to, config=None, vocab_file=None):
    """Reads `src`, writes `dst` in format `to`; returns (LoadReport, path written)."""
    config = config or find_config(src)
    fmt, arrays, unmapped = read_any(src, config)
    model = model_for(arrays, config)
    report = assign(model, arrays, f"{src} ({fmt})", require_heads=True)
    report.unexpected.extend(unmapped)
    if vocab_file is None:
        folder = src if os.path.isdir(src) else os.path.dirname(os.path.abspath(src))
        candidate = os.path.join(folder, "vocab.txt")
        vocab_file = candidate if os.path.exists(candidate) else None
    written = save_weights(model, dst, to, vocab_file=vocab_file)
    return report, written


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.convert", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--to", required=True, choices=["tf1", "hf", "native"])
    parser.add_argument("--config", help="bert_config.json / config.json (default: beside SRC)")
    parser.add_argument("--vocab_file", help="vocab.txt to copy (default: beside SRC, if any)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = BertConfig.from_json_file(args.config) if args.config else None
    try:
        report, written = convert(args.src, args.dst, args.to, config, args.vocab_file)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.to} checkpoint: {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
