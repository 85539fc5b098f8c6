"""The main job end to end: `python -m bert_tf.quickstart --smoke` runs every stage of
`bash quickstart.sh` (vocabulary, records, pre-training, fill-mask, fine-tuning, export,
raw-text requests, plots) with a few steps each, as a user would start it."""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_smoke_run_goes_from_stdlib_text_to_a_served_prediction(tmp_path):
    out = tmp_path / "qs"
    run = subprocess.run([sys.executable, "-m", "bert_tf.quickstart", "--smoke",
                          f"--output_dir={out}"], cwd=REPO, capture_output=True, text=True,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # The exported signature answered the raw-text requests and agreed with the runner.
    agree = re.search(r"agree on (\d+)/(\d+) test sentences", run.stdout)
    assert agree and agree.group(1) == agree.group(2) and int(agree.group(2)) > 0, run.stdout
    assert re.search(r"final_prediction: '.+' -> \S+", run.stdout), run.stdout[-3000:]
    # Both fine-tunings are scored on the same test sentences, and the summary compares them.
    for key in ("classifier_test_accuracy", "random_init_test_accuracy",
                "pretraining_gain_test_points"):
        assert re.search(rf"^  {key}: -?[0-9.]+$", run.stdout, re.M), (key, run.stdout[-3000:])
    assert (out / "serving" / "1" / "saved_model.pb").is_file()
    assert (out / "training_curves.png").stat().st_size > 10_000
