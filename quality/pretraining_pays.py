"""Does our own pre-training pay downstream? (issue #54, part 1)

A thin driver over the repository's runners, one stage at a time (each stage reuses what an
earlier run of it left in --work_dir):

  prepare   split the shared corpus (../shared/data/corpus/bert_format/*.sentences.txt; the last
            10 wikitext documents are held out), learn a WordPiece vocabulary on the training
            part (build_vocab.py), write unmasked pre-training records (create_pretraining_data.py
            --dynamic_masking), the model config, and the SST-2 2k training sample (a fixed-seed
            sample of train.tsv, --sst2_seed) beside the full SST-2 dev set, and the lr
            validation splits; --extra_text=sst2_train adds the sentence column of SST-2
            train.tsv (labels unread), as pseudo-documents of --extra_doc_lines lines, to the
            pre-training and vocabulary text (task-adaptive pre-training); pair_train (the list
            is comma-separated) adds each MRPC and STS-B train.tsv pair, labels unused, as a
            two-sentence document; --negatives=source
            draws each NotNext segment from the same source file (one records run per source,
            then one shuffle over all), so next sentence cannot be solved by telling sources apart;
  pretrain  run_pretraining.py from random weights, or from --pretrain_init to continue an
            earlier (shorter-sequence) run (whole-word dynamic masking, next sentence,
            --pretrain_* flags), evaluating held-out masked-LM loss every --save_steps steps;
            every checkpoint it writes is copied to work_dir/keep/ (the runner keeps the last
            5 only), and the masked-LM curve (train and held-out) goes to --curve;
  finetune  run_classifier.py on SST-2-2k and MRPC from the final pre-trained checkpoint and
            from random weights of the same config and vocabulary (same recipe), --seeds seeds
            each, plus the intermediate checkpoints (--curve_steps) for --curve_seeds seeds;
            one JSON line per run to --results (runs already there are skipped);
  lrsearch  the fine-tuning learning rate per arm (pre-trained, random) on a validation split
            of a training set (--lr_task: SST-2-2k-val, the 2k sample evaluated on other SST-2
            train.tsv rows, --val_rows, --val_seed; MRPC-val, MRPC train.tsv minus
            --mrpc_val_rows rows evaluated on them; STS-B-val likewise with --stsb_val_rows;
            never dev.tsv; STS-B-srcval holds out one train.tsv source), over --lr_grid, and
            with --ft_modes=full,frozen also with the encoder frozen over --frozen_lr_grid;
            rows to --lr_results; then pass the best as --ft_lr_pretrained / --ft_lr_random
            (and --ft_mode_pretrained / --ft_mode_random) to finetune;
  curve     (re)write --curve from the pre-training's TensorBoard files and eval_history.jsonl;
  summarize print the markdown tables of --results: mean +- std over seeds, and downstream dev
            accuracy vs pre-training step.

The defaults are the first recipe's (BERT-mini, seq 128, batch 32, lr 1e-3 with 300 warm-up
steps, 2,860 steps, bf16, whole-word dynamic masking, next sentence). The recipes docs/quality.md
publishes run through quality/pretraining_recipes.sh, which passes their flags:

  python3 quality/pretraining_pays.py --stage=all
  python3 quality/pretraining_pays.py --stage=summarize
"""
import argparse
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runlog  # noqa: E402

REPO = runlog.REPO
SHARED = os.path.join(os.path.dirname(REPO), "shared")
CORPUS = os.path.join(SHARED, "data", "corpus", "bert_format")
GLUE = os.path.join(SHARED, "data", "glue")
RESULTS = os.path.join(REPO, "quality", "results", "pretraining_pays.jsonl")
CURVE = os.path.join(REPO, "quality", "results", "pretraining_pays_curve.jsonl")
HELDOUT_DOCS = 10
# --extra_text=pair_train: each pair task (processor name) and its GLUE folder.
PAIR_TASKS = {"mrpc": "MRPC", "sts-b": "STS-B"}
EXTRA_TEXTS = ("sst2_train", "pair_train")


def cpu_info():
    model, flags = "", set()
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    return {"cpu": model, "avx512_vnni": "avx512_vnni" in flags,
            "avx512_bf16": "avx512_bf16" in flags}


