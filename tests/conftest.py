import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402


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
