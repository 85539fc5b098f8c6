"""Checks that run_pretraining's training step and dropout match HuggingFace PyTorch's.

The issue-26 tiny recipe, step for step: a tiny BERT (L=2, H=128, A=2, vocab 30,522) on static-
mask records of create_pretraining_data.py (seq 128, 20 predictions), batch 32, lr 1e-3, linear
warm-up over 100 of 1,200 steps then linear decay, weight decay 0.01 except LayerNorm and biases,
clipping 1.0. Every random element is taken out:

  weights:  drawn once by bert_tf (BertPretrainer, --seed), written in HF layout with bert_tf's
            converter (bert_tf.checkpoints.hf.write_hf) to work_dir/init; bert_tf loads them
            back with init_from_checkpoint, HF with BertForPreTraining.from_pretrained, and each
            side checks that what it holds equals the file bit for bit;
  data:     the same records in the same order: each side reads the TFRecords itself (bert_tf
            with its pre-training input pipeline, HF with a plain TFRecord/Example reader below,
            as the PyTorch venv has no TensorFlow) and takes batches in one numpy permutation;
  dropout:  0 (checked separately, by its effect, as in classifier_trajectory.py);
  step:     bert_tf's Trainer with create_optimizer(..., "adamw_torch"), against
            torch.optim.AdamW (epsilon 1e-8, the same decay exclusions), clip_grad_norm_ and
            get_linear_schedule_with_warmup, with google-research's heads (masked-LM on the
            masked positions only, loss sum(w * xent) / (sum(w) + 1e-5), plus NSP).

Each side records per step the total, masked-LM and next-sentence losses and the learning rate
the step applied; `compare` prints them and exits 1 when they part beyond float32 rounding or
the dropout noise differs by more than 4 standard errors. With --optimizer=adamw the bert_tf
side runs google-research's optimizer (no bias correction) instead; `compare` shows it beside the
others, as information:

  python3 quality/pretraining_trajectory.py --side ours --work_dir /tmp/ptraj --records 'R*'
  ~/bench-venv/bin/python quality/pretraining_trajectory.py --side hf --work_dir /tmp/ptraj --records 'R*'
  python3 quality/pretraining_trajectory.py --side ours --optimizer adamw --work_dir /tmp/ptraj --records 'R*'
  python3 quality/pretraining_trajectory.py --side compare --work_dir /tmp/ptraj

--float64 trains the HF side in float64 (hf64.npz; 60 steps are enough): `compare` then checks
that bert_tf's float32 losses are no further from it than HF's float32 losses are.

Differences from ../shared/bench/quality/hf_pretrain.py, named: it uses epsilon 1e-6 and a
warm-up one step ahead ((s + 1) / 100 at step s, transformers' schedule s / 100). Results:
quality/results/trajectory.md.
"""
import argparse
import glob
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np

from classifier_trajectory import dropout_noise

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH, SEQ, PREDICTIONS = 32, 128, 20
LR, TOTAL, WARMUP, WEIGHT_DECAY = 1e-3, 1200, 100, 0.01
FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
            "masked_lm_weights", "next_sentence_labels")
# Training from random weights at lr 1e-3 amplifies float32 rounding: HF's own float32 run
# drifts from its float64 run by 1.7e-4 within 55 steps (quality/results/trajectory.md). So
# per-step losses are held to 5x that over the first EXACT_STEPS steps, and over the whole run
# the means of WINDOW-step windows (where the drift averages out, a real difference does not).
EXACT_STEPS, LOSS_TOLERANCE = 100, 1e-3
WINDOW, WINDOW_TOLERANCE = 25, 1e-3
LR_TOLERANCE = 1e-9
NOISE_STANDARD_ERRORS = 4.0


def record_files(pattern):
    files = sorted(f for f in glob.glob(pattern) if not f.endswith(".json"))
    if not files:
        raise SystemExit(f"no TFRecord files match {pattern!r}")
    return files


def order(num_records, steps, seed):
    """The record indices of each step's batch: one permutation, no record twice."""
    if steps * BATCH > num_records:
        raise SystemExit(f"{steps} steps x {BATCH} need {steps * BATCH} records, "
                         f"there are {num_records}")
    return np.random.RandomState(seed).permutation(num_records)[:steps * BATCH].reshape(
        steps, BATCH)


