"""BERT model configuration: google-research `bert_config.json`, HuggingFace `config.json`, presets.

Activation names are canonical inside bert_tf:
  "gelu"       exact GELU, 0.5 x (1 + erf(x / sqrt 2))    (HuggingFace "gelu")
  "gelu_tanh"  the tanh approximation                      (google-research/bert's "gelu",
                                                            HuggingFace "gelu_new")
  "relu", "tanh"
google-research's final modeling.py computes the tanh form for "gelu", so a google-format file
saying "gelu" means "gelu_tanh". When we write a google-format file for an exact-GELU model we
add `"gelu_exact": true`, a key google-research's code ignores, so the choice survives a round
trip through our own tools.
"""

import copy
import dataclasses
import json
import logging
import os
import re
from typing import Any, Mapping

from bert_tf.fileio import atomic_write_text

logger = logging.getLogger(__name__)

ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "tanh")

# The 11 keys of google-research/bert's bert_config.json, in its order.
GOOGLE_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "max_position_embeddings", "type_vocab_size", "initializer_range",
)

# HuggingFace activation names -> ours.
_HF_ACT = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
           "gelu_fast": "gelu_tanh", "relu": "relu", "tanh": "tanh"}
# Keys of HuggingFace BERT configs that carry no architecture we model (logged, ignored).
_HF_IGNORED_QUIETLY = {"architectures", "model_type", "transformers_version", "_name_or_path",
                       "torch_dtype", "dtype", "use_cache", "gradient_checkpointing", "pad_token_id",
                       "classifier_dropout", "id2label", "label2id", "output_hidden_states",
                       "return_dict", "problem_type", "position_embedding_type"}

