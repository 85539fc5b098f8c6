"""Output folders that are URLs (gs://... in production; ram://, TensorFlow's in-process
filesystem, here): a whole fine-tuning run and its export land there, nothing locally.
Then preemption: SIGTERM during training saves a checkpoint and a rerun continues from it."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from bert_tf import fileio
from bert_tf.checkpoints import load_weights
from bert_tf.config import BertConfig
from bert_tf.jobs.classifier import ClassifierOptions, build_model, run
from bert_tf.metrics.results import read_eval_results
from bert_tf.serving.exporter import existing_versions, next_version
from scripts_in_process import run_script
from bert_tf import processes
from helpers import REPO, minilm_dir, shared_path

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
TINY = dict(vocab_size=30522, max_position_embeddings=128)


def _mrpc(folder, train_rows, test_rows=8):
    """The first MRPC training pairs (train and dev) and test pairs, in GLUE's layout."""
    mrpc = shared_path("data/glue/MRPC")
    folder.mkdir()
    for name, source, rows in (("train", "train", train_rows), ("dev", "train", train_rows),
                               ("test", "test", test_rows)):
        with open(mrpc / f"{source}.tsv", encoding="utf-8") as f:
            head = "".join(line for _, line in zip(range(rows + 1), f))
        (folder / f"{name}.tsv").write_text(head, encoding="utf-8")
    return folder


def _ram(name):
    return f"ram://{name}-{uuid.uuid4().hex[:8]}"


