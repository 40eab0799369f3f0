/** The model tests' view of a client's tree (test/sync/model.test.ts, timestamp-model.test.ts). */
import {readdir, readFile} from 'node:fs/promises'
import {join, relative} from 'node:path'

import {isBackupName} from '../../src/store/index.js'
import type {TestClient} from '../helpers/world.js'

async function walk(dir: string, root = dir): Promise<string[]> {
  const entries = await readdir(dir, {withFileTypes: true}).catch(() => [])
  const files: string[] = []
  for (const entry of entries) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) files.push(...(await walk(path, root)))
    else files.push(relative(root, path))
  }
  return files
}

/** Every memory file of the tree but the conflict backups, by path. */
export async function treeOf(client: TestClient): Promise<Record<string, string>> {
  const tree: Record<string, string> = {}
  for (const path of await walk(client.memory)) {
    if (!isBackupName(path.split('/').pop()!)) tree[path] = await readFile(join(client.memory, path), 'utf8')
  }
  return tree
}

/** The texts of the tree's conflict backups, joined. */
export async function backupsOf(client: TestClient): Promise<string> {
  const all = await walk(client.memory)
  const texts = await Promise.all(all.filter((p) => isBackupName(p.split('/').pop()!)).map((p) => readFile(join(client.memory, p), 'utf8')))
  return texts.join('\n')
}

/** Every edit adds one unique marker: a line in Markdown, a key in JSON. Nothing else is ever removed. */
export function applyEdit(file: string, current: string | null, marker: string, position: number): string {
  if (file.endsWith('.json')) {
    const value = current ? JSON.parse(current) : {}
    return `${JSON.stringify({...value, [marker]: position}, null, 2)}\n`
  }
  const lines = current ? current.replace(/\n$/, '').split('\n') : ['# memory']
  lines.splice(Math.min(position, lines.length), 0, marker)
  return `${lines.join('\n')}\n`
}
