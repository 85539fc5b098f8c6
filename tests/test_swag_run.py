"""run_swag end to end with a small model: it fits real SWAG rows (both layouts), writes
eval_results.txt and per-choice probabilities. (Held-out accuracy above chance with
all-MiniLM-L6-v2 is measured by quality/swag_quality.py: too slow for a unit test.)"""

import csv
import dataclasses
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.jobs.driver import run_task
from bert_tf.jobs.swag import SwagOptions, SwagTask, run
from bert_tf.metrics.results import read_eval_results
from helpers import shared_path


def _rows(src, dst, first, count, drop_label=False):
    with open(src, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1 + first:1 + first + count]
    if drop_label:
        header, body = header[:-1], [r[:-1] for r in body]
    with open(dst, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([header] + body)
    return str(dst)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A 1-layer model trained 48 steps on 32 real SWAG rows, evaluated on them, predicting
    them without their labels, and exported; "opts" are its options without --export_dir."""
    folder = tmp_path_factory.mktemp("swag")
    regular = shared_path("data/swag/train.first999.csv")
    train = _rows(regular, folder / "train.csv", 0, 32)
    test = _rows(regular, folder / "test.csv", 0, 32, drop_label=True)
    full = _rows(shared_path("data/swag/train_full.first998.csv"), folder / "full.csv", 0, 32)
    config = BertConfig.from_preset("L-1_H-64_A-2", vocab_size=30522, max_position_embeddings=64)
    keras.utils.set_random_seed(2)
    opts = SwagOptions(config=config, output_dir=str(folder / "out"),
                       vocab_file=str(shared_path("data/reference/vocab.txt")),
                       train_file=train, eval_file=train, predict_file=test, do_train=True,
                       do_eval=True, do_predict=True, max_seq_length=48, train_batch_size=8,
                       eval_batch_size=16, learning_rate=3e-3, num_train_epochs=12,
                       iterations_per_loop=12)
    result = run(dataclasses.replace(opts, export_dir=str(folder / "export")),
                 tf.distribute.get_strategy())
    return {"result": result, "opts": opts, "folder": folder, "full": full, "test": test}


def test_model_fits_its_training_rows(fitted):
    result = fitted["result"]
    assert result["train"]["step"] == 48
    # Chance is 0.25; a model that learnt to score endings fits these 32 rows.
    assert result["eval"]["eval_accuracy"] >= 0.9, result["eval"]
    written = read_eval_results(fitted["folder"] / "out" / "eval_results.txt")
    assert written["global_step"] == 48
    assert written["eval_accuracy"] == pytest.approx(result["eval"]["eval_accuracy"])
    assert written["eval_loss"] < np.log(4)


def test_predictions_hold_one_probability_per_choice(fitted):
    with open(fitted["result"]["predict"], encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 32
    assert list(rows[0]) == ["id", "prediction", "prob_0", "prob_1", "prob_2", "prob_3"]
    assert rows[0]["id"] == "anetv_jkn6uvmqwh4/3416"
    for row in rows:
        probs = [float(row[f"prob_{c}"]) for c in range(4)]
        assert sum(probs) == pytest.approx(1.0, abs=1e-5)
        assert int(row["prediction"]) == int(np.argmax(probs))


def test_full_layout_evaluates_through_the_job(fitted):
    opts = dataclasses.replace(fitted["opts"], do_train=False, do_predict=False,
                               eval_file=fitted["full"])
    evaluation = run(opts, tf.distribute.get_strategy())["eval"]
    # Same rows, endings reordered with the gold ending at its own position.
    assert evaluation["eval_accuracy"] >= 0.75, evaluation


def test_training_file_without_labels_is_refused(fitted):
    opts = dataclasses.replace(fitted["opts"], train_file=fitted["test"], do_eval=False,
                               do_predict=False)
    with pytest.raises(ValueError, match="no label column"):
        run(opts, tf.distribute.get_strategy())


def test_export_dir_writes_a_multiple_choice_savedmodel(fitted):
    export = fitted["folder"] / "export"
    assert fitted["result"]["export"] == str(export / "1")
    assert (export / "1" / "saved_model.pb").is_file()
    info = json.loads((export / "1" / "assets.extra" / "export_info.json").read_text())
    assert (info["task"], info["num_choices"], info["seq_length"]) == ("multiple_choice", 4, 48)


def test_options_name_the_missing_file(fitted, tmp_path):
    opts = dataclasses.replace(fitted["opts"], do_train=False, do_predict=False,
                               eval_file=str(tmp_path / "nope.csv"))
    with pytest.raises(FileNotFoundError, match="--eval_file .*nope.csv does not exist"):
        opts.validate()
    with pytest.raises(ValueError, match="--num_choices must be in 2..5, got 6"):
        dataclasses.replace(fitted["opts"], num_choices=6).validate()


class ExportRecordingSwag(SwagTask):
    """SwagTask that keeps the contract it gives the driver to export."""

    def contract(self, decision=None):
        self.exported = super().contract(decision)
        return self.exported


@pytest.mark.parametrize("read_last", ["full layout, 3 endings", "regular layout, 4 endings"])
def test_the_export_serves_num_choices_whichever_file_is_read_last(fitted, tmp_path, read_last):
    # --num_choices=3: full-layout rows get 3 endings, regular-layout rows always have 4
    full, regular = fitted["full"], fitted["opts"].train_file
    eval_file, predict_file = (regular, full) if read_last.startswith("full") else (full, regular)
    opts = dataclasses.replace(fitted["opts"], do_train=False, num_choices=3,
                               output_dir=str(tmp_path / "out"),
                               init_checkpoint=str(fitted["folder"] / "out"),
                               eval_file=eval_file, predict_file=predict_file)
    task = ExportRecordingSwag(opts)
    result = run_task(task, tf.distribute.get_strategy())
    with open(result["predict"], encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert sum(name.startswith("prob_") for name in header) == int(read_last.split()[-2])
    assert task.exported.num_choices == 3
