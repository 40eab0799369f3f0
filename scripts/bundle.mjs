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
import {join, relative, sep} from 'node:path'
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
 * started on demand, a `syncfs`), ~1–3 ms each with the modules they load. Node loads a module when a bundle's module
 * that names it is set up, used or not. The door's bundles get each as an object of the same names whose every
 * property loads the real module at its first read.
 */
const NODE_ON_USE = /^(?:node:)?(?:child_process|crypto|perf_hooks|worker_threads|zlib)$/
const requireHere = createRequire(import.meta.url)
/**
 * Our schemas that run zod when set up: those that import it, and those that import them. The others (constants, hand
 * checks, the parse helpers) are plain code a sync with nothing to do may run, and stay in the bundle.
 */
const schemasOfZod = (() => {
  const texts = new Map(readdirSync(join(root, 'src', 'schemas')).filter((file) => file.endsWith('.ts')).map((file) => [`src/schemas/${file}`, readFileSync(join(root, 'src', 'schemas', file), 'utf8')]))
  const ofZod = new Set([...texts].filter(([, text]) => /^import (?!type )[^;]*from 'zod'/m.test(text)).map(([file]) => file))
  for (let grew = true; grew; ) {
    grew = false
    for (const [file, text] of texts) {
      if (ofZod.has(file) || ![...text.matchAll(/from '\.\/([a-z-]+)\.js'/g)].some(([, name]) => ofZod.has(`src/schemas/${name}.ts`))) continue
      ofZod.add(file)
      grew = true
    }
  }
  return [...ofZod].sort()
})()
/**
 * Code that a call of the door may run and most calls do not, in scripts of their own, `dist/fast/on-use/<name>.cjs`,
 * each compiled through a code cache of its own when first used (src/cli/code-cache.ts): a call reads, deserializes
 * and declares only the code it runs, and its cache holds only that. V8 declares every function a script holds, and a
 * cache written after a call that used such code holds it too: before, the sync's cache held zod after a push, and
 * every later sync with nothing to do read it. Each entry names the modules a script holds, as they are imported:
 * - yaml (~170 KB), which `memory ls`, `recall`, the hook and the sync load with the search's documents, but parse with
 *   only when a file's front matter is read again;
 * - in the sync's bundle, secretlint's preset (~470 KB) and moment (~100 KB), which only a push runs (the scan for
 *   secrets, a daily note of an Obsidian replica);
 * - in the sync's bundle, zod and our schemas (each file of src/schemas/ that sets zod up, as the code outside that
 *   folder imports it): a sync with nothing to do reads its config as last parsed (`.nexus/config-read.json`), and its
 *   status and audit line by hand checks, and loads neither. Nothing may use them at the top level of a module such a
 *   sync loads: a schema is built by a function, or in a module loaded on use. Not in the other bundles, whose calls
 *   parse with zod anyway: each module importing a stand-in copies its every name (~7 ms of `memory snapshot`).
 * A script holds packages and its own files only: a module of ours it imports from elsewhere (src/schemas/parse.ts,
 * which throws src/errors.ts's classes that `instanceof` checks) is the one of the bundle that loads it, handed over
 * at its load (onUseHost).
 */
const ON_USE_SCRIPTS = {
  yaml: ['yaml'],
  secretlint: ['@secretlint/core', '@secretlint/profiler', '@secretlint/secretlint-rule-preset-recommend'],
  moment: ['moment'],
  schemas: ['zod', ...schemasOfZod],
}
/**
 * The on-use scripts of each bundle of the door (others: yaml only). Not the hook's secretlint and moment, which a
 * prompt never runs either: a prompt hook measured the same without them (docs/decisions/startup.md).
 */
const SCRIPTS_OF = {sync: ['yaml', 'secretlint', 'moment', 'schemas']}
const scriptsOf = (name) => SCRIPTS_OF[name] ?? ['yaml']
/** The modules of ours each on-use script takes from the bundle that loads it, found by its build (onUseHost). */
const hostModules = Object.fromEntries(Object.keys(ON_USE_SCRIPTS).map((name) => [name, new Set()]))
/** zod as its ES module build, as an import finds it (its CommonJS build would bring back every locale). */
const realPath = (key) => (key === 'zod' ? fileURLToPath(import.meta.resolve('zod')) : key.startsWith('src/') ? join(root, key) : key)

