/** What a sync is given and what it reports (src/sync/run.ts runs it). */
import type {MemoryClient} from '../protocol/client.js'
import type {SyncSettings} from '../schemas/index.js'
import type {TreeWatch} from '../store/index.js'
import type {OutboxReport} from './outbox.js'
import type {Action, SyncMode} from './plan.js'
import type {RefusedFile} from './sensitive.js'

export interface SyncOptions {
  root: string
  client: MemoryClient
  settings: SyncSettings
  dryRun?: boolean
  force?: boolean
  now?: () => Date
  sleep?: (ms: number) => Promise<void>
  onProgress?: (done: number, total: number) => void
  /** A watch of the tree that says which files changed since the stat cache's clock: the scan looks at those only. */
  watch?: TreeWatch
}

export interface BackupReport {
  /** The memory file whose local version lost. */
  path: string
  /** Where the local version was kept, relative to `.memory/`. */
  backup: string
}

export interface SyncResult {
  server: string
  mode: SyncMode
  pushed: string[]
  pulled: string[]
  merged: string[]
  deleted: string[]
  conflicts: {path: string; rule: string; reason: string}[]
  backups: BackupReport[]
  /** Backups of earlier conflicts still waiting for `jarvis resolve` (relative to `.memory/`). */
  waiting: string[]
  /** Malformed local files, left exactly as they were. */
  invalid: {path: string; problems: string[]}[]
  /** Local files holding a secret or personal data, left exactly as they were and not sent. */
  refused: RefusedFile[]
  outbox: OutboxReport
  dryRun: boolean
  plan?: Record<Action['kind'], string[]>
  attempts: number
}