_NAMED_PRESETS = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}
_SHAPE_PRESET = re.compile(r"^L-(\d+)_H-(\d+)_A-(\d+)$")


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field."""


@dataclasses.dataclass
class BertConfig:
    """Hyper-parameters of a BERT encoder (google-research's 11 keys plus layer_norm_eps)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 16
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        self.validate()

    # ----------------------------------------------------------------- validation
    def validate(self) -> None:
        """Raises ConfigError naming the first field that is out of range or inconsistent."""
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {value!r}")
        for name in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(f"hidden_act must be one of {ACTIVATIONS}, got {self.hidden_act!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})")

    @property
    def head_size(self) -> int:
        """Width of one attention head: hidden_size / num_attention_heads."""
        return self.hidden_size // self.num_attention_heads

    # ----------------------------------------------------------------- dicts
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "BertConfig":
        """Builds from our own `to_dict` output (canonical names, no format translation)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ConfigError(f"unknown BertConfig field(s): {', '.join(unknown)}")
        return cls(**values)

    def replace(self, **changes: Any) -> "BertConfig":
        """A copy with `changes` (field=value) applied and validated."""
        return dataclasses.replace(self, **changes)

    def copy(self) -> "BertConfig":
        return copy.deepcopy(self)

    # ----------------------------------------------------------------- google-research format
    @classmethod
    def from_google_dict(cls, values: Mapping[str, Any], source: str = "bert_config"
                         ) -> "BertConfig":
        """Builds from google-research's bert_config.json keys (vocab_size required, the others
        at their defaults; "gelu" means the tanh form unless "gelu_exact"); other keys are
        logged and ignored. `source` names the file in errors."""
        values = dict(values)
        kwargs = {}
        for key in GOOGLE_KEYS:
            if key in values:
                kwargs[key] = values.pop(key)
        if "vocab_size" not in kwargs:
            raise ConfigError(f"{source}: missing required field vocab_size")
        gelu_exact = bool(values.pop("gelu_exact", False))
        if "layer_norm_eps" in values:
            kwargs["layer_norm_eps"] = values.pop("layer_norm_eps")
        act = kwargs.get("hidden_act", "gelu")
        if act == "gelu":
            kwargs["hidden_act"] = "gelu" if gelu_exact else "gelu_tanh"
        elif act in _HF_ACT:
            kwargs["hidden_act"] = _HF_ACT[act]
        if values:
            logger.info("%s: ignoring keys google-research's BertConfig does not use: %s",
                        source, ", ".join(sorted(values)))
        try:
            return cls(**kwargs)
        except ConfigError as e:
            raise ConfigError(f"{source}: {e}") from None

    def to_google_dict(self) -> dict[str, Any]:
        """The bert_config.json keys; an exact-GELU model adds "gelu_exact": true."""
        d = {k: getattr(self, k) for k in GOOGLE_KEYS}
        if self.hidden_act in ("gelu", "gelu_tanh"):
            d["hidden_act"] = "gelu"
            if self.hidden_act == "gelu":
                d["gelu_exact"] = True
        if self.layer_norm_eps != 1e-12:
            d["layer_norm_eps"] = self.layer_norm_eps
        return d

    # ----------------------------------------------------------------- HuggingFace format
    @classmethod
    def from_hf_dict(cls, values: Mapping[str, Any], source: str = "config.json"
                     ) -> "BertConfig":
        """Builds from a HuggingFace BERT config.json (model_type "bert", absolute positions);
        other keys are ignored (logged unless HuggingFace always writes them). `source` names
        the file in errors."""
        values = dict(values)
        if values.get("model_type", "bert") != "bert":
            raise ConfigError(f"{source}: model_type is {values['model_type']!r}, expected 'bert'")
        pet = values.get("position_embedding_type", "absolute")
        if pet != "absolute":
            raise ConfigError(f"{source}: position_embedding_type {pet!r} is not supported "
                              "(only 'absolute', as in BERT)")
        kwargs = {}
        for key in GOOGLE_KEYS:
            if key in values:
                kwargs[key] = values.pop(key)
        act = kwargs.get("hidden_act", "gelu")
        if act not in _HF_ACT:
            raise ConfigError(f"{source}: hidden_act {act!r} is not supported "
                              f"(known: {', '.join(sorted(_HF_ACT))})")
        kwargs["hidden_act"] = _HF_ACT[act]
        if "layer_norm_eps" in values:
            kwargs["layer_norm_eps"] = values.pop("layer_norm_eps")
        kwargs.setdefault("type_vocab_size", 2)
        rest = sorted(set(values) - _HF_IGNORED_QUIETLY)
        if rest:
            logger.info("%s: ignoring keys: %s", source, ", ".join(rest))
        try:
            return cls(**kwargs)
        except ConfigError as e:
            raise ConfigError(f"{source}: {e}") from None

    def to_hf_dict(self) -> dict[str, Any]:
        """A HuggingFace BertModel config.json."""
        d = {k: getattr(self, k) for k in GOOGLE_KEYS}
        d["hidden_act"] = {"gelu": "gelu", "gelu_tanh": "gelu_new"}.get(self.hidden_act,
                                                                         self.hidden_act)
        d.update(layer_norm_eps=self.layer_norm_eps, model_type="bert",
                 architectures=["BertModel"], position_embedding_type="absolute",
                 pad_token_id=0)
        return d

    # ----------------------------------------------------------------- files
    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "BertConfig":
        """Reads a google-research bert_config.json or a HuggingFace config.json (auto-detected)."""
        try:
            with open(path, encoding="utf-8") as f:
                values = json.load(f)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        if is_hf_config(values):
            return cls.from_hf_dict(values, source=str(path))
        return cls.from_google_dict(values, source=str(path))

    def to_json_file(self, path: str | os.PathLike, format: str = "google") -> None:
        """Writes `bert_config.json` (format="google") or HF `config.json` (format="hf"), atomically."""
        if format == "google":
            values = self.to_google_dict()
        elif format == "hf":
            values = self.to_hf_dict()
        else:
            raise ValueError(f"format must be 'google' or 'hf', got {format!r}")
        atomic_write_text(path, json.dumps(values, indent=2, sort_keys=False) + "\n")

    def to_json_string(self) -> str:
        """The google-format JSON text."""
        return json.dumps(self.to_google_dict(), indent=2)

    # ----------------------------------------------------------------- presets
    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "BertConfig":
        """A named shape ("tiny" ... "large", or "L-4_H-256_A-4") with released-checkpoint defaults:
        vocab 30522, 2 token types, 512 positions, intermediate 4H, tanh-GELU as google-research.
        `overrides` (field=value) replace any of them, e.g. vocab_size."""
        if name in _NAMED_PRESETS:
            layers, hidden, heads = _NAMED_PRESETS[name]
        else:
            m = _SHAPE_PRESET.match(name)
            if not m:
                raise ConfigError(
                    f"unknown preset {name!r}: use one of {', '.join(_NAMED_PRESETS)} "
                    "or a shape such as 'L-4_H-256_A-4'")
            layers, hidden, heads = (int(g) for g in m.groups())
        values = dict(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=heads, intermediate_size=4 * hidden,
                      hidden_act="gelu_tanh", type_vocab_size=2, max_position_embeddings=512)
        values.update(overrides)
        return cls(**values)

    @staticmethod
    def preset_names() -> tuple[str, ...]:
        return tuple(_NAMED_PRESETS)


def is_hf_config(values: Mapping[str, Any]) -> bool:
    """True when a config dict has a key only HuggingFace writes."""
    return any(k in values for k in ("model_type", "architectures", "layer_norm_eps",
                                     "transformers_version"))