def batches_of(columns, steps, seed):
    """[{feature: array [BATCH, ...]}] in the fixed order, from {feature: [N, ...]}."""
    n = len(columns["input_ids"])
    return [{k: v[idx] for k, v in columns.items()} for idx in order(n, steps, seed)]


# ---------------------------------------------------------------------------- HF-side reader
def _varint(buf, i):
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(buf):
    """(field number, wire type, value) of one protobuf message (value: int or bytes)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
        yield number, wire, value


def _feature_values(feature):
    """The values of one tf.train.Feature: FloatList (2) or Int64List (3), packed or not."""
    for kind, _, values in _fields(feature):
        out = []
        for _, wire, v in _fields(values):
            if kind == 2:
                out.extend(struct.unpack(f"<{len(v) // 4}f", v) if wire == 2 else
                           struct.unpack("<f", v))
            elif wire == 2:
                j = 0
                while j < len(v):
                    x, j = _varint(v, j)
                    out.append(x - (1 << 64) if x >= 1 << 63 else x)
            else:
                out.append(v - (1 << 64) if v >= 1 << 63 else v)
        return out
    return []


def read_records_plain(files):
    """{feature: array [N, ...]} of tf.train.Examples in TFRecord files, without TensorFlow."""
    columns = {k: [] for k in FEATURES}
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        i = 0
        while i < len(data):
            (length,) = struct.unpack("<Q", data[i:i + 8])
            example = data[i + 12:i + 12 + length]
            i += 12 + length + 4
            found = {}
            for _, _, features in _fields(example):           # Example.features
                for _, _, entry in _fields(features):           # map<string, Feature>
                    parts = dict((n, v) for n, _, v in _fields(entry))
                    found[parts[1].decode()] = _feature_values(parts[2])
            for k in FEATURES:
                columns[k].append(found[k])
    out = {k: np.array(v, np.float32 if k == "masked_lm_weights" else np.int64)
           for k, v in columns.items()}
    out["next_sentence_labels"] = out["next_sentence_labels"].reshape(-1, 1)
    return out


# ---------------------------------------------------------------------------- bert_tf side
def read_records_ours(files):
    """{feature: array [N, ...]} through bert_tf's pre-training input pipeline, in file order."""
    sys.path.insert(0, REPO)
    from bert_tf.data.pretraining.dataset import make_pretraining_dataset
    columns = {k: [] for k in FEATURES}
    for batch in make_pretraining_dataset(files, 1024, SEQ, PREDICTIONS, is_training=False):
        for k in FEATURES:
            columns[k].append(batch[k].numpy())
    return {k: np.concatenate(v) for k, v in columns.items()}


def tiny_config(dropout):
    from bert_tf.config import BertConfig
    return BertConfig.from_preset("tiny", hidden_dropout_prob=dropout,
                                  attention_probs_dropout_prob=dropout)


def draw_initial_weights(work_dir, seed):
    """work_dir/init: a BertPretrainer drawn by bert_tf, in HF layout; returns its arrays."""
    import keras
    from bert_tf.checkpoints.hf import write_hf
    from bert_tf.checkpoints.names import extract
    from bert_tf.model import BertEncoder, BertPretrainer
    keras.utils.set_random_seed(seed)
    config = tiny_config(0.1)
    arrays = extract(BertPretrainer(BertEncoder(config)))
    write_hf(arrays, os.path.join(work_dir, "init"), config)
    return arrays


def weights_differing(model, arrays):
    """How many weights of `model` differ from `arrays` (google names), and how many compared."""
    from bert_tf.checkpoints.names import extract
    held = extract(model)
    if set(held) != set(arrays):
        raise SystemExit(f"weight names differ: {sorted(set(held) ^ set(arrays))}")
    return sum(int(not np.array_equal(held[k], arrays[k])) for k in arrays), len(arrays)


