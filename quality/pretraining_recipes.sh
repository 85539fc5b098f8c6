#!/usr/bin/env bash
# The two pre-training recipes docs/quality.md publishes, end to end through
# quality/pretraining_pays.py: prepare the text, vocabulary and records, pre-train a `tiny`
# BERT on both cores (about an hour), choose fine-tuning learning rates on validation splits,
# fine-tune from the checkpoint and from random weights, and append the rows to the recipe's
# raw files in quality/results/.
#
#   bash quality/pretraining_recipes.sh fixed     # masked LM only: pretraining_pays_fixed.md
#   bash quality/pretraining_recipes.sh source    # plus next sentence, same-source negatives,
#                                                 # and STS-B with the encoder frozen:
#                                                 # pretraining_pays_source.md
# WORK (default: bert_tf_pretraining_<recipe> in the temporary folder) keeps every stage's
# output, so a rerun resumes. Needs ../shared/data (corpus and GLUE).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
recipe="${1:?fixed or source}"
tmp="$(python3 -c 'import tempfile; print(tempfile.gettempdir())')"
WORK="${WORK:-$tmp/bert_tf_pretraining_$recipe}"
R="$repo/quality/results/pretraining_pays_$recipe"
common=(--preset=tiny --max_seq_length=64 --max_predictions=10 --shard_size_mb=16
        --extra_text=sst2_train --mixed_precision= --jit_compile=1 --work_dir="$WORK"
        --pretrain_batch=64 --pretrain_warmup=1500 --pretrain_lr=2e-3 --log_steps=100)
case "$recipe" in
  fixed)  flags=(--next_sentence=0 --pretrain_steps=25000 --save_steps=2500
                 --ft_seq=SST-2-2k=64,MRPC=128,SST-2=64,STS-B=128) ;;
  source) flags=(--next_sentence=1 --negatives=source --pretrain_steps=19000 --save_steps=2000
                 --ft_seq=SST-2-2k=64,MRPC=128,SST-2=64,STS-B=64) ;;
  *) echo "unknown recipe $recipe: fixed or source" >&2; exit 2 ;;
esac
d() { python3 "$repo/quality/pretraining_pays.py" "${common[@]}" "${flags[@]}" \
        --results="$R.jsonl" --lr_results="$R"_lr.jsonl --curve="$R"_curve.jsonl "$@"; }
ft="--ft_lr_pretrained=0.001 --ft_lr_random=0.0003"     # what SST-2-2k-val chose
cd "$repo"
d --stage=prepare
d --stage=pretrain
if [[ $recipe == fixed ]]; then
  d --stage=lrsearch --lr_task=SST-2-2k-val --lr_grid=1e-4,3e-4,1e-3
  d $ft --stage=finetune --tasks=SST-2-2k,MRPC,SST-2 --seeds=1,2,3 --curve_steps=
  d $ft --stage=finetune --tasks=SST-2-2k --seeds=1 --curve_steps=2500,5000,10000,15000,20000
  d --stage=lrsearch --lr_task=MRPC-val --lr_grid=1e-4,3e-4,1e-3
  d --ft_lr_pretrained=0.0001 --ft_lr_random=0.0003 --stage=finetune --tasks=MRPC \
    --seeds=1,2,3 --curve_steps= --results="$R"_mrpc.jsonl
  d --stage=lrsearch --lr_task=STS-B-val --lr_grid=1e-4,3e-4,1e-3,3e-3
  d --stage=finetune --tasks=STS-B --seeds=1,2,3 --curve_steps= --ft_lr=1e-3 \
    --results="$R"_stsb.jsonl
else
  d $ft --stage=finetune --tasks=SST-2-2k --seeds=1,2,3,4,5 --curve_steps=
  d $ft --stage=finetune --tasks=MRPC --seeds=1,2,3 --curve_steps=
  d --stage=finetune --tasks=STS-B --seeds=1,2,3,4,5 --curve_steps= \
    --ft_lr_pretrained=0.001 --ft_lr_random=0.001
  # STS-B: mode (full or frozen encoder) and lr per arm, chosen on two validation splits
  for split in SST-2-2k-val STS-B-val STS-B-srcval; do
    d --stage=lrsearch --lr_task=$split --ft_modes=frozen,full \
      --frozen_lr_grid=1e-3,3e-3,1e-2,3e-2,1e-1,3e-1,1 --lr_results="$R"_modes_lr.jsonl
  done
  d --stage=finetune --tasks=STS-B --seeds=1,2,3,4,5 --curve_steps= \
    --ft_mode_pretrained=frozen --ft_lr_pretrained=0.1 --ft_mode_random=full \
    --ft_lr_random=0.001 --results="$R"_stsb_val.jsonl
  d --stage=finetune --tasks=STS-B --seeds=1,2,3,4,5 --curve_steps= \
    --ft_mode_pretrained=frozen --ft_lr_pretrained=0.3 --ft_mode_random=frozen \
    --ft_lr_random=0.3 --results="$R"_stsb_srcval.jsonl
fi
d --stage=summarize --tasks=SST-2-2k,MRPC,SST-2,STS-B