def _local_names_like(root, fragment):
    return [os.path.join(d, n) for d, dirs, files in os.walk(root) for n in dirs + files
            if fragment in n]


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """An empty working directory, checked by the tests to stay empty, and a temp folder for
    the local temporaries uploads go through (bert_tf-*), checked to be removed."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return cwd, tmp


# --------------------------------------------------------------------------- fileio on URLs
def test_atomic_files_and_folders_on_a_url(isolated):
    base = _ram("fileio")
    fileio.atomic_write_text(f"{base}/a/b.txt", "text")
    fileio.atomic_write_bytes(f"{base}/c.bin", b"\x00\x01")
    with fileio.atomic_path(f"{base}/d/e.tfrecord") as tmp:
        assert not fileio.is_url(tmp)
        with tf.io.TFRecordWriter(tmp) as writer:
            writer.write(b"record")
    with pytest.raises(RuntimeError), fileio.atomic_path(f"{base}/failed.txt") as tmp:
        raise RuntimeError("the block failed")
    assert not tf.io.gfile.exists(f"{base}/failed.txt")
    with fileio.open_binary(f"{base}/a/b.txt") as f:
        assert f.read() == b"text"
    assert list(tf.data.TFRecordDataset(f"{base}/d/e.tfrecord").as_numpy_iterator()) == [b"record"]

    for generation in ("old", "new"):
        with fileio.atomic_dir(f"{base}/best", last=("results.txt",)) as tmp:
            os.makedirs(os.path.join(tmp, "sub"))
            for rel in (f"{generation}.ckpt", "results.txt", f"sub/{generation}"):
                with open(os.path.join(tmp, rel), "w") as f:
                    f.write(generation)
    assert sorted(tf.io.gfile.listdir(f"{base}/best")) == ["new.ckpt", "results.txt", "sub"]
    assert tf.io.gfile.listdir(f"{base}/best/sub") == ["new"]
    assert sorted(tf.io.gfile.listdir(base)) == ["a", "best", "c.bin", "d"], "no temporaries"
    cwd, tmp = isolated
    assert os.listdir(cwd) == [] and os.listdir(tmp) == []        # nothing traced: no autograph


def test_publish_dir_never_overwrites_and_cleans_up_after_a_failure(isolated, monkeypatch):
    base = _ram("publish")
    local = tempfile.mkdtemp()
    with open(os.path.join(local, "saved_model.pb"), "w") as f:
        f.write("pb")
    with open(os.path.join(local, "other"), "w") as f:
        f.write("x")
    fileio.publish_dir(local, f"{base}/1", last=("saved_model.pb",))
    with pytest.raises(FileExistsError):
        fileio.publish_dir(local, f"{base}/1")

    renamed = []

    def failing_rename(src, dst, overwrite=False):
        if dst.endswith("saved_model.pb"):
            raise tf.errors.UnavailableError(None, None, "connection lost")
        renamed.append(dst)
        return real_rename(src, dst, overwrite)
    real_rename = tf.io.gfile.rename
    monkeypatch.setattr(tf.io.gfile, "rename", failing_rename)
    with pytest.raises(tf.errors.UnavailableError):
        fileio.publish_dir(local, f"{base}/2", last=("saved_model.pb",))
    assert renamed == [f"{base}/2/other"], "saved_model.pb is published last"
    assert tf.io.gfile.listdir(base) == ["1"], "no partial version, no staging folder"


def test_versions_are_listed_on_a_url():
    base = _ram("versions")
    assert existing_versions(base) == [] and next_version(base) == 1
    for name in ("3", "12", "tmp", ".tmp-export-13-x"):
        tf.io.gfile.makedirs(f"{base}/{name}")
    fileio.atomic_write_text(f"{base}/99", "a file is not a version")
    assert existing_versions(base) == [3, 12] and next_version(base) == 13


# --------------------------------------------------------------------------- a whole run
def test_fine_tuning_and_export_write_only_to_the_url(tmp_path, isolated):
    """Training with periodic evaluation and the best checkpoint, the feature cache, eval,
    predictions and the SavedModel export: all on ram://, served from there."""
    data = _mrpc(tmp_path / "data", train_rows=16)
    base = _ram("run")
    out, export_dir, cache = f"{base}/out", f"{base}/export", f"{base}/cache"
    opts = ClassifierOptions(
        config=BertConfig.from_preset("L-1_H-32_A-2", **TINY), task_name="MRPC",
        data_dir=str(data), vocab_file=str(minilm_dir() / "vocab.txt"), output_dir=out,
        export_dir=export_dir, feature_cache_dir=cache, do_train=True, do_eval=True,
        do_predict=True, train_batch_size=4, num_train_epochs=1, eval_batch_size=8,
        predict_batch_size=8, iterations_per_loop=2, save_checkpoints_steps=2,
        eval_every_steps=2, keep_best_metric="eval_loss", max_seq_length=32, seed=1)
    result = run(opts, tf.distribute.get_strategy())

    assert result["train"]["step"] == 4 and not result["train"]["preempted"]
    assert tf.train.latest_checkpoint(out) == f"{out}/ckpt-4"
    for rel in ("bert_config.json", "eval_history.jsonl", "test_results.tsv", "MRPC.tsv",
                "confusion_matrix.tsv", "best/bert_config.json", "best/vocab.txt",
                "best/ckpt.index"):
        assert tf.io.gfile.exists(f"{out}/{rel}"), rel
    assert read_eval_results(f"{out}/eval_results.txt")["global_step"] in (2, 4)
    best = read_eval_results(f"{out}/best/eval_results.txt")
    assert best["best_metric"] == "eval_loss"
    for subdir in ("train", "eval"):
        assert tf.io.gfile.glob(f"{out}/{subdir}/events.out.tfevents.*"), subdir
    assert len(tf.io.gfile.glob(f"{cache}/*.tf_record")) == 3            # train, dev, test
    assert sorted(n for n in tf.io.gfile.listdir(out) if n.startswith(".")) == []

    assert result["export"] == f"{export_dir}/1"
    assert tf.io.gfile.listdir(export_dir) == ["1"], "no staging folder may remain"
    for rel in ("saved_model.pb", "variables/variables.index", "assets/vocab.txt",
                "assets.extra/export_info.json", "assets.extra/tf_serving_warmup_requests"):
        assert tf.io.gfile.exists(f"{export_dir}/1/{rel}"), rel

    # The served model is the best checkpoint's (load_best_at_end). It is copied back to read
    # it: ram:// takes a checkpoint prefix for a folder (a prefix of its files' names), which
    # tf.train.list_variables then refuses; gs:// has no such quirk.
    best_copy = tmp_path / "best"
    best_copy.mkdir()
    for name in tf.io.gfile.listdir(f"{out}/best"):
        tf.io.gfile.copy(f"{out}/best/{name}", str(best_copy / name))
    model = build_model(opts, 2)
    load_weights(model, str(best_copy))
    texts_a, texts_b = support.mrpc_pairs(3)
    served = tf.saved_model.load(f"{export_dir}/1").signatures["serving_default"](
        text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
    features = support.classifier_features(texts_a, texts_b, seq_length=32)
    np.testing.assert_allclose(served["logits"],
                               support.keras_outputs(model, features)["logits"], atol=1e-5)

    cwd, tmp = isolated
    assert os.listdir(cwd) == [], "nothing may be written to the working directory"
    assert [n for n in os.listdir(tmp) if n.startswith("bert_tf-")] == [], \
        "local temporaries of uploads must be removed"
    assert _local_names_like(tmp_path, "ram:") == [] and not os.path.exists(REPO / "ram:")


@pytest.mark.slow
def test_runner_with_url_folders_writes_nothing_locally(tmp_path, isolated):
    """run_classifier.py with --output_dir and --export_dir on ram:// (as `python
    run_classifier.py` runs it: absl flags, its logging set-up, cli.run; in this process, with
    the empty working directory of `isolated`): no log.txt folder, no "ram:" folder, a warning
    instead of the log file."""
    data = _mrpc(tmp_path / "data", train_rows=8)
    cwd, _ = isolated
    out, export_dir = _ram("runner_out"), _ram("runner_export")
    done = run_script(
        "run_classifier.py", "--task_name=MRPC",
        f"--data_dir={data}", f"--vocab_file={minilm_dir() / 'vocab.txt'}",
        "--model_preset=L-1_H-32_A-2", f"--output_dir={out}", f"--export_dir={export_dir}",
        "--do_train", "--train_batch_size=4", "--num_train_epochs=1", "--max_seq_length=32",
        "--iterations_per_loop=2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "is a URL: the log goes to stderr only" in done.stderr
    assert f"saved checkpoint {out}/ckpt-2" in done.stderr
    assert f"exported: {export_dir}/1" in done.stdout
    assert os.listdir(cwd) == []
    assert _local_names_like(tmp_path, "ram:") == [] and not os.path.exists(REPO / "ram:")


# --------------------------------------------------------------------------- preemption
# Enough steps that the run is still training when SIGTERM arrives (the first progress line
# comes after the first loop; the rest of the run takes 2-5 s), few enough that the rerun which
# finishes them stays short.
STEPS = 600                  # 300 examples / batch 4 x 8 epochs
LOOP = 10                    # --iterations_per_loop
PREEMPTED_EXIT_STATUS = 0    # the runner saves, prints "(preempted: rerun ...)" and exits


def _wait_for(path, pattern, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, encoding="utf-8", errors="replace") as f:
            found = re.search(pattern, f.read())
        if found:
            return found
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    with open(path, encoding="utf-8", errors="replace") as f:
        pytest.fail(f"no {pattern!r} within {timeout}s (exit {proc.poll()}):\n{f.read()[-3000:]}")


@pytest.mark.slow
def test_sigterm_during_training_saves_and_a_rerun_finishes(tmp_path):
    data = _mrpc(tmp_path / "data", train_rows=300)
    out = tmp_path / "out"
    command = [sys.executable, str(REPO / "run_classifier.py"), "--task_name=MRPC",
               f"--data_dir={data}", f"--vocab_file={minilm_dir() / 'vocab.txt'}",
               "--model_preset=L-1_H-32_A-2", f"--output_dir={out}", "--do_train",
               "--train_batch_size=4", "--num_train_epochs=8", "--max_seq_length=16",
               f"--iterations_per_loop={LOOP}", "--save_checkpoints_steps=100000"]
    log = tmp_path / "first.log"
    with open(log, "w") as stderr:
        proc = processes.popen(command, env=ENV, stdout=subprocess.PIPE, stderr=stderr,
                               text=True)
        try:
            first = int(_wait_for(log, rf"step (\d+)/{STEPS} ", proc, 300).group(1))
            proc.send_signal(signal.SIGTERM)
            stdout, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log.read_text()
    assert proc.returncode == PREEMPTED_EXIT_STATUS, text[-3000:]
    stopped = int(re.search(r"stopped by SIGTERM at step (\d+) after saving", text).group(1))
    assert first <= stopped < STEPS
    assert f"training: step {stopped}" in stdout and "(preempted: rerun" in stdout
    assert tf.train.latest_checkpoint(str(out)) == str(out / f"ckpt-{stopped}")

    rerun = processes.run(command, env=ENV, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"resumed from {out / f'ckpt-{stopped}'} at step {stopped}" in rerun.stderr
    first_loop = int(re.search(rf"step (\d+)/{STEPS} ", rerun.stderr).group(1))
    assert first_loop == stopped + LOOP
    assert f"training: step {STEPS}" in rerun.stdout and "preempted" not in rerun.stdout
    assert tf.train.latest_checkpoint(str(out)) == str(out / f"ckpt-{STEPS}")
