"""The embedding kind served: export_savedmodel.py --task=embedding and bert_tf.predict give
the in-process embeddings of a sentence-transformers folder (real STS-B sentences); pooling from
the folder or the flags; long texts in windows; bf16 close to float32 on MiniLM's real weights.

Where the export, pooling and windows are what is checked, the folder is MiniLM's with a tiny
random BERT in place of its weights (its vocabulary, modules.json and 1_Pooling kept): no
weights change those, and a tiny model loads and exports in a fraction of MiniLM's time."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import test_serving_support as support
from bert_tf.checkpoints import load_encoder, save_weights
from bert_tf.jobs.export import ExportOptions, run as export_run
from bert_tf.jobs.predict import PredictOptions, run as predict_run
from bert_tf.model import BertEmbedder, BertEncoder
from bert_tf.prediction.loading import CheckpointSettings
from helpers import minilm_dir
from test_embedding_model import padded_ids, sts_sentences


def export(tmp_path, folder, **options):
    """export_savedmodel.py's job on the sentence-transformers `folder`: (version path, the
    SavedModel loaded in this process)."""
    path = export_run(ExportOptions(export_dir=str(tmp_path), init_checkpoint=str(folder),
                                    task="embedding", warmup=False, **options))
    return path, tf.saved_model.load(path)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """MiniLM's sentence-transformers folder (vocabulary, modules.json with its Normalize
    module, 1_Pooling: mean pooling) holding a tiny random BERT in HuggingFace format."""
    folder = tmp_path_factory.mktemp("tiny_sentence_transformer")
    keras.utils.set_random_seed(11)
    save_weights(BertEncoder(support.tiny_config()), folder, "hf",
                 vocab_file=minilm_dir() / "vocab.txt")
    for name in ("modules.json", "1_Pooling"):
        (folder / name).symlink_to(minilm_dir() / name)
    return folder


@pytest.fixture(scope="module")
def texts():
    return sts_sentences(12)


@pytest.fixture(scope="module")
def embedder(folder):
    """The folder's model with its pooling (mean, normalised), in process."""
    return BertEmbedder(load_encoder(folder), pooling="mean", normalize=True)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, folder):
    return export(tmp_path_factory.mktemp("embedding"), folder, max_seq_length=64)


def test_the_export_records_the_folders_pooling(exported):
    path, _ = exported
    with open(f"{path}/assets.extra/export_info.json", encoding="utf-8") as f:
        info = json.load(f)
    assert (info["task"], info["pooling"], info["normalize"]) == ("embedding", "mean", True)


def test_raw_text_gives_the_in_process_embeddings(exported, embedder, texts):
    served = exported[1].signatures["serving_default"](text_a=tf.constant(texts))
    expected = embedder(padded_ids(texts, seq=64))["embedding"].numpy()
    assert served["embedding"].shape == (len(texts), support.tiny_config().hidden_size)
    np.testing.assert_allclose(served["embedding"].numpy(), expected, atol=1e-5)


def test_token_ids_give_the_in_process_embeddings(exported, embedder, texts):
    features = padded_ids(texts, seq=64)
    served = exported[1].signatures["serve_features"](**{k: tf.constant(v)
                                                         for k, v in features.items()})
    np.testing.assert_allclose(served["embedding"].numpy(),
                               embedder(features)["embedding"].numpy(), atol=1e-5)


def test_predict_from_the_folder_and_from_the_export_equals_the_model(folder, exported,
                                                                        embedder, texts):
    expected = embedder(padded_ids(texts, seq=64))["embedding"].numpy()
    from_folder = predict_run(PredictOptions(model=str(folder), text=texts, batch_size=5,
                                             checkpoint=CheckpointSettings(max_seq_length=64)))
    from_export = predict_run(PredictOptions(model=exported[0], text=texts, batch_size=5))
    for results in (from_folder, from_export):
        assert [r["index"] for r in results] == list(range(len(texts)))
        np.testing.assert_allclose([r["embedding"] for r in results], expected, atol=1e-5)


