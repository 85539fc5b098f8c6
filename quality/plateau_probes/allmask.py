"""Copy the quickstart's training TFRecords with every masked position replaced by [MASK] (100/0/0
instead of 80/10/10: no copy shortcut). Held-out records are linked unchanged."""
import glob, os, tensorflow as tf
src="/tmp/p54/qs/seed1-93627a99/pretraining_data"; dst="/tmp/p54h/data/allmask"; os.makedirs(dst, exist_ok=True)
MASK=[l.rstrip("\n") for l in open("/tmp/p54/qs/seed1-93627a99/vocab.txt")].index("[MASK]")
n=0
for f in sorted(glob.glob(src+"/train-*.tfrecord")):
    with tf.io.TFRecordWriter(os.path.join(dst, os.path.basename(f))) as w:
        for r in tf.data.TFRecordDataset(f):
            ex=tf.train.Example.FromString(r.numpy()); ft=ex.features.feature
            ids=list(ft["input_ids"].int64_list.value)
            for p,wt in zip(ft["masked_lm_positions"].int64_list.value, ft["masked_lm_weights"].float_list.value):
                if wt>0: ids[p]=MASK
            del ft["input_ids"].int64_list.value[:]; ft["input_ids"].int64_list.value.extend(ids)
            w.write(ex.SerializeToString()); n+=1
if not os.path.exists(dst+"/heldout.tfrecord"): os.symlink(src+"/heldout.tfrecord", dst+"/heldout.tfrecord")
print("mask id", MASK, "records", n)
