/**
 * Loads the fast door (src/cli/fast.ts), bundled by `npm run build` as CommonJS scripts (dist/fast/), through
 * V8's code cache. Node 20 caches no compiled code for ES modules or `require()`: every process parses and compiles
 * the code it runs again, about a fifth of a hot command's time. A `vm.Script` takes the code V8 compiled in an
 * earlier run (`cachedData`) and skips that work. Each call of the door has its bundle, `dist/fast/<name>.cjs`, and
 * its cache, written after the first run that the door answered, so that it holds the functions that call runs.
 *
 * A cache is never needed: one that is missing, unreadable, rejected by V8 (another Node) or unwritable only costs
 * the compile. A cache is named after its bundle's content, and its folder after Node's version: V8 checks a cache
 * against the source's length only. A new build or a new Node gets new files; the old ones are removed.
 */
import {mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {homedir} from 'node:os'
import {basename, dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {Script} from 'node:vm'

import {fastDoorOf, printVersion} from './door.js'

/** What each bundle exports: its door, given the arguments after the command words; false: run oclif. */
type Door = (argv: string[]) => Promise<boolean>

/** Where the caches live: beside oclif's own cache of jarvis (`~/.cache/jarvis`). */
export function codeCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'jarvis', 'code-cache')
}

/** true when the fast door answered the call; false: run oclif (a call with no bundle of its own, or one it leaves). */
export async function runFastDoor(argv: string[], packageRoot: URL): Promise<boolean> {
  // The one call that needs no bundle.
  if (printVersion(argv, packageRoot)) return true
  const door = fastDoorOf(argv)
  if (door === undefined) return false
  const bundle = fileURLToPath(new URL(`dist/fast/${door.name}.cjs`, packageRoot))
  let source: string
  try {
    // esbuild writes ASCII only (scripts/bundle.mjs), so latin1 reads the same text as UTF-8, faster.
    source = readFileSync(bundle, 'latin1')
  } catch {
    return false
  }
  // Each hook event runs code of its own (a session's start, every prompt): a cache each.
  const event = door.name === 'hook' ? fastDoorOf(door.argv)?.name : undefined
  const cacheFile = process.env.JARVIS_CODE_CACHE === 'off' ? undefined : cacheFileOf(bundle, source, event ? `hook-${event}` : door.name)
  const cached = cacheFile ? readCache(cacheFile) : undefined
  const cachedData = cached?.data
  // The bundle is the function a CommonJS module is wrapped in (scripts/bundle.mjs writes it so: no copy of its text
  // here); it calls require() for Node's modules and the few packages it leaves out.
  const script = new Script(source, {filename: bundle, cachedData})
  const module = {exports: {} as {run: Door}}
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle))
  const answered = await module.exports.run(door.argv)
  if (answered && cacheFile) {
    // At exit, so that the cache holds every function the call compiled; only after a call that succeeded. Written
    // again when this call loaded a module of the bundle that the cache does not hold (a sync that pushed, after one
    // with nothing to do wrote it: zod, the schemas; scripts/bundle.mjs): it then holds both calls' code.
    process.once('exit', (code) => {
      if (code !== 0) return
      const loaded = (globalThis as {__jarvisLoadedOnUse?: string[]}).__jarvisLoadedOnUse ?? []
      const kept = cached === undefined || script.cachedDataRejected ? undefined : cached.holds
      if (kept === undefined || loaded.some((name) => !kept.includes(name))) writeCache(cacheFile, script, [...new Set([...(kept ?? []), ...loaded])])
    })
  }
  return answered
}

/**
 * `<root>/node<version>-<arch>/<install>/<name>.<content>.bin`, where `<install>` stands for the folder of the bundles
 * (two copies of jarvis on one machine keep their own caches) and `<content>` is the hash of the bundle written on
 * its first line by the build (V8 checks a cache against the source's length only): a new build is a new file.
 */
function cacheFileOf(bundle: string, source: string, name: string): string | undefined {
  const content = /^\/\/ jarvis-bundle ([0-9a-f]{16})\n/.exec(source)?.[1]
  if (content === undefined) return undefined
  const install = folderTag(dirname(bundle))
  return join(codeCacheRoot(), `node${process.versions.node}-${process.arch}`, install, `${name}.${content}.bin`)
}

/**
 * 64-bit FNV-1a of `text` in 16 hex digits: a folder's name, not a secret. node:crypto (~4 ms to load) is not loaded
 * for it at every call of the door; a no-op sync, `memory ls` and `recall` use no crypto of their own.
 */
export function folderTag(text: string): string {
  let hash = 0xcbf29ce484222325n
  for (let i = 0; i < text.length; i++) hash = ((hash ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n) & 0xffffffffffffffffn
  return hash.toString(16).padStart(16, '0')
}

/**
 * A cache file: a line of JSON naming the modules of the bundle loaded on use that it holds (see runFastDoor), then
 * what V8 gave. Undefined when missing or out of shape (V8 rejects data that is not its own).
 */
function readCache(file: string): {data: Buffer; holds: string[]} | undefined {
  try {
    const bytes = readFileSync(file)
    const end = bytes.indexOf(0x0a)
    if (end < 0) return undefined
    const holds: unknown = JSON.parse(bytes.toString('utf8', 0, end))
    if (!Array.isArray(holds) || !holds.every((name) => typeof name === 'string')) return undefined
    return {data: bytes.subarray(end + 1), holds}
  } catch {
    return undefined
  }
}

/** Written whole or not at all (a temp file renamed); the call's caches of older builds, and other Nodes', are removed. */
function writeCache(file: string, script: Script, holds: string[]): void {
  try {
    const folder = dirname(file)
    mkdirSync(folder, {recursive: true})
    const temp = `${file}.${process.pid}.tmp`
    writeFileSync(temp, Buffer.concat([Buffer.from(`${JSON.stringify(holds)}\n`), script.createCachedData()]))
    renameSync(temp, file)
    const name = basename(file).split('.')[0]
    for (const other of readdirSync(folder)) if (other.split('.')[0] === name && join(folder, other) !== file) rmSync(join(folder, other), {force: true})
    const root = codeCacheRoot()
    const node = dirname(folder)
    for (const other of readdirSync(root)) if (join(root, other) !== node) rmSync(join(root, other), {recursive: true, force: true})
  } catch {
    // No cache this time: the next call compiles again and tries again.
  }
}
