"""BertEmbedder and SentencePooling: sentence-transformers' poolings of real MiniLM outputs,
a sentence-transformers folder's pooling read (and a bad one rejected), .keras round trips."""

import csv
import json
import shutil

import keras
import numpy as np
import pytest

from bert_tf.checkpoints import load_encoder
from bert_tf.checkpoints.sentence_transformers import Pooling, read_pooling, resolve_pooling
from bert_tf.model import BertEmbedder, SentencePooling
from bert_tf.model.precision import with_dtype_policy
from bert_tf.tokenization.full import FullTokenizer
from helpers import minilm_dir, shared_path


def sts_sentences(n):
    with open(shared_path("data/glue/STS-B/dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [row["sentence1"] for row in rows[:n]]


def padded_ids(texts, seq=32):
    tokenizer = FullTokenizer(minilm_dir() / "vocab.txt", do_lower_case=True)
    ids = np.zeros((len(texts), seq), np.int32)
    for i, text in enumerate(texts):
        row = [101] + tokenizer.encode(text)[:seq - 2] + [102]
        ids[i, :len(row)] = row
    return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "segment_ids": np.zeros_like(ids)}


@pytest.fixture(scope="module")
def encoder():
    return load_encoder(minilm_dir())


@pytest.fixture(scope="module")
def features():
    return padded_ids(sts_sentences(6))


def numpy_pooling(tokens, mask, mode):
    """sentence-transformers' Pooling, written out in numpy."""
    keep = mask[..., None].astype(np.float64)
    count = np.maximum(keep.sum(1), 1e-9)
    if mode == "cls":
        return tokens[:, 0]
    if mode == "max":
        return np.where(keep > 0, tokens, -1e9).max(1)
    total = (tokens * keep).sum(1)
    return total / count if mode == "mean" else total / np.sqrt(count)


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "mean_sqrt_len"])
@pytest.mark.parametrize("normalize", [False, True])
def test_each_pooling_of_minilm_outputs_equals_numpy(encoder, features, mode, normalize):
    tokens = encoder(features)["sequence_output"].numpy().astype(np.float64)
    expected = numpy_pooling(tokens, features["input_mask"], mode)
    if normalize:
        expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    got = BertEmbedder(encoder, pooling=mode, normalize=normalize)(features)["embedding"]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_an_embedding(encoder):
    text = sts_sentences(1)
    model = BertEmbedder(encoder, pooling="max", normalize=True)
    short = model(padded_ids(text, seq=24))["embedding"].numpy()
    long = model(padded_ids(text, seq=64))["embedding"].numpy()
    np.testing.assert_allclose(short, long, atol=1e-5)


def test_windows_of_a_text_are_averaged_and_normalised_again(encoder, features):
    model = BertEmbedder(encoder, pooling="mean", normalize=True)
    windows = model(features)["embedding"].numpy()
    got = model(dict(features, window_example=np.array([0, 0, 0, 1, 1, 2], np.int32)))
    mean = np.stack([windows[:3].mean(0), windows[3:5].mean(0), windows[5]])
    np.testing.assert_allclose(got["embedding"].numpy(),
                               mean / np.linalg.norm(mean, axis=1, keepdims=True), atol=1e-6)


def test_mixed_precision_embeddings_are_float32_and_close(encoder, features):
    model = BertEmbedder(encoder, pooling="mean", normalize=True)
    half = with_dtype_policy(model, "mixed_bfloat16")
    got = half(features)["embedding"]
    assert got.dtype == "float32"
    cosine = np.sum(got.numpy() * model(features)["embedding"].numpy(), axis=1)
    assert cosine.min() > 0.99


def test_an_unknown_pooling_is_refused_with_the_modes():
    with pytest.raises(ValueError, match="one of mean, cls, max, mean_sqrt_len, got 'sum'"):
        SentencePooling("sum")


def test_the_pooling_layer_round_trips_through_a_keras_file(tmp_path):
    inputs = keras.Input((None, 8)), keras.Input((None,), dtype="int32")
    pooled = SentencePooling("mean_sqrt_len", normalize=True, name="pool")(*inputs)
    path = tmp_path / "pooling.keras"
    keras.Model(inputs, pooled).save(path)
    loaded = keras.models.load_model(path)
    layer = loaded.get_layer("pool")
    assert (type(layer), layer.mode, layer.normalize) == (SentencePooling, "mean_sqrt_len", True)
    x = np.random.default_rng(0).normal(size=(3, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1] * 5, [1, 0, 0, 0, 0]], np.int32)
    np.testing.assert_allclose(loaded([x, mask]).numpy(), keras.Model(inputs, pooled)(
        [x, mask]).numpy(), atol=1e-6)


def test_an_embedder_round_trips_through_a_keras_file(tmp_path, encoder, features):
    model = BertEmbedder(encoder, pooling="max", normalize=True)
    path = tmp_path / "embedder.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert (loaded.pooling_mode, loaded.normalize) == ("max", True)
    np.testing.assert_allclose(loaded(features)["embedding"].numpy(),
                               model(features)["embedding"].numpy(), atol=1e-6)


def test_minilm_folder_says_mean_pooling_then_normalisation():
    assert read_pooling(minilm_dir()) == Pooling("mean", True)


def test_flags_win_over_the_folder_and_a_plain_folder_means_mean():
    assert resolve_pooling(minilm_dir(), mode="cls") == Pooling("cls", True)
    assert resolve_pooling(minilm_dir(), normalize=False) == Pooling("mean", False)
    assert resolve_pooling(shared_path("data/glue/STS-B")) == Pooling("mean", False)


def st_folder(tmp_path, **pooling_fields):
    folder = tmp_path / "st"
    shutil.copytree(minilm_dir() / "1_Pooling", folder / "1_Pooling")
    shutil.copy(minilm_dir() / "modules.json", folder / "modules.json")
    config = json.loads((folder / "1_Pooling/config.json").read_text())
    (folder / "1_Pooling/config.json").write_text(json.dumps({**config, **pooling_fields}))
    return folder


def test_a_folder_asking_for_an_unsupported_pooling_names_the_file_and_field(tmp_path):
    folder = st_folder(tmp_path, pooling_mode_weightedmean_tokens=True,
                       pooling_mode_mean_tokens=False)
    with pytest.raises(ValueError, match=r"1_Pooling/config.json: field "
                                         r"'pooling_mode_weightedmean_tokens'"):
        read_pooling(folder)


def test_a_folder_concatenating_poolings_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"config.json: exactly one of the fields .* got "
                                         r"\['pooling_mode_mean_tokens', "
                                         r"'pooling_mode_max_tokens'\]"):
        read_pooling(st_folder(tmp_path, pooling_mode_max_tokens=True))


def test_a_folder_with_an_unsupported_module_names_it(tmp_path):
    folder = st_folder(tmp_path)
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense",
                    "type": "sentence_transformers.models.Dense"})
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ValueError, match=r"modules.json: module 3 has type "
                                         r"'sentence_transformers.models.Dense'"):
        read_pooling(folder)
