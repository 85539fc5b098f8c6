"""Plants known defects in the library, one at a time, and lists the fast-tier tests that catch
each: the fast tier is only worth running between edits if it fails on the bugs that matter.

  python3 tests/planted_defects.py [--only NAME] [-- PYTEST ARGS]

Each defect is a one-line edit of a library file (the original text must occur there exactly
once). The file is restored after its run, also on Ctrl-C. One JSON line per defect goes to
tests/results/planted_defects.jsonl: the edit, the failing fast-tier tests, the seconds, the
commit and the CPU. Exits 1 if a defect fails no fast-tier test.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bert_tf.cpu_features import cpu_flags, cpu_model  # noqa: E402

RESULTS = REPO / "tests" / "results" / "planted_defects.jsonl"

# name: (file, original text, planted text)
DEFECTS = {
    "wordpiece_long_word_limit": (
        "bert_tf/tokenization/wordpiece.py",
        "    if len(word) > max_input_chars_per_word:",
        "    if len(word) >= max_input_chars_per_word:"),
    "masked_lm_loss_normalisation": (
        "bert_tf/objectives/pretraining.py",
        '        terms = {"masked_lm": tf.reduce_sum(weights) + 1e-5}',
        '        terms = {"masked_lm": tf.cast(tf.size(weights), tf.float32) + 1e-5}'),
    "tf1_checkpoint_variable_name": (
        "bert_tf/checkpoints/names.py",
        '        _layer_norm(f"{p}/attention/output/LayerNorm", block.attention_layer_norm, out)',
        '        _layer_norm(f"{p}/attention/output/layer_norm", block.attention_layer_norm, out)'),
    "serving_output_name": (
        "bert_tf/serving/heads.py",
        '        return {"probabilities": tf.nn.softmax(logits), "logits": logits,\n'
        '                "label_id": label_id,',
        '        return {"probs": tf.nn.softmax(logits), "logits": logits,\n'
        '                "label_id": label_id,'),
    "squad_answer_extraction": (
        "bert_tf/data/squad/postprocess.py",
        "feature.tokens[pred.start_index:pred.end_index + 1]",
        "feature.tokens[pred.start_index:pred.end_index]"),
    "int8_weight_scale": (
        "bert_tf/model/int8.py",
        "    scales = np.maximum(np.abs(kernel).max(axis=0), _SMALLEST_RANGE) / levels",
        "    scales = np.maximum(np.abs(kernel).max(), _SMALLEST_RANGE) / levels"),
    "serving_keras_variable_copies": (
        "bert_tf/serving/heads.py",
        "        self.model_variables = [v.value for v in model.variables]",
        "        self.model_variables = list(model.variables)"),
    "learning_rate_schedule": (
        "bert_tf/training/optimization.py",
        "        progress = ops.clip((step - decay_start) / decay_steps, 0.0, 1.0)",
        "        progress = ops.clip(step / decay_steps, 0.0, 1.0)"),
}


def failing_tests(pytest_args):
    """(node ids of failed or erroring tests, number run, seconds) of one fast-tier run."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.xml")
        start = time.time()
        subprocess.run([sys.executable, "-m", "pytest", "--fast", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={report}", *pytest_args], cwd=REPO,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.time() - start
        failed, count = [], 0
        for case in ET.parse(report).getroot().iter("testcase"):
            count += 1
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(case.get("classname").replace(".", "/") + ".py::"
                              + case.get("name"))
        return failed, count, seconds


def plant(name, pytest_args):
    rel, original, planted = DEFECTS[name]
    path = REPO / rel
    source = path.read_text(encoding="utf-8")
    if source.count(original) != 1:
        raise SystemExit(f"{rel}: the text of defect {name!r} occurs {source.count(original)} "
                         f"times, not once; update DEFECTS")
    try:
        path.write_text(source.replace(original, planted), encoding="utf-8")
        failed, count, seconds = failing_tests(pytest_args)
    finally:
        path.write_text(source, encoding="utf-8")
    return {"defect": name, "file": rel, "original": original, "planted": planted,
            "failed": failed, "fast_tests_run": count, "seconds": round(seconds, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(DEFECTS))
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    RESULTS.parent.mkdir(exist_ok=True)
    missed = []
    for name in args.only or DEFECTS:
        row = plant(name, args.pytest_args)
        row.update(commit=commit, cpu=cpu_model(), date=time.strftime("%Y-%m-%d"),
                   flags={f: f in cpu_flags() for f in ("avx512f", "avx512_vnni", "avx512_bf16")})
        with open(RESULTS, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{name}: {len(row['failed'])} of {row['fast_tests_run']} fast tests fail "
              f"({row['seconds']} s)")
        for test in row["failed"]:
            print(f"    {test}")
        if not row["failed"]:
            missed.append(name)
    if missed:
        print(f"not caught by the fast tier: {', '.join(missed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
