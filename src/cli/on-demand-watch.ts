/**
 * The process warm/demand.ts starts, detached, when a call finds no watch in a large tree:
 *
 *     node on-demand-watch.js <root>
 *
 * warm/watcher.ts's watch, which also runs bin/jarvis's whole calls (cli/warm-call.ts, loaded at the first). It exits when the watch
 * leaves (after an idle time, or when the tree or its socket is gone).
 */
import {runWatcher} from '../warm/watcher.js'
import {runWarmCallOnUse} from './warm-call-on-use.js'

const root = process.argv[2]
if (root === undefined) process.exit(2)
await runWatcher(root, {runCall: runWarmCallOnUse, label: 'jarvis, started on demand by a call'})
process.exit(0)
