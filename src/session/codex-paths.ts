/** Where Codex CLI keeps its rollouts (research §3): `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<stamp>-<id>.jsonl`. */
import {randomBytes} from 'node:crypto'
import {homedir} from 'node:os'
import {join} from 'node:path'

import {listDir} from './dir.js'

/** `$CODEX_HOME`, else `~/.codex`. */
export function codexHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.CODEX_HOME
  if (configured !== undefined && configured !== '') return configured
  return join(env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir(), '.codex')
}

const ROLLOUT = /^rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/i

/** The thread id a rollout file name ends with; undefined for a name that is not a rollout. */
export function codexRolloutId(fileName: string): string | undefined {
  return ROLLOUT.exec(fileName)?.[1]
}

/** Every rollout under `sessions/` (not `archived_sessions/`): path and thread id, oldest day first. */
export async function codexRolloutFiles(env: NodeJS.ProcessEnv = process.env): Promise<Array<{path: string; id: string}>> {
  const base = join(codexHome(env), 'sessions')
  const files: Array<{path: string; id: string}> = []
  for (const year of await listDir(base)) {
    for (const month of await listDir(join(base, year))) {
      for (const day of await listDir(join(base, year, month))) {
        for (const name of await listDir(join(base, year, month, day))) {
          const id = codexRolloutId(name)
          if (id !== undefined) files.push({path: join(base, year, month, day, name), id})
        }
      }
    }
  }
  return files
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/**
 * Where a new rollout goes: the day directory and the `YYYY-MM-DDTHH-mm-ss` stamp in local time, as Codex CLI names
 * its own (readers match on the id at the end, not on the stamp).
 */
export function codexRolloutPath(threadId: string, at: Date, env: NodeJS.ProcessEnv = process.env): string {
  const [y, mo, d] = [at.getFullYear(), at.getMonth() + 1, at.getDate()]
  const stamp = `${y}-${pad(mo)}-${pad(d)}T${pad(at.getHours())}-${pad(at.getMinutes())}-${pad(at.getSeconds())}`
  return join(codexHome(env), 'sessions', String(y), pad(mo), pad(d), `rollout-${stamp}-${threadId}.jsonl`)
}

/** A UUID v7 (time-ordered), the kind of id Codex CLI gives its threads. */
export function uuidV7(at: Date = new Date()): string {
  const bytes = randomBytes(16)
  const ms = BigInt(at.getTime())
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn)
  bytes[6] = (bytes[6] & 0x0f) | 0x70
  bytes[8] = (bytes[8] & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
