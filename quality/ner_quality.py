#!/usr/bin/env python3
"""NER quality run of run_ner.py with all-MiniLM-L6-v2 on a CoNLL-2003 subset, beside the same
recipe in HuggingFace PyTorch (quality/ner_hf.py).

Subset: the first --train_sentences sentences of eng.train and the first --dev_sentences of
eng.testa (whole -DOCSTART- blocks kept), written to --work_dir. Recipe (both sides): sentence
inputs of at most 128 WordPieces, BIO labels on each word's first piece, --epochs epochs at
--lr with batch --batch, 10% linear warm-up then linear decay, weight decay 0.01, clipping 1.0.

  python quality/ner_quality.py                # ours, then HF (sequentially)
  python quality/ner_quality.py --only ours    # or: --only hf
Prints one JSON line per implementation; results are kept in quality/ner_results.md by hand.
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

HF_PYTHON = os.path.expanduser("~/bench-venv/bin/python")


def head_sentences(src, dst, sentences):
    """The first `sentences` sentences of a CoNLL file, with the -DOCSTART- lines among them."""
    blocks, count = [], 0
    for block in open(src, encoding="utf-8").read().split("\n\n"):
        if not block.strip():
            continue
        blocks.append(block)
        if not block.startswith("-DOCSTART-"):
            count += 1
        if count >= sentences:
            break
    Path(dst).write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return count


def run_ours(a, train, dev, out):
    start = time.time()
    cmd = [sys.executable, str(REPO / "run_ner.py"), f"--train_file={train}",
           f"--eval_file={dev}", f"--init_checkpoint={minilm_dir()}", "--do_train", "--do_eval",
           f"--output_dir={out}", "--max_seq_length=128", f"--train_batch_size={a.batch}",
           "--eval_batch_size=32", f"--learning_rate={a.lr}", f"--num_train_epochs={a.epochs}",
           "--iterations_per_loop=20", "--save_checkpoints_steps=100000", f"--seed={a.seed}",
           f"--optimizer={a.optimizer}"]
    subprocess.run(cmd, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                             PYTHONPATH=str(REPO)))
    sys.path.insert(0, str(REPO))
    from bert_tf.metrics.results import read_eval_results
    values = read_eval_results(Path(out) / "eval_results.txt")
    return {"impl": "bert_tf", "f1": round(100 * values["f1"], 2),
            "precision": round(100 * values["precision"], 2),
            "recall": round(100 * values["recall"], 2),
            "per_type_f1": {k[3:]: round(100 * v, 2) for k, v in values.items()
                            if k.startswith("f1_")},
            "steps": values["global_step"], "seconds": round(time.time() - start)}


def run_hf(a, train, dev):
    start = time.time()
    done = subprocess.run([HF_PYTHON, str(REPO / "quality" / "ner_hf.py"), "--train", train,
                           "--dev", dev, "--epochs", str(a.epochs), "--lr", str(a.lr),
                           "--batch", str(a.batch), "--seed", str(a.seed)],
                          check=True, stdout=subprocess.PIPE, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = round(time.time() - start)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work_dir",
                    default=os.path.join(tempfile.gettempdir(), "bert_tf_quality/ner"))
    ap.add_argument("--train_sentences", type=int, default=1000)
    ap.add_argument("--dev_sentences", type=int, default=1000)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--optimizer", default="adamw_torch",
                    help="torch.optim.AdamW semantics, as the HF reference recipe uses")
    ap.add_argument("--only", choices=("ours", "hf"))
    a = ap.parse_args()
    work = Path(a.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    train, dev = str(work / "train.txt"), str(work / "dev.txt")
    n_train = head_sentences(shared_path("data/conll2003/eng.train"), train, a.train_sentences)
    n_dev = head_sentences(shared_path("data/conll2003/eng.testa"), dev, a.dev_sentences)
    recipe = {"train_sentences": n_train, "dev_sentences": n_dev, "epochs": a.epochs,
              "lr": a.lr, "batch": a.batch, "max_seq_length": 128, "seed": a.seed,
              "optimizer": a.optimizer}
    if a.only != "hf":
        out = work / "ours"
        if out.exists():
            import shutil
            shutil.rmtree(out)      # a fresh run each time (run_ner would resume otherwise)
        print(json.dumps(dict(run_ours(a, train, dev, str(out)), recipe=recipe)), flush=True)
    if a.only != "ours":
        print(json.dumps(dict(run_hf(a, train, dev), recipe=recipe)), flush=True)


if __name__ == "__main__":
    main()