def run_ours(a, batches):
    import keras
    import tensorflow as tf
    from bert_tf.training.setup import init_from_checkpoint
    from bert_tf.model import BertEncoder, BertPretrainer
    from bert_tf.objectives.pretraining import PretrainingObjective
    from bert_tf.training.optimization import create_optimizer
    from bert_tf.training.trainer import Trainer

    init = os.path.join(a.work_dir, "init")
    if a.optimizer == "adamw_torch" or not os.path.isdir(init):
        arrays = draw_initial_weights(a.work_dir, a.seed)
    else:   # the information run reuses the weights the checked run drew
        from bert_tf.checkpoints.hf import read_hf
        arrays, _ = read_hf(init)
    model = BertPretrainer(BertEncoder(tiny_config(0.0)))
    init_from_checkpoint(model, init)
    differing, compared = weights_differing(model, arrays)

    optimizer = create_optimizer(LR, TOTAL, WARMUP, a.optimizer, weight_decay=WEIGHT_DECAY)
    tensors = [{k: tf.constant(v, tf.float32 if k == "masked_lm_weights" else tf.int32)
                for k, v in b.items()} for b in batches]
    spec = {k: tf.TensorSpec(v.shape, v.dtype) for k, v in tensors[0].items()}
    trainer = Trainer(model, optimizer, PretrainingObjective(), steps_per_loop=1, checkpoint_steps=0)
    decayed = sum(int(np.prod(v.shape)) for v in model.trainable_variables
                  if optimizer._use_weight_decay(v))
    schedule = optimizer._learning_rate
    rows = []

    def after(step, values):
        rows.append([values["loss"], values["masked_lm_loss"], values["next_sentence_loss"],
                     float(schedule(step - 1))])   # the rate step `step` applied
    trainer.train(lambda ctx: tf.data.Dataset.from_generator(lambda: iter(tensors),
                                                             output_signature=spec),
                  len(tensors), BATCH, after_loop=after)

    keras.utils.set_random_seed(0)
    noisy = BertPretrainer(BertEncoder(tiny_config(0.1)))
    init_from_checkpoint(noisy, init)
    inputs = {k: tensors[0][k] for k in ("input_ids", "input_mask", "segment_ids")}

    def forward(training):
        out = noisy.encoder(inputs, training=training)
        return out["sequence_output"].numpy(), out["pooled_output"].numpy()
    return {"rows": np.array(rows), "weights_differing": [differing, compared],
            "decayed_parameters": decayed,
            "dropout_noise": dropout_noise(forward, batches[0]["input_mask"])}


# ---------------------------------------------------------------------------- HF side
def run_hf(a, batches):
    import torch
    from safetensors.numpy import load_file
    from transformers import BertForPreTraining, get_linear_schedule_with_warmup
    from hf_pretraining import adamw, pretraining_heads
    torch.manual_seed(0)
    torch.set_num_threads(len(os.sched_getaffinity(0)))   # no more threads than cores (taskset)
    init = os.path.join(a.work_dir, "init")
    model, info = BertForPreTraining.from_pretrained(
        init, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        output_loading_info=True)
    missing = [k for k in info["missing_keys"] if not k.startswith("cls.predictions.decoder")]
    if missing or info["unexpected_keys"]:
        raise SystemExit(f"loading {init}: missing {missing}, unexpected "
                         f"{info['unexpected_keys']}")
    stored, held = load_file(os.path.join(init, "model.safetensors")), model.state_dict()
    differing = sum(int(not np.array_equal(held[k].numpy(), v)) for k, v in stored.items())
    tied = (model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight)

    if a.float64:
        model.double()
    optimizer, decayed = adamw(model, LR, WEIGHT_DECAY)
    schedule = get_linear_schedule_with_warmup(optimizer, WARMUP, TOTAL)

    def losses(b):
        xent, _, nsp, _ = pretraining_heads(model, b)
        w = b["masked_lm_weights"]
        mlm_sum = (xent * w).sum()
        return mlm_sum / (w.sum() + 1e-5) + nsp.mean(), mlm_sum / w.sum(), nsp.mean()

    model.train()
    rows = []
    for b in batches:
        b = {k: torch.from_numpy(v.astype(np.float64) if a.float64 and v.dtype == np.float32
                                 else v) for k, v in b.items()}
        lr = schedule.get_last_lr()[0]
        loss, mlm, nsp = losses(b)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        rows.append([loss.item(), mlm.item(), nsp.item(), lr])
    if a.float64:
        return {"rows": np.array(rows)}

    noisy = BertForPreTraining.from_pretrained(init).bert   # config's dropout 0.1
    first = {k: torch.from_numpy(batches[0][k]) for k in ("input_ids", "input_mask",
                                                          "segment_ids")}

    def forward(training):
        noisy.train(training)
        with torch.no_grad():
            out = noisy(input_ids=first["input_ids"], attention_mask=first["input_mask"],
                        token_type_ids=first["segment_ids"])
        return out.last_hidden_state.numpy(), out.pooler_output.numpy()
    return {"rows": np.array(rows), "weights_differing": [differing, len(stored)],
            "decoder_tied": int(tied), "decayed_parameters": decayed,
            "dropout_noise": dropout_noise(forward, batches[0]["input_mask"])}


