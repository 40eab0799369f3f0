import {existsSync, readdirSync, rmSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

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
export default function setup(): void {
  const manifest = join(root, 'oclif.manifest.json')
  if (process.env.CI || !existsSync(manifest)) return
  if (newestIn(join(root, 'src')) > statSync(manifest).mtimeMs) rmSync(manifest)
}
