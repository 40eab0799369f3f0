/**
 * Loads the fast door (src/cli/fast.ts), bundled by `npm run build` as CommonJS scripts (dist/fast/), through
 * V8's code cache. Node 20 caches no compiled code for ES modules or `require()`: every process parses and compiles
 * the code it runs again, about a fifth of a hot command's time. A `vm.Script` takes the code V8 compiled in an
 * earlier run (`cachedData`) and skips that work. Each call of the door has its bundle, `dist/fast/<name>.cjs`, and
 * its cache, written after the first run that the door answered, so that it holds the functions that call runs. Code
 * most calls do not run is in on-use scripts (`dist/fast/on-use/`), each with a cache of its own (doorScripts).
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

import {IncompleteInstallError} from '../errors.js'
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
  const scripts = doorScripts(fileURLToPath(new URL('dist/fast', packageRoot)))
  // Each hook event runs code of its own (a session's start, every prompt): a cache each.
  const event = door.name === 'hook' ? fastDoorOf(door.argv)?.name : undefined
  const bundle = scripts.run(`${door.name}.cjs`, event ? `hook-${event}` : door.name) as {run: Door} | undefined
  if (bundle === undefined) return false
  const answered = await bundle.run(door.argv)
  // At exit, so that each cache holds every function the call compiled; only after a call that succeeded.
  if (answered) process.once('exit', (code) => code === 0 && scripts.writeCaches())
  return answered
}

/**
 * The scripts of one call: its bundle, and the on-use scripts (`dist/fast/on-use/<name>.cjs`, scripts/bundle.mjs) it
 * asks for as `require('jarvis:on-use/<name>')` when it first runs their code, each run once, through a cache of its
 * own (`on-use-<name>`): a call that runs none of them reads none of them, and its bundle's cache holds none of their
 * code. A cache is written for each script that had none, or one V8 rejected.
 */
function doorScripts(folder: string): {run: (file: string, cacheName: string) => unknown; writeCaches: () => void} {
  const uncached: {script: Script; cacheFile: string}[] = []
  const onUse = new Map<string, unknown>()
  const requireOf = (file: string): NodeJS.Require => {
    const nodeRequire = createRequire(file)
    return Object.assign((id: string) => (id.startsWith(ON_USE) ? onUseScript(id.slice(ON_USE.length)) : nodeRequire(id)), nodeRequire)
  }
  const onUseScript = (name: string): unknown => {
    if (!onUse.has(name)) onUse.set(name, run(join('on-use', `${name}.cjs`), `on-use-${name}`) ?? missing(name))
    return onUse.get(name)
  }
  const run = (path: string, cacheName: string): unknown => {
    const file = join(folder, path)
    let source: string
    try {
      // esbuild writes ASCII only (scripts/bundle.mjs), so latin1 reads the same text as UTF-8, faster.
      source = readFileSync(file, 'latin1')
    } catch {
      return undefined
    }
    const cacheFile = process.env.JARVIS_CODE_CACHE === 'off' ? undefined : cacheFileOf(folder, source, cacheName)
    const cachedData = cacheFile ? readCache(cacheFile) : undefined
    // The script is the function a CommonJS module is wrapped in (scripts/bundle.mjs writes it so: no copy of its text
    // here); it calls require() for Node's modules, the few packages it leaves out and its on-use scripts.
    const script = new Script(source, {filename: file, cachedData})
    if (cacheFile && (cachedData === undefined || script.cachedDataRejected)) uncached.push({script, cacheFile})
    const module = {exports: {}}
    ;(script.runInThisContext() as (...args: unknown[]) => void)(module.exports, requireOf(file), module, file, dirname(file))
    return module.exports
  }
  return {run, writeCaches: () => uncached.forEach(({script, cacheFile}) => writeCache(cacheFile, script))}
}

/** How a bundle names an on-use script. */
const ON_USE = 'jarvis:on-use/'

function missing(name: string): never {
  throw new IncompleteInstallError(`dist/fast/on-use/${name}.cjs`)
}

/**
 * `<root>/node<version>-<arch>/<install>/<name>.<content>.bin`, where `<install>` stands for the folder of the bundles
 * (two copies of jarvis on one machine keep their own caches) and `<content>` is the hash of the bundle written on
 * its first line by the build (V8 checks a cache against the source's length only): a new build is a new file.
 */
function cacheFileOf(folder: string, source: string, name: string): string | undefined {
  const content = /^\/\/ jarvis-bundle ([0-9a-f]{16})\n/.exec(source)?.[1]
  if (content === undefined) return undefined
  const install = folderTag(folder)
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

/** What V8 gave, or undefined when missing (V8 rejects data that is not its own). */
function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(file)
  } catch {
    return undefined
  }
}

/** Written whole or not at all (a temp file renamed); the call's caches of older builds, and other Nodes', are removed. */
function writeCache(file: string, script: Script): void {
  try {
    const folder = dirname(file)
    mkdirSync(folder, {recursive: true})
    const temp = `${file}.${process.pid}.tmp`
    writeFileSync(temp, script.createCachedData())
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
