/**
 * `npm run build`, after tsc: each command as one ES module with its own code,
 * zod and the small libraries bundled in, shared parts split into dist/chunks/. A process then loads a handful of
 * files instead of a few hundred, which is most of what start-up costs (docs/decisions/startup.md). Packages
 * that load native code, workers or their own files at run time, and oclif (which plugins share), stay in
 * node_modules. tsc's per-module output stays beside it for what is started by path (dist/hook/background-sync.js).
 */
import {Buffer} from 'node:buffer'
import {createHash} from 'node:crypto'
import {mkdirSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {join, sep} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import {build} from 'esbuild'

import {buildDashboard} from './bundle-dashboard.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
/**
 * zod's `z` namespace re-exports its 40-odd translations of error messages, so every bundle that uses zod would
 * parse ~250 kB of locales at each start. jarvis speaks English only (and words its own messages): keep `en`.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(bundle) {
    bundle.onResolve({filter: /\/locales\/index\.js$/}, ({importer, resolveDir}) =>
      importer.includes(`${sep}node_modules${sep}zod${sep}`) ? {path: join(resolveDir, '..', 'locales', 'en.js'), namespace: 'zod-english-only'} : undefined,
    )
    bundle.onLoad({filter: /.*/, namespace: 'zod-english-only'}, ({path}) => ({contents: `export {default as en} from ${JSON.stringify(path)}`, loader: 'js', resolveDir: root}))
  },
}

/**
 * `debug` sets itself up when it loads (reads DEBUG, probes the terminal for colours): about 2 ms of each call of the
 * fast door, which prints nothing of it unless DEBUG is set. The door's bundles get this stand-in instead: without
 * DEBUG, a debugger that prints nothing (what `debug` gives then); with DEBUG set, the real package, loaded by the
 * first createDebug, so DEBUG=jarvis:* prints what it prints everywhere else.
 */
const debugWhenAsked = {
  name: 'debug-when-asked',
  setup(bundle) {
    bundle.onResolve({filter: /^debug$/}, ({namespace}) => (namespace === 'debug-when-asked' ? undefined : {path: 'debug', namespace: 'debug-when-asked'}))
    bundle.onLoad({filter: /.*/, namespace: 'debug-when-asked'}, () => ({
      contents: "const silent = Object.assign(() => {}, {enabled: false}); module.exports = (namespace) => (process.env.DEBUG ? require('debug')(namespace) : silent)",
      loader: 'js',
      resolveDir: root,
    }))
  },
}

/**
 * signal-exit (proper-lockfile's, for the tree lock) loads node:assert, ~0.9 ms, to check that an exit handler is a
 * function. The door's bundles give it an `equal` that loads node:assert only when that check fails, so the error
 * it throws then is node:assert's own.
 */
const assertOnFailure = {
  name: 'assert-on-failure',
  setup(bundle) {
    bundle.onResolve({filter: /^assert$/}, ({importer}) => (importer.includes(`${sep}node_modules${sep}signal-exit${sep}`) ? {path: 'assert', namespace: 'assert-on-failure'} : undefined))
    bundle.onLoad({filter: /.*/, namespace: 'assert-on-failure'}, () => ({
      contents: "module.exports = {equal: (actual, expected, message) => actual == expected || require('node:assert').equal(actual, expected, message)}",
      loader: 'js',
    }))
  },
}

/**
 * Modules that a call of the door may use and most calls do not, loaded when first used: Node's node:zlib (the search's
 * vector log), node:worker_threads (the scan's `isMainThread`), node:perf_hooks and node:child_process (a watch
 * started on demand, a `syncfs`), ~1–3 ms each with the modules they load; and yaml (~1 ms), which `memory ls`,
 * `recall` and the prompt hook load with the search's documents but only parse with when a file is read again. Node
 * loads a module when a bundle's module that names it is set up, used or not, and a bundled yaml is set up with the
 * module that imports it. The door's bundles get each as an object of the same names whose every property loads the
 * real module at its first read (yaml stays bundled, and so compiled once into the code cache). In the sync's
 * bundle (`schemas`), so do zod and our schemas (each file of src/schemas/, as the code outside that folder imports
 * it): a sync with nothing to do reads its config as last parsed (`.nexus/config-read.json`), and its status and
 * audit line by hand checks, and loads neither (zod's set-up was a third of such a sync's own work and most of its
 * garbage). Nothing may use them at the top level of a module such a sync loads: a schema is built by a function, or
 * in a module loaded on use. Not in the other bundles, whose calls parse with zod anyway: each module importing a
 * stand-in copies its every name (~7 ms of `memory snapshot`).
 */
