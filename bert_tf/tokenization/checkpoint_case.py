"""validate_case_matches_checkpoint: catch a --do_lower_case flag that contradicts the released
checkpoint named in --init_checkpoint (same model lists as google-research/bert)."""

import re

UNCASED_MODELS = ("uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
                  "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")
CASED_MODELS = ("cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
                "multi_cased_L-12_H-768_A-12")


def validate_case_matches_checkpoint(do_lower_case: bool, init_checkpoint: str | None) -> None:
    """Raises ValueError if `init_checkpoint` (".../<model>/bert_model.ckpt") names a released
    model whose casing contradicts `do_lower_case`. Unknown names pass: the casing is not
    recorded in bert_config.json, so only the released names can be checked."""
    if not init_checkpoint:
        return
    m = re.match(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", init_checkpoint)
    if m is None:
        return
    model = m.group(1)
    if model in UNCASED_MODELS and not do_lower_case:
        flag, kind, wanted = False, "an uncased (lower-cased)", True
    elif model in CASED_MODELS and do_lower_case:
        flag, kind, wanted = True, "a cased", False
    else:
        return
    raise ValueError(
        f"--do_lower_case={flag} does not match --init_checkpoint={init_checkpoint}: "
        f"'{model}' is {kind} model, so fine-tuning must use --do_lower_case={wanted} to see "
        f"text the way the model was pre-trained. If this check is wrong for your checkpoint, "
        f"rename its folder.")
