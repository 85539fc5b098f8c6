"""Prototype, outside the repository: Pre-LN blocks for bert_tf, selected by env PRELN=1.

Block:  x = x + Drop(AttnOut(Attn(LN_a(x))));  x = x + Drop(FFN(LN_o(x)))
Encoder: embeddings WITHOUT their LayerNorm (GPT-2 style); the embedding LayerNorm's weights are
reused as the final LayerNorm after the last block, so the variable set (and checkpoint names)
is unchanged and run_classifier can load the checkpoint with the same patch.
"""
import os
import keras
from keras import ops

MODE = os.environ.get("PRELN", "0")
PRELN = MODE in ("1", "2")
KEEP_EMB_LN = MODE == "2"   # 2: keep the embedding LayerNorm, no final LayerNorm


POOL = os.environ.get("POOL", "cls")   # cls | mean (masked mean of the last layer, then the pooler Dense+tanh)


def apply():
    if not PRELN and POOL == "cls":
        return
    from bert_tf.model import transformer, embeddings, encoder
    from bert_tf.model.recompute import activation_then_dense
    from bert_tf.model.attention import attention_bias

    def block_call(self, x, bias, training=None, packing=None):
        h = self.attention_layer_norm(x)
        attn = self.attention_output(self.attention(h, bias, training=training, packing=packing))
        x = x + self.dropout(attn, training=training)
        h = self.intermediate(self.output_layer_norm(x))
        if training:
            dtype = h.dtype
            ffn = activation_then_dense(h, self.intermediate_activation,
                                        keras.ops.cast(self.output_dense.kernel, dtype),
                                        keras.ops.cast(self.output_dense.bias, dtype))
        else:
            ffn = self.output_dense(self.intermediate_activation(h))
        return x + self.dropout(ffn, training=training)
    if PRELN:
        transformer.TransformerBlock.call = block_call

    def emb_call(self, input_ids, segment_ids, training=None):
        seq_len = ops.shape(input_ids)[1]
        x = ops.take(self.word_embeddings, input_ids, axis=0)
        x = x + ops.take(self.token_type_embeddings, segment_ids, axis=0)
        x = x + ops.expand_dims(self.position_embeddings[:seq_len], 0)
        return self.dropout(x, training=training)          # no LayerNorm here
    if PRELN and not KEEP_EMB_LN:
        embeddings.BertEmbeddings.call = emb_call

    def enc_call(self, inputs, training=None):
        input_ids = inputs["input_ids"]
        input_mask = inputs.get("input_mask")
        if input_mask is None:
            input_mask = ops.ones_like(input_ids)
        segment_ids = inputs.get("segment_ids")
        if segment_ids is None:
            segment_ids = ops.zeros_like(input_ids)
        embedding_output = self.embeddings(input_ids, segment_ids, training=training)
        bias = attention_bias(input_mask, embedding_output.dtype)
        x = embedding_output
        encoder_outputs = []
        for block in self.blocks:
            x = block(x, bias, training=training)
            encoder_outputs.append(x)
        if PRELN and not KEEP_EMB_LN:
            x = self.embeddings.layer_norm(x)                # final LayerNorm
        encoder_outputs[-1] = x
        if POOL == "mean":
            m = ops.cast(input_mask, x.dtype)[:, :, None]
            mean = ops.sum(x * m, axis=1) / ops.maximum(ops.sum(m, axis=1), 1.0)
            pooled = self.pooler.dense(mean)
        else:
            pooled = self.pooler(x)
        return {"sequence_output": x, "pooled_output": pooled,
                "encoder_outputs": encoder_outputs, "embedding_output": embedding_output}
    encoder.BertEncoder.call = enc_call
