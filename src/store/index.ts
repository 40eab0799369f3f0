/** store/: the only code that touches `.memory/` and `.nexus/` (docs/architecture.md, docs/store-format.md). */
export {appendLineDurable, AtomicBatch, type AtomicBatchOptions, fsyncDir, fsyncDirs, linkNoClobber, readTextIfExists, type StagedFile, tempPathFor, type WriteAtomicOptions, writeFileAtomic} from './atomic.js'
export {AUDIT_FILE, appendAudit, auditPath, type AuditInput, readAudit} from './audit.js'
export {BASE_DIR, BASE_FILE, BASE_JOURNAL_FILE, baseDir, BaseStore, deleteBase, readBase, writeBase} from './base.js'
export {forEachConcurrently} from './concurrency.js'
export {CONFLICTS_DIR, type ConflictSides, forgetConflictRecord, readConflictRecord, recordConflict} from './conflict-records.js'
export {
  attributeBackups,
  BACKUP_OWNERS_FILE,
  type BackupOwner,
  backupPathFor,
  type BackupResult,
  backupsByFile,
  type BackupsOfFile,
  deleteBackup,
  filesOfBackup,
  findBackups,
  listBackups,
  nextBackupPath,
  saveBackup,
} from './backup.js'
export {hashBytes, hashText} from './hash.js'
export {GITIGNORE_LINE, gitignoreWithNexus, type InitOptions, type InitResult, initTree} from './init.js'
export {realTreeRoot, resolveInside, withPathGuardCache} from './inside.js'
export {
  isTreeLockHeld,
  LOCK_DIR,
  LOCK_OWNER_FILE,
  LOCK_RECLAIM_DIR,
  LOCK_STALE_MS,
  type LockOwner,
  readLockOwner,
  type TreeLockContext,
  type TreeLockOptions,
  withTreeLock,
} from './lock.js'
export {deleteNexusFile, readNexusFile, writeNexusFile} from './nexus-files.js'
export {appendOutbox, OUTBOX_FILE, outboxPath, readOutbox, removeFromOutbox} from './outbox.js'
export {noteReplicaOutcomes, readReplicaFailures, REPLICA_FAILURES_FILE, type ReplicaFailure, type ReplicaOutcome} from './replica-failures.js'
export {BACKUP_NAME, checkRelativePath, isBackupName, isIgnoredMemoryPath, isTempName, TEMP_NAME} from './paths.js'
export {pidAlive} from './pid.js'
export {configPath, findRoot, holdsTree, MEMORY_DIR, memoryDir, memoryIdentity, NEXUS_DIR, nexusDir} from './root.js'
export {cachedHash, cachedRev, cachedRevsInOrder, changedSinceCache, type CleanMark, readScanHead, readScanHints, readStatCache, type ScanHead, type ScanHints, statCacheHeadPath, statCachePath, WATCH_FULL_SCAN_MS, type WatchMark, watchMarkFresh, writeScanHead, writeStatCache} from './stat-cache.js'
export {
  assertNoSecretInConfig,
  CONFIG_FILE,
  endSyncRun,
  markSyncRunning,
  syncRunUnfinished,
  SYNC_RUNNING_FILE,
  formatJson,
  readConfig,
  type FileStamp,
  readSyncState,
  readSyncStateAs,
  readSyncStateView,
  VIEW_ENTRIES,
  sameStateStamp,
  type StateStamp,
  SYNC_JOURNAL_FILE,
  SYNC_STATE_FILE,
  syncJournalPath,
  syncStatePath,
  syncStateStamp,
  writeConfig,
  writeSyncState,
} from './sync-state.js'
export {
  deleteMemoryFile,
  type DirCache,
  type DirStat,
  isPermissionError,
  memoryFileAbsent,
  memoryFilePaths,
  memoryFileReadable,
  type MemoryFileStat,
  pruneEmptyDirs,
  RACY_WINDOW_MS,
  readMemoryFile,
  type ScanOptions,
  scanMemory,
  shapeInTheWay,
  type StatCache,
  scanWatched,
  type TreeWatch,
  type UnreadableEntry,
  unreadableFiles,
  type WatchAnswer,
  sweepTempFiles,
  stageMemoryFile,
  writeMemoryFile,
} from './tree.js'