/**
 * The door's stand-ins for what a bundle loads on use: Node's modules above, and the modules of its on-use scripts,
 * which it asks for as `require('jarvis:on-use/<name>')` (src/cli/code-cache.ts answers that). A static import gets
 * an object whose every name loads the module at its first read; a dynamic `import()` (a `require()` in the bundle)
 * loads it there.
 */
const modulesOnUse = ({scripts}) => ({
  name: 'modules-on-use',
  setup(bundle) {
    const scriptOf = new Map(scripts.flatMap((script) => ON_USE_SCRIPTS[script].map((key) => [key, script])))
    const standIn = (key, kind) => ({path: key, namespace: kind === 'dynamic-import' || kind === 'require-call' ? 'modules-at-import' : 'modules-on-use'})
    bundle.onResolve({filter: NODE_ON_USE}, ({path, namespace, kind}) => (namespace.startsWith('modules-') ? undefined : standIn(`node:${path.replace(/^node:/, '')}`, kind)))
    bundle.onResolve({filter: /^[@a-z]/}, ({path, namespace, kind}) => (scriptOf.has(path) && !namespace.startsWith('modules-') ? standIn(path, kind) : undefined))
    // Our schemas, from outside their folder.
    bundle.onResolve({filter: /\/schemas\/[a-z-]+\.js$/}, ({path, importer, namespace, kind}) => {
      if (namespace.startsWith('modules-') || importer.includes(`${sep}src${sep}schemas${sep}`)) return undefined
      const key = relative(root, join(importer, '..', path)).split(sep).join('/').replace(/\.js$/, '.ts')
      return scriptOf.has(key) ? standIn(key, kind) : undefined
    })
    bundle.onResolve({filter: /^jarvis:on-use\//}, ({path}) => ({path, external: true}))
    const load = (key) => {
      if (key.startsWith('node:')) return `require(${JSON.stringify(key)})`
      const script = scriptOf.get(key)
      const host = [...hostModules[script]].map((module) => `${JSON.stringify(module)}: () => require(${JSON.stringify(join(root, module))})`)
      return `require(${JSON.stringify(`jarvis:on-use/${script}`)})({${host.join(', ')}})[${JSON.stringify(key)}]()`
    }
    bundle.onLoad({filter: /.*/, namespace: 'modules-at-import'}, ({path}) => ({contents: `module.exports = ${load(path)}`, loader: 'js', resolveDir: root}))
    bundle.onLoad({filter: /.*/, namespace: 'modules-on-use'}, async ({path}) => {
      const names = path.startsWith('src/') ? Object.keys(await import(pathToFileURL(join(root, 'dist', path.slice('src/'.length).replace(/\.ts$/, '.js'))).href)) : Object.keys(requireHere(path))
      const contents = [
        'let real',
        `const load = () => (real ??= ${load(path)})`,
        `for (const name of ${JSON.stringify(names)}) Object.defineProperty(exports, name, {enumerable: true, get: () => load()[name]})`,
      ].join('\n')
      return {contents, loader: 'js', resolveDir: root}
    })
  },
})

/**
 * In an on-use script's build: each module of ours outside the script's own, as one the loading bundle hands over
 * (modulesOnUse passes them as `{path: () => module}`), so that the process has one of each.
 */
const onUseHost = (name) => ({
  name: 'on-use-host',
  setup(bundle) {
    const own = new Set(ON_USE_SCRIPTS[name])
    bundle.onResolve({filter: /^\.\.?\//}, ({path, importer}) => {
      if (!importer.startsWith(join(root, 'src') + sep)) return undefined
      const key = relative(root, join(importer, '..', path)).split(sep).join('/').replace(/\.js$/, '.ts')
      if (own.has(key)) return undefined
      hostModules[name].add(key)
      return {path: key, namespace: 'on-use-host'}
    })
    bundle.onResolve({filter: /^jarvis-on-use-host$/}, () => ({path: 'host', namespace: 'on-use-host-modules'}))
    bundle.onLoad({filter: /.*/, namespace: 'on-use-host-modules'}, () => ({contents: 'let host = {}\nexports.set = (given) => { host = given }\nexports.get = (key) => host[key]()', loader: 'js'}))
    bundle.onLoad({filter: /.*/, namespace: 'on-use-host'}, ({path}) => ({contents: `module.exports = require('jarvis-on-use-host').get(${JSON.stringify(path)})`, loader: 'js', resolveDir: root}))
  },
})

const commands = readdirSync(`${root}src/commands`, {recursive: true}).filter((file) => file.endsWith('.ts')).map((file) => `src/commands/${file}`)

/**
 * Packages that stay in node_modules: native code, workers, files read at run time, oclif (plugins share it), and
 * grammy: node-fetch, under it, takes a signal only from a class named AbortSignal, and bundled, abort-controller's
 * class is renamed AbortSignal2 (the global's name is taken) — every Bot API call then failed.
 */
const external = ['@oclif/core', '@modelcontextprotocol/sdk', '@fastify/*', 'better-sqlite3', 'chokidar', 'fastify', 'grammy', 'pg', 'pino', 'proper-lockfile', 'simple-git', 'undici']

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
/** Options shared by the door's bundles and their on-use scripts. */
const doorOptions = {
  absWorkingDir: root,
  write: false,
  metafile: true,
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
  logLevel: 'warning',
}
/**
 * Each on-use script exports a function of the modules of ours it takes from the bundle that loads it, which gives
 * the loaders of its modules by the names of ON_USE_SCRIPTS: its modules are set up when first asked for.
 */
const onUseBuilds = await Promise.all(
  Object.entries(ON_USE_SCRIPTS).map(([name, keys]) =>
    build({
      ...doorOptions,
      entryPoints: {[name]: `on-use-entry:${name}`},
      outdir: 'dist/fast/on-use',
      plugins: [
        {
          name: 'on-use-entry',
          setup(bundle) {
            bundle.onResolve({filter: /^on-use-entry:/}, ({path}) => ({path, namespace: 'on-use-entry'}))
            bundle.onLoad({filter: /.*/, namespace: 'on-use-entry'}, () => ({
              contents: [
                "const host = require('jarvis-on-use-host')",
                `module.exports = (given) => (host.set(given), {${keys.map((key) => `${JSON.stringify(key)}: () => require(${JSON.stringify(realPath(key))})`).join(', ')}})`,
              ].join('\n'),
              loader: 'js',
              resolveDir: root,
            }))
          },
        },
        zodEnglishOnly,
        debugWhenAsked,
        assertOnFailure,
        onUseHost(name),
        modulesOnUse({scripts: []}),
      ],
    }),
  ),
)
/** The door's bundles of `names`, in one build (modules shared by several are resolved once). */
const buildDoors = (names) =>
  build({
    ...doorOptions,
    entryPoints: Object.fromEntries(names.map((name) => [name, `fast-door:${name}`])),
    outdir: 'dist/fast',
    plugins: [zodEnglishOnly, fastDoors, debugWhenAsked, assertOnFailure, modulesOnUse({scripts: scriptsOf(names[0])})],
  })
// One build per set of on-use scripts.
const doorNames = Object.keys(doorEntries)
const doorBuilds = await Promise.all(Object.keys(SCRIPTS_OF).concat('').map((name) => buildDoors(name ? [name] : doorNames.filter((door) => !(door in SCRIPTS_OF)))))
// A bundle that holds a module of one of its on-use scripts would set up a second copy of it.
for (const [name, scripts] of doorNames.map((door) => [door, scriptsOf(door)])) {
  const inputs = Object.keys(doorBuilds.flatMap((one) => Object.entries(one.metafile.outputs)).find(([file]) => file === `dist/fast/${name}.cjs`)[1].inputs)
  const twice = inputs.filter((input) => scripts.some((script) => ON_USE_SCRIPTS[script].some((key) => input === key || input.startsWith(`node_modules/${key}/`))))
  if (twice.length > 0) throw new Error(`dist/fast/${name}.cjs holds ${twice.join(', ')}, which its on-use scripts hold (scripts/bundle.mjs)`)
}
const allBuilds = [...onUseBuilds, ...doorBuilds]
const doors = {outputs: allBuilds.flatMap((one) => Object.entries(one.metafile.outputs)), outputFiles: allBuilds.flatMap((one) => one.outputFiles)}
// Code from a code cache cannot call import(), so a bundle require()s what it leaves out: each must load that way.
// Only an ES module's refusal counts here; a native module built for another Node falls back at run time.
const requireFromDist = createRequire(join(root, 'dist', 'fast', 'index.cjs'))
for (const [file, output] of doors.outputs) {
  for (const {path} of output.imports.filter((entry) => entry.external && !entry.path.startsWith('jarvis:on-use/'))) {
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
mkdirSync(join(root, 'dist', 'fast', 'on-use'), {recursive: true})
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
