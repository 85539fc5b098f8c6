import sys, numpy as np
sys.path.insert(0, "/work/main")
from bert_tf.config import BertConfig
from bert_tf.checkpoints import read_any
vocab=[l.rstrip("\n") for l in open("/tmp/p54/qs/seed1-93627a99/vocab.txt")]
idx={w:i for i,w in enumerate(vocab)}
for ck in sys.argv[1:]:
    cfg=BertConfig.from_json_file("/tmp/p54h/probes/post_d0/bert_config.json")
    _,a,_=read_any(ck,cfg)
    E=a["bert/embeddings/word_embeddings"]; E=E-E.mean(0); E/=np.linalg.norm(E,axis=1,keepdims=True)
    print(ck)
    for w in ["loop","widget","header","coroutine","canvas","message","future","mime","button","socket"]:
        if w not in idx: continue
        s=E@E[idx[w]]; nb=[vocab[j] for j in np.argsort(-s)[1:7]]
        print(f"  {w}: {' '.join(nb)}")
