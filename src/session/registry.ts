/**
 * What `jarvis session` remembers between runs, both under `.nexus/` and both read and written under the tree lock:
 *
 * - `.nexus/sessions.json`, the cross-provider registry of seed 002 (§Storage): one entry per conversation,
 *   keyed by its tag, listing the Claude Code, Gemini CLI and Codex CLI sessions that carry it, their message counts and last sync.
 * - the `sessions` field of `.nexus/sync-state.json`: for each carried pair (source session → target session),
 *   how far the source had been carried and what the target held at that point — counts plus the keys of the
 *   first and last message on both sides, so the next sync can verify that prefix and merge only the new tail.
 */
import {z} from 'zod'

import {
  isoDateTimeSchema,
  parseJsonFile,
  parseWith,
  type Provider,
  providerSchema,
  type SessionRegistry,
  type SessionRegistryEntry,
  sessionRegistrySchema,
  type SyncState,
} from '../schemas/index.js'
import {formatJson, readNexusFile, writeNexusFile} from '../store/index.js'

/** Relative to `.nexus/`. */
export const REGISTRY_FILE = 'sessions.json'
/** Where the Gemini copy of a conversation is kept, relative to `.nexus/`. */
export const GEMINI_BACKUP_DIR = 'gemini-backup'

export function geminiBackupRel(tag: string): string {
  return `${GEMINI_BACKUP_DIR}/${encodeURIComponent(tag)}.json`
}

/** Missing → an empty registry; malformed → SchemaError naming `.nexus/sessions.json` and the line or field. */
export async function readRegistry(root: string): Promise<SessionRegistry> {
  const text = await readNexusFile(root, REGISTRY_FILE)
  if (text === null) return sessionRegistrySchema.parse({})
  return parseJsonFile(sessionRegistrySchema, text, `.nexus/${REGISTRY_FILE}`)
}

export async function writeRegistry(root: string, registry: SessionRegistry): Promise<void> {
  const checked = parseWith(sessionRegistrySchema, registry, `.nexus/${REGISTRY_FILE}`)
  await writeNexusFile(root, REGISTRY_FILE, formatJson(checked))
}

/** One session of one tool, as the registry and the sync state name it (a Gemini checkpoint by its tag). */
export interface SessionRef {
  provider: Provider
  sessionId: string
}

export function sameSession(a: SessionRef, b: SessionRef): boolean {
  return a.provider === b.provider && a.sessionId === b.sessionId
}

/** The registry entry that holds this session, if any. */
export function entryOfSession(registry: SessionRegistry, session: SessionRef): SessionRegistryEntry | undefined {
  return registry.sessions.find((entry) => entry.providers.some((info) => sameSession(info, session)))
}

export function entryOfTag(registry: SessionRegistry, tag: string): SessionRegistryEntry | undefined {
  return registry.sessions.find((entry) => entry.sessionTag === tag)
}

export interface RegistrySide extends SessionRef {
  messageCount: number
  lastActivity?: string
  path?: string
}

/**
 * The registry after one sync: the entry of `tag` (created when new) lists the source and every target session with their message counts
 * and `lastSync`. Pure: returns a new registry. A session listed under another tag moves to this one.
 */
