"""Session-scoped fixtures shared by several test files (see conftest.py): the tiny random MRPC
classifier of test_serving_support, and its float32 export, loaded once (test_serving_int8
compares its int8 exports with it, test_serving_speed_options its XLA export and its
padding)."""

import pytest


@pytest.fixture(scope="session")
def tiny_classifier():
    """support.build_model("classifier"): a tiny random MRPC classifier; read-only."""
    import test_serving_support as support
    return support.build_model("classifier")


@pytest.fixture(scope="session")
def fp32_classifier_export(tiny_classifier):
    """(version path, the SavedModel loaded in this process) of tiny_classifier exported in
    float32 at seq_length support.SEQ, text pairs, without warm-up requests, once per test run
    (helpers.built_once); read-only."""
    import os

    import tensorflow as tf

    import test_serving_support as support
    from helpers import built_once, export_savedmodel
    folder, version = built_once("fp32_classifier", lambda folder: os.path.basename(
        export_savedmodel(tiny_classifier, "classifier", str(folder), support.vocab_file(), True,
                          support.SEQ, labels=support.MRPC_LABELS, text_pair=True,
                          precision="fp32", warmup=False)))
    path = str(folder / version)
    return path, tf.saved_model.load(path)
