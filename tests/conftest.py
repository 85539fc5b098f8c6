import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# Training iterators without tf.data's autotuner, here and in the runners the tests start:
# freeing each finished run's iterator would otherwise wait seconds for its thread
# (bert_tf.training.trainer.TRAINING_AUTOTUNE_ENV).
os.environ.setdefault("BERT_TF_TRAINING_DATA_AUTOTUNE", "0")

import pytest  # noqa: E402

# tiers: the fast/slow split (tests/tiers.py); fixtures_serving: session-scoped models and
# exports that several test files read, built once per test process.
pytest_plugins = ["tiers", "fixtures_serving"]


def pytest_configure(config):
    """Under xdist, each test process's TensorFlow gets its share of the cores for one op's
    threads (intra-op), not all of them: two workers on two cores, each with a two-thread pool,
    would spin against each other. Measured on 2 cores, 6 files with -n 2: 101.4 s -> 95.1 s
    and 111.9 s -> 103.7 s. Runner processes that tests start keep TensorFlow's default."""
    if hasattr(config, "workerinput"):
        import tensorflow as tf
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        share = max(1, cores // config.workerinput["workercount"])
        tf.config.threading.set_intra_op_parallelism_threads(share)


def pytest_sessionstart(session):
    """Starts bert_tf.processes' fork server in each test process (not in xdist's controller)
    and waits for its imports (~5 s) before the first test: otherwise whichever test first
    starts a runner process pays them, or the tests beside the import run slower, and neither
    is what the profile measured."""
    if hasattr(session.config, "workerinput") or not session.config.getoption("numprocesses",
                                                                                None):
        import sys

        from bert_tf import processes
        processes.run([sys.executable, "-c", "pass"], check=True)


def pytest_collection_finish(session):
    """Python's collector for the test process: what the imports and collection built (over a
    million objects, most of them TensorFlow's) moves out of its reach, and it runs less often.
    A full collection walks every live object, and the tests' graphs and Keras models keep many
    alive: with the defaults, test_run_classifier.py and test_distillation.py spent 3.7 s of
    their 97 s in it; with these, 1.5 s. The code under test runs unchanged."""
    import gc
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


@pytest.fixture(scope="session")
def minilm_encoder():
    """all-MiniLM-L6-v2 (real weights) loaded through bert_tf.load_encoder; shared, read-only."""
    import bert_tf
    from helpers import minilm_dir
    return bert_tf.load_encoder(minilm_dir())


@pytest.fixture(scope="session")
def minilm_reference():
    """The stored HuggingFace activations for 14 inputs (see ../shared/data/README.md §6)."""
    import numpy as np
    from helpers import shared_path
    return dict(np.load(shared_path("data/reference/minilm_l6_reference.npz")))


@pytest.fixture(scope="session", autouse=True)
def built_once_root(tmp_path_factory):
    """helpers.built_once's folder: the temporary root that this run's xdist workers share
    (pytest-N/, above each worker's popen-gwK/), or this process's own without xdist."""
    import helpers
    root = tmp_path_factory.getbasetemp()
    helpers.BUILT_ONCE_ROOT = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


@pytest.fixture(scope="session")
def small_corpus():
    """A 2,000-piece WordPiece vocabulary learned from the inaugural addresses, pre-training
    records from the State of the Union addresses (train) and the inaugural addresses (held-out
    eval), sequence length 64, 10 predictions. A small vocabulary keeps the tied 30k-wide
    masked-LM softmax from dominating CPU test time. Built once for all workers (~7 s)."""
    import dataclasses

    from bert_tf.data.pretraining import PretrainingDataOptions, create_pretraining_data
    from bert_tf.tokenization import vocab_learning
    from helpers import built_once, shared_path
    inaugural = str(shared_path("data/corpus/bert_format/inaugural.sentences.txt"))
    state_union = str(shared_path("data/corpus/bert_format/state_union.sentences.txt"))

    def build(folder):
        counts = vocab_learning.count_words([inaugural], True)
        tokens = vocab_learning.learn_wordpiece_vocab(counts, 2000, num_unused=10,
                                                      num_iterations=2, max_unique_chars=200)
        vocab_learning.write_vocab(tokens, str(folder / "vocab.txt"))
        options = PretrainingDataOptions(vocab_file=str(folder / "vocab.txt"), max_seq_length=64,
                                         max_predictions_per_seq=10, dupe_factor=2)
        create_pretraining_data(state_union, str(folder / "train.tfrecord"), options,
                                num_workers=2)
        create_pretraining_data(inaugural, str(folder / "eval.tfrecord"),
                                dataclasses.replace(options, dupe_factor=1), num_workers=2)

    folder, _ = built_once("small_corpus", build)
    vocab_size = (folder / "vocab.txt").read_text(encoding="utf-8").count("\n")  # one per token
    return {"vocab": str(folder / "vocab.txt"), "vocab_size": vocab_size,
            "train": str(folder / "train.tfrecord"), "eval": str(folder / "eval.tfrecord"),
            "max_seq_length": 64, "max_predictions_per_seq": 10, "folder": folder}