export function recordSync(
  registry: SessionRegistry,
  sync: {entryId: string; tag: string; projectPath: string; now: string; source: RegistrySide; target: RegistrySide; also?: RegistrySide[]; replaces?: SessionRef},
): SessionRegistry {
  const {tag, now} = sync
  const sides = [sync.source, sync.target, ...(sync.also ?? [])]
  const old = entryOfTag(registry, tag)
  const others = registry.sessions
    .filter((entry) => entry !== old)
    .map((entry) => ({...entry, providers: entry.providers.filter((info) => !sides.some((side) => sameSession(info, side)))}))
    .filter((entry) => entry.providers.length > 0)
  const kept = (old?.providers ?? []).filter((info) => !sides.some((side) => sameSession(info, side)) && !(sync.replaces && sameSession(info, sync.replaces)))
  const providers = [
    ...kept,
    ...sides.map((side) => {
      const before = old?.providers.find((info) => sameSession(info, side))
      return {
        ...before,
        provider: side.provider,
        sessionId: side.sessionId,
        messageCount: side.messageCount,
        lastSync: now,
        ...(side.path ? {path: side.path} : {}),
      }
    }),
  ]
  const activities = [old?.lastActivity, ...sides.map((side) => side.lastActivity)].filter((value): value is string => isIsoDate(value))
  const lastActivity = activities.reduce((latest, value) => (Date.parse(value) > Date.parse(latest) ? value : latest), activities[0] ?? now)
  const entry: SessionRegistryEntry = {
    ...old,
    sessionId: old?.sessionId ?? sync.entryId,
    sessionTag: tag,
    projectPath: old?.projectPath ?? sync.projectPath,
    createdAt: old?.createdAt ?? now,
    lastActivity,
    providers,
  }
  return {...registry, sessions: [...others, entry]}
}

function isIsoDate(value: string | undefined): value is string {
  return value !== undefined && isoDateTimeSchema.safeParse(value).success
}

/**
 * How far one side of a pair had got: its message count, and a hash of the keys of a few messages of that prefix
 * (the first, the last and seven evenly between), so the next sync can check the prefix without reading every key.
 */
export const carriedMarkSchema = z.object({
  count: z.number().int().nonnegative(),
  probe: z.string().optional(),
})
export type CarriedMark = z.output<typeof carriedMarkSchema>

/** One carried pair in `sync-state.json` `sessions`, keyed by `pairKey(from, to)`. */
export const carriedPairSchema = z.looseObject({
  tag: z.string().min(1),
  from: z.object({provider: providerSchema, sessionId: z.string().min(1)}),
  to: z.object({provider: providerSchema, sessionId: z.string().min(1)}),
  /** The source messages carried so far (all of them as of that sync). */
  source: carriedMarkSchema,
  /** The target as this sync left it. */
  target: carriedMarkSchema,
  /** How many messages of that target prefix the source does not hold (its own); unknown counts as some. */
  targetOwn: z.number().int().nonnegative().optional(),
  syncedAt: isoDateTimeSchema,
  /** The target file as this sync left it: a Claude file changed since then by somebody else may be in use. */
  targetFile: z.object({mtimeMs: z.number(), size: z.number().int().nonnegative()}).optional(),
})
export type CarriedPair = z.output<typeof carriedPairSchema>

export function pairKey(from: SessionRef, to: SessionRef): string {
  return `${from.provider}:${from.sessionId} -> ${to.provider}:${to.sessionId}`
}

/** The carried pairs recorded in the sync state; an entry that does not parse is ignored (the next sync is a full merge). */
export function carriedPairs(state: SyncState): Map<string, CarriedPair> {
  const pairs = new Map<string, CarriedPair>()
  for (const [key, value] of Object.entries(state.sessions ?? {})) {
    const parsed = carriedPairSchema.safeParse(value)
    if (parsed.success) pairs.set(key, parsed.data)
  }
  return pairs
}

/** The sync state with one pair recorded (pure). */
export function withCarriedPair(state: SyncState, pair: CarriedPair): SyncState {
  return {...state, sessions: {...state.sessions, [pairKey(pair.from, pair.to)]: pair}}
}

/** The sync state without the pairs that involve `session` (its file is gone and was replaced). */
export function withoutPairsOf(state: SyncState, session: SessionRef): SyncState {
  if (!state.sessions) return state
  const sessions = Object.fromEntries(
    Object.entries(state.sessions).filter(([, value]) => {
      const parsed = carriedPairSchema.safeParse(value)
      return !parsed.success || !(sameSession(parsed.data.from, session) || sameSession(parsed.data.to, session))
    }),
  )
  return {...state, sessions}
}
