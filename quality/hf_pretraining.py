"""The HF PyTorch side of the pre-training comparisons (run in the PyTorch venv): torch's
AdamW with google-research's weight-decay exclusions, and BertForPreTraining's heads applied
as google-research applies them (masked-LM logits only at the masked positions)."""

WEIGHT_DECAY = 0.01


def adamw(model, lr, weight_decay=WEIGHT_DECAY):
    """torch.optim.AdamW (eps 1e-8) decaying every parameter but biases and LayerNorm; returns
    (optimizer, number of decayed parameters)."""
    import torch
    no_decay = lambda name: "bias" in name or "LayerNorm" in name
    groups = [{"params": [p for n, p in model.named_parameters() if not no_decay(n)],
               "weight_decay": weight_decay},
              {"params": [p for n, p in model.named_parameters() if no_decay(n)],
               "weight_decay": 0.0}]
    decayed = sum(p.numel() for p in groups[0]["params"])
    return torch.optim.AdamW(groups, lr=lr, eps=1e-8), decayed


def pretraining_heads(model, batch):
    """Per-position masked-LM cross-entropy [B, P] and logits [B, P, V], per-example
    next-sentence cross-entropy [B] and logits [B, 2] of a BertForPreTraining on one batch of
    google-research's pre-training features."""
    import torch
    seq, pooled = model.bert(input_ids=batch["input_ids"], attention_mask=batch["input_mask"],
                             token_type_ids=batch["segment_ids"], return_dict=False)[:2]
    masked = torch.gather(seq, 1, batch["masked_lm_positions"].unsqueeze(-1).expand(
        -1, -1, seq.shape[-1]))
    logits = model.cls.predictions(masked)
    xent = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch["masked_lm_ids"],
                                             reduction="none")
    nsp_logits = model.cls.seq_relationship(pooled)
    nsp = torch.nn.functional.cross_entropy(nsp_logits, batch["next_sentence_labels"][:, 0],
                                            reduction="none")
    return xent, logits, nsp, nsp_logits
