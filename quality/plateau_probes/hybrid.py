"""hybrid.py SRC_CKPT CONFIG DST KEEP_REGEX: a native checkpoint with SRC's weights whose google
names match KEEP_REGEX and freshly initialised (seeded) weights elsewhere."""
import re, sys, os, tempfile
sys.path.insert(0, "/tmp/p54h"); sys.path.insert(0, "/work/main")
import preln_patch; preln_patch.apply()
import keras
src, cfg, dst, keep = sys.argv[1:5]
keras.utils.set_random_seed(int(os.environ.get("SEED", "1")))
from bert_tf.config import BertConfig
from bert_tf.checkpoints import read_any, assign, save_weights
from bert_tf.checkpoints.tf1 import read_tf1
from bert_tf.convert import model_for
config = BertConfig.from_json_file(cfg)
fmt, arrays, unmapped = read_any(src, config)
fresh = model_for(arrays, config)
tmp = tempfile.mkdtemp()
written = save_weights(fresh, tmp, "tf1")
print("fresh written", written)
prefix = written if not os.path.isdir(written) else os.path.join(written, "bert_model.ckpt")
fresh_arrays = read_tf1(prefix)
out = {}
kept = []
for k, v in arrays.items():
    if re.search(keep, k):
        out[k] = v; kept.append(k)
    else:
        out[k] = fresh_arrays[k]
if os.environ.get("PERMUTE") == "1":   # control: same rows, shuffled over the vocabulary
    import numpy as np
    w = out["bert/embeddings/word_embeddings"]
    out["bert/embeddings/word_embeddings"] = w[np.random.RandomState(0).permutation(w.shape[0])]
    print("word embeddings permuted")
print("kept from pretrained:", kept)
model = model_for(out, config)
assign(model, out, "hybrid", require_heads=True)
print(save_weights(model, dst, "native"))
