"""quality/runlog.run_job: a quality sweep's runner process resumes an interrupted run of the same
command on the same code, and starts any other run from an empty output folder."""

import os
import sys
import tempfile

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


def test_rows_name_no_folder_of_the_machine(tmp_path):
    """append_row writes the work folder, the checkout, MiniLM's folder, the temporary folder
    and the home folder as placeholders, so a raw results file can be committed as written."""
    work = tmp_path / "sweep"
    row = {"flags": [f"--init_checkpoint={work}/teacher", f"--vocab_file={runlog.REPO}/v.txt"],
           "curves": os.path.join(os.path.expanduser("~"), "x.png"), "seconds": 3.5,
           "nested": {"out": str(work)}}
    path = tmp_path / "rows.jsonl"
    runlog.append_row(str(path), row, str(work))
    written, = runlog.read_rows(str(path))
    assert written == {"flags": ["--init_checkpoint=<work_dir>/teacher",
                                 "--vocab_file=<repo>/v.txt"],
                       "curves": "~/x.png", "seconds": 3.5, "nested": {"out": "<work_dir>"}}
    assert runlog.portable(os.path.join(tempfile.gettempdir(), "run", "a")) == "<tmp>/run/a"