# ---------------------------------------------------------------------------- compare
def record(work_dir, results, summary):
    """work_dir/summary.json, and one JSON line appended to `results` (when given) with the
    commit of the checked code (+dirty when bert_tf/ has uncommitted changes) and the date."""
    with open(os.path.join(work_dir, "summary.json"), "w") as f:
        json.dump(summary, f)
    if results:
        git = lambda *args: subprocess.run(["git", "-C", REPO, *args], capture_output=True,
                                           text=True, check=True).stdout.strip()
        dirty = "+dirty" if git("status", "--porcelain", "bert_tf") else ""
        line = dict(summary, commit=git("rev-parse", "--short", "HEAD") + dirty,
                    date=time.strftime("%Y-%m-%d", time.gmtime()))
        with open(results, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


def compare(work_dir, results=None):
    ours, hf = (np.load(os.path.join(work_dir, f"{side}.npz")) for side in ("ours", "hf"))
    info_path = os.path.join(work_dir, "ours_adamw.npz")
    google = np.load(info_path)["rows"] if os.path.exists(info_path) else None
    a, b = ours["rows"], hf["rows"]
    steps = min(len(a), len(b))
    a, b = a[:steps], b[:steps]
    ids_equal = bool(np.array_equal(ours["first_ids"], hf["first_ids"]))
    print("step   total: bert_tf  HF        diff     | masked LM diff | NSP diff | lr"
          + ("         | adamw (google) total" if google is not None else ""))
    for i in range(steps):
        if i < 10 or (i + 1) % 25 == 0:
            line = (f"{i + 1:4d}   {a[i, 0]:.5f}  {b[i, 0]:.5f}  {a[i, 0] - b[i, 0]:+.1e}  | "
                    f"{a[i, 1] - b[i, 1]:+.1e}        | {a[i, 2] - b[i, 2]:+.1e} | "
                    f"{b[i, 3]:.2e}")
            if google is not None and i < len(google):
                line += f" | {google[i, 0]:.5f}"
            print(line)
    diff = np.abs(a - b)
    first_over = np.nonzero(diff[:EXACT_STEPS, :3].max(1) > LOSS_TOLERANCE)[0]
    windows = steps // WINDOW
    window_diff = np.abs((a[:windows * WINDOW, :3] - b[:windows * WINDOW, :3]).reshape(
        windows, WINDOW, 3).mean(1)).max(0)
    print(f"records of step 1 identical on both sides: {ids_equal}")
    print(f"initial weights differing from work_dir/init: bert_tf {ours['weights_differing'][0]}"
          f" of {ours['weights_differing'][1]}, HF {hf['weights_differing'][0]} of "
          f"{hf['weights_differing'][1]} (HF decoder tied to the word embeddings: "
          f"{bool(hf['decoder_tied'])})")
    print(f"parameters under weight decay: bert_tf {int(ours['decayed_parameters']):,}, "
          f"HF {int(hf['decayed_parameters']):,}")
    for name, j in (("total", 0), ("masked-LM", 1), ("next-sentence", 2)):
        print(f"largest {name} loss difference over {steps} steps: {diff[:, j].max():.2e} "
              f"(at step {int(diff[:, j].argmax()) + 1})")
    print(f"first of the first {EXACT_STEPS} steps past the tolerance {LOSS_TOLERANCE:g}: "
          f"{int(first_over[0]) + 1 if len(first_over) else 'none'}")
    print(f"largest difference of {WINDOW}-step mean losses (total, masked-LM, next-sentence): "
          + ", ".join(f"{x:.1e}" for x in window_diff) + f" (tolerance {WINDOW_TOLERANCE:g})")
    rounding_ok = True
    exact_path = os.path.join(work_dir, "hf64.npz")
    if os.path.exists(exact_path):       # how far float32 rounding alone moves each side
        exact = np.load(exact_path)["rows"]
        n = min(steps, len(exact))
        ours_drift = np.abs(a[:n, 0] - exact[:n, 0]).max()
        hf_drift = np.abs(b[:n, 0] - exact[:n, 0]).max()
        rounding_ok = bool(ours_drift <= 2 * hf_drift)
        print(f"against HF in float64 over {n} steps, largest total-loss difference: bert_tf "
              f"{ours_drift:.1e}, HF float32 {hf_drift:.1e} (bert_tf must be within 2x HF's)")
    print(f"largest learning-rate difference: {diff[:, 3].max():.1e} (tolerance {LR_TOLERANCE:g})")
    if google is not None:
        n = min(steps, len(google))
        print(f"adamw (google-research, no bias correction), information: total loss at step "
              f"{n} {google[n - 1, 0]:.4f} vs HF {b[n - 1, 0]:.4f}; masked-LM "
              f"{google[n - 1, 1]:.4f} vs {b[n - 1, 1]:.4f}; mean over the last 25 steps "
              f"{google[n - 25:n, 1].mean():.4f} vs {b[n - 25:n, 1].mean():.4f}")
    noise_ok = True
    for name, i in (("final hidden states, per token", 0), ("pooled output", 2)):
        x, y = ours["dropout_noise"][i:i + 2], hf["dropout_noise"][i:i + 2]
        z = abs(x[0] - y[0]) / np.hypot(x[1], y[1])
        noise_ok &= bool(z <= NOISE_STANDARD_ERRORS)
        print(f"dropout noise, {name}: bert_tf {x[0]:.5f} +- {x[1]:.5f}, HF {y[0]:.5f} +- "
              f"{y[1]:.5f} ({z:.1f} standard errors apart; tolerance {NOISE_STANDARD_ERRORS:g})")
    ok = (ids_equal and ours["weights_differing"][0] == 0 and hf["weights_differing"][0] == 0
          and ours["decayed_parameters"] == hf["decayed_parameters"] and not len(first_over)
          and window_diff.max() <= WINDOW_TOLERANCE and diff[:, 3].max() <= LR_TOLERANCE
          and rounding_ok and noise_ok)
    print("MATCH" if ok else "MISMATCH")
    summary = {"check": "pretraining", "steps": steps, "match": bool(ok),
               "max_loss_diff": [float(diff[:, j].max()) for j in range(3)],
               "max_lr_diff": float(diff[:, 3].max()),
               "first_step_over": int(first_over[0]) + 1 if len(first_over) else None,
               "max_window_mean_diff": window_diff.tolist(),
               "dropout_noise_ours": ours["dropout_noise"].tolist(),
               "dropout_noise_hf": hf["dropout_noise"].tolist(),
               "losses_ours": a[:, :3].round(6).tolist(), "losses_hf": b[:, :3].round(6).tolist(),
               "lr": b[:, 3].tolist()}
    if google is not None:
        summary["losses_ours_adamw"] = google[:steps, :3].round(6).tolist()
    record(work_dir, results, summary)
    return 0 if ok else 1


def side_parser(description, steps, seed):
    """The flags every trajectory check has: which side runs, where, for how many steps."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--side", required=True, choices=["ours", "hf", "compare"])
    ap.add_argument("--work_dir", required=True)
    ap.add_argument("--results", help="compare: append the summary as one JSON line to this "
                    "file, with the commit of the checked code")
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--float64", action="store_true",
                    help="HF side only: train in float64 (hf64.npz), the reference that measures "
                    "how far float32 rounding alone moves the losses")
    return ap


def main():
    ap = side_parser(__doc__.split("\n\n")[0], steps=300, seed=7)
    ap.add_argument("--records", help="TFRecord glob of create_pretraining_data.py's output")
    ap.add_argument("--optimizer", default="adamw_torch", choices=["adamw_torch", "adamw"],
                    help="bert_tf side only: adamw (google-research's) is logged as information")
    a = ap.parse_args()
    if a.side == "compare":
        return compare(a.work_dir, a.results)
    if not a.records:
        ap.error("--records is required for --side ours|hf")
    files = record_files(a.records)
    os.makedirs(a.work_dir, exist_ok=True)
    if a.side == "ours":
        columns = read_records_ours(files)
        result = run_ours(a, batches_of(columns, a.steps, a.seed))
        name = "ours" if a.optimizer == "adamw_torch" else "ours_adamw"
    else:
        columns = read_records_plain(files)
        result = run_hf(a, batches_of(columns, a.steps, a.seed))
        name = "hf64" if a.float64 else "hf"
    result["first_ids"] = batches_of(columns, 1, a.seed)[0]["input_ids"].astype(np.int64)
    path = os.path.join(a.work_dir, f"{name}.npz")
    np.savez(path + ".tmp.npz", **result)
    os.replace(path + ".tmp.npz", path)
    print(f"{name}: {len(result['rows'])} steps, final loss {result['rows'][-1, 0]:.4f} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
