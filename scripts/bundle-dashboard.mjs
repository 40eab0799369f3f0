/**
 * The web dashboard (web/dashboard/, served by `jarvis serve` at /): one browser bundle of Preact, markdown-it and
 * the page's code (with the pure merge rules of src/merge/, so that a stale edit merges as a sync would), its
 * stylesheet and its page, into dist/dashboard/. Everything the page loads ships in the package: no CDN, works
 * offline. Run by scripts/bundle.mjs (`npm run build`); the browser tests run it too, outside CI, so that they
 * never test a stale bundle.
 */
import {copyFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

import {build} from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))

export async function buildDashboard() {
  await build({
    absWorkingDir: root,
    entryPoints: {app: 'web/dashboard/src/main.tsx'},
    outdir: 'dist/dashboard',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    logLevel: 'warning',
  })
  copyFileSync(`${root}web/dashboard/index.html`, `${root}dist/dashboard/index.html`)
  copyFileSync(`${root}web/dashboard/app.css`, `${root}dist/dashboard/app.css`)
}
