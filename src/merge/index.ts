export {canonicalJson, jsonEqual} from './canonical.js'
export {diff3, type Diff3Conflict, type LineRange, type Segment} from './diff3.js'
export {mergeFileText, ruleForPath} from './dispatch.js'
export {mergeJson} from './json.js'
export {allMarked, localSideOf, NO_MARKS, type NotPutBack, putBack, type PutBack, type PutBackMarks, replacedLines} from './keep-local.js'
export {baseAfterOwnWrites, holdsEdits} from './own-write.js'
export {diffSequences, type Hunk} from './line-diff.js'
export {compareStamps, lwwWinner, mergeLwwDocument, stampValue} from './lww.js'
export {mergeText, normalizeEol, splitLines} from './markdown.js'
export {joinRecentTasks, mergeRecentTasks, RECENT_TASK_LIMIT} from './recent-tasks.js'
export {mergeByStrategy, type Strategy, strategyFor, type StrategyMerge} from './strategy.js'
export {mergeTranscript, messageKey, planTranscriptMerge} from './transcript.js'
export {mergeWorkerMemory} from './worker-memory.js'
export type {
  ConflictKind,
  FileMerge,
  JsonObject,
  MergeConflict,
  MergeResult,
  MergeRule,
  RecentTask,
  Side,
  TranscriptMerge,
  UniversalMessage,
  WorkerMemory,
} from './types.js'
