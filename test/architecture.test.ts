import {readdirSync, readFileSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'
import {describe, expect, it} from 'vitest'

const src = new URL('../src', import.meta.url).pathname

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm), ...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1])
}

const files = sourceFiles(src).map((path) => ({path, rel: relative(src, path), imports: importsOf(path)}))

// Layers may import only from the layers after them (STYLE.md: commands → cli → features → merge|store|protocol → schemas).
const allowed: Record<string, string[]> = {
  commands: ['cli', 'telegram', 'ops', 'agents', 'status', 'hook', 'mcp', 'replica', 'files', 'git', 'sync', 'server', 'events', 'session', 'search', 'merge', 'store', 'protocol', 'schemas', 'errors.ts'],
  cli: ['cli', 'warm', 'ops', 'agents', 'status', 'hook', 'replica', 'files', 'git', 'sync', 'server', 'events', 'session', 'search', 'merge', 'store', 'protocol', 'schemas', 'errors.ts'],
  // A door like a command: a person's text in, the commands' own renderings out.
  telegram: ['telegram', 'cli', 'ops', 'schemas', 'errors.ts'],
  // merge: `jarvis resolve --keep local` puts a conflict's side back by the merge rules (merge/keep-local.ts).
  status: ['status', 'agents', 'hook', 'warm', 'ops', 'merge', 'protocol', 'store', 'schemas', 'errors.ts'],
  agents: ['agents', 'hook', 'ops', 'merge', 'store', 'schemas', 'errors.ts', 'invocation.ts'],
  ops: ['ops', 'replica', 'files', 'git', 'sync', 'events', 'session', 'search', 'merge', 'store', 'protocol', 'schemas', 'errors.ts'],
  sync: ['sync', 'events', 'merge', 'store', 'protocol', 'schemas', 'errors.ts'],
  replica: ['replica', 'merge', 'store', 'schemas', 'errors.ts'],
  // invocation.ts: where jarvis's own package (and its built dashboard) lies.
  server: ['server', 'mcp', 'merge', 'store', 'schemas', 'errors.ts', 'events', 'invocation.ts'],
  mcp: ['mcp', 'warm', 'invocation.ts', 'ops', 'files', 'search', 'events', 'merge', 'store', 'protocol', 'schemas', 'errors.ts', 'session', 'sync'],
  hook: ['hook', 'warm', 'invocation.ts', 'ops', 'files', 'search', 'session', 'events', 'store', 'schemas', 'errors.ts'],
  // The warm path: its client (hook/ and cli/ ask it) and its server, which answers with the operations (answers.ts).
  warm: ['warm', 'ops', 'hook', 'search', 'store', 'errors.ts', 'invocation.ts'],
  events: ['events', 'store', 'protocol', 'schemas', 'errors.ts'],
  session: ['session', 'merge', 'store', 'schemas', 'errors.ts'],
  files: ['files', 'merge', 'store', 'schemas', 'errors.ts', 'events'],
  search: ['search', 'files', 'store', 'schemas', 'errors.ts'],
  git: ['git', 'store', 'errors.ts', 'invocation.ts'],
  merge: ['merge', 'schemas', 'errors.ts'],
  store: ['store', 'schemas', 'errors.ts'],
  protocol: ['protocol', 'schemas', 'errors.ts'],
  schemas: ['schemas', 'errors.ts'],
}

function layerOf(rel: string): string {
  return rel.split('/')[0]
}

describe('architecture', () => {
  it('imports flow one way between the folders of src/', () => {
    const violations: string[] = []
    for (const file of files) {
      const layer = layerOf(file.rel)
      const permitted = allowed[layer]
      if (!permitted) continue
      for (const spec of file.imports) {
        if (!spec.startsWith('.')) continue
        const target = relative(src, join(file.path, '..', spec)).replace(/\.js$/, '.ts')
        const targetLayer = layerOf(target)
        if (!permitted.includes(targetLayer)) violations.push(`${file.rel} imports ${target}`)
      }
    }
    expect(violations).toEqual([])
  })

  it('keeps merge rules and planners pure: no node built-ins, no network, no CLI framework', () => {
    const pure = files.filter((f) => f.rel.startsWith('merge/') || /(^|\/)plan\.ts$/.test(f.rel) || f.rel === 'store/paths.ts')
    expect(pure.length).toBeGreaterThan(0)
    const offending = pure.flatMap((f) =>
      f.imports.filter((spec) => /^node:|^(fs|path|crypto|os|child_process)$|^undici|^@oclif|^fastify/.test(spec)).map((spec) => `${f.rel} imports ${spec}`),
    )
    expect(offending).toEqual([])
  })

  it('keeps clocks and randomness out of the pure folders', () => {
    const pure = files.filter((f) => f.rel.startsWith('merge/') || /(^|\/)plan\.ts$/.test(f.rel))
    const offending = pure.filter((f) => /Date\.now\(|new Date\(\)|Math\.random\(/.test(readFileSync(f.path, 'utf8'))).map((f) => f.rel)
    expect(offending).toEqual([])
  })

  it('keeps operations free of the doors: no oclif, no printing, no stdin (commands, MCP tools and hooks do that)', () => {
    const ops = files.filter((f) => f.rel.startsWith('ops/'))
    expect(ops.length).toBeGreaterThan(0)
    const offending = ops.flatMap((f) => {
      const text = readFileSync(f.path, 'utf8')
      const found = f.imports.filter((spec) => /^@oclif|^@modelcontextprotocol/.test(spec)).map((spec) => `${f.rel} imports ${spec}`)
      if (/process\.(stdout|stderr|stdin)\b/.test(text)) found.push(`${f.rel} uses process.stdout/stderr/stdin`)
      return found
    })
    expect(offending).toEqual([])
  })

  it('writes no console.* in src/: results go through the command, diagnostics through debug', () => {
    const offending = files.filter((f) => /console\.(log|error|warn|info)\(/.test(readFileSync(f.path, 'utf8'))).map((f) => f.rel)
    expect(offending).toEqual([])
  })
})
