#!/usr/bin/env python3
"""Learning curves of bert_tf and HuggingFace PyTorch, over seeds: pre-training and SQuAD.

Each side trains with its own random elements (initial weights or head, dropout, data order)
drawn from the seed, so the curves show what a user of either stack sees; the step-for-step
checks with every random element taken out are pretraining_trajectory.py / squad_trajectory.py.

tiny, mini (pre-training): BertConfig.from_preset("tiny") (L=2, H=128, A=2) or "mini" (L=4,
  H=256, A=4), vocab 30,522, dropout 0.1; records of create_pretraining_data.py on the
  inaugural + State of the Union sentences (seq 128, 20 predictions, dupe 2, seed 7), written
  once into work_dir/records; batch 32, 1,200 steps, 100 warm-up, lr 1e-3, linear decay, weight
  decay 0.01. Evaluation: masked-LM loss and accuracy on the first 20 batches of 32 records in
  file order (google-research's --do_eval with --max_eval_steps=20 on the training files).
    bert_tf: run_pretraining.py with its default flags except the recipe; the loss curve is its
             per-loop TensorBoard summary (means over --iterations_per_loop=50 steps).
    hf:      BertForPreTraining of the same shape (transformers' init, torch.manual_seed(seed)),
             torch AdamW (epsilon 1e-8, no decay of biases and LayerNorm),
             get_linear_schedule_with_warmup, clipping 1.0, google-research's heads (masked-LM
             on the masked positions only, plus NSP), a new permutation of the records per pass;
             run by this script in /root/bench-venv. Its losses are averaged over the same
             50-step windows as bert_tf's (masked-LM: sum(w * xent) / sum(w) over the window).
squad: all-MiniLM-L6-v2, the first 5 articles of train-v1.1.first44articles.json (1,483
  questions), seq 256, batch 16, lr 1e-4, 1 epoch, 10% warm-up; EM / F1 on the first
  --dev_limit questions of dev-v1.1.half-a.json. Both sides read the same sliced files.
    bert_tf: run_squad.py with its default flags except the recipe (doc stride 128); the curve
             is its per-loop loss (means over --iterations_per_loop=10 steps).
    hf:      ../shared/bench/quality/hf_squad.py (overlap 110), its main() run unchanged by this
             script in /root/bench-venv with a forward hook on its model that records each
             training batch's loss (averaged over the same 10-step windows), and its 2 torch
             threads capped at the cores the process may use.

One JSON line per run is appended to --results (commit, recipe, side, seed, the budget, the
curve's columns and points, the final evaluation, seconds); a run already there for the same
commit, recipe, side, seed and budget is skipped, so an interrupted sweep resumes.

  python3 quality/learning_curves.py --recipe tiny --seeds 1,2,3
  python3 quality/learning_curves.py --recipe mini --seeds 1,2,3
  python3 quality/learning_curves.py --recipe squad --seeds 1,2,3
  python3 quality/learning_curves.py --plot        # quality/results/learning_curves_<recipe>.png
  python3 quality/learning_curves.py --summarize   # markdown table of the final evaluations
--steps (pre-training) and --train_articles / --dev_limit (SQuAD) shorten a run for testing.
"""

import argparse
import collections
import functools
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[1:1] = [HERE, REPO, os.path.join(REPO, "tests")]
from pretraining_trajectory import (BATCH, LR, PREDICTIONS, SEQ, TOTAL, WARMUP,  # noqa: E402
                                    WEIGHT_DECAY, read_records_plain, record_files)
from runlog import append_row, commit, read_rows  # noqa: E402

SHARED = os.path.join(REPO, "..", "shared")
RESULTS = os.path.join(REPO, "quality", "results", "learning_curves.jsonl")
HF_PYTHON = "/root/bench-venv/bin/python"
HF_SQUAD = os.path.join(SHARED, "bench", "quality", "hf_squad.py")
CORPUS = ",".join(os.path.join(SHARED, "data", "corpus", "bert_format", f"{name}.sentences.txt")
                  for name in ("inaugural", "state_union"))
