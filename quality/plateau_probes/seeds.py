import json, re, statistics as st, collections
rows=[json.loads(l) for l in open('/tmp/p54h/ft.jsonl')]
def get(name): 
    for r in rows:
        if r['name']==name: return r.get('eval_accuracy')
arms={
 "random (no pre-training)": "random_s{s}_lr{lr}",
 "embeddings-only from post_d0": "embonly_post_d0_s{s}_lr{lr}",
 "embeddings-only from init0.05 (i05)": "embonly_i05_s{s}_lr{lr}",
 "embeddings-only from mask0.40 (m40)": "embonly_m40_s{s}_lr{lr}",
}
s1={"random_s1_lr0.001":"random_lr1e-3","random_s1_lr0.0003":"random_lr3e-4","embonly_post_d0_s1_lr0.001":"embonly_post_d0_lr0.001","embonly_post_d0_s1_lr0.0003":"embonly_post_d0_lr0.0003"}
for arm,pat in arms.items():
    for lr in ("0.001","0.0003"):
        v=[]
        for s in (1,2,3):
            n=pat.format(s=s,lr=lr); n=s1.get(n,n); v.append(get(n))
        ok=[x for x in v if x is not None]
        print(f"{arm:38s} lr={lr:6s} " + " ".join(f"{x:.4f}" if x is not None else "  -   " for x in v) + (f"  mean={st.mean(ok):.4f}" if len(ok)==3 else ""))
