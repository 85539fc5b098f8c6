"""Agreement of our tokenizers with google-research/bert's algorithm on the whole shared corpus
and the 1,983 reference lines.

  python3 benchmarks/tokenizer_agreement.py --out benchmarks/results/tokenizer_agreement.md

Compares, line by line (ids, no [CLS]/[SEP]), uncased and cased:
  original  BasicTokenizer + WordpieceTokenizer per line, google-research's algorithm as
            written (the reference lines additionally carry google-research's own output)
  python    FullTokenizer.tokenize (memoised fast paths)
  batch     FullTokenizer.encode_batch (in-graph tokenizer underneath)
  layer     BertTokenizerLayer (in-graph, tf.function)
  tft_fast  tensorflow_text.FastBertTokenizer, for comparison (uncased only: ICU case folding)
"""

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = os.path.join(ROOT, "..", "shared", "data")
    p.add_argument("--vocab", default=os.path.join(shared, "reference", "vocab.txt"))
    p.add_argument("--out", default=None)
    args = p.parse_args()

    import tensorflow as tf
    import tensorflow_text as tft

    from bert_tf import tokenization

    corpus = []
    for path in sorted(glob.glob(os.path.join(shared, "corpus", "bert_format", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            corpus.extend(line.rstrip("\n") for line in f if line.strip())
    with open(os.path.join(shared, "reference", "tokenizer_reference.jsonl"),
              encoding="utf-8") as f:
        reference = [json.loads(line) for line in f]
    sets = {"corpus": corpus, "reference": [r["text"] for r in reference]}

    rows = ["| text set | lines | mode | compared | lines differing |", "|---|---|---|---|---|"]

    def report(set_name, mode, what, got, want):
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        rows.append(f"| {set_name} | {len(want)} | {mode} | {what} | {len(bad)} |")
        print(rows[-1], file=sys.stderr)

    for lower in (True, False):
        mode = "uncased" if lower else "cased"
        tok = tokenization.FullTokenizer(args.vocab, lower)
        layer = tokenization.BertTokenizerLayer(args.vocab, lower_case=lower)
        call = tf.function(layer, input_signature=[tf.TensorSpec([None], tf.string)])
        fast_bert = tft.FastBertTokenizer(vocab=tok.vocabulary.id_to_token,
                                          token_out_type=tf.int64,
                                          lower_case_nfd_strip_accents=True)
        for set_name, texts in sets.items():
            original = []
            for text in texts:
                pieces = []
                for word in tok.basic_tokenizer.tokenize(text):
                    pieces.extend(tok.wordpiece_tokenizer.tokenize(word))
                original.append(tok.convert_tokens_to_ids(pieces))
            if set_name == "reference":
                key = "google_ids" if lower else None
                if key:
                    report(set_name, mode, "original loop vs google-research's output",
                           original, [r[key][1:-1] for r in reference])
                else:
                    report(set_name, mode, "original loop vs google-research's output",
                           [tok.convert_ids_to_tokens(i) for i in original],
                           [r["google_cased_tokens"] for r in reference])
            report(set_name, mode, "python vs original",
                   [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in texts], original)
            report(set_name, mode, "encode_batch vs original", tok.encode_batch(texts), original)
            layer_ids = []
            for i in range(0, len(texts), 1024):
                layer_ids.extend(call(tf.constant(texts[i:i + 1024])).to_list())
            report(set_name, mode, "in-graph layer vs original", layer_ids, original)
            if lower:
                fb = []
                for i in range(0, len(texts), 1024):
                    fb.extend(fast_bert.tokenize(tf.constant(texts[i:i + 1024])).to_list())
                report(set_name, mode, "tensorflow_text FastBertTokenizer vs original", fb,
                       original)
    table = "\n".join(rows) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("# Tokenizer agreement with google-research/bert's algorithm\n\n"
                    "Command: `python3 benchmarks/tokenizer_agreement.py --out "
                    "benchmarks/results/tokenizer_agreement.md` (ids without [CLS]/[SEP], "
                    "line by line; corpus = ../shared/data/corpus/bert_format/*.txt, "
                    "non-empty lines).\n\n" + table)


if __name__ == "__main__":
    main()