const ON_USE = ['node:child_process', 'node:crypto', 'node:perf_hooks', 'node:worker_threads', 'node:zlib', 'yaml']
const requireHere = createRequire(import.meta.url)
const modulesOnUse = ({schemas}) => ({
  name: 'modules-on-use',
  setup(bundle) {
    const specifierOf = (path) => (ON_USE.includes(`node:${path}`) ? `node:${path}` : path)
    bundle.onResolve({filter: schemas ? /^(?:node:)?(?:child_process|crypto|perf_hooks|worker_threads|zlib)$|^yaml$|^zod$/ : /^(?:node:)?(?:child_process|crypto|perf_hooks|worker_threads|zlib)$|^yaml$/}, ({path, namespace}) =>
      namespace === 'modules-on-use' ? undefined : {path: specifierOf(path), namespace: 'modules-on-use'},
    )
    // Our schemas (src/schemas/, and zod with them), from outside that folder.
    if (schemas) {
      bundle.onResolve({filter: /\/schemas\/[a-z-]+\.js$/}, ({path, importer, namespace}) =>
        namespace === 'modules-on-use' || importer.includes(`${sep}src${sep}schemas${sep}`) ? undefined : {path: join(importer, '..', path).replace(/\.js$/, '.ts'), namespace: 'modules-on-use'},
      )
    }
    bundle.onLoad({filter: /.*/, namespace: 'modules-on-use'}, async ({path}) => {
      const names = path.endsWith('.ts') ? Object.keys(await import(pathToFileURL(join(root, 'dist', path.slice(join(root, 'src').length).replace(/\.ts$/, '.js'))).href)) : Object.keys(requireHere(path))
      // A bundled module loaded on use is code the call's code cache may not hold yet: named in
      // `globalThis.__jarvisLoadedOnUse`, so that src/cli/code-cache.ts writes the cache again to hold it.
      const bundled = !path.startsWith('node:')
      const tell = bundled ? `(globalThis.__jarvisLoadedOnUse ??= []).push(${JSON.stringify(path.startsWith(root) ? path.slice(root.length) : path)}), ` : ''
      // zod as its ES module build, as an import finds it (its CommonJS build would bring back every locale).
      const real = path === 'zod' ? fileURLToPath(import.meta.resolve('zod')) : path
      const contents = [
        'let real',
        `const load = () => (real ??= (${tell}require(${JSON.stringify(real)})))`,
        `for (const name of ${JSON.stringify(names)}) Object.defineProperty(exports, name, {enumerable: true, get: () => load()[name]})`,
      ].join('\n')
      return {contents, loader: 'js', resolveDir: root}
    })
  },
})

const commands = readdirSync(`${root}src/commands`, {recursive: true}).filter((file) => file.endsWith('.ts')).map((file) => `src/commands/${file}`)

/** Packages that stay in node_modules: native code, workers, files read at run time, oclif (plugins share it). */
const external = ['@oclif/core', '@modelcontextprotocol/sdk', '@fastify/*', 'better-sqlite3', 'chokidar', 'fastify', 'pg', 'pino', 'proper-lockfile', 'simple-git', 'undici']

await build({
  absWorkingDir: root,
  entryPoints: [...commands, 'src/cli/command-not-found.ts'],
  outdir: 'dist',
  outbase: 'src',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // ES module builds first: jsonc-parser's CommonJS entry is a UMD wrapper whose require() calls a bundle cannot see.
  mainFields: ['module', 'main'],
  // secretlint too: it is ES modules only, and the commands load it when they write.
  external: [...external, '@secretlint/*'],
  // A bundled CommonJS dependency may call require(): give ES modules one.
  banner: {js: "import {createRequire as __jarvisCreateRequire} from 'node:module'; const require = __jarvisCreateRequire(import.meta.url);"},
  plugins: [zodEnglishOnly],
  logLevel: 'warning',
})

/**
 * The fast door's calls (bin/run.js), each as one CommonJS script of its own, `dist/fast/<name>.cjs`, that
 * src/cli/code-cache.ts compiles through V8's code cache (Node 20 has none for ES modules): one per entry of
 * FAST_ACTIONS (src/cli/fast.ts, the action module of that name), and `hook`. One script per call keeps each small:
 * V8 makes every function a script declares, used or not. secretlint and proper-lockfile are bundled in: an ES
 * module could only be loaded by `import()`, which code from a cache cannot call, and for the same reason every
 * `import()` becomes `require()`. `import.meta.url` is the bundle's own URL, how the code finds the package's root.
 */
const {FAST_ACTIONS} = await import(pathToFileURL(join(root, 'dist', 'cli', 'fast.js')).href)
const oneShotZod = `import ${JSON.stringify(join(root, 'src', 'cli', 'one-shot-zod.ts'))}`
const doorEntries = {
  hook: [oneShotZod, `export {runHookDoor as run} from ${JSON.stringify(join(root, 'src', 'cli', 'hook-door.ts'))}`].join('\n'),
  ...Object.fromEntries(
    Object.keys(FAST_ACTIONS).map((name) => [
      name,
      [
        oneShotZod,
        `import * as action from ${JSON.stringify(join(root, 'src', 'cli', 'actions', `${name}.ts`))}`,
        `import {runAction} from ${JSON.stringify(join(root, 'src', 'cli', 'fast-action.ts'))}`,
        'export const run = (argv) => runAction(action, argv)',
      ].join('\n'),
    ]),
  ),
}
const fastDoors = {
  name: 'fast-doors',
  setup(bundle) {
    bundle.onResolve({filter: /^fast-door:/}, ({path}) => ({path: path.slice('fast-door:'.length), namespace: 'fast-door'}))
    bundle.onLoad({filter: /.*/, namespace: 'fast-door'}, ({path}) => ({contents: doorEntries[path], loader: 'js', resolveDir: root}))
  },
}
/**
 * What a parse of the tree's config depends on: our schemas and zod. The door's bundles keep the config as they
 * parsed it, under this tag (`.nexus/config-read.json`, src/store/sync-state.ts readConfig).
 */
