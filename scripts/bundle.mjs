/**
 * `npm run build`, after tsc: each command (and the fast door of bin/run.js) as one ES module with its own code,
 * zod and the small libraries bundled in, shared parts split into dist/chunks/. A process then loads a handful of
 * files instead of a few hundred, which is most of what start-up costs (docs/decisions/startup.md). Packages
 * that load native code, workers or their own files at run time, and oclif (which plugins share), stay in
 * node_modules. tsc's per-module output stays beside it for what is started by path (dist/hook/background-sync.js).
 */
import {readdirSync} from 'node:fs'
import {join, sep} from 'node:path'
import {fileURLToPath} from 'node:url'

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

const commands = readdirSync(`${root}src/commands`, {recursive: true}).filter((file) => file.endsWith('.ts')).map((file) => `src/commands/${file}`)

await build({
  absWorkingDir: root,
  entryPoints: [...commands, 'src/cli/fast.ts', 'src/cli/command-not-found.ts'],
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
  external: [
    '@oclif/core',
    '@modelcontextprotocol/sdk',
    '@fastify/*',
    '@secretlint/*',
    'better-sqlite3',
    'chokidar',
    'fastify',
    'pino',
    'proper-lockfile',
    'simple-git',
    'undici',
  ],
  // A bundled CommonJS dependency may call require(): give ES modules one.
  banner: {js: "import {createRequire as __jarvisCreateRequire} from 'node:module'; const require = __jarvisCreateRequire(import.meta.url);"},
  plugins: [zodEnglishOnly],
  logLevel: 'warning',
})

// The web dashboard, served by `jarvis serve` at /.
await buildDashboard()
