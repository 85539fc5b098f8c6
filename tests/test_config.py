"""BertConfig: google-research and HuggingFace files, presets, validation."""

import json
import logging

import pytest

from bert_tf import BertConfig
from bert_tf.config import GOOGLE_KEYS, ConfigError

BASE_GOOGLE = {  # the bert_config.json released with BERT-Base, Uncased
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
    "type_vocab_size": 2, "vocab_size": 30522}


def write_json(tmp_path, values, name="bert_config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(values))
    return path


def test_reads_released_google_config(tmp_path):
    config = BertConfig.from_json_file(write_json(tmp_path, BASE_GOOGLE))
    assert config == BertConfig.from_preset("base")
    assert config.hidden_act == "gelu_tanh"  # google-research computes the tanh form for "gelu"


def test_google_defaults_match_the_original_class(tmp_path):
    config = BertConfig.from_json_file(write_json(tmp_path, {"vocab_size": 99}))
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.intermediate_size, config.type_vocab_size, config.max_position_embeddings,
            config.initializer_range) == (768, 12, 12, 3072, 16, 512, 0.02)


def test_google_config_without_vocab_size_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match="vocab_size"):
        BertConfig.from_json_file(write_json(tmp_path, {"hidden_size": 768}))


def test_unknown_google_keys_are_ignored_with_a_log_line(tmp_path, caplog):
    values = dict(BASE_GOOGLE, directionality="bidi", pooler_fc_size=768, pooler_type="first")
    with caplog.at_level(logging.INFO, logger="bert_tf.config"):
        config = BertConfig.from_json_file(write_json(tmp_path, values))
    assert config.hidden_size == 768
    assert "directionality" in caplog.text and "pooler_type" in caplog.text


def test_google_file_round_trip_keeps_exact_gelu(tmp_path):
    config = BertConfig.from_preset("mini", hidden_act="gelu")
    path = tmp_path / "bert_config.json"
    config.to_json_file(path)
    written = json.loads(path.read_text())
    assert set(GOOGLE_KEYS) <= set(written) and written["hidden_act"] == "gelu"
    assert BertConfig.from_json_file(path) == config


def test_reads_huggingface_config_with_exact_gelu(tmp_path):
    hf = dict(BASE_GOOGLE, model_type="bert", layer_norm_eps=1e-12, architectures=["BertModel"],
              hidden_size=384, num_hidden_layers=6, intermediate_size=1536)
    config = BertConfig.from_json_file(write_json(tmp_path, hf, "config.json"))
    assert config.hidden_act == "gelu" and config.hidden_size == 384


@pytest.mark.parametrize("hf_name,ours", [("gelu_new", "gelu_tanh"), ("relu", "relu"),
                                          ("tanh", "tanh"), ("gelu_pytorch_tanh", "gelu_tanh")])
def test_huggingface_activation_names(tmp_path, hf_name, ours):
    hf = dict(BASE_GOOGLE, model_type="bert", hidden_act=hf_name)
    assert BertConfig.from_json_file(write_json(tmp_path, hf, "config.json")).hidden_act == ours


def test_huggingface_round_trip(tmp_path):
    config = BertConfig.from_preset("small")
    path = tmp_path / "config.json"
    config.to_json_file(path, format="hf")
    assert json.loads(path.read_text())["hidden_act"] == "gelu_new"
    assert BertConfig.from_json_file(path) == config


@pytest.mark.parametrize("name,shape", [("tiny", (2, 128, 2)), ("mini", (4, 256, 4)),
                                        ("small", (4, 512, 8)), ("medium", (8, 512, 8)),
                                        ("base", (12, 768, 12)), ("large", (24, 1024, 16)),
                                        ("L-6_H-384_A-6", (6, 384, 6))])
def test_presets(name, shape):
    config = BertConfig.from_preset(name)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == shape
    assert config.intermediate_size == 4 * config.hidden_size


def test_unknown_preset_lists_the_choices():
    with pytest.raises(ConfigError, match="tiny"):
        BertConfig.from_preset("huge")


@pytest.mark.parametrize("changes,field", [
    ({"hidden_size": 100, "num_attention_heads": 12}, "divisible by num_attention_heads"),
    ({"num_hidden_layers": 0}, "num_hidden_layers"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
    ({"hidden_act": "swish"}, "hidden_act"),
    ({"vocab_size": "30522"}, "vocab_size"),
])
def test_validation_names_the_bad_field(changes, field):
    with pytest.raises(ConfigError, match=field):
        BertConfig.from_preset("base", **changes)


def test_invalid_json_names_file_and_line(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text('{\n "vocab_size": 10,\n oops\n}')
    with pytest.raises(ConfigError, match=r"bert_config.json.*line 3"):
        BertConfig.from_json_file(path)
