#!/usr/bin/env python3
"""SQuAD quality run of run_squad.py with all-MiniLM-L6-v2, on the recipe of the bench's HF
reference (../shared/bench/quality/hf_squad.py): first --train_limit training questions,
first --dev_limit dev questions, 2 epochs over the windowed features (HF's count; run_squad.py
--epochs_over=features), lr 1e-4, batch 16, sequence 256.

Windowing: HF's `stride=96` is the overlap of consecutive windows; a window holds
256 - 3 - len(question) document tokens (mean question 12.5 WordPieces on these files), so its
start advances by ~144 tokens: --doc_stride=144 here.

  python quality/squad_quality.py --version 1    # ~train-v1.1.first44articles / dev-v1.1.half-a
  python quality/squad_quality.py --version 2    # train-v2.0.first11articles / dev-v2.0.first5
Prints one JSON line (metrics, recipe, wall time); the run's files stay in --work_dir.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from helpers import minilm_dir, shared_path  # noqa: E402

FILES = {1: ("data/squad/train-v1.1.first44articles.json", "data/squad/dev-v1.1.half-a.json"),
         2: ("data/squad/train-v2.0.first11articles.json",
             "data/squad/dev-v2.0.first5articles.json")}


def slice_squad(src, dst, limit):
    """The first `limit` questions of a SQuAD file (all with limit 0), order and schema kept."""
    with open(src, encoding="utf-8") as f:
        document = json.load(f)
    articles, count = [], 0
    for article in document["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = paragraph["qas"][:limit - count] if limit else paragraph["qas"]
            count += len(qas)
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
        if paragraphs:
            articles.append(dict(article, paragraphs=paragraphs))
        if limit and count >= limit:
            break
    with open(dst, "w", encoding="utf-8") as f:
        json.dump({"version": document.get("version", ""), "data": articles}, f)
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", type=int, choices=(1, 2), default=1)
    ap.add_argument("--work_dir", default=None, help="default: bert_tf_quality/squad_v<N> in the temporary folder")
    ap.add_argument("--train_limit", type=int, default=3000)
    ap.add_argument("--dev_limit", type=int, default=None,
                    help="default 1000 (v1.1), 0 = all 1,407 (v2.0)")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--optimizer", default="adamw_torch",
                    help="torch.optim.AdamW semantics, as the HF reference recipe uses")
    ap.add_argument("--max_seq_length", type=int, default=256)
    ap.add_argument("--doc_stride", type=int, default=144)
    ap.add_argument("extra", nargs="*", help="more run_squad.py flags, after --")
    a = ap.parse_args()
    dev_limit = a.dev_limit if a.dev_limit is not None else (1000 if a.version == 1 else 0)
    work = Path(a.work_dir or os.path.join(tempfile.gettempdir(),
                                         f"bert_tf_quality/squad_v{a.version}"))
    work.mkdir(parents=True, exist_ok=True)
    train_src, dev_src = (shared_path(p) for p in FILES[a.version])
    n_train = slice_squad(train_src, work / "train.json", a.train_limit)
    n_dev = slice_squad(dev_src, work / "dev.json", dev_limit)
    model = minilm_dir()
    cmd = [sys.executable, str(REPO / "run_squad.py"), f"--vocab_file={model / 'vocab.txt'}",
           f"--bert_config_file={model / 'config.json'}", f"--init_checkpoint={model}",
           "--do_lower_case", f"--train_file={work / 'train.json'}",
           f"--predict_file={work / 'dev.json'}", "--do_train", "--do_predict", "--do_eval",
           f"--max_seq_length={a.max_seq_length}", f"--doc_stride={a.doc_stride}",
           f"--train_batch_size={a.batch}", f"--learning_rate={a.lr}",
           f"--num_train_epochs={a.epochs}", "--predict_batch_size=32",
           "--iterations_per_loop=25", "--save_checkpoints_steps=100",
           f"--optimizer={a.optimizer}",
           # HF's epochs are passes over every window (google-research counts questions)
           "--epochs_over=features",
           f"--output_dir={work / 'out'}", *a.extra]
    if a.version == 2:
        cmd.append("--version_2_with_negative")
    print(" ".join(cmd), file=sys.stderr, flush=True)
    started = time.time()
    subprocess.run(cmd, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    with open(work / "out" / "eval_results.json", encoding="utf-8") as f:
        results = json.load(f)
    print(json.dumps({"impl": "bert_tf", "squad_version": a.version,
                      **{k: round(v, 2) if isinstance(v, float) else v
                         for k, v in results.items()},
                      "recipe": {**vars(a), "dev_limit": dev_limit, "train_questions": n_train,
                                 "dev_questions": n_dev},
                      "wall_seconds": round(time.time() - started)}))


if __name__ == "__main__":
    main()
