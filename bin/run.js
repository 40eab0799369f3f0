#!/usr/bin/env node
// The calls paid most often (`--version`, `hook`, the hot commands) are answered without loading oclif, by one
// bundle that V8's code cache spares compiling again: see src/cli/fast.ts and src/cli/code-cache.ts.
import {runFastDoor} from '../dist/cli/code-cache.js'

if (!(await runFastDoor(process.argv.slice(2), new URL('..', import.meta.url)))) {
  const {execute} = await import('@oclif/core')
  await execute({dir: import.meta.url})
}
