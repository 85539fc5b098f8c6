#!/usr/bin/env python3
"""Does the quickstart's pre-training pay on its own task? (issue 54)

Runs the whole quickstart (python -m bert_tf.quickstart's Pipeline) once per seed with the
settings given here (default: the quickstart's defaults) and its stage 8b (the same fine-tuning
from random weights, compare_random_init), and appends one JSON line per run to
--results: the settings, the summary numbers (pre-trained and random-init dev/test accuracy,
held-out masked-LM accuracy, stage seconds), the commit and the CPU. Each run's stages are
those of `bash quickstart.sh`, so its seconds are what a user waits for.

  python3 quality/quickstart_pretraining.py --seeds 1,2,3
  python3 quality/quickstart_pretraining.py --seeds 1,2,3 --set train_per_label=50 \\
      --set classifier_epochs=30 --work_dir WORK
  python3 quality/quickstart_pretraining.py --summarize
"""
import argparse
import dataclasses
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import typing

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "quality"))
import runlog  # noqa: E402
RESULTS = os.path.join(REPO, "quality", "results", "quickstart_pretraining.jsonl")


def _value(kind, text):
    if text == "None":
        return None
    if kind is tuple:
        return tuple(p for p in text.split(",") if p)
    if kind is bool:
        return text.lower() in ("1", "true", "yes")
    return kind(text)


def settings_from(assignments, seed):
    from bert_tf.quickstart.pipeline import Settings
    fields = typing.get_type_hints(Settings)
    values = {}
    for assignment in assignments:
        name, _, text = assignment.partition("=")
        if name not in fields:
            raise SystemExit(f"--set {assignment}: Settings has no field {name!r} "
                             f"({', '.join(fields)})")
        values[name] = _value(fields[name], text)
    return Settings(**{"compare_random_init": True, **values, "seed": seed})


def machine():
    from bert_tf.cpu_features import cpu_flags, cpu_model
    flags = cpu_flags()
    return {"cpu": cpu_model(), "avx512_vnni": "avx512_vnni" in flags,
            "avx512_bf16": "avx512_bf16" in flags, "cores": os.cpu_count()}


def commit():
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, cwd=REPO).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, cwd=REPO).stdout.strip()
    return out + ("+dirty" if dirty else "")


def run(args):
    from bert_tf.quickstart.pipeline import Pipeline
    for seed in [int(s) for s in args.seeds.split(",") if s]:
        settings = settings_from(args.set, seed)
        tag = hashlib.sha1(repr(settings).encode()).hexdigest()[:8]
        out = os.path.join(args.work_dir, f"seed{seed}-{tag}")
        started = time.time()
        numbers = Pipeline(out, settings).run_all()
        row = {"commit": commit(), "machine": machine(), "seed": seed,
               "settings": dataclasses.asdict(settings), "wall_seconds":
               round(time.time() - started, 1), "numbers": numbers}
        os.makedirs(os.path.dirname(args.results), exist_ok=True)
        runlog.append_row(args.results, row, args.work_dir)     # no folder of this machine


def summarize(args):
    groups = {}
    for line in open(args.results, encoding="utf-8"):
        row = json.loads(line)
        key = json.dumps({k: v for k, v in row["settings"].items() if k != "seed"},
                         sort_keys=True)
        groups.setdefault(key, []).append(row)
    for key, rows in groups.items():
        changed = {k: v for k, v in json.loads(key).items()
                   if v != settings_from([], 0).__dict__.get(k)}
        pre = [r["numbers"]["classifier_test_accuracy"] for r in rows]
        rnd = [r["numbers"]["random_init_test_accuracy"] for r in rows]
        gain = [100 * (a - b) for a, b in zip(pre, rnd)]
        secs = [r["numbers"]["total_seconds"] for r in rows]
        print(f"{changed or 'defaults'}: seeds {[r['seed'] for r in rows]}")
        print(f"  test accuracy pre-trained {statistics.mean(pre):.4f}, random init "
              f"{statistics.mean(rnd):.4f}; gain {statistics.mean(gain):.1f} points "
              f"(per seed {', '.join(f'{g:.1f}' for g in gain)}); stages {min(secs):.0f}-"
              f"{max(secs):.0f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="a quickstart Settings field (bert_tf/quickstart/pipeline.py)")
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), "quickstart_pretraining"))
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--summarize", action="store_true")
    args = parser.parse_args()
    summarize(args) if args.summarize else run(args)


if __name__ == "__main__":
    main()
