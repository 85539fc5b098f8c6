"""MediaPipe Tasks alone, as an app without bert_tf runs a mediapipe export: TextClassifier
(kind classifier) or TextEmbedder (kind embedding) on the texts of a JSON list on stdin; prints
one JSON list per model, a line each: per text the scores by label, or the embedding. Several
models share the one process (importing MediaPipe takes ~5 s). Fails if bert_tf was imported.

  python3 quality/mediapipe_client.py classifier export/1/model.tflite < texts.json
  python3 quality/mediapipe_client.py classifier a/1/model.tflite embedding b/1/model.tflite < texts.json
"""

import json
import sys

from mediapipe.tasks.python import text
from mediapipe.tasks.python.core.base_options import BaseOptions


def run(kind, path, texts):
    task, options = {"classifier": (text.TextClassifier, text.TextClassifierOptions),
                     "embedding": (text.TextEmbedder, text.TextEmbedderOptions)}[kind]
    model = task.create_from_options(options(base_options=BaseOptions(model_asset_path=path)))
    out = []
    for t in texts:
        if kind == "classifier":
            out.append({c.category_name: c.score
                        for c in model.classify(t).classifications[0].categories})
        else:
            out.append([float(x) for x in model.embed(t).embeddings[0].embedding])
    model.close()
    return out


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        raise SystemExit("usage: mediapipe_client.py KIND MODEL.tflite [KIND MODEL.tflite ...]")
    texts = json.load(sys.stdin)
    outputs = [run(kind, path, texts) for kind, path in zip(args[::2], args[1::2])]
    assert not any(m.startswith("bert_tf") for m in sys.modules), "bert_tf was imported"
    for out in outputs:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