SQUAD_TRAIN = os.path.join(SHARED, "data", "squad", "train-v1.1.first44articles.json")
SQUAD_DEV = os.path.join(SHARED, "data", "squad", "dev-v1.1.half-a.json")
RECIPES = ("tiny", "mini", "squad")
SIDES = ("bert_tf", "hf")
EVAL_STEPS, PRETRAIN_LOOP = 20, 50
SQUAD_LOOP = 10
SQUAD_RECIPE = ["--max_seq_length=256", "--doc_stride=128", "--train_batch_size=16",
                "--learning_rate=1e-4", "--num_train_epochs=1",
                f"--iterations_per_loop={SQUAD_LOOP}"]
HF_SQUAD_RECIPE = ["--max_len", "256", "--overlap", "110", "--epochs", "1", "--lr", "1e-4",
                   "--batch", "16"]
COLUMNS = {"pretraining": ["step", "loss", "masked_lm_loss", "next_sentence_loss"],
           "squad": ["step", "loss"]}
METRICS = {"pretraining": ("masked_lm_loss", "masked_lm_accuracy"),
           "squad": ("exact_match", "f1")}


def kind(recipe):
    return "squad" if recipe == "squad" else "pretraining"


def run_checked(command, what, **kwargs):
    print(" ".join(command), file=sys.stderr, flush=True)
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), **kwargs)
    if proc.returncode:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{what} failed (exit code {proc.returncode})")
    return proc


# ---------------------------------------------------------------------------- pre-training
def pretraining_records(work_dir):
    """The glob of the recipe's records, written into work_dir/records on first use."""
    folder = os.path.join(work_dir, "records")
    if not os.path.isdir(folder):
        from helpers import minilm_dir
        partial = folder + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        run_checked([sys.executable, "create_pretraining_data.py", f"--input_file={CORPUS}",
                     f"--output_file={os.path.join(partial, 'records.tfrecord')}",
                     f"--vocab_file={minilm_dir() / 'vocab.txt'}", "--do_lower_case",
                     f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
                     "--dupe_factor=2", "--random_seed=7", "--num_workers=1"],
                    "create_pretraining_data.py")
        os.replace(partial, folder)
    return os.path.join(folder, "records*")


def write_configs(recipe, work_dir):
    """work_dir/<recipe>_bert_config.json (google format) and <recipe>_hf/config.json."""
    from bert_tf.config import BertConfig
    config = BertConfig.from_preset(recipe)
    google = os.path.join(work_dir, f"{recipe}_bert_config.json")
    config.to_json_file(google)
    os.makedirs(os.path.join(work_dir, f"{recipe}_hf"), exist_ok=True)
    hf = os.path.join(work_dir, f"{recipe}_hf", "config.json")
    config.to_json_file(hf, format="hf")
    return google, hf


