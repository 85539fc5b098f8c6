"""How a sentence-transformers folder pools its embeddings: modules.json lists its modules (a
Transformer, a Pooling module whose config.json holds pooling_mode_*_tokens flags, optionally a
Normalize module), read here so its embeddings come out as sentence-transformers computes
them."""

import dataclasses
import json
import os

MODULES_FILE = "modules.json"

# The poolings bert_tf computes (bert_tf.model.sentence_pooling): cls: the first token's
# vector; mean / max: over the tokens the mask keeps; mean_sqrt_len: the tokens' sum divided by
# the square root of their count.

# pooling_mode_* fields of a Pooling module's config.json -> bert_tf.model.sentence_pooling mode
_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean",
          "pooling_mode_max_tokens": "max", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len"}
_SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")


@dataclasses.dataclass(frozen=True)
class Pooling:
    """A sentence embedding's pooling mode (bert_tf.names.POOLING_MODES) and whether
    it is L2-normalised."""

    mode: str = "mean"
    normalize: bool = False


def read_pooling(folder):
    """The Pooling of the sentence-transformers model in `folder`, or None when the folder has
    no modules.json (it is not one). ValueError naming the file and field for a module or a
    pooling bert_tf does not compute."""
    modules_path = os.path.join(folder, MODULES_FILE)
    if not os.path.isfile(modules_path):
        return None
    modules = _read_json(modules_path)
    if not isinstance(modules, list):
        raise ValueError(f"{modules_path}: expected a list of modules")
    types = {}
    for i, module in enumerate(modules):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        if kind not in _SUPPORTED_MODULES:
            raise ValueError(f"{modules_path}: module {i} has type {module.get('type')!r}; "
                             f"bert_tf computes only {', '.join(_SUPPORTED_MODULES)} modules")
        types[kind] = module
    if "Pooling" not in types:
        raise ValueError(f"{modules_path}: no sentence_transformers.models.Pooling module")
    pooling_path = os.path.join(folder, types["Pooling"].get("path", ""), "config.json")
    return Pooling(_pooling_mode(pooling_path), "Normalize" in types)


def _pooling_mode(path):
    config = _read_json(path)
    chosen = []
    for field, value in config.items():
        if field.startswith("pooling_mode") and value not in (False, None):
            if field not in _MODES:
                raise ValueError(f"{path}: field {field!r} asks for a pooling bert_tf does not "
                                 f"compute (it computes {', '.join(_MODES)})")
            chosen.append(field)
    if len(chosen) != 1:
        raise ValueError(f"{path}: exactly one of the fields {', '.join(_MODES)} must be true, "
                         f"got {chosen or 'none'} (concatenated poolings are not computed)")
    return _MODES[chosen[0]]


def resolve_pooling(folder=None, mode=None, normalize=None):
    """The Pooling to use: `mode` / `normalize` where given (not None), else the folder's
    (when it is a sentence-transformers folder), else mean without normalisation."""
    found = (read_pooling(folder) if folder and os.path.isdir(folder) else None) or Pooling()
    return Pooling(found.mode if mode is None else mode,
                   found.normalize if normalize is None else bool(normalize))


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: not found (named by {MODULES_FILE})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
