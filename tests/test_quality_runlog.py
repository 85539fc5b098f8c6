"""quality/runlog.run_job: a quality sweep's runner process resumes an interrupted run of the same
command on the same code, and starts any other run from an empty output folder."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "quality"))
import runlog  # noqa: E402

# A stand-in runner: the first call leaves a "checkpoint" and stops before evaluating (as a
# run_classifier stopped by SIGTERM); a call that finds the checkpoint evaluates.
RUNNER = """
import os, sys
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--output_dir="))
checkpoint = os.path.join(out, "checkpoint")
if os.path.exists(checkpoint):
    with open(os.path.join(out, "eval_results.txt"), "w") as f:
        f.write("eval_accuracy = 0.75\\n")
else:
    open(checkpoint, "w").close()
"""


@pytest.fixture
def runner(tmp_path):
    path = tmp_path / "runner.py"
    path.write_text(RUNNER)
    return str(path)


def test_an_interrupted_run_says_how_to_resume_and_resumes(runner, tmp_path):
    out = str(tmp_path / "run")
    with pytest.raises(SystemExit, match="stopped before evaluating.*rerun the same command"):
        runlog.run_job(runner, out, ["--seed=1"], "probe run")
    values, _ = runlog.run_job(runner, out, ["--seed=1"], "probe run")
    assert values == {"eval_accuracy": 0.75}


def test_another_command_starts_from_an_empty_folder(runner, tmp_path):
    out = str(tmp_path / "run")
    with pytest.raises(SystemExit):
        runlog.run_job(runner, out, ["--seed=1"], "probe run")
    (tmp_path / "run" / "stale").write_text("from the other run")
    with pytest.raises(SystemExit, match="stopped before evaluating"):
        runlog.run_job(runner, out, ["--seed=2"], "probe run")      # no checkpoint kept
    assert not (tmp_path / "run" / "stale").exists()


def test_a_finished_run_is_run_again_from_scratch(runner, tmp_path):
    out = str(tmp_path / "run")
    with pytest.raises(SystemExit):
        runlog.run_job(runner, out, ["--seed=1"], "probe run")
    runlog.run_job(runner, out, ["--seed=1"], "probe run")
    with pytest.raises(SystemExit, match="stopped before evaluating"):
        runlog.run_job(runner, out, ["--seed=1"], "probe run")


def test_a_run_on_other_code_starts_from_an_empty_folder(runner, tmp_path, monkeypatch):
    out = str(tmp_path / "run")
    with pytest.raises(SystemExit):
        runlog.run_job(runner, out, ["--seed=1"], "probe run")
    state = dict(runlog.code_state(), changes="0123abcd")            # an uncommitted edit
    monkeypatch.setattr(runlog, "code_state", lambda: state)
    with pytest.raises(SystemExit, match="stopped before evaluating"):
        runlog.run_job(runner, out, ["--seed=1"], "probe run")
