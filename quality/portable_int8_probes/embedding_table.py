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
import tempfile

from minilm_embeddings import Probe, run_facts


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
    from bert_tf.checkpoints import load_encoder, save_weights

    work = tempfile.mkdtemp(prefix="emb_table_")
    probe = Probe(work, args.seq_length)
    reference = probe.embeddings(probe.export("fp32", "fp32"))
    # The export as it was when this probe was written, before activation smoothing.
    variants = {"int8, no smoothing": probe.export("int8", "int8", int8_smoothing=0)}
    encoder = load_encoder(probe.minilm)
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
        shutil.copytree(probe.minilm, folder)
        save_weights(encoder, folder, "hf")
        variants[name] = probe.export(f"fq_{per_row}", "fp32", checkpoint=folder)
    facts = run_facts()
    with open(args.jsonl, "a", encoding="utf-8") as f:
        for name, folder in variants.items():
            line = {"probe": "embedding_table.py", "variant": name,
                    **probe.cosines(folder, reference), **stats, **facts}
            print(json.dumps(line), flush=True)
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
