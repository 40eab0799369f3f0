/**
 * bin/jarvis's whole calls, as the processes that start a warm server hand it their runner (`sync --watch`,
 * `jarvis mcp`, the watch on demand): cli/warm-call.ts and the command line's parse load at the first call, not at
 * the process's start (~6 ms), since most watches never get one.
 */
import type {CallRunner} from '../warm/protocol.js'

export const runWarmCallOnUse: CallRunner = async (input, real, frames) => (await import('./warm-call.js')).runWarmCall(input, real, frames)
