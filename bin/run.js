#!/usr/bin/env node
// The calls paid most often (`--version`, `hook`) are answered without loading oclif: see src/cli/fast.ts.
import {runFast} from '../dist/cli/fast.js'

if (!(await runFast(process.argv.slice(2), new URL('..', import.meta.url)))) {
  const {execute} = await import('@oclif/core')
  await execute({dir: import.meta.url})
}