const schemasTag = createHash('sha256')
  .update(requireHere('zod/package.json').version)
  .update(
    readdirSync(join(root, 'src', 'schemas'))
      .sort()
      .map((file) => `${file}\0${readFileSync(join(root, 'src', 'schemas', file), 'utf8')}`)
      .join('\0'),
  )
  .digest('hex')
  .slice(0, 16)
/** The door's bundles of `names`, in one build (modules shared by several are resolved once). */
const buildDoors = (names, {schemas}) =>
  build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(names.map((name) => [name, `fast-door:${name}`])),
    write: false,
    metafile: true,
    outdir: 'dist/fast',
    outExtension: {'.js': '.cjs'},
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    supported: {'dynamic-import': false},
    mainFields: ['module', 'main'],
    // proper-lockfile (and graceful-fs) too, compiled once into the cache instead of at every call.
    external: external.filter((name) => name !== 'proper-lockfile'),
    // code-cache.ts reads a bundle as latin1: it must hold ASCII only (esbuild's default, said here because it matters).
    charset: 'ascii',
    // A third smaller without its indentation and line breaks: each call reads and V8 takes in the whole text (~0.6 ms
    // of sync's 1.9 MB). Names stay, so a stack trace still says which function.
    minifyWhitespace: true,
    // import.meta.resolve is only called when running from the TypeScript sources (tests), never in a bundle.
    define: {'import.meta.url': '__jarvisBundleUrl', 'import.meta.resolve': '__jarvisResolve', __jarvisSchemasTag: JSON.stringify(schemasTag)},
    banner: {js: "var __jarvisBundleUrl = require('node:url').pathToFileURL(__filename).href; var __jarvisResolve = (specifier) => require.resolve(specifier);"},
    plugins: [zodEnglishOnly, fastDoors, debugWhenAsked, assertOnFailure, modulesOnUse({schemas})],
    logLevel: 'warning',
  })
// The sync's bundle on its own: its zod and schemas are loaded on use (modulesOnUse).
const doorBuilds = [await buildDoors(Object.keys(doorEntries).filter((name) => name !== 'sync'), {schemas: false}), await buildDoors(['sync'], {schemas: true})]
const doors = {outputs: doorBuilds.flatMap((one) => Object.entries(one.metafile.outputs)), outputFiles: doorBuilds.flatMap((one) => one.outputFiles)}
// Code from a code cache cannot call import(), so a bundle require()s what it leaves out: each must load that way.
// Only an ES module's refusal counts here; a native module built for another Node falls back at run time.
const requireFromDist = createRequire(join(root, 'dist', 'fast', 'index.cjs'))
for (const [file, output] of doors.outputs) {
  for (const {path} of output.imports.filter((entry) => entry.external)) {
    try {
      requireFromDist(path)
    } catch (error) {
      if (error.code !== 'ERR_REQUIRE_ESM' && error.code !== 'ERR_REQUIRE_ASYNC_MODULE') continue
      throw new Error(`${file} leaves out ${path}, which require() cannot load (${error.code}): bundle it in (scripts/bundle.mjs)`)
    }
  }
}
// Each bundle's first line names its content, which is what its code cache is filed under (src/cli/code-cache.ts).
// Then the function a CommonJS module is wrapped in, written here so that code-cache.ts compiles the text as read:
// wrapped at run time, the 1.5 MB text was copied once more at every call.
mkdirSync(join(root, 'dist', 'fast'), {recursive: true})
for (const {path, contents} of doors.outputFiles) {
  const tag = createHash('sha256').update(contents).digest('hex').slice(0, 16)
  writeFileSync(path, Buffer.concat([Buffer.from(`// jarvis-bundle ${tag}\n(function (exports, require, module, __filename, __dirname) {`), contents, Buffer.from('\n})')]))
}

/**
 * bin/run.js is CommonJS (bin/package.json): Node sets up its ES module loader only for an ES module entry, ~15 ms
 * of every call. What it runs first, the door (src/cli/code-cache.ts and door.ts), is one CommonJS file for it,
 * `dist/cli/entry.cjs` (not in dist/fast/, where a command's name finds its bundle); a call the door leaves to oclif
 * loads oclif and its ES module commands as before.
 */
await build({
  absWorkingDir: root,
  entryPoints: {entry: 'src/cli/code-cache.ts'},
  outdir: 'dist/cli',
  outExtension: {'.js': '.cjs'},
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
})

// The web dashboard, served by `jarvis serve` at /.
await buildDashboard()
