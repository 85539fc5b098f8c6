#!/usr/bin/env python3
"""Contrastive fine-tuning of all-MiniLM-L6-v2 on SQuAD questions -> paragraphs: bert_tf's
run_embedding.py against sentence-transformers' fit (its pre-v3 training loop, `old_fit`:
plain PyTorch, no `datasets` package) with the same loss (MultipleNegativesRankingLoss, scale
20), batch, steps, learning rate, warm-up (10%, then linear decay), AdamW (torch's, weight decay
0.01 but on biases and LayerNorm) and gradient clipping (1.0); one run per side and seed.

Training rows: the first --steps x --batch (question, paragraph) pairs of the shared SQuAD
training subset (bert_tf.data.embedding.squad_retrieval), one epoch. Evaluation: every question
of the shared dev subset (or its first --max_eval_rows rows) searching all its paragraphs;
MRR@10, Recall@1/10 and nDCG@10 from the same code (bert_tf.metrics.embedding) for both sides:
sentence-transformers' embeddings are written by a worker process in ~/bench-venv (PyTorch
lives there only) and scored here. Zero-shot (no training) is measured on both sides too.

  python quality/embedding_finetune.py --seeds 1 2 3
Appends one JSON line per run to quality/results/embedding_finetune.jsonl.
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
BENCH_PYTHON = os.path.expanduser("~/bench-venv/bin/python")
RESULTS = REPO / "quality" / "results" / "embedding_finetune.jsonl"


# --------------------------------------------------------------------------- PyTorch worker
def st_worker(args):
    """Runs in ~/bench-venv: optionally fine-tunes with sentence-transformers' old_fit,
    then writes the embeddings of the texts in args.texts (a JSON list) to args.embeddings."""
    import random

    import numpy as np
    import torch
    from sentence_transformers import InputExample, SentenceTransformer, losses
    from torch.utils.data import DataLoader

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(len(os.sched_getaffinity(0)))   # no more threads than usable cores
    model = SentenceTransformer(args.model, device="cpu")
    model.max_seq_length = args.max_seq_length
    start = time.perf_counter()
    if args.train_file:
        with open(args.train_file, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        examples = [InputExample(texts=[r["anchor"], r["positive"]]) for r in rows]
        loader = DataLoader(examples, shuffle=True, batch_size=args.batch)
        loss = losses.MultipleNegativesRankingLoss(model, scale=20.0)
        model.old_fit(train_objectives=[(loader, loss)], epochs=1,
                      warmup_steps=int(len(loader) * 0.1), optimizer_params={"lr": args.lr},
                      weight_decay=0.01, max_grad_norm=1.0, show_progress_bar=False)
    train_seconds = time.perf_counter() - start
    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    embeddings = model.encode(texts, batch_size=64, normalize_embeddings=True,
                              convert_to_numpy=True, show_progress_bar=False)
    np.save(args.embeddings, embeddings.astype(np.float32))
    print(json.dumps({"train_seconds": train_seconds}))


# --------------------------------------------------------------------------- orchestration
def minilm():
    sys.path.insert(0, str(REPO / "tests"))
    from helpers import minilm_dir
    return str(minilm_dir())


def prepare_data(work, steps, batch):
    """The retrieval set, the training subset (steps x batch rows) and the eval texts."""
    from bert_tf.data.embedding import write_squad_retrieval
    squad = REPO.parent / "shared" / "data" / "squad"
    data = work / "data"
    write_squad_retrieval(squad / "train-v1.1.first44articles.json",
                          squad / "dev-v1.1.half-a.json", data)
    lines = (data / "train.jsonl").read_text(encoding="utf-8").splitlines()
    if len(lines) < steps * batch:
        raise SystemExit(f"{steps} steps x batch {batch} > {len(lines)} training rows")
    (data / "train_subset.jsonl").write_text("\n".join(lines[:steps * batch]) + "\n",
                                             encoding="utf-8")
    return data


def bert_tf_run(args, data, seed, train):
    out = Path(args.work_dir) / (f"bert_tf_seed{seed}" if train else "bert_tf_zero_shot")
    command = [sys.executable, str(REPO / "run_embedding.py"), f"--init_checkpoint={minilm()}",
               "--do_eval", f"--eval_file={data / 'dev.jsonl'}",
               f"--corpus_file={data / 'dev_corpus.jsonl'}",
               f"--max_eval_examples={args.max_eval_rows}",
               f"--max_seq_length={args.max_seq_length}", f"--output_dir={out}",
               f"--seed={seed}", "--eval_batch_size=64"]
    if train:
        command += ["--do_train", f"--train_file={data / 'train_subset.jsonl'}",
                    f"--train_batch_size={args.batch}", f"--learning_rate={args.lr}",
                    "--num_train_epochs=1", "--warmup_proportion=0.1",
                    "--optimizer=adamw_torch", "--save_checkpoints_steps=100000",
                    f"--iterations_per_loop={min(args.steps, 10)}"]
    start = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                   stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    from bert_tf.metrics.results import read_eval_results
    values = read_eval_results(out / "eval_results.txt")
    return dict({k: float(values[k]) for k in
                 ("mrr_at_10", "recall_at_1", "recall_at_10", "ndcg_at_10")},
                wall_seconds=round(seconds, 1))


def st_run(args, data, seed, train):
    from bert_tf.jobs.embedding import read_retrieval_set
    from bert_tf.metrics.embedding import retrieval_metrics, top_k
    import numpy as np
    work = Path(args.work_dir)
    retrieval = read_retrieval_set(str(data / "dev.jsonl"), str(data / "dev_corpus.jsonl"),
                                   args.max_eval_rows)
    texts = work / "st_texts.json"
    texts.write_text(json.dumps(retrieval.queries + retrieval.corpus), encoding="utf-8")
    embeddings = work / f"st_{'seed%d' % seed if train else 'zero_shot'}.npy"
    command = [BENCH_PYTHON, __file__, "--st_worker", f"--model={minilm()}",
               f"--texts={texts}", f"--embeddings={embeddings}", f"--seed={seed}",
               f"--batch={args.batch}", f"--lr={args.lr}",
               f"--max_seq_length={args.max_seq_length}"]
    if train:
        command.append(f"--train_file={data / 'train_subset.jsonl'}")
    start = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    vectors = np.load(embeddings)
    queries, corpus = vectors[:len(retrieval.queries)], vectors[len(retrieval.queries):]
    values = retrieval_metrics(top_k(queries, corpus), retrieval.relevant)
    worker = json.loads(done.stdout.strip().splitlines()[-1])
    return dict(values, wall_seconds=round(seconds, 1),
                train_seconds=round(worker["train_seconds"], 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 3],
                    help="fine-tuning runs per side (none: with --zero_shot, only that)")
    ap.add_argument("--sides", nargs="+", default=["bert_tf", "sentence_transformers"],
                    choices=["bert_tf", "sentence_transformers"])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--max_seq_length", type=int, default=128)
    ap.add_argument("--max_eval_rows", type=int, default=0,
                    help="evaluate on the first N dev rows (0: all)")
    ap.add_argument("--zero_shot", action="store_true", help="also measure the model as it is")
    ap.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(),
                                                       "bert_tf_quality/embedding_finetune"))
    ap.add_argument("--results", default=str(RESULTS))
    # the PyTorch worker's arguments
    ap.add_argument("--st_worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--texts", help=argparse.SUPPRESS)
    ap.add_argument("--embeddings", help=argparse.SUPPRESS)
    ap.add_argument("--train_file", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.st_worker:
        return st_worker(args)

    sys.path.insert(0, str(REPO))
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    data = prepare_data(work, args.steps, args.batch)
    runners = {"bert_tf": bert_tf_run, "sentence_transformers": st_run}
    plan = ([(side, 0, False) for side in args.sides] if args.zero_shot else [])
    plan += [(side, seed, True) for seed in args.seeds for side in args.sides]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    recipe = {"commit": commit, "steps": args.steps, "batch": args.batch, "lr": args.lr,
              "max_seq_length": args.max_seq_length, "loss": "mnrl", "scale": 20.0,
              "eval_rows": args.max_eval_rows or "all"}
    for side, seed, train in plan:
        values = runners[side](args, data, seed, train)
        row = dict(side=side, seed=seed if train else None, trained=train, **recipe, **values)
        print(json.dumps(row), flush=True)
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
