"""run_squad.py as users call it: google-research's flags and defaults, the shared runtime
flags, a distributed end-to-end run (a real process: its two CPU devices are set before
TensorFlow starts) and a validation error at the command line (the script run in this process,
scripts_in_process.run_script)."""

import json
import os
import sys

from scripts_in_process import run_script, script_flags
from bert_tf import processes
from helpers import REPO
from test_run_squad import synthetic_squad, synthetic_vocab, tiny_config

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))

GOOGLE_DEFAULTS = {
    "bert_config_file": None, "vocab_file": None, "output_dir": None, "train_file": None,
    "predict_file": None, "init_checkpoint": None, "do_lower_case": True,
    "max_seq_length": 384, "doc_stride": 128, "max_query_length": 64, "do_train": False,
    "do_predict": False, "train_batch_size": 32, "predict_batch_size": 8,
    "learning_rate": 5e-5, "num_train_epochs": 3.0, "warmup_proportion": 0.1,
    "save_checkpoints_steps": 1000, "iterations_per_loop": 1000, "n_best_size": 20,
    "max_answer_length": 30, "use_tpu": False, "tpu_name": None, "tpu_zone": None,
    "gcp_project": None, "master": None, "num_tpu_cores": 8, "verbose_logging": False,
    "version_2_with_negative": False, "null_score_diff_threshold": 0.0,
}
OUR_DEFAULTS = {
    "do_eval": False, "skip_bad_examples": False, "strategy": "default", "mixed_precision": None,
    "jit_compile": False, "model_preset": None, "seed": 12345, "num_cpu_devices": 0,
    "deterministic": False, "gradient_accumulation_steps": 1, "optimizer": "adamw_torch",
    "lr_decay_from": "warmup_end", "export_dir": None, "epochs_over": "features",
}


def test_flags_and_defaults_are_google_researchs_plus_the_shared_ones():
    with script_flags("run_squad.py") as values:
        defaults = {name: values[name].default for name in values}
    for name, value in {**GOOGLE_DEFAULTS, **OUR_DEFAULTS}.items():
        assert name in defaults, name
        assert defaults[name] == value, name


def test_mirrored_run_on_two_cpu_devices_answers_every_question(tmp_path):
    vocab = synthetic_vocab(tmp_path / "vocab.txt")
    tiny_config(len(open(vocab).read().split())).to_json_file(str(tmp_path / "config.json"))
    train = synthetic_squad(tmp_path / "train.json", 40, seed=1, impossible_every=4)
    dev = synthetic_squad(tmp_path / "dev.json", 23, seed=2, impossible_every=4, prefix="dev")
    out = tmp_path / "out"
    done = processes.run(
        [sys.executable, str(REPO / "run_squad.py"), f"--vocab_file={vocab}",
         f"--bert_config_file={tmp_path / 'config.json'}", f"--output_dir={out}",
         f"--train_file={train}", f"--predict_file={dev}", "--do_train", "--do_predict",
         "--do_eval", "--version_2_with_negative", "--max_seq_length=64", "--doc_stride=24",
         "--max_query_length=16", "--train_batch_size=8", "--predict_batch_size=6",
         "--num_train_epochs=1", "--epochs_over=examples", "--iterations_per_loop=5",
         "--strategy=mirrored",
         "--num_cpu_devices=2", f"--export_dir={tmp_path / 'export'}"], env=ENV,
        capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MirroredStrategy with 2 replica(s)" in done.stderr
    assert "training: step 5" in done.stdout
    predictions = json.loads((out / "predictions.json").read_text())
    null_odds = json.loads((out / "null_odds.json").read_text())
    # 23 questions in batches of 6 split over 2 replicas: the last, partial batch is kept.
    assert sorted(predictions) == sorted(null_odds) == sorted(f"dev{i}" for i in range(23))
    results = json.loads((out / "eval_results.json").read_text())
    assert results["total"] == 23 and results["NoAns_total"] == 6
    assert (out / "log.txt").read_text().count("Eval results") == 1
    # --export_dir: the trained span labeler, served with the run's lengths.
    assert (tmp_path / "export" / "1" / "saved_model.pb").is_file()
    info = json.loads((tmp_path / "export" / "1" / "assets.extra" / "export_info.json")
                      .read_text())
    assert ((info["task"], info["seq_length"], info["max_query_length"], info["doc_stride"])
            == ("squad", 64, 16, 24))


def test_command_line_error_names_the_problem(tmp_path):
    vocab = synthetic_vocab(tmp_path / "vocab.txt")
    dev = synthetic_squad(tmp_path / "dev.json", 3, seed=2)
    done = run_script("run_squad.py", f"--vocab_file={vocab}", "--model_preset=tiny",
                      f"--output_dir={tmp_path / 'out'}", "--do_predict",
                      f"--predict_file={dev}", "--max_seq_length=64", "--max_query_length=64")
    assert done.returncode != 0
    assert ("The max_seq_length (64) must be greater than max_query_length (64) + 3"
            in done.stderr)
