"""Tokenizer throughput (MB/s) on the shared corpus, ours beside the peers, interleaved.

  ~/bench-venv/bin/python benchmarks/bench_tokenizer.py --rounds 5 \
      --out benchmarks/results/tokenizer.md

Variants (each pass covers the same text; peers are measured as in ../shared/bench):
  layer_ids       BertTokenizerLayer in tf.function, --batch lines per call, ragged ids
  layer_packed    BertPreprocessor (seq_length 128) in tf.function: dense int32 inputs
  tft_fast        tensorflow_text.FastBertTokenizer (lower_case_nfd_strip_accents), same batching
  hf_fast         HF tokenizers BertWordPieceTokenizer.encode_batch (if installed)
  py_batch        FullTokenizer.encode_batch(all lines) -> list[list[int]]
  py_call_warm    FullTokenizer: convert_tokens_to_ids(tokenize(line)) per line, word cache warm
  py_call_cold    the same with a fresh tokenizer (empty cache) for every pass
  original_loop   BasicTokenizer + WordpieceTokenizer per line: google-research's algorithm
                  as it is written (stand-in for its FullTokenizer, whose code is not here)
py_call_* and original_loop run on the first --slow_mb MB, like the pure-Python peers of
../shared/bench/bench_tokenizers.py. Passes are interleaved round-robin over --rounds.
"""

import argparse
import glob
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def read_lines(pattern):
    lines = []
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as f:
            lines.extend(line.rstrip("\n") for line in f)
    return [line for line in lines if line.strip()]


def size_mb(lines):
    return sum(len(line.encode("utf-8")) + 1 for line in lines) / 1e6


def build(name, args, lines, slow_lines):
    """Returns a zero-argument callable doing one pass, and the MB it covers."""
    import tensorflow as tf

    from bert_tf import tokenization
    vocab = args.vocab
    batches = [tf.constant(lines[i:i + args.batch]) for i in range(0, len(lines), args.batch)]
    spec = [tf.TensorSpec([None], tf.string)]

    def graph_pass(fn):
        f = tf.function(fn, input_signature=spec)
        return lambda: [f(b) for b in batches]

    if name == "layer_ids":
        return graph_pass(tokenization.BertTokenizerLayer(vocab)), size_mb(lines)
    if name == "layer_packed":
        return graph_pass(tokenization.BertPreprocessor(vocab, seq_length=128)), size_mb(lines)
    if name == "tft_fast":
        import tensorflow_text as tft
        tok = tft.FastBertTokenizer(vocab=tokenization.Vocabulary.from_file(vocab).id_to_token,
                                    token_out_type=tf.int64, lower_case_nfd_strip_accents=True)
        return graph_pass(tok.tokenize), size_mb(lines)
    if name == "hf_fast":
        from tokenizers import BertWordPieceTokenizer
        tok = BertWordPieceTokenizer(vocab, lowercase=True)
        return (lambda: tok.encode_batch(lines, add_special_tokens=False)), size_mb(lines)
    if name == "py_batch":
        tok = tokenization.FullTokenizer(vocab)
        return (lambda: tok.encode_batch(lines)), size_mb(lines)
    if name == "py_call_warm":
        tok = tokenization.FullTokenizer(vocab)
        return (lambda: [tok.convert_tokens_to_ids(tok.tokenize(x)) for x in slow_lines]), \
            size_mb(slow_lines)
    if name == "py_call_cold":
        def cold():
            tok = tokenization.FullTokenizer(vocab)
            return [tok.convert_tokens_to_ids(tok.tokenize(x)) for x in slow_lines]
        return cold, size_mb(slow_lines)
    if name == "original_loop":
        tok = tokenization.FullTokenizer(vocab)

        def loop():
            out = []
            for x in slow_lines:
                pieces = []
                for word in tok.basic_tokenizer.tokenize(x):
                    pieces.extend(tok.wordpiece_tokenizer.tokenize(word))
                out.append(tok.convert_tokens_to_ids(pieces))
            return out
        return loop, size_mb(slow_lines)
    raise ValueError(f"unknown variant {name}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vocab", default=os.path.join(ROOT, "..", "shared", "data", "reference",
                                                   "vocab.txt"))
    p.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "data", "corpus",
                                                    "bert_format", "*.txt"))
    p.add_argument("--variants", default="layer_ids,layer_packed,tft_fast,hf_fast,py_batch,"
                                         "py_call_warm,py_call_cold,original_loop")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--slow_mb", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None, help="also write the markdown table here")
    args = p.parse_args()

    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))

    lines = read_lines(args.corpus)
    slow, total = [], 0
    for line in lines:
        total += len(line.encode("utf-8")) + 1
        if total > args.slow_mb * 1e6:
            break
        slow.append(line)
    print(f"corpus {len(lines)} lines, {size_mb(lines):.2f} MB; slow set {len(slow)} lines, "
          f"{size_mb(slow):.2f} MB", file=sys.stderr)

    runs, sizes, warm = {}, {}, {}
    for name in args.variants.split(","):
        try:
            t0 = time.perf_counter()
            fn, mb = build(name, args, lines, slow)
            fn()  # warm-up: tracing, table building, caches
            warm[name] = time.perf_counter() - t0
        except ImportError as e:
            print(f"skipping {name}: {e}", file=sys.stderr)
            continue
        runs[name], sizes[name] = fn, mb
    results = {name: [] for name in runs}
    loads = []
    for r in range(args.rounds):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            results[name].append(sizes[name] / (time.perf_counter() - t0))
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(
            f"{n} {v[-1]:.2f}" for n, v in results.items()) + f" MB/s (load {loads[-1]:.2f})",
            file=sys.stderr)
    rows = ["| variant | MB per pass | MB/s median | min | max | build + first pass s |",
            "|---|---|---|---|---|---|"]
    for name, v in results.items():
        rows.append(f"| {name} | {sizes[name]:.2f} | {statistics.median(v):.2f} | {min(v):.2f} "
                    f"| {max(v):.2f} | {warm[name]:.1f} |")
    table = "\n".join(rows) + (f"\n\n{args.rounds} rounds, batch {args.batch}, threads "
                               f"{args.threads}, 1-min load average during rounds "
                               f"{min(loads):.2f}-{max(loads):.2f}\n")
    print(table)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
