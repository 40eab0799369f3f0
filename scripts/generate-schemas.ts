/**
 * Writes docs/schemas/*.schema.json from the zod schemas (`npm run schemas`).
 * `--check` writes nothing and exits 1 when a file is missing, differs or is no longer generated (for CI).
 */
import {mkdir, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {renderJsonSchemas} from '../src/schemas/json-schema.js'

const outDir = fileURLToPath(new URL('../docs/schemas/', import.meta.url))
const check = process.argv.includes('--check')

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8')
  } catch {
    return null
  }
}

const rendered = renderJsonSchemas()
const wanted = new Set(rendered.map((r) => r.file))
await mkdir(outDir, {recursive: true})
const stale = (await readdir(outDir)).filter((name) => name.endsWith('.schema.json') && !wanted.has(name))

const changed: string[] = []
for (const {file, text} of rendered) {
  if ((await readOrNull(join(outDir, file))) === text) continue
  changed.push(file)
  if (!check) await writeFile(join(outDir, file), text)
}
if (!check) for (const name of stale) await rm(join(outDir, name))

if (check) {
  const problems = [...changed.map((f) => `out of date: docs/schemas/${f}`), ...stale.map((f) => `no longer generated: docs/schemas/${f}`)]
  if (problems.length > 0) {
    console.error(`${problems.join('\n')}\nrun \`npm run schemas\` and commit the result`)
    process.exit(1)
  }
  console.log(`docs/schemas: ${rendered.length} schemas up to date`)
} else {
  console.log(`docs/schemas: ${rendered.length} schemas, ${changed.length} written, ${stale.length} removed`)
}