def schedule(steps):
    """(warm-up steps, steps per logged point) of a run of `steps` (the recipe's at 1,200)."""
    return round(steps * WARMUP / TOTAL), min(PRETRAIN_LOOP, max(1, steps // 10))


def pretrain_bert_tf(recipe, seed, steps, work_dir):
    records = pretraining_records(work_dir)
    config, _ = write_configs(recipe, work_dir)
    out = os.path.join(work_dir, f"{recipe}_bert_tf_{seed}")
    shutil.rmtree(out, ignore_errors=True)
    warmup, loop = schedule(steps)
    flags = ["--do_train", "--do_eval", f"--train_batch_size={BATCH}",
             f"--num_train_steps={steps}", f"--num_warmup_steps={warmup}",
             f"--learning_rate={LR}", f"--max_seq_length={SEQ}",
             f"--max_predictions_per_seq={PREDICTIONS}", f"--max_eval_steps={EVAL_STEPS}",
             f"--eval_batch_size={BATCH}", f"--iterations_per_loop={loop}", f"--seed={seed}"]
    run_checked([sys.executable, "run_pretraining.py", f"--bert_config_file={config}",
                 f"--input_file={records}", f"--output_dir={out}", *flags],
                f"run_pretraining.py ({recipe}, seed {seed})")
    from bert_tf.metrics.results import read_eval_results
    scalars = train_scalars(out)
    points = [[step, loss, scalars["masked_lm_loss"][step], scalars["next_sentence_loss"][step]]
              for step, loss in sorted(scalars["loss"].items())]
    return flags, points, read_eval_results(os.path.join(out, "eval_results.txt"))


def train_scalars(out):
    """{tag: {step: value}} of a bert_tf run's training summaries (output_dir/train)."""
    from bert_tf.plots import read_scalars
    return {tag: dict(points) for tag, points in read_scalars(os.path.join(out, "train")).items()}


def pretrain_hf(recipe, seed, steps, work_dir):
    """Runs hf_pretrain_worker in the PyTorch venv; returns (flags, points, eval)."""
    records = pretraining_records(work_dir)
    _, config = write_configs(recipe, work_dir)
    flags = ["--seed", str(seed), "--steps", str(steps)]
    proc = run_checked([HF_PYTHON, os.path.abspath(__file__), "--hf_worker", config,
                        "--records", records, *flags], f"HF pre-training ({recipe}, seed {seed})")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return flags, result["points"], result["eval"]


def hf_pretrain_worker(config_path, pattern, seed, steps):
    """The HF side of a pre-training run, in the PyTorch venv: {"points", "eval"}."""
    import numpy as np
    import torch
    from transformers import (BertConfig, BertForPreTraining,
                              get_linear_schedule_with_warmup)
    from hf_pretraining import adamw, pretraining_heads
    torch.set_num_threads(len(os.sched_getaffinity(0)))   # no more threads than cores (taskset)
    torch.manual_seed(seed)
    model = BertForPreTraining(BertConfig.from_json_file(config_path))
    data = {k: torch.from_numpy(v) for k, v in read_records_plain(record_files(pattern)).items()}
    n = len(data["input_ids"])
    optimizer, _ = adamw(model, LR, WEIGHT_DECAY)
    warmup, loop = schedule(steps)
    lr_schedule = get_linear_schedule_with_warmup(optimizer, warmup, steps)
    heads = functools.partial(pretraining_heads, model)

    rng = np.random.RandomState(seed)
    order, position, points = rng.permutation(n), 0, []
    window = collections.defaultdict(float)
    model.train()
    for step in range(1, steps + 1):
        if position + BATCH > n:
            order, position = rng.permutation(n), 0
        index = torch.from_numpy(order[position:position + BATCH])
        b = {k: v[index] for k, v in data.items()}
        position += BATCH
        xent, _, nsp, _ = heads(b)
        w = b["masked_lm_weights"]
        mlm_sum = (xent * w).sum()
        loss = mlm_sum / (w.sum() + 1e-5) + nsp.mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        lr_schedule.step()
        optimizer.zero_grad()
        for key, value in (("loss", loss), ("mlm", mlm_sum), ("weight", w.sum()),
                           ("nsp", nsp.mean()), ("steps", 1)):
            window[key] += float(value)
        if step % loop == 0 or step == steps:     # as bert_tf's per-loop summary
            points.append([step, window["loss"] / window["steps"],
                           window["mlm"] / window["weight"], window["nsp"] / window["steps"]])
            window.clear()

    model.eval()
    totals = collections.defaultdict(float)
    with torch.no_grad():
        for i in range(EVAL_STEPS):        # the first batches in file order, as run_pretraining
            b = {k: v[i * BATCH:(i + 1) * BATCH] for k, v in data.items()}
            xent, logits, nsp, nsp_logits = heads(b)
            w, labels = b["masked_lm_weights"], b["next_sentence_labels"][:, 0]
            totals["mlm"] += float((xent * w).sum())
            totals["mlm_correct"] += float(((logits.argmax(-1) == b["masked_lm_ids"]) * w).sum())
            totals["weight"] += float(w.sum())
            totals["nsp"] += float(nsp.sum())
            totals["nsp_correct"] += float((nsp_logits.argmax(-1) == labels).sum())
            totals["count"] += len(labels)
    evaluation = {"masked_lm_loss": totals["mlm"] / totals["weight"],
                  "masked_lm_accuracy": totals["mlm_correct"] / totals["weight"],
                  "next_sentence_loss": totals["nsp"] / totals["count"],
                  "next_sentence_accuracy": totals["nsp_correct"] / totals["count"]}
    print(json.dumps({"points": points, "eval": evaluation}))


# ---------------------------------------------------------------------------- SQuAD
def squad_files(work_dir, train_articles, dev_limit):
    """work_dir's training file (the first `train_articles` articles) and dev file (the first
    `dev_limit` questions), written when absent; returns their paths."""
    from squad_quality import slice_squad
    train = os.path.join(work_dir, f"squad_train_{train_articles}articles.json")
    dev = os.path.join(work_dir, f"squad_dev_{dev_limit}.json")
    if not os.path.exists(train):
        with open(SQUAD_TRAIN, encoding="utf-8") as f:
            document = json.load(f)
        with open(train + ".tmp", "w", encoding="utf-8") as f:
            json.dump(dict(document, data=document["data"][:train_articles]), f)
        os.replace(train + ".tmp", train)
    if not os.path.exists(dev):
        slice_squad(SQUAD_DEV, dev + ".tmp", dev_limit)
        os.replace(dev + ".tmp", dev)
    return train, dev


def squad_bert_tf(seed, train, dev, work_dir):
    from helpers import minilm_dir
    model = minilm_dir()
    out = os.path.join(work_dir, f"squad_bert_tf_{seed}")
    shutil.rmtree(out, ignore_errors=True)
    flags = [*SQUAD_RECIPE, "--do_train", "--do_predict", "--do_eval", f"--seed={seed}"]
    run_checked([sys.executable, "run_squad.py", f"--vocab_file={model / 'vocab.txt'}",
                 f"--bert_config_file={model / 'config.json'}", f"--init_checkpoint={model}",
                 f"--train_file={train}", f"--predict_file={dev}", f"--output_dir={out}",
                 *flags], f"run_squad.py (seed {seed})")
    with open(os.path.join(out, "eval_results.json"), encoding="utf-8") as f:
        evaluation = json.load(f)
    points = [[step, loss] for step, loss in sorted(train_scalars(out)["loss"].items())]
    return flags, points, evaluation


def squad_hf(seed, train, dev):
    flags = [*HF_SQUAD_RECIPE, "--seed", str(seed)]
    proc = run_checked([HF_PYTHON, os.path.abspath(__file__), "--hf_squad_worker",
                        "--train", train, "--dev", dev, *flags], f"hf_squad.py (seed {seed})")
    *_, result, curve = proc.stdout.strip().splitlines()
    result = json.loads(result)
    return flags, json.loads(curve)["points"], {k: result[k] for k in
                                                ("exact_match", "f1", "total", "features")}


def hf_squad_worker(argv):
    """Runs ../shared/bench/quality/hf_squad.py's main() unchanged, observed: a forward hook on
    its model records every training batch's loss, printed after its result line as the means
    over the same SQUAD_LOOP-step windows as bert_tf's; torch threads capped at the cores this
    process may use (hf_squad.py asks for 2)."""
    import torch
    sys.path.insert(0, os.path.dirname(HF_SQUAD))
    import hf_squad
    cores, set_threads = len(os.sched_getaffinity(0)), torch.set_num_threads
    torch.set_num_threads = lambda n: set_threads(min(n, cores))
    losses, load = [], hf_squad.BertForQuestionAnswering.from_pretrained

    def observed(*args, **kwargs):
        model = load(*args, **kwargs)
        model.register_forward_hook(
            lambda module, inputs, out: losses.append(float(out.loss))
            if module.training and out.loss is not None else None)
        return model
    hf_squad.BertForQuestionAnswering = type(
        "Observed", (), {"from_pretrained": staticmethod(observed)})
    sys.argv = [HF_SQUAD, *argv]
    hf_squad.main()
    points = [[min(start + SQUAD_LOOP, len(losses)),
               sum(losses[start:start + SQUAD_LOOP]) / len(losses[start:start + SQUAD_LOOP])]
              for start in range(0, len(losses), SQUAD_LOOP)]
    print(json.dumps({"points": points}), flush=True)


# ---------------------------------------------------------------------------- runs and results
def run(args):
    head = commit()
    budget = ({"steps": args.steps} if kind(args.recipe) == "pretraining" else
              {"train_articles": args.train_articles, "dev_limit": args.dev_limit})
    done = {(r["recipe"], r["side"], r["seed"], json.dumps(r["budget"]))
            for r in read_rows(args.results) if r["commit"] == head}
    os.makedirs(args.work_dir, exist_ok=True)
    if args.recipe == "squad":
        train, dev = squad_files(args.work_dir, args.train_articles, args.dev_limit)
    for seed in [int(s) for s in args.seeds.split(",")]:
        for side in args.sides.split(","):
            if (args.recipe, side, seed, json.dumps(budget)) in done:
                print(f"skip {args.recipe} {side} seed {seed}: in {args.results}", flush=True)
                continue
            started = time.time()
            if args.recipe == "squad" and side == "bert_tf":
                flags, points, evaluation = squad_bert_tf(seed, train, dev, args.work_dir)
            elif args.recipe == "squad":
                flags, points, evaluation = squad_hf(seed, train, dev)
            elif side == "bert_tf":
                flags, points, evaluation = pretrain_bert_tf(args.recipe, seed, args.steps,
                                                             args.work_dir)
            else:
                flags, points, evaluation = pretrain_hf(args.recipe, seed, args.steps,
                                                        args.work_dir)
            row = {"commit": head, "recipe": args.recipe, "side": side, "seed": seed,
                   "budget": budget, "flags": flags, "columns": COLUMNS[kind(args.recipe)],
                   "points": [[p[0]] + [round(x, 5) for x in p[1:]] for p in points],
                   "eval": evaluation, "seconds": round(time.time() - started, 1)}
            append_row(args.results, row)
            shown = ", ".join(f"{m} {evaluation[m]:.4g}" for m in METRICS[kind(args.recipe)])
            print(f"{args.recipe} {side} seed {seed}: {shown}, {len(points)} curve points "
                  f"({row['seconds']:.0f} s)", flush=True)


def latest_runs(rows, recipe, commit_prefix):
    """{side: {seed: row}} of one recipe: rows of `commit_prefix`, else of the commit and budget
    of the recipe's last row (the newest sweep)."""
    rows = [r for r in rows if r["recipe"] == recipe and r["commit"].startswith(commit_prefix)]
    if not rows:
        return {}
    last = rows[-1]
    runs = collections.defaultdict(dict)
    for r in rows:
        if r["commit"] == last["commit"] and r["budget"] == last["budget"]:
            runs[r["side"]][r["seed"]] = r
    return runs


def mean_curve(runs):
    """(steps, [column means]) over the seeds, at the steps every seed logged."""
    by_step = [{p[0]: p[1:] for p in r["points"]} for r in runs]
    steps = sorted(set.intersection(*(set(s) for s in by_step)))   # may be none
    return steps, [[sum(s[step][j] for s in by_step) / len(by_step) for step in steps]
                   for j in range(len(runs[0]["columns"]) - 1)]


def plot(args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows, out_dir = read_rows(args.results), os.path.dirname(os.path.abspath(args.results))
    colours = {"bert_tf": "tab:blue", "hf": "tab:orange"}
    for recipe in RECIPES:
        runs = latest_runs(rows, recipe, args.commit)
        if not runs:
            continue
        names = COLUMNS[kind(recipe)][1:]
        fig, axes = plt.subplots(1, len(names), figsize=(max(7.5, 5.5 * len(names)), 4.6),
                                 squeeze=False)
        for side, seeds in sorted(runs.items()):
            seed_runs = [seeds[s] for s in sorted(seeds)]
            steps, means = mean_curve(seed_runs)
            metric = METRICS[kind(recipe)]
            label = f"{side} ({len(seeds)} seeds; " + ", ".join(
                f"{m} {sum(r['eval'][m] for r in seed_runs) / len(seed_runs):.4g}"
                for m in metric) + ")"
            for j, (ax, name) in enumerate(zip(axes[0], names)):
                for r in seed_runs:
                    ax.plot([p[0] for p in r["points"]], [p[j + 1] for p in r["points"]],
                            color=colours.get(side), linewidth=0.6, alpha=0.5,
                            marker="." if len(r["points"]) < 5 else None)
                ax.plot(steps, means[j], color=colours.get(side), linewidth=2.2,
                        marker="o" if len(steps) < 5 else None,
                        label=label if j == 0 else side)
                ax.set_title(name)
                ax.set_xlabel("step")
                ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)
        head = next(iter(next(iter(runs.values())).values()))
        fig.suptitle(f"{recipe}: training loss against step (thin: each seed, thick: their "
                     f"mean)\ncommit {head['commit']}, {head['budget']}", fontsize=10)
        fig.tight_layout()
        path = os.path.join(out_dir, f"learning_curves_{recipe}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"wrote {path}")


def summarize(args):
    rows = read_rows(args.results)
    for recipe in RECIPES:
        runs = latest_runs(rows, recipe, args.commit)
        if not runs:
            continue
        seeds = sorted({s for side in runs.values() for s in side})
        head = next(iter(next(iter(runs.values())).values()))
        print(f"\n### {recipe} (commit {head['commit']}, {head['budget']})\n")
        print("| metric | side | " + " | ".join(f"seed {s}" for s in seeds)
              + " | mean |\n|---|---|" + "---|" * (len(seeds) + 1))
        metrics = METRICS[kind(recipe)] + ("last logged loss",)
        for metric in metrics:
            value = (lambda r: r["points"][-1][1] if r["points"] else None) if (
                metric == "last logged loss") else (lambda r, m=metric: r["eval"][m])
            means = {}
            for side in SIDES:
                values = {s: value(runs[side][s]) for s in seeds if s in runs.get(side, {})}
                values = {s: v for s, v in values.items() if v is not None}
                if not values:
                    continue
                means[side] = sum(values.values()) / len(values)
                print(f"| {metric} | {side} | " + " | ".join(
                    f"{values[s]:.4f}" if s in values else "" for s in seeds)
                    + f" | **{means[side]:.4f}** |")
            if len(means) == 2:
                print(f"| {metric} | bert_tf - hf | " + " | " * len(seeds)
                      + f"**{means['bert_tf'] - means['hf']:+.4f}** |")


def main():
    if sys.argv[1:2] == ["--hf_squad_worker"]:       # the rest are hf_squad.py's arguments
        return hf_squad_worker(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", choices=RECIPES)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--work_dir", default="/tmp/bert_tf_quality/learning_curves")
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--plot", action="store_true",
                        help="one PNG per recipe beside --results")
    parser.add_argument("--summarize", action="store_true",
                        help="print a markdown table of the final evaluations")
    parser.add_argument("--commit", default="",
                        help="--plot/--summarize: runs of this commit (default: the newest)")
    parser.add_argument("--steps", type=int, default=TOTAL, help=argparse.SUPPRESS)
    parser.add_argument("--train_articles", type=int, default=5, help=argparse.SUPPRESS)
    parser.add_argument("--dev_limit", type=int, default=1000)
    parser.add_argument("--hf_worker", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--records", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hf_worker:
        return hf_pretrain_worker(args.hf_worker, args.records, args.seed, args.steps)
    if args.plot or args.summarize:
        if args.plot:
            plot(args)
        if args.summarize:
            summarize(args)
        return
    if not args.recipe:
        parser.error("--recipe is required to run (or give --plot / --summarize)")
    unknown = set(args.sides.split(",")) - set(SIDES)
    if unknown:
        parser.error(f"unknown side(s) {sorted(unknown)}: use {', '.join(SIDES)}")
    run(args)


if __name__ == "__main__":
    main()
