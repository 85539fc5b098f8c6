"""pretrain_row.py RUN_FOLDER PROBE SEED LR DESCRIPTION: one JSON line (stdout) for a pretrain.sh
run: its held-out masked-LM and next-sentence accuracy, batch, steps and warm-up (from the
run's log), the peak learning rate given, the probe's description, the commit and the CPU."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import runlog  # noqa: E402  (quality/runlog.py)
from bert_tf.cpu_features import cpu_flags, cpu_model  # noqa: E402
from bert_tf.metrics.results import read_eval_results  # noqa: E402


def main(folder, probe, seed, lr, description):
    values = read_eval_results(os.path.join(folder, "pretrain", "eval_results.txt"))
    log = open(os.path.join(folder, "pretrain.log")).read()
    plan = re.search(r"batch (\d+), (\d+) steps \((\d+) warm-up\)", log)
    flags = cpu_flags()
    print(json.dumps({
        "probe": probe, "seed": int(seed), "description": description,
        "batch": int(plan.group(1)), "steps": int(plan.group(2)), "warmup": int(plan.group(3)),
        "heldout_masked_lm_accuracy": round(float(values["masked_lm_accuracy"]), 4),
        "heldout_next_sentence_accuracy": round(float(values["next_sentence_accuracy"]), 4),
        "learning_rate": float(lr),
        "commit": runlog.commit(),
        "cpu": cpu_model(), "avx512_vnni": "avx512_vnni" in flags,
        "avx512_bf16": "avx512_bf16" in flags}))


if __name__ == "__main__":
    main(*sys.argv[1:])