def test_flags_override_the_folders_pooling(tmp_path, folder, embedder, texts):
    # Token-id signatures only (--notext_signatures): the pooling is the model's, the same
    # under every signature, and the raw-text one would only add tracing time.
    _, loaded = export(tmp_path, folder, max_seq_length=64, pooling="cls", normalize=False,
                       text_signatures=False)
    model = BertEmbedder(embedder.encoder, pooling="cls", normalize=False)
    features = padded_ids(texts[:3], seq=64)
    served = loaded.signatures["serve_features"](**{k: tf.constant(v)
                                                    for k, v in features.items()})
    np.testing.assert_allclose(served["embedding"].numpy(),
                               model(features)["embedding"].numpy(), atol=1e-5)


def window_features(text, seq, stride):
    """A text's windows as bert_tf.tokenization.windows cuts them, built here by hand."""
    ids = padded_ids([text], seq=512)["input_ids"][0]
    tokens = ids[1:int((ids > 0).sum()) - 1]
    window = seq - 2
    extra = max(len(tokens) - window, 0)
    starts = [min(i * stride, extra) for i in range(1 + -(-extra // stride))]
    rows = np.zeros((len(starts), seq), np.int32)
    for k, start in enumerate(starts):
        piece = [101, *tokens[start:start + window], 102]
        rows[k, :len(piece)] = piece
    return {"input_ids": rows, "input_mask": (rows > 0).astype(np.int32),
            "segment_ids": np.zeros_like(rows)}


def test_a_long_text_is_the_normalised_mean_of_its_windows(tmp_path, folder, embedder, texts):
    long_text = " ".join(texts)
    _, loaded = export(tmp_path, folder, max_seq_length=32, doc_stride=16)
    served = loaded.signatures["serving_default"](text_a=tf.constant([texts[0], long_text]))
    short, long = window_features(texts[0], 32, 16), window_features(long_text, 32, 16)
    assert len(long["input_ids"]) > 3
    both = {k: np.concatenate([short[k], long[k]]) for k in short}
    window_example = np.array([0] + [1] * len(long["input_ids"]), np.int32)
    expected = embedder(dict(both, window_example=window_example))["embedding"].numpy()
    np.testing.assert_allclose(served["embedding"].numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served["embedding"].numpy(), axis=1), 1, atol=1e-5)


def test_a_bf16_export_stays_close(tmp_path, minilm_encoder, texts):
    """MiniLM's real weights: bf16 rounding of a trained model's activations (on token ids:
    the rounding is the model's, the raw-text signature would only add tracing time)."""
    _, loaded = export(tmp_path, minilm_dir(), max_seq_length=64, precision="bf16",
                       text_signatures=False)
    features = padded_ids(texts, seq=64)
    served = loaded.signatures["serve_features"](**{k: tf.constant(v)
                                                    for k, v in features.items()})["embedding"]
    assert served.dtype == tf.float32
    embedder = BertEmbedder(minilm_encoder, pooling="mean", normalize=True)
    cosine = np.sum(served.numpy() * embedder(features)["embedding"].numpy(), axis=1)
    assert cosine.min() > 0.99


def test_pooling_flags_belong_to_the_embedding_task(tmp_path):
    with pytest.raises(ValueError, match=r"--pooling: for --task=embedding, not encoder"):
        ExportOptions(export_dir=str(tmp_path), init_checkpoint=str(minilm_dir()),
                      task="encoder", pooling="max", warmup=False).resolve()


def test_an_embedding_row_takes_no_text_pair(exported):
    from bert_tf.prediction.inputs import InputError
    with pytest.raises(InputError, match=r"text_pair: not an input of a text embedding model"):
        predict_run(PredictOptions(model=exported[0], text=["a"], text_pair=["b"]))


def test_an_export_of_a_folder_asking_for_an_unsupported_pooling_names_its_file(tmp_path):
    folder = tmp_path / "st"
    (folder / "1_Pooling").mkdir(parents=True)
    for name in ("config.json", "vocab.txt", "model.safetensors", "modules.json"):
        (folder / name).symlink_to(minilm_dir() / name)
    (folder / "1_Pooling/config.json").write_text(json.dumps(
        {"word_embedding_dimension": 384, "pooling_mode_lasttoken": True}))
    with pytest.raises(ValueError, match=r"st/1_Pooling/config.json: field "
                                         r"'pooling_mode_lasttoken' asks for a pooling"):
        ExportOptions(export_dir=str(tmp_path / "out"), init_checkpoint=str(folder),
                      task="embedding", warmup=False).resolve()
