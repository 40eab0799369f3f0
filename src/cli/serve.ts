import {startServer} from '../server/start.js'
import type {LogLevel} from '../server/app.js'

export interface ServeOptions {
  host: string
  port: number
  dataDir?: string
  databaseUrl?: string
  tokensFile?: string
  logLevel: LogLevel
  tlsCert?: string
  tlsKey?: string
  publicUrl?: string
}

export interface ServeResult {
  url: string
  stoppedBy: NodeJS.Signals
}

/** What `jarvis serve --json` prints as soon as it listens, one JSON line, before the envelope it prints when it stops. */
export interface ListeningLine {
  event: 'listening'
  url: string
  dataDir: string
  /** The PostgreSQL database (without its password) when the memory lives there. */
  database?: string
  /** Where apps (ChatGPT, Claude) connect with OAuth, when they can. */
  appUrl?: string
}

/**
 * Runs `jarvis serve` until SIGTERM or SIGINT, then shuts down gracefully (in-flight writes finish). `listening`
 * hears the address as soon as it is bound: a script starting the server needs it then, not when it stops.
 */
export async function serveUntilSignal(options: ServeOptions, say: (line: string) => void, warn: (line: string) => void, listening?: (line: ListeningLine) => void): Promise<ServeResult> {
  const server = await startServer(options)
  for (const warning of server.warnings) warn(warning)
  listening?.({event: 'listening', url: server.url, dataDir: server.dataDir, ...(server.database === undefined ? {} : {database: server.database}), ...(server.appUrl === undefined ? {} : {appUrl: server.appUrl})})
  say(`jarvis serve listening on ${server.url} (${server.database === undefined ? `data in ${server.dataDir}` : `memory in PostgreSQL at ${server.database}`})`)
  if (server.appUrl?.startsWith('https:')) say(`apps (ChatGPT, Claude) connect to ${server.appUrl} and sign in with OAuth`)
  else if (server.appUrl !== undefined) say(`apps on this machine can sign in with OAuth at ${server.appUrl}; ChatGPT and Claude need an HTTPS address they can reach (--tls-cert and --tls-key, or --public-url behind a TLS proxy)`)
  if (server.tokens && server.tokensGenerated) {
    say(`created one token per agent in ${server.tokensFile} (mode 0600); a client uses its own like this:`)
    for (const [agent, token] of Object.entries(server.tokens)) say(`  ${agent.padEnd(8)}  JARVIS_TOKEN=${token} jarvis sync --server ${server.url}`)
    // The tokens file is this process's own; keys are the database's, so every process of a team server knows them.
    if (server.database !== undefined) say('these tokens open this process only: for several jarvis serve processes on one database, make keys with `jarvis serve token create`')
  } else if (server.tokens) {
    say(`tokens of the agents: ${server.tokensFile}`)
  }
  const stoppedBy = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'))
    process.once('SIGINT', () => resolve('SIGINT'))
  })
  await server.close()
  say(`jarvis serve stopped (${stoppedBy})`)
  return {url: server.url, stoppedBy}
}
