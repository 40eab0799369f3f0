#!/usr/bin/env node
// The calls paid most often (`--version`, `hook`, the hot commands) are answered without loading oclif, by one
// bundle that V8's code cache spares compiling again: see src/cli/fast.ts and src/cli/code-cache.ts. CommonJS
// (bin/package.json), as is the door it loads (dist/cli/entry.cjs): an ES module entry makes Node set up its ES
// module loader, ~15 ms of every call.
'use strict'
const {join} = require('node:path')
const {pathToFileURL} = require('node:url')

const {runFastDoor} = require('../dist/cli/entry.cjs')

const packageRoot = join(__dirname, '..')
// A reader that stopped reading (`jarvis memory ls --json | head`): the rest has nowhere to go, and nothing failed.
process.stdout.on('error', (error) => {
  if (error.code !== 'EPIPE') throw error
  process.exit(0)
})
runFastDoor(process.argv.slice(2), pathToFileURL(`${packageRoot}/`)).then(async (answered) => {
  if (answered) return
  // oclif finds the package from its root: bin/ holds a package.json of its own.
  await require('@oclif/core').execute({dir: packageRoot})
})
