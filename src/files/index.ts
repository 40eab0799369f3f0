/** files/: the long-term memory files of seed 004 (docs/memory-files.md), on top of the store. */
export {type CompactResult, compactProject, renderSummary} from './compact.js'
export {buildContextMap, classifyFiles, classifyPath, CONTEXT_MAP_PATH, parsePrismaSchema, repositoryOf, writeContextMap} from './context-map.js'
export {type EpisodeInput, episodeDate, renderEpisode, writeEpisode} from './episode.js'
export {type FrontMatter, type MemoryFile, parseMemoryFile, renderMemoryFile, tagsOf} from './front-matter.js'
export {checkMemoryPath, checkPrefix, checkSlug, MemoryFileNotFoundError, slugify} from './paths.js'
export {
  ACCESS_FILE,
  composeMemoryText,
  deleteMemory,
  type DeleteResult,
  editMemory,
  type EditResult,
  grepMemory,
  listFiles,
  type ListedFile,
  readAccess,
  readMemory,
  writeMemory,
  type WriteOptions,
  type WriteResult,
} from './tools.js'
export {applyEdit, type FileEdit} from './patch.js'
export {compileGrep, type GrepFile, grepGuarded, type GrepHit, grepLines} from './grep.js'