def run(args, command, log_path):
    """One runner (a list: script and flags) in REPO; stdout+stderr to log_path. Returns
    seconds; exits on failure with the end of the log."""
    full = [sys.executable, *command]
    print(" ".join(full), flush=True)
    started = time.time()
    with open(log_path, "w", encoding="utf-8") as log:
        log.write(" ".join(full) + "\n")
        log.flush()
        proc = subprocess.run(full, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    seconds = round(time.time() - started, 1)
    if proc.returncode:
        with open(log_path, encoding="utf-8") as f:
            sys.stderr.write(f.read()[-4000:])
        raise SystemExit(f"{command[0]} failed (rc {proc.returncode}); log: {log_path}")
    return seconds


def paths(args):
    w = args.work_dir
    return {"corpus": os.path.join(w, "corpus"), "vocab": os.path.join(w, "vocab.txt"),
            "data": os.path.join(w, "data"), "config": os.path.join(w, "bert_config.json"),
            "sst2": os.path.join(w, "sst2_2k"), "sst2_val": os.path.join(w, "sst2_2k_val"),
            "mrpc_val": os.path.join(w, "mrpc_val"), "stsb_val": os.path.join(w, "stsb_val"),
            "stsb_srcval": os.path.join(w, "stsb_srcval"),
            "pretrain": os.path.join(w, "pretrain"),
            "keep": os.path.join(w, "keep"), "finetune": os.path.join(w, "finetune"),
            "logs": os.path.join(w, "logs")}


def prepare(args):
    p = paths(args)
    for d in (p["corpus"], p["data"], p["logs"], p["sst2"]):
        os.makedirs(d, exist_ok=True)
    train_files = []
    for name in sorted(os.listdir(CORPUS)):
        if not name.endswith(".sentences.txt"):
            continue
        with open(os.path.join(CORPUS, name), encoding="utf-8") as f:
            docs = [d for d in f.read().split("\n\n") if d.strip()]
        held = docs[-HELDOUT_DOCS:] if name.startswith("wikitext") else []
        train = docs[:-HELDOUT_DOCS] if held else docs
        out = os.path.join(p["corpus"], "train_" + name)
        with open(out, "w", encoding="utf-8") as f:
            f.write("\n\n".join(train) + "\n")
        train_files.append(out)
        if held:
            with open(os.path.join(p["corpus"], "heldout.txt"), "w", encoding="utf-8") as f:
                f.write("\n\n".join(held) + "\n")
    if "sst2_train" in args.extras:
        train_files.append(write_sst2_train_text(args, p["corpus"]))
    if "pair_train" in args.extras:
        train_files += [write_pair_train_text(task, p["corpus"]) for task in PAIR_TASKS]
    if not os.path.exists(p["vocab"]):
        run(args, ["build_vocab.py", f"--input_file={','.join(train_files)}",
                   f"--output_file={p['vocab']}", f"--vocab_size={args.vocab_size}",
                   "--num_unused=99"], os.path.join(p["logs"], "build_vocab.log"))
    seq = args.max_seq_length
    train_records = [os.path.join(p["data"], f"train{seq}-{i}.tfrecord") for i in range(2)]
    common = [f"--vocab_file={p['vocab']}", "--do_lower_case", f"--max_seq_length={seq}",
              f"--max_predictions_per_seq={args.max_predictions}", "--dynamic_masking",
              "--random_seed=12345", "--num_workers=1"]
    if not os.path.exists(train_records[0]):
        if args.negatives == "source":
            write_records_by_source(args, train_files, train_records, common)
        else:
            run(args, ["create_pretraining_data.py",
                       f"--input_file={os.path.join(p['corpus'], 'train_*.txt')}",
                       f"--output_file={','.join(train_records)}",
                       f"--dupe_factor={args.dupe_factor}",
                       f"--shard_size_mb={args.shard_size_mb}", *common],
                os.path.join(p["logs"], "create_pretraining_data.log"))
    heldout_record = os.path.join(p["data"], f"heldout{seq}.tfrecord")
    if not os.path.exists(heldout_record):
        run(args, ["create_pretraining_data.py",
                   f"--input_file={os.path.join(p['corpus'], 'heldout.txt')}",
                   f"--output_file={heldout_record}", "--dupe_factor=1", *common],
            os.path.join(p["logs"], "create_pretraining_data_heldout.log"))
    if not os.path.exists(p["config"]):
        with open(p["vocab"], encoding="utf-8") as f:
            vocab_size = sum(1 for _ in f)
        code = (f"from bert_tf import BertConfig; BertConfig.from_preset({args.preset!r}, "
                f"vocab_size={vocab_size}).to_json_file({p['config']!r})")
        subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    # SST-2-2k: a fixed-seed sample (random.Random(sst2_seed).sample) of train.tsv's rows.
    header, rows = _read_tsv(os.path.join(GLUE, "SST-2", "train.tsv"))
    sample = random.Random(args.sst2_seed).sample(rows, args.sst2_train)
    _write_tsv(os.path.join(p["sst2"], "train.tsv"), header, sample)
    shutil.copy(os.path.join(GLUE, "SST-2", "dev.tsv"), os.path.join(p["sst2"], "dev.tsv"))
    # The learning-rate validation split: train = the same 2k sample, dev = --val_rows other
    # rows of train.tsv (random.Random(val_seed) over the rows not in the sample); never dev.tsv.
    chosen = set(sample)
    rest = [r for r in rows if r not in chosen]
    val = random.Random(args.val_seed).sample(rest, args.val_rows)
    os.makedirs(p["sst2_val"], exist_ok=True)
    shutil.copy(os.path.join(p["sst2"], "train.tsv"), os.path.join(p["sst2_val"], "train.tsv"))
    _write_tsv(os.path.join(p["sst2_val"], "dev.tsv"), header, val)
    write_pair_val(args, "MRPC", args.mrpc_val_rows, p["mrpc_val"])
    write_pair_val(args, "STS-B", args.stsb_val_rows, p["stsb_val"])
    write_pair_source_val(args, "STS-B", args.stsb_val_source, p["stsb_srcval"])


def write_records_by_source(args, train_files, train_records, common):
    """One create_pretraining_data.py run per source file, each a single shard (so a NotNext
    segment comes from another document of the same source), then one shuffle over all."""
    p = paths(args)
    parts = []
    for path in sorted(train_files):
        name = os.path.basename(path).split(".")[0]
        part = os.path.join(p["data"], "by_source", f"{name}{args.max_seq_length}.tfrecord")
        os.makedirs(os.path.dirname(part), exist_ok=True)
        one_shard = max(args.shard_size_mb, os.path.getsize(path) / 1e6 + 1)
        run(args, ["create_pretraining_data.py", f"--input_file={path}", f"--output_file={part}",
                   f"--dupe_factor={args.dupe_factor}", f"--shard_size_mb={one_shard}", *common],
            os.path.join(p["logs"], f"create_pretraining_data_{name}.log"))
        parts.append(part)
    shuffle_merge(parts, train_records, seed=12345)


def shuffle_merge(parts, outputs, seed):
    """Reads every record of the TFRecord files `parts`, shuffles them (random.Random(seed)) and
    deals them round-robin over `outputs`; each output is written beside itself and renamed, the
    first output last (its presence marks the merge done)."""
    import tensorflow as tf
    records = [r for part in parts for r in tf.data.TFRecordDataset(part).as_numpy_iterator()]
    random.Random(seed).shuffle(records)
    for i, out in reversed(list(enumerate(outputs))):
        with tf.io.TFRecordWriter(out + ".partial") as writer:
            for record in records[i::len(outputs)]:
                writer.write(record)
        os.replace(out + ".partial", out)
    print(f"shuffled {len(records)} records of {len(parts)} sources into {len(outputs)} files")


def _read_tsv(path):
    """(header line, data lines) of a GLUE .tsv file."""
    with open(path, encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    return header, rows


def _write_tsv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join([header, *rows]) + "\n")


def write_pair_val(args, folder, n_rows, out_dir):
    """A pair task's learning-rate validation split: n_rows rows of its train.tsv
    (random.Random(val_seed).sample) as dev.tsv, the other rows as train.tsv; never dev.tsv."""
    header, rows = _read_tsv(os.path.join(GLUE, folder, "train.tsv"))
    held = set(random.Random(args.val_seed).sample(range(len(rows)), n_rows))
    os.makedirs(out_dir, exist_ok=True)
    _write_tsv(os.path.join(out_dir, "train.tsv"), header,
               [r for i, r in enumerate(rows) if i not in held])
    _write_tsv(os.path.join(out_dir, "dev.tsv"), header,
               [r for i, r in enumerate(rows) if i in held])


def write_pair_source_val(args, folder, source, out_dir):
    """A pair task's source-held-out validation split: the train.tsv rows whose filename column
    is `source` as dev.tsv, the other rows as train.tsv; never dev.tsv. A third of STS-B's dev
    set comes from sources its train.tsv lacks (answers-forums, track5), which a random split
    of train.tsv does not test."""
    header, rows = _read_tsv(os.path.join(GLUE, folder, "train.tsv"))
    column = header.split("\t").index("filename")
    split = {True: [], False: []}
    for r in rows:
        split[r.split("\t")[column] == source].append(r)
    if not split[True]:
        raise SystemExit(f"{folder}/train.tsv: no row has filename {source!r}")
    os.makedirs(out_dir, exist_ok=True)
    _write_tsv(os.path.join(out_dir, "train.tsv"), header, split[False])
    _write_tsv(os.path.join(out_dir, "dev.tsv"), header, split[True])


def write_sst2_train_text(args, corpus_dir):
    """Task-adaptive pre-training text: the sentence column of SST-2 train.tsv (the labels are
    never read; dev.tsv is never opened here), in file order, grouped into pseudo-documents of
    --extra_doc_lines consecutive lines (one sentence a line, a blank line between documents)."""
    header, rows = _read_tsv(os.path.join(GLUE, "SST-2", "train.tsv"))
    column = header.split("\t").index("sentence")
    sentences = [r.split("\t")[column].strip() for r in rows]
    sentences = [t for t in sentences if t]
    n = args.extra_doc_lines
    docs = ["\n".join(sentences[i:i + n]) for i in range(0, len(sentences), n)]
    out = os.path.join(corpus_dir, "train_sst2_train.sentences.txt")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n\n".join(docs) + "\n")
    print(f"extra text: {len(sentences)} SST-2 train sentences in {len(docs)} documents -> {out}")
    return out


def write_pair_train_text(task, corpus_dir):
    """Task-adaptive pre-training text for a pair task: each example of its train.tsv, read by
    the task's GLUE processor (labels unused; dev.tsv is never opened here), becomes one
    document of two lines, its two sentences, so masked LM and next sentence see the task's
    pairs as pairs."""
    sys.path.insert(0, REPO)
    from bert_tf.data.classification import get_processor
    folder = PAIR_TASKS[task]
    examples = get_processor(task).get_train_examples(os.path.join(GLUE, folder))
    docs = [f"{e.text_a.strip()}\n{e.text_b.strip()}" for e in examples
            if e.text_a.strip() and e.text_b.strip()]
    out = os.path.join(corpus_dir, f"train_{task.replace('-', '')}_train.sentences.txt")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n\n".join(docs) + "\n")
    print(f"extra text: {len(docs)} {folder} train pairs -> {out}")
    return out


def _keep_checkpoints(src, dst, stop):
    """Copies every ckpt-N.* the pre-training writes into dst (the runner keeps 5)."""
    os.makedirs(dst, exist_ok=True)
    while True:
        done = stop.is_set()
        for index in glob.glob(os.path.join(src, "ckpt-*.index")):
            prefix = index[:-len(".index")]
            name = os.path.basename(prefix)
            if os.path.exists(os.path.join(dst, name + ".index")):
                continue
            time.sleep(2)                    # let the data file be written whole
            try:
                for f in glob.glob(prefix + ".*"):
                    shutil.copy(f, dst)
                shutil.copy(index, dst)      # index last: it marks a whole copy
            except FileNotFoundError:
                pass                         # deleted meanwhile: never mind
        if done:
            return
        stop.wait(20)


def pretrain(args):
    p = paths(args)
    seq = args.max_seq_length
    command = [
        "run_pretraining.py", f"--bert_config_file={p['config']}", f"--vocab_file={p['vocab']}",
        f"--input_file={os.path.join(p['data'], f'train{seq}-*.tfrecord')}",
        f"--eval_input_file={os.path.join(p['data'], f'heldout{seq}.tfrecord')}",
        f"--output_dir={p['pretrain']}", "--do_train", "--do_eval",
        f"--max_seq_length={seq}", f"--max_predictions_per_seq={args.max_predictions}",
        "--dynamic_masking", *(["--do_whole_word_mask"] if args.whole_word else []),
        f"--use_next_sentence={str(args.next_sentence).lower()}",
        f"--train_batch_size={args.pretrain_batch}", "--eval_batch_size=32",
        f"--num_train_steps={args.pretrain_steps}", f"--num_warmup_steps={args.pretrain_warmup}",
        f"--learning_rate={args.pretrain_lr}", f"--iterations_per_loop={args.log_steps}",
        f"--save_checkpoints_steps={args.save_steps}", f"--eval_every_steps={args.save_steps}",
        "--max_eval_steps=100", f"--seed={args.pretrain_seed}",
        *([f"--mixed_precision={args.mixed_precision}"] if args.mixed_precision else []),
        *(["--jit_compile"] if args.jit_compile else []),
        *([f"--init_checkpoint={args.pretrain_init}"] if args.pretrain_init else []),
    ]
    started_at = runlog.commit()
    stop = threading.Event()
    keeper = threading.Thread(target=_keep_checkpoints, args=(p["pretrain"], p["keep"], stop))
    keeper.start()
    try:
        seconds = run(args, command, os.path.join(p["logs"], "pretrain.log"))
    finally:
        stop.set()
        keeper.join()
    with open(os.path.join(args.work_dir, "pretrain_seconds.json"), "w") as f:
        json.dump({"seconds": seconds, "command": command, "commit": started_at,
                   "init_checkpoint": args.pretrain_init,
                   "init_seconds": args.pretrain_init_seconds,
                   "total_seconds": seconds + args.pretrain_init_seconds}, f)
    write_curve(args)


def write_curve(args):
    """Masked-LM loss (and the rest) vs step: train scalars from TensorBoard, held-out from
    eval_history.jsonl."""
    sys.path.insert(0, REPO)
    from bert_tf.plots import read_run
    p = paths(args)
    groups = read_run(p["pretrain"])
    rows = []
    for group, tags in groups.items():
        by_step = {}
        for tag, points in tags.items():
            for step, value in points:
                by_step.setdefault(step, {})[tag] = value
        for step in sorted(by_step):
            rows.append({"source": f"tensorboard:{group}", "step": step, **by_step[step]})
    history = os.path.join(p["pretrain"], "eval_history.jsonl")
    if os.path.exists(history):
        for row in runlog.read_rows(history):
            rows.append({"source": "eval_history (held-out)", **row})
    record = os.path.join(args.work_dir, "pretrain_seconds.json")
    pretrain_commit = runlog.commit()
    if os.path.exists(record):
        with open(record, encoding="utf-8") as f:
            pretrain_commit = json.load(f).get("commit", pretrain_commit)
    meta = {"commit": pretrain_commit, "preset": args.preset, **cpu_info(),
            "pretrain_recipe": {"max_seq_length": args.max_seq_length,
                                "max_predictions": args.max_predictions,
                                "batch": args.pretrain_batch, "lr": args.pretrain_lr,
                                "warmup": args.pretrain_warmup, "steps": args.pretrain_steps,
                                "whole_word_dynamic_masking": bool(args.whole_word),
                                "next_sentence": bool(args.next_sentence),
                                "mixed_precision": args.mixed_precision,
                                "jit_compile": bool(args.jit_compile),
                                "shard_size_mb": args.shard_size_mb,
                                "extra_text": args.extra_text, "negatives": args.negatives,
                                "init_checkpoint": args.pretrain_init,
                                "init_seconds": args.pretrain_init_seconds}}
    with open(args.curve, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(runlog.portable({**meta, **row}, args.work_dir)) + "\n")
    print(f"{len(rows)} curve rows -> {args.curve}")


TASKS = {"SST-2-2k": ("sst-2", None), "MRPC": ("mrpc", os.path.join(GLUE, "MRPC")),
         "SST-2": ("sst-2", os.path.join(GLUE, "SST-2")),     # SST-2: the full training set
         "SST-2-2k-val": ("sst-2", None),   # SST-2-2k trained, evaluated on the lr validation split
         "MRPC-val": ("mrpc", None),        # MRPC train.tsv minus the validation rows, and them
         "STS-B": ("sts-b", os.path.join(GLUE, "STS-B")),   # regression: Pearson / Spearman
         "STS-B-val": ("sts-b", None),
         "STS-B-srcval": ("sts-b", None)}   # STS-B train.tsv minus one source, and it
VALIDATION = {"SST-2-2k-val": ("SST-2-2k", "sst2_val"), "MRPC-val": ("MRPC", "mrpc_val"),
              "STS-B-val": ("STS-B", "stsb_val"), "STS-B-srcval": ("STS-B", "stsb_srcval")}


def arm_lr(args, init):
    """The fine-tuning learning rate of an arm: --ft_lr_pretrained / --ft_lr_random, else --ft_lr."""
    lr = args.ft_lr_pretrained if init == "pretrained" else args.ft_lr_random
    return args.ft_lr if lr is None else lr


def arm_mode(args, init):
    """The fine-tuning mode of an arm: full (every weight trains) or frozen (the encoder, pooler
    included, keeps its weights and only the task head trains: BERT's feature-based approach)."""
    return args.ft_mode_pretrained if init == "pretrained" else args.ft_mode_random


def row_mode(row):
    """A results row's fine-tuning mode; rows written before modes existed are full."""
    return row.get("recipe", {}).get("mode", "full")


def finetune_one(args, task, init, step, seed, lr=None, results_path=None, mode=None):
    p = paths(args)
    results_path = results_path or args.results
    lr = arm_lr(args, init) if lr is None else lr
    mode = mode or arm_mode(args, init)
    task_name, data_dir = TASKS[task]
    data_dir = data_dir or (p[VALIDATION[task][1]] if task in VALIDATION else p["sst2"])
    suffix = "" if mode == "full" else f"_{mode}"
    out = os.path.join(p["finetune"], f"{task}_{init}_{step}_s{seed}_lr{lr:g}{suffix}")
    recipe_task = VALIDATION[task][0] if task in VALIDATION else task   # same epochs, length
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    flags = [f"--task_name={task_name}", f"--data_dir={data_dir}", f"--output_dir={out}",
             f"--bert_config_file={p['config']}", f"--vocab_file={p['vocab']}",
             "--do_lower_case", "--do_train", "--do_eval",
             f"--max_seq_length={args.ft_seq[recipe_task]}", f"--train_batch_size={args.ft_batch}",
             "--eval_batch_size=64", f"--learning_rate={lr}",
             f"--num_train_epochs={args.ft_epochs[recipe_task]}", "--warmup_proportion=0.1",
             "--iterations_per_loop=50", "--save_checkpoints_steps=100000", f"--seed={seed}"]
    if init == "pretrained":
        flags.append(f"--init_checkpoint={os.path.join(p['keep'], f'ckpt-{step}')}")
    if mode == "frozen":
        flags.append("--freeze_encoder")
    seconds = run(args, ["run_classifier.py", *flags], os.path.join(out, "run.log"))
    from bert_tf.metrics.results import read_eval_results
    results = read_eval_results(os.path.join(out, "eval_results.txt"))
    row = {"task": task, "init": init, "seed": seed, "pretrain_step": step, "lr": lr,
           "pretrain_steps_total": args.pretrain_steps, "preset": args.preset,
           "dev_accuracy": results.get("eval_accuracy", results.get("accuracy")),
           "dev_f1": results.get("eval_f1", results.get("f1")),
           **{f"dev_{k}": results.get(f"eval_{k}", results.get(k))
              for k in ("pearson", "spearman", "corr") if f"eval_{k}" in results or k in results},
           "train_steps": results.get("global_step"), "wall_seconds": seconds,
           "recipe": {"max_seq_length": args.ft_seq[recipe_task], "batch": args.ft_batch,
                      "lr": lr, "epochs": args.ft_epochs[recipe_task], "warmup": 0.1,
                      "mode": mode,
                      "optimizer": "adamw_torch (default)", "precision": "fp32"},
           "pretrain_recipe": None if init == "random" else {
               "max_seq_length": args.max_seq_length, "batch": args.pretrain_batch,
               "lr": args.pretrain_lr, "warmup": args.pretrain_warmup,
               "whole_word_dynamic_masking": bool(args.whole_word),
               "next_sentence": bool(args.next_sentence),
               "mixed_precision": args.mixed_precision, "extra_text": args.extra_text,
               "negatives": args.negatives, "init_checkpoint": args.pretrain_init},
           "eval_results": results, "commit": runlog.commit(), **cpu_info()}
    runlog.append_row(results_path, row, args.work_dir)
    print(json.dumps({k: row.get(k) for k in ("task", "init", "seed", "pretrain_step",
                                              "dev_accuracy", "dev_f1", "dev_corr",
                                              "wall_seconds")}), flush=True)


def score(row):
    """The row's headline dev metric: accuracy, or for STS-B (regression) the mean of Pearson and
    Spearman, GLUE's STS-B score."""
    return row["dev_accuracy"] if row.get("dev_accuracy") is not None else row.get("dev_corr")


def finetune(args):
    sys.path.insert(0, REPO)
    done = {(r["task"], r["init"], r["seed"], r["pretrain_step"], row_mode(r))
            for r in runlog.read_rows(args.results)}
    final = args.pretrain_steps
    plan = []
    for seed in args.seeds:                      # the must-show first, seed by seed
        for task in args.tasks:
            plan += [(task, "pretrained", final, seed), (task, "random", 0, seed)]
    for seed in args.seeds[:args.curve_seeds]:   # then the curve
        for step in args.curve_steps:
            for task in args.tasks:
                plan.append((task, "pretrained", step, seed))
    for task, init, step, seed in plan:
        if (task, init, seed, step, arm_mode(args, init)) in done:
            continue
        if init == "pretrained" and not os.path.exists(
                os.path.join(paths(args)["keep"], f"ckpt-{step}.index")):
            print(f"skip {task} {init} step {step}: no checkpoint kept", flush=True)
            continue
        finetune_one(args, task, init, step, seed)


def lrsearch(args):
    """Per-arm fine-tuning learning rate, and with --ft_modes=full,frozen the mode too, on
    --lr_task's validation split (SST-2-2k-val: the 2k sample, evaluated on other train.tsv
    rows; MRPC-val: MRPC train.tsv minus --mrpc_val_rows rows, evaluated on them; STS-B-val
    likewise; STS-B-srcval: STS-B train.tsv minus the --stsb_val_source rows, evaluated on
    them; never dev.tsv): each lr of --lr_grid fully fine-tuned, each of --frozen_lr_grid
    with the encoder frozen, seed --lr_seed, from the final pre-trained checkpoint and from
    random weights. Rows go to --lr_results; prints the best (mode, lr) of each arm (ties: the
    smaller lr)."""
    sys.path.insert(0, REPO)
    task = args.lr_task
    split_dir = paths(args)[VALIDATION[task][1]]
    if not os.path.exists(split_dir):
        raise SystemExit(f"{split_dir}: no {task} split in this work dir; run --stage=prepare "
                         "(it keeps the vocabulary and records it finds)")
    grid = {"full": args.lr_grid, "frozen": args.frozen_lr_grid}
    done = {(r["init"], r["lr"], row_mode(r)) for r in runlog.read_rows(args.lr_results)
            if r["task"] == task}
    for init, step in (("pretrained", args.pretrain_steps), ("random", 0)):
        for mode in args.ft_modes:
            for lr in grid[mode]:
                if (init, lr, mode) not in done:
                    finetune_one(args, task, init, step, args.lr_seed, lr=lr,
                                 results_path=args.lr_results, mode=mode)
    rows = [r for r in runlog.read_rows(args.lr_results)
            if r["task"] == task and row_mode(r) in args.ft_modes]
    print(f"{task}\n| init | mode | lr | validation accuracy (STS-B: corr) |\n|---|---|---|---|")
    for init in ("pretrained", "random"):
        sel = sorted((r for r in rows if r["init"] == init), key=lambda r: (row_mode(r), r["lr"]))
        for r in sel:
            print(f"| {init} | {row_mode(r)} | {r['lr']:g} | {100 * score(r):.2f} |")
        if sel:
            best = max(sel, key=lambda r: (score(r), -r["lr"]))
            print(f"| {init} | best: {row_mode(best)} | {best['lr']:g} | |")


def _mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    m = 100 * statistics.mean(values)
    s = 100 * statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{m:.2f} ± {s:.2f} (n={len(values)})"


def summarize(args):
    rows = runlog.read_rows(args.results)
    final = args.pretrain_steps
    lines = ["| task | init | pre-training steps | fine-tuning lr | dev accuracy (STS-B: corr) "
             "| dev F1 | seeds |",
             "|---|---|---|---|---|---|---|"]
    for task in args.tasks:
        for init, step in (("pretrained", final), ("random", 0)):
            sel = [r for r in rows if r["task"] == task and r["init"] == init
                   and r["pretrain_step"] == step]
            lrs = ",".join(sorted({f"{r.get('lr', r['recipe']['lr']):g}"
                                   + ("" if row_mode(r) == "full" else f" ({row_mode(r)})")
                                   for r in sel}))
            lines.append(f"| {task} | {init} | {step} | {lrs} | "
                         f"{_mean_std([score(r) for r in sel])} | "
                         f"{_mean_std([r['dev_f1'] for r in sel]) if task == 'MRPC' else '–'} | "
                         f"{','.join(str(r['seed']) for r in sel)} |")
    lines += ["", "Downstream dev accuracy vs pre-training step (per seed):", "",
              "| task | seed | step | dev accuracy | dev F1 |", "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["task"], r["seed"], r["pretrain_step"], r["init"])):
        if r["seed"] in args.seeds[:args.curve_seeds]:
            f1 = f"{100 * r['dev_f1']:.2f}" if r.get("dev_f1") is not None else "–"
            lines.append(f"| {r['task']} | {r['seed']} | {r['pretrain_step']} ({r['init']}) | "
                         f"{100 * score(r):.2f} | {f1} |")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", default="all",
                        choices=["all", "prepare", "pretrain", "curve", "lrsearch", "finetune",
                                 "summarize"])
    parser.add_argument("--work_dir",
                        default=os.path.join(tempfile.gettempdir(), "bert_tf_pretraining_pays"))
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--curve", default=CURVE)
    parser.add_argument("--preset", default="mini")
    parser.add_argument("--vocab_size", type=int, default=8192)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions", type=int, default=20)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--shard_size_mb", type=float, default=4.0,
                        help="create_pretraining_data.py shuffles instances (and draws random "
                             "next documents) within shards of this much text; above the "
                             "corpus size (e.g. 16) it is one shard: shuffled across the corpus")
    parser.add_argument("--negatives", default="corpus", choices=["corpus", "source"],
                        help="where a NotNext segment comes from: any document of the corpus "
                             "(within a --shard_size_mb shard), or another document of the "
                             "same source file (one create_pretraining_data.py run per source, "
                             "then one shuffle over all records)")
    parser.add_argument("--whole_word", type=int, default=1)
    parser.add_argument("--next_sentence", type=int, default=1)
    parser.add_argument("--mixed_precision", default="bf16",
                        help="run_pretraining.py --mixed_precision; '' for float32")
    parser.add_argument("--jit_compile", type=int, default=0,
                        help="1: run_pretraining.py --jit_compile (XLA)")
    parser.add_argument("--pretrain_batch", type=int, default=32)
    parser.add_argument("--pretrain_steps", type=int, default=2860)
    parser.add_argument("--pretrain_warmup", type=int, default=300)
    parser.add_argument("--pretrain_lr", type=float, default=1e-3)
    parser.add_argument("--pretrain_seed", type=int, default=12345)
    parser.add_argument("--pretrain_init", default="",
                        help="a checkpoint to continue from (BERT's two phases: short sequences "
                             "first, then this run at --max_seq_length); its vocabulary must be "
                             "this run's")
    parser.add_argument("--pretrain_init_seconds", type=float, default=0.0,
                        help="wall seconds of pre-training that made --pretrain_init; added to "
                             "this run's to give the recipe's total")
    parser.add_argument("--save_steps", type=int, default=715)
    parser.add_argument("--log_steps", type=int, default=55)
    parser.add_argument("--sst2_train", type=int, default=2000)
    parser.add_argument("--sst2_seed", type=int, default=0)
    parser.add_argument("--tasks", default="SST-2-2k,MRPC")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--curve_seeds", type=int, default=1)
    parser.add_argument("--curve_steps", default="715,1430,2145")
    parser.add_argument("--ft_lr", type=float, default=1e-4)
    parser.add_argument("--ft_lr_pretrained", type=float, default=None,
                        help="fine-tuning lr of the pre-trained arm (default: --ft_lr)")
    parser.add_argument("--ft_lr_random", type=float, default=None,
                        help="fine-tuning lr of the random-weights arm (default: --ft_lr)")
    parser.add_argument("--ft_mode_pretrained", default="full", choices=["full", "frozen"],
                        help="frozen: train the task head only, on the pre-trained encoder's "
                             "features (BERT's feature-based approach)")
    parser.add_argument("--ft_mode_random", default="full", choices=["full", "frozen"],
                        help="the same for the random-weights arm")
    parser.add_argument("--lr_grid", default="1e-4,3e-4,1e-3")
    parser.add_argument("--ft_modes", default="full",
                        help="lrsearch: the fine-tuning modes to search (full, frozen or both)")
    parser.add_argument("--frozen_lr_grid", default="1e-3,3e-3,1e-2",
                        help="lrsearch: the learning rates of the frozen mode (a head alone "
                             "takes larger steps)")
    parser.add_argument("--lr_seed", type=int, default=1)
    parser.add_argument("--lr_task", default="SST-2-2k-val", choices=sorted(VALIDATION))
    parser.add_argument("--mrpc_val_rows", type=int, default=400,
                        help="rows of MRPC train.tsv held out as its lr validation split")
    parser.add_argument("--stsb_val_rows", type=int, default=1000,
                        help="rows of STS-B train.tsv held out as its lr validation split")
    parser.add_argument("--stsb_val_source", default="deft-forum",
                        help="STS-B-srcval: the train.tsv source (filename column) held out")
    parser.add_argument("--lr_results", default=os.path.join(
        REPO, "quality", "results", "pretraining_pays_lr.jsonl"))
    parser.add_argument("--val_rows", type=int, default=1000,
                        help="rows of SST-2 train.tsv outside the 2k sample: the lr validation set")
    parser.add_argument("--val_seed", type=int, default=1)
    parser.add_argument("--extra_text", default="",
                        help="comma list; sst2_train: add the sentences of SST-2 train.tsv (no "
                             "labels) to the pre-training text and the vocabulary's text "
                             "(task-adaptive); pair_train: add each MRPC and STS-B train.tsv "
                             "pair (no labels) as a two-sentence document")
    parser.add_argument("--extra_doc_lines", type=int, default=50,
                        help="consecutive SST-2 lines per pseudo-document")
    parser.add_argument("--ft_batch", type=int, default=32)
    parser.add_argument("--ft_epochs", default="SST-2-2k=5,MRPC=3,SST-2=1,STS-B=3")
    parser.add_argument("--ft_seq", default="SST-2-2k=64,MRPC=128,SST-2=64,STS-B=128")
    args = parser.parse_args()
    args.tasks = args.tasks.split(",")
    args.extras = set(filter(None, args.extra_text.split(",")))
    if args.extras - set(EXTRA_TEXTS):
        parser.error(f"--extra_text: unknown {sorted(args.extras - set(EXTRA_TEXTS))}; "
                     f"choose from {', '.join(EXTRA_TEXTS)}")
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.lr_grid = [float(v) for v in args.lr_grid.split(",")]
    args.frozen_lr_grid = [float(v) for v in args.frozen_lr_grid.split(",")]
    args.ft_modes = args.ft_modes.split(",")
    if set(args.ft_modes) - {"full", "frozen"}:
        parser.error(f"--ft_modes: choose from full, frozen; got {args.ft_modes}")
    args.curve_steps = [int(s) for s in args.curve_steps.split(",") if s]
    args.ft_epochs = {k: float(v) for k, v in (kv.split("=") for kv in args.ft_epochs.split(","))}
    args.ft_seq = {k: int(v) for k, v in (kv.split("=") for kv in args.ft_seq.split(","))}
    os.makedirs(args.work_dir, exist_ok=True)
    stages = (["prepare", "pretrain", "finetune", "summarize"] if args.stage == "all"
              else [args.stage])
    for stage in stages:
        {"prepare": prepare, "pretrain": pretrain, "curve": write_curve, "lrsearch": lrsearch,
         "finetune": finetune, "summarize": summarize}[stage](args)


if __name__ == "__main__":
    main()
