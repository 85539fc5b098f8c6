import json, collections
print("PRE-TRAINING PROBES (/tmp/p54h/probes.jsonl)")
for l in open('/tmp/p54h/probes.jsonl'):
    d=json.loads(l)
    print(f"{d['name']:18s} preln={d['preln']} init={d['init']} lr={d['lr']} drop={d['dropout']} nsp={d['nsp']} bs={d['batch']} steps={d['steps']} seed={d['seed']} data={d['data'].split('/')[-1]} {d['extra']:14s} {d['seconds']:6.1f}s mlm={d.get('masked_lm_accuracy',-1):.4f} curve={[c[1] for c in d['curve']]}")
print("\nFINE-TUNING (/tmp/p54h/ft.jsonl)")
for l in open('/tmp/p54h/ft.jsonl'):
    d=json.loads(l)
    print(f"{d['name']:32s} pool={d.get('pool','cls')} seed={d['seed']} lr={d['lr']} {d['seconds']:5.1f}s dev={d.get('eval_accuracy',-1):.4f}")
