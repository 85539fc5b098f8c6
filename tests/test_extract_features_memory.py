"""extract_features streams: peak memory does not grow with the input.

Measured with all-MiniLM-L6-v2 (--layers=-1, JSON + per-token .npz, 2 cores): 500 lines ->
peak RSS 1,035,360 KB, 2,000 lines -> 1,033,968 KB (outputs 61 MB and 234 MB of JSON).
"""

import os
import subprocess
import sys

import keras

from bert_tf import BertConfig, BertEncoder
from bert_tf.checkpoints import save_weights
from helpers import REPO, shared_path

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
MEASURE = """
import resource, runpy, sys
sys.argv = ["extract_features.py"] + sys.argv[1:]
try:
    runpy.run_path({script!r}, run_name="__main__")
except SystemExit as e:
    if e.code:
        raise
print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _start(tmp_path, checkpoint, vocab, lines, name):
    """The runner on the first `lines` lines of real text, in a fresh interpreter that prints its
    peak RSS; returns (the process, its output file)."""
    source = shared_path("data/corpus/bert_format/wikitext2_raw_valid_test.sentences.txt")
    with open(source, encoding="utf-8") as f:
        text = [next(f) for _ in range(lines)]
    inputs = tmp_path / f"{name}.txt"
    inputs.write_text("".join(text), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-c", MEASURE.format(script=str(REPO / "extract_features.py")),
         f"--input_file={inputs}", f"--output_file={tmp_path / name}.jsonl",
         f"--compact_file={tmp_path / name}.npz", f"--init_checkpoint={checkpoint}",
         f"--vocab_file={vocab}", "--layers=-1", "--max_seq_length=64", "--batch_size=32"],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, tmp_path / f"{name}.jsonl"


def _peak_rss_kb(proc):
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    return int(stdout.split("MAXRSS_KB")[1].split()[0])


def test_peak_memory_is_flat_when_the_input_quadruples(tmp_path):
    keras.utils.set_random_seed(0)
    config = BertConfig.from_preset("L-1_H-128_A-2", vocab_size=30522, max_position_embeddings=64)
    checkpoint = save_weights(BertEncoder(config), str(tmp_path / "model"), "tf1")
    vocab = str(shared_path("data/reference/vocab.txt"))
    # Two processes side by side: each peak is its own, and the test waits for one run only.
    (small_proc, small_out), (large_proc, large_out) = (
        _start(tmp_path, checkpoint, vocab, 400, "x1"),
        _start(tmp_path, checkpoint, vocab, 1600, "x4"))
    small, large = _peak_rss_kb(small_proc), _peak_rss_kb(large_proc)
    # The 4x run writes ~4x the output; holding it (or its floats) would add tens of MB.
    assert large_out.stat().st_size > 3.5 * small_out.stat().st_size
    assert large - small < 15_000, (small, large)
