/**
 * ops/: the operations behind every door — a command, an MCP tool, an agent hook. Each takes typed input and
 * returns a typed result; none prints, parses flags or reads stdin (the doors do that), so a command and a tool
 * are two thin adapters onto the same call.
 */
export {openTree, openTreeIfAny, connect, type TreeContext, type Connection} from './context.js'
export {explainTokenRefusal, foreignTokenError, readUserConfig, resolveIdentity, requireServer, userConfigDir, userConfigFile, userConfigSchema, type Identity, type TokenSource, type UserConfig} from './identity.js'
export {currentRunId, newRunId, parseDuration, parseSince, type Warn} from './events/common.js'
export {appendMemory, readEvents, type AppendedEvent, type AppendFields, type AppendOptions, type AppendResult} from './events/append.js'
export {DEFAULT_LIMIT_RECENT, formatAge, readSnapshot, SNAPSHOT_CACHE_FILE, type CachedInfo, type SnapshotOptions, type SnapshotResult} from './events/snapshot.js'
export {listEvents, type ListOptions, type ListResult} from './events/list.js'
export {consolidateMemory, type ConsolidateOptions, type ConsolidateResult} from './events/consolidate.js'
export {cleanupMemory, type CleanupCandidate, type CleanupOptions, type CleanupResult} from './events/cleanup.js'
export {searchMemory, type MemorySearchOptions, type MemorySearchResult} from './search.js'
export {recallMemory, type RecallInput, type RecallResult} from './recall.js'
export {
  contextMap,
  memoryCompact,
  memoryDelete,
  memoryEdit,
  memoryEpisode,
  memoryGrep,
  memoryLs,
  memoryRead,
  memoryWrite,
  type ContextMapResult,
  type GrepResult,
  type LsResult,
  type ReadResult,
} from './files.js'
export type {CompactResult, DeleteResult, WriteResult} from '../files/index.js'
export {agentPrompt, PROMPT_PLACEMENT, type PromptOptions, type PromptResult} from './prompt.js'
export {assertSyncEnabled, syncOnce, type SyncOnceOptions, type SyncOnceResult} from './sync.js'
export type {SyncResult} from '../sync/run.js'
export {completeTask, readTaskResult, switchProject, type QueuedWrite, type SwitchProjectOptions, type TaskCompleteOptions, type TaskCompleteResult, type TaskFields} from './task.js'
export {sessionList, sessionSync, type SessionListEntry, type SessionListResult, type SessionSyncResult} from './session.js'
