"""The quickstart pipeline: stages reused, resumed or redone as their commands say, failures
reported with their log, console progress lines, and the stages' commands chained together.
(The whole job runs, with --smoke, in test_quickstart_smoke.py.)"""

import hashlib
import os

import pytest

from bert_tf.quickstart import pipeline


def _counting_stage(tmp_path, name, text, report=None):
    """A stage whose command appends a line to runs.txt and writes out.txt."""
    code = (f"import pathlib; p = pathlib.Path({str(tmp_path)!r}); "
            f"open(p / 'runs.txt', 'a').write({text!r} + '\\n'); "
            f"(p / 'out.txt').write_text({text!r}); print('made', {text!r})")
    return pipeline.Stage(name, f"stage {name}", ["-c", code], [str(tmp_path / "out.txt")],
                          clear=[str(tmp_path / "partial.txt")], report=report)


def _runs(tmp_path):
    return (tmp_path / "runs.txt").read_text().splitlines()


def test_a_finished_stage_is_reused_and_a_changed_one_redone(tmp_path, capsys):
    reports = []
    first = pipeline.Pipeline(str(tmp_path / "out"))
    first.run(_counting_stage(tmp_path, "s", "v1", lambda: reports.append("r")))
    again = pipeline.Pipeline(str(tmp_path / "out"))
    again.run(_counting_stage(tmp_path, "s", "v1", lambda: reports.append("r")))
    assert _runs(tmp_path) == ["v1"]
    assert reports == ["r", "r"]                       # key numbers are printed either way
    printed = capsys.readouterr().out
    assert "finished by an earlier run" in printed and printed.count("made v1") == 2
    (tmp_path / "partial.txt").write_text("left by an older command")
    changed = pipeline.Pipeline(str(tmp_path / "out"))
    changed.run(_counting_stage(tmp_path, "s", "v2"))
    assert _runs(tmp_path) == ["v1", "v2"]
    assert not (tmp_path / "partial.txt").exists()     # other command: started afresh


def test_an_interrupted_stage_resumes_with_its_partial_outputs(tmp_path):
    stage = _counting_stage(tmp_path, "s", "v1")
    run = pipeline.Pipeline(str(tmp_path / "out"))
    run._chain = "x"
    os.makedirs(tmp_path / "out" / ".stages")
    # What run() records before executing, as if the process had been killed afterwards.
    chain = hashlib.sha1(("x" + stage.display()).encode()).hexdigest()
    (tmp_path / "out" / ".stages" / "s.started").write_text(chain)
    (tmp_path / "partial.txt").write_text("progress of the killed run")
    run.run(stage)
    assert (tmp_path / "partial.txt").exists()
    assert _runs(tmp_path) == ["v1"]


def test_a_failing_stage_stops_with_its_log(tmp_path, capsys):
    stage = pipeline.Stage("bad", "bad", ["-c", "import sys; print('oops', file=sys.stderr); "
                                                "sys.exit(3)"], [])
    with pytest.raises(SystemExit, match=r"stage bad failed \(exit 3\).*bad.log"):
        pipeline.Pipeline(str(tmp_path)).run(stage)
    assert "oops" in capsys.readouterr().err


def test_progress_lines_are_compacted_and_other_log_lines_hidden():
    line = ("12:00:01 INFO step 1500/3000 loss=5.123 masked_lm_accuracy=0.2512 "
            "learning_rate=0.0005 steps_per_sec=20.1 examples_per_sec=643.2 eta=0:01:15\n")
    assert pipeline._console_line(line) == (
        "  [##########..........] step  1500/3000  loss 5.123  mlm_acc 0.2512  lr 0.0005  "
        "ex/s 643.2  eta 0:01:15")
    assert pipeline._console_line("12:00:02 INFO eval at step 50: eval_accuracy = 0.7\n") == \
        "  eval at step 50: eval_accuracy = 0.7"
    assert pipeline._console_line("12:00:03 INFO building the model\n") is None


def test_stage_commands_chain_the_outputs(tmp_path):
    stages = {stage.name: stage for stage in pipeline.Pipeline(str(tmp_path)).stages()}
    assert list(stages) == ["data", "vocab", "pretraining_data", "heldout_data", "config",
                            "pretrain", "fill_mask", "classifier", "classifier_random", "export",
                            "serve", "plot"]
    out = str(tmp_path)
    assert f"--init_checkpoint={out}/pretrain" in stages["classifier"].argv
    # 8b: the same fine-tuning from random weights, in its own folder.
    random_argv = stages["classifier_random"].argv
    assert not any(a.startswith("--init_checkpoint") for a in random_argv)
    assert [a for a in random_argv if not a.startswith("--output_dir")] == [
        a for a in stages["classifier"].argv
        if not a.startswith(("--output_dir", "--init_checkpoint"))]
    assert f"--init_checkpoint={out}/classifier/best" in stages["export"].argv
    assert f"--export_dir={out}/serving" in stages["serve"].argv
    assert stages["plot"].argv[2:5] == [f"{out}/pretrain", f"{out}/classifier",
                                        f"{out}/classifier_random"]


def test_records_written_unmasked_are_masked_by_the_pretraining(tmp_path):
    """The default writes unmasked records; the pre-training must then mask them as it reads
    (whole words, masked LM only), or its reader rejects them."""
    stages = {stage.name: stage for stage in pipeline.Pipeline(str(tmp_path)).stages()}
    for name in ("pretraining_data", "heldout_data", "pretrain"):
        assert "--dynamic_masking" in stages[name].argv, name
    assert {"--do_whole_word_mask", "--nouse_next_sentence",
            f"--vocab_file={tmp_path}/vocab.txt"} <= set(stages["pretrain"].argv)
    static = pipeline.Pipeline(str(tmp_path), pipeline.Settings(
        pretrain_dynamic_masking=False, pretrain_whole_word_mask=False,
        pretrain_next_sentence=True)).stages()
    assert not any("--dynamic_masking" in stage.argv or "--nouse_next_sentence" in stage.argv
                   for stage in static)
