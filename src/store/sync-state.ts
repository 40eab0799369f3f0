/** `.nexus/config.json` and `.nexus/sync-state.json`: zod-checked reads, atomic pretty-printed writes. */
import {rm} from 'node:fs/promises'
import {join} from 'node:path'

import {SecretRefusedError} from '../errors.js'
import {parseJsonFile, parseWith} from '../schemas/parse.js'
import {type NexusConfig, nexusConfigSchema, type SyncState, syncStateSchema} from '../schemas/nexus.js'
import {readTextIfExists, writeFileAtomic} from './atomic.js'
import {nexusDir} from './root.js'

export const CONFIG_FILE = '.nexus/config.json'
export const SYNC_STATE_FILE = '.nexus/sync-state.json'

/** JSON as jarvis writes it: two-space indent and a final newline. */
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n'
}

export function syncStatePath(root: string): string {
  return join(nexusDir(root), 'sync-state.json')
}

export function configPath(root: string): string {
  return join(nexusDir(root), 'config.json')
}

/** Missing → the empty state (`{version: 1, files: {}}`); malformed → SchemaError naming the file and line or field. */
export async function readSyncState(root: string): Promise<SyncState> {
  const text = await readTextIfExists(syncStatePath(root))
  if (text === null) return syncStateSchema.parse({})
  return parseJsonFile(syncStateSchema, text, SYNC_STATE_FILE)
}

export async function writeSyncState(root: string, state: SyncState): Promise<void> {
  const checked = parseWith(syncStateSchema, state, SYNC_STATE_FILE)
  await writeFileAtomic(syncStatePath(root), formatJson(checked))
}

/** Missing → all defaults (a tree cloned without its `.nexus/` still works); malformed → SchemaError. */
/**
 * `.nexus/sync-running`: present while a sync runs, so one left behind says the last sync did not finish (and may
 * have left temp files among the bases). Not fsynced: a marker lost in a power cut costs one deep sweep, no data.
 */
export const SYNC_RUNNING_FILE = '.nexus/sync-running'

/** Marks a sync as running; true when the last one did not finish. */
export async function beginSyncRun(root: string): Promise<boolean> {
  const path = join(root, SYNC_RUNNING_FILE)
  const unfinished = (await readTextIfExists(path)) !== null
  await writeFileAtomic(path, `${process.pid}\n`, {durable: false})
  return unfinished
}

export async function endSyncRun(root: string): Promise<void> {
  await rm(join(root, SYNC_RUNNING_FILE), {force: true})
}

export async function readConfig(root: string): Promise<NexusConfig> {
  const text = await readTextIfExists(configPath(root))
  if (text === null) return nexusConfigSchema.parse({})
  return parseJsonFile(nexusConfigSchema, text, CONFIG_FILE)
}

const SECRET_KEY = /^(token|access_?token|auth_?token|secret|password|passwd|api_?key|bearer)$/i

/** Throws SecretRefusedError when the config would store a credential (CONTRACT §1: no secret in either tree). */
export function assertNoSecretInConfig(config: Record<string, unknown>): void {
  const found: string[] = []
  const visit = (value: unknown, where: string): void => {
    if (value === null || typeof value !== 'object') return
    for (const [key, child] of Object.entries(value)) {
      const here = where ? `${where}.${key}` : key
      if (SECRET_KEY.test(key) && child !== undefined && child !== null && child !== '') found.push(here)
      visit(child, here)
    }
  }
  visit(config, '')
  const server = config.server
  if (typeof server === 'string') {
    try {
      const url = new URL(server)
      if (url.username || url.password) found.push('server (credentials in the URL)')
    } catch {
      // the schema reports a bad URL
    }
  }
  if (found.length > 0) {
    throw new SecretRefusedError(
      `${CONFIG_FILE}: refusing to write a credential (${found.join(', ')}); pass the token in JARVIS_TOKEN or the user config directory`,
      {file: CONFIG_FILE, fields: found},
    )
  }
}

export async function writeConfig(root: string, config: NexusConfig): Promise<void> {
  const checked = parseWith(nexusConfigSchema, config, CONFIG_FILE)
  assertNoSecretInConfig(checked)
  await writeFileAtomic(configPath(root), formatJson(checked))
}
