#!/usr/bin/env python3
"""How much of LiteRT int8's error does activation smoothing remove? (issue 51)

all-MiniLM-L6-v2's embedding export (--task=embedding, seq 128) as LiteRT fp32, and as int8
without smoothing (--int8_smoothing=0), with the default smoothing (alpha 0.5, calibrated on
bert_tf.serving.portable.calibration's docstring sentences) and with smoothing calibrated on 256 STS-B
training sentences (--calibration_file). Cosine to the fp32 export's embeddings on the first
1,000 STS-B dev sentences of quality/embedding_parity.py (never calibrated on), same token ids.

  python3 quality/portable_int8_probes/smoothing.py --jsonl .../results.jsonl
"""
import argparse
import json
import os
import tempfile

from minilm_embeddings import ROOT, Probe, run_facts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jsonl", required=True)
    p.add_argument("--seq_length", type=int, default=128)
    args = p.parse_args()
    from ai_edge_litert.interpreter import Interpreter

    work = tempfile.mkdtemp(prefix="smoothing_")
    probe = Probe(work, args.seq_length)
    stsb_train = os.path.join(work, "stsb_train.txt")
    with open(os.path.join(ROOT, "..", "shared", "data", "glue", "STS-B", "train.tsv"),
              encoding="utf-8") as f, open(stsb_train, "w", encoding="utf-8") as out:
        out.writelines(line.split("\t")[7] + "\n" for line in list(f)[1:257])

    def ops(folder):
        names = [d["op_name"] for d in Interpreter(os.path.join(
            folder, "model.tflite"))._get_ops_details()]
        return {n: names.count(n) for n in ("MUL", "FULLY_CONNECTED")}

    reference = probe.embeddings(probe.export("fp32", "fp32"))
    variants = {
        "int8, no smoothing (--int8_smoothing=0)": probe.export("int8_plain", "int8",
                                                                int8_smoothing=0),
        "int8, smoothing 0.5 on the docstring sentences (the default)": probe.export("int8",
                                                                                     "int8"),
        "int8, smoothing 0.5 on 256 STS-B training sentences": probe.export(
            "int8_stsb", "int8", calibration_file=stsb_train)}
    facts = run_facts()
    with open(args.jsonl, "a", encoding="utf-8") as f:
        for name, folder in variants.items():
            line = {"probe": "smoothing.py", "variant": name, **probe.cosines(folder, reference),
                    "ops": ops(folder),
                    "file_mb": os.path.getsize(os.path.join(folder, "model.tflite")) / 1e6,
                    **facts}
            print(json.dumps(line), flush=True)
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
