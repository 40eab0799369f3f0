import {ux} from '@oclif/core'
import createDebug from 'debug'

import {isJarvisError} from '../errors.js'
import {startWatch, type SyncInfo, type WatchEvent, type WatchStats} from '../sync/watch.js'
import type {SyncResult} from '../sync/run.js'
import {exitCodeOf} from './envelope.js'
import {assertSyncEnabled} from '../ops/sync.js'
import {connect, openTree} from '../ops/context.js'
import {renderSync} from './render.js'
import {treeWatchOf} from './warm.js'
import {nextSignal} from './signals.js'
import {runWarmCallOnUse} from './warm-call-on-use.js'
import type {SyncOnceOptions} from '../ops/sync.js'

const debug = createDebug('jarvis:watch')

/** What `jarvis sync --watch` returns when it is stopped (the last JSON line under `--json`). */
export interface WatchSummary {
  watch: true
  root: string
  server: string
  /** The signal that stopped the watch. */
  stoppedBy: string
  syncs: number
  failures: number
  /** Triggers that turned out to be echoes of a sync's own writes and needed no sync. */
  skipped: number
  reconnects: number
  partitions: number
}

/** Where the watch reports, so that the command decides between human lines and JSON Lines. */
export interface WatchOutput {
  onStart?(root: string, server: string): void
  onSync?(result: SyncResult, info: SyncInfo): void
  onError?(error: unknown, info: SyncInfo): void
  onEvent?(event: WatchEvent): void
  onStop?(summary: WatchSummary): void
}

/** No `--force` here: a standing permission to delete more than half of the files is not something to watch with. */
export type WatchCommandOptions = Pick<SyncOnceOptions, 'dir' | 'server' | 'agent'> & {
  /** Resolves with the name of the signal that should stop the watch; default SIGINT or SIGTERM. */
  until?: Promise<string>
}

/** `jarvis sync --watch`: starts the watch on this tree, runs until a signal, stops cleanly, returns a summary. */
export async function watchUntilSignal(options: WatchCommandOptions, output: WatchOutput = {}): Promise<WatchSummary> {
  const tree = await openTree(options.dir)
  assertSyncEnabled(tree)
  const {client, identity} = await connect(tree, options)
  const signals = options.until ? {signal: options.until, dispose() {}} : nextSignal()
  const until = signals.signal
  const handle = startWatch({
    root: tree.root,
    client,
    settings: tree.config.sync,
    token: identity.token,
    onSync: output.onSync,
    onError: output.onError,
    onEvent: output.onEvent,
    // Each sync asks the tree's watch (this process's own, or the one that answers for the tree) what changed.
    watch: treeWatchOf(tree.root, {startOnDemand: false}),
  })
  // Recall, search, ls and the prompt hook of other jarvis processes in this tree are answered from here (src/warm/).
  const warm = import('../warm/answers.js')
    .then(({serveTree}) => serveTree(tree.root, {runCall: runWarmCallOnUse, label: 'jarvis sync --watch'}))
    .catch((error: unknown) => debug('no warm path: %s', (error as Error).message))
  let stoppedBy: string
  try {
    await Promise.race([Promise.all([handle.ready, warm]), until])
    output.onStart?.(tree.root, identity.server)
    stoppedBy = await until
  } finally {
    signals.dispose()
    await (await warm)?.close()
    await handle.stop()
  }
  const stats: WatchStats = handle.stats()
  debug('stopped by %s: %o', stoppedBy, stats)
  const summary: WatchSummary = {
    watch: true,
    root: tree.root,
    server: identity.server,
    stoppedBy,
    syncs: stats.syncs,
    failures: stats.failures,
    skipped: stats.skipped,
    reconnects: stats.reconnects,
    partitions: stats.partitions,
  }
  output.onStop?.(summary)
  return summary
}

/** Nothing moved: the human output stays quiet about it (the JSON Lines output still has a line). */
export function syncChangedNothing(result: SyncResult): boolean {
  return (
    result.pushed.length + result.pulled.length + result.merged.length + result.deleted.length + result.backups.length + result.conflicts.length === 0 &&
    result.outbox.sent === 0
  )
}

export function renderWatchEvent(event: WatchEvent): string {
  switch (event.type) {
    case 'connected':
      return event.reconnect ? 'reconnected to the server; resyncing everything' : `subscribed to ${event.url}`
    case 'disconnected':
      return `lost the connection to the server (${event.code}${event.reason ? ` ${event.reason}` : ''}); reconnecting, local changes wait until then`
    case 'partition':
      return `no word from the server for ${Math.round(event.silentMs / 1000)} s: partitioned (recorded in .nexus/audit.jsonl); local changes wait for the reconnect`
  }
}

/**
 * The output of `jarvis sync --watch`. Under `--json`: JSON Lines on stdout, one envelope per sync
 * (`{status: 0, result, warnings}` or `{status, error, warnings}` like any command), then the summary envelope
 * when stopped. Otherwise: a summary of each sync that changed something on stdout (nothing with `--quiet`),
 * connection news and errors on stderr.
 */
export function watchOutput(sink: {json: boolean; quiet: boolean; log(line: string): void; logToStderr(line: string): void}): WatchOutput {
  const jsonLine = (value: unknown) => ux.stdout(JSON.stringify(value))
  return {
    onStart(root, server) {
      if (!sink.json && !sink.quiet) sink.logToStderr(`watching ${root} and ${server}; Ctrl-C to stop`)
    },
    onSync(result) {
      if (sink.json) jsonLine({status: 0, result, warnings: []})
      else if (!sink.quiet && !syncChangedNothing(result)) sink.log(`${new Date().toLocaleTimeString()} ${renderSync(result)}`)
    },
    onError(error) {
      const message = error instanceof Error ? error.message : String(error)
      if (sink.json) {
        const detail = isJarvisError(error) ? {code: error.code, name: error.name, message, data: error.data} : {code: 'FAILED', name: 'Error', message}
        jsonLine({status: exitCodeOf(error), error: detail, warnings: []})
      } else sink.logToStderr(`jarvis: sync failed: ${message}${exitCodeOf(error) === 3 ? ' (retried when the server is back)' : ''}`)
    },
    onEvent(event) {
      if (event.type === 'connected' && !event.reconnect) return // the "watching" line says it
      if (!sink.json && (!sink.quiet || event.type === 'partition')) sink.logToStderr(renderWatchEvent(event))
    },
    onStop(summary) {
      if (!sink.json && !sink.quiet) sink.log(`stopped watching (${summary.stoppedBy}) after ${summary.syncs} sync(s)${summary.failures ? `, ${summary.failures} failed` : ''}`)
    },
  }
}
