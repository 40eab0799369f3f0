import {existsSync, readdirSync, rmSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import type {TestProject} from 'vitest/node'

import {startPostgresServer} from './helpers/postgres.js'

const root = fileURLToPath(new URL('..', import.meta.url))

function newestIn(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, {withFileTypes: true})) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestIn(path) : statSync(path).mtimeMs)
  }
  return newest
}

/**
 * oclif reads oclif.manifest.json whenever it exists, even in development, so after a build a
 * changed source tree would be tested through the old `dist/` (STYLE.md, oclif trap 5). CI builds
 * right before testing; on a developer's machine a manifest older than src/ is removed instead.
 */
function dropStaleManifest(): void {
  const manifest = join(root, 'oclif.manifest.json')
  if (process.env.CI || !existsSync(manifest)) return
  if (newestIn(join(root, 'src')) > statSync(manifest).mtimeMs) rmSync(manifest)
}

/**
 * Also starts the run's one PostgreSQL server (test/helpers/postgres.ts), which the conformance suites run against
 * beside SQLite; it is stopped, by its handle, when the run ends.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  dropStaleManifest()
  // No jarvis a test runs starts a watch of its tree on demand (src/warm/demand.ts), which would outlive the test: the
  // tests of that watch turn it on and stop it themselves (test/sync/watched.test.ts).
  process.env.JARVIS_WATCHER ??= 'off'
  const postgres = await startPostgresServer()
  project.provide('postgresAdminUrl', postgres.adminUrl)
  return () => postgres.stop()
}
