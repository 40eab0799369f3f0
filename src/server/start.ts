/**
 * `startServer(options)`: everything `jarvis serve` does, minus flag parsing and printing: resolve the data
 * directory and tokens, open the storage, build the app, listen. The returned `close()` is the graceful
 * shutdown the command wires to SIGTERM/SIGINT: no new requests (503), in-flight requests and writes finish,
 * WebSocket clients get a close frame (1001), then the database is closed.
 */
import {readFile, rm} from 'node:fs/promises'
import {isIP} from 'node:net'
import {createSecureContext} from 'node:tls'

import type {FastifyInstance} from 'fastify'

import {BadInputError} from '../errors.js'
import {buildServer, type LogLevel} from './app.js'
import {defaultDataDir, resolveTokens, type ResolvedTokens, type TokenMap} from './config.js'
import type {ClientDocumentFetch} from './oauth/clients.js'
import {oauthSite} from './oauth/site.js'
import {openStorage} from './storage/open.js'

export const DEFAULT_HOST = '127.0.0.1'
export const DEFAULT_PORT = 8787

export interface StartServerOptions {
  /** Default 127.0.0.1. */
  host?: string
  /** Default 8787; 0 lets the OS pick a free port (see `port` in the result). */
  port?: number
  /** Where the database and the generated tokens.json live; default `defaultDataDir()`. */
  dataDir?: string
  /** `postgres://…`: the memory lives in that PostgreSQL database instead of the data directory's SQLite file. */
  databaseUrl?: string
  /** token → agent id; takes precedence over `tokensFile` and JARVIS_SERVER_TOKENS. */
  tokens?: TokenMap
  /** A JSON file token → agent id (`--tokens FILE`). */
  tokensFile?: string
  /** Environment for JARVIS_SERVER_TOKENS and XDG_DATA_HOME; default process.env. */
  env?: NodeJS.ProcessEnv
  logLevel?: LogLevel
  logStream?: NodeJS.WritableStream
  /** Largest request body in bytes; default 16 MiB. */
  bodyLimit?: number
  /** Largest file content in bytes; default 4 MiB. */
  maxFileBytes?: number
  /** How long close() waits for in-flight work before cutting connections; default 10 s. */
  closeTimeoutMs?: number
  now?: () => Date
  /** Event-log appends arriving together share one transaction and fsync (default true; see storage/sqlite-events.ts). */
  groupCommit?: boolean
  /** PEM certificate file (`--tls-cert`): serve HTTPS. Needs `tlsKey`. */
  tlsCert?: string
  /** PEM private key file (`--tls-key`). */
  tlsKey?: string
  /**
   * The address clients reach the server at (`--public-url`), e.g. the HTTPS address of a reverse proxy: the issuer
   * and resources of the apps' OAuth sign-in. Default: the address it listens on, when that is a single host.
   */
  publicUrl?: string
  /** How client metadata documents are fetched (tests). */
  clientDocumentFetch?: ClientDocumentFetch
  /** How often an open WebSocket's token is checked again; default 60 s (tests: less). */
  wsRecheckMs?: number
}

export interface RunningServer {
  /** e.g. `http://127.0.0.1:8787` — what clients put in JARVIS_SERVER. */
  url: string
  /** Where apps (ChatGPT, Claude) connect, `<public address>/mcp`, when they can sign in with OAuth here. */
  appUrl?: string
  /** The WebSocket URL, e.g. `ws://127.0.0.1:8787/ws/memory`. */
  wsUrl: string
  host: string
  port: number
  dataDir: string
  /** The PostgreSQL database the memory lives in (without its password), when there is one. */
  database?: string
  /**
   * agent id → token when the tokens are the data directory's own tokens.json (generated now or on an
   * earlier start), so the command can print `JARVIS_TOKEN=...` for each agent; null when the tokens came
   * from --tokens, the tokens option or JARVIS_SERVER_TOKENS (the operator already has them).
   */
  tokens: Record<string, string> | null
  /** Where the tokens came from, the file, whether tokens.json was just created, and warnings to show. */
  tokenSource: ResolvedTokens['source']
  tokensFile?: string
  tokensGenerated: boolean
  warnings: string[]
  /** The agents that hold a token. */
  agents: string[]
  app: FastifyInstance
  /** Graceful shutdown; idempotent (a second call returns the same promise). */
  close(): Promise<void>
}

function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

/** The certificate and key of `--tls-cert` and `--tls-key`, read; both or neither. */
async function readTls(options: StartServerOptions): Promise<{cert: Buffer; key: Buffer} | undefined> {
  if (options.tlsCert === undefined && options.tlsKey === undefined) return undefined
  if (options.tlsCert === undefined || options.tlsKey === undefined) {
    const missing = options.tlsCert === undefined ? '--tls-cert' : '--tls-key'
    throw new BadInputError(`${missing} is missing: HTTPS needs both --tls-cert FILE and --tls-key FILE (PEM)`, {field: missing.slice(2)})
  }
  const read = async (file: string, flag: string) => {
    try {
      return await readFile(file)
    } catch (error) {
      throw new BadInputError(`${flag}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {field: flag.slice(2), file}, error)
    }
  }
  const material = {cert: await read(options.tlsCert, '--tls-cert'), key: await read(options.tlsKey, '--tls-key')}
  try {
    createSecureContext(material)
  } catch (error) {
    throw new BadInputError(`--tls-cert ${options.tlsCert} and --tls-key ${options.tlsKey} are not a PEM certificate and its private key: ${(error as Error).message}`, {field: 'tls-cert'}, error)
  }
  return material
}

/** The public address apps sign in at: `--public-url`, else the address listened on unless that is every interface. */
function publicAddress(options: StartServerOptions, scheme: 'http' | 'https', host: string, port: number): string | undefined {
  if (options.publicUrl !== undefined) return options.publicUrl
  if (host === '0.0.0.0' || host === '::') return undefined
  return `${scheme}://${urlHost(host)}:${port}`
}

export async function startServer(options: StartServerOptions = {}): Promise<RunningServer> {
  const env = options.env ?? process.env
  const host = options.host ?? DEFAULT_HOST
  const port = options.port ?? DEFAULT_PORT
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new BadInputError(`port must be an integer from 0 to 65535, not ${port}`, {field: 'port'})
  }
  const dataDir = options.dataDir ?? defaultDataDir(env)
  if (options.publicUrl !== undefined) {
    const site = oauthSite(options.publicUrl)
    if ('refused' in site) throw new BadInputError(`--public-url: ${site.refused}`, {field: 'public-url'})
  }
  const tls = await readTls(options)
  const scheme = tls ? 'https' : 'http'
  /** Known once the server listens (the port may be picked then); the app asks for it at each request that needs it. */
  const listening: {publicUrl?: string} = {}
  const resolved = await resolveTokens({tokens: options.tokens, tokensFile: options.tokensFile, env, dataDir})
  // Tokens made by a start that then fails were never shown: they go, and the next start makes and shows new ones.
  const forgetNewTokens = async () => {
    if (resolved.generated && resolved.file !== undefined) await rm(resolved.file, {force: true})
  }
  const target = {dataDir, databaseUrl: options.databaseUrl}
  const storage = await openStorage(target, {groupCommit: options.groupCommit}).catch(async (error: unknown) => {
    await forgetNewTokens()
    throw error
  })
  const database = 'url' in storage && typeof storage.url === 'string' ? storage.url : undefined
  const app = buildServer({
    storage,
    openWorkspace: (workspace) => openStorage(target, {groupCommit: options.groupCommit, workspace}),
    tokens: resolved.tokens,
    logLevel: options.logLevel,
    logStream: options.logStream,
    bodyLimit: options.bodyLimit,
    maxFileBytes: options.maxFileBytes,
    closeTimeoutMs: options.closeTimeoutMs,
    now: options.now,
    https: tls,
    publicUrl: () => listening.publicUrl,
    clientDocumentFetch: options.clientDocumentFetch,
    wsRecheckMs: options.wsRecheckMs,
  })
  let boundPort: number
  try {
    await app.listen({host, port})
    const address = app.server.address()
    boundPort = typeof address === 'object' && address !== null ? address.port : port
  } catch (error) {
    await app.close().catch(() => {})
    await forgetNewTokens()
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') throw new BadInputError(`port ${port} on ${host} is already in use; pass another --port (0 picks a free one)`, {field: 'port'}, error)
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new BadInputError(`cannot listen on host ${host}: ${code}`, {field: 'host'}, error)
    if (code === 'EACCES') throw new BadInputError(`not allowed to listen on ${host}:${port} (EACCES); pick a port above 1023`, {field: 'port'}, error)
    throw error
  }
  const publicUrl = publicAddress(options, scheme, host, boundPort)
  listening.publicUrl = publicUrl
  const warnings = [...resolved.warnings]
  if (!isLoopback(host) && !tls) {
    warnings.push(`listening on ${host} over plain HTTP: tokens and memory travel unencrypted; serve HTTPS (--tls-cert, --tls-key) or put a TLS proxy in front`)
  }
  const site = publicUrl === undefined ? undefined : oauthSite(publicUrl)
  const appUrl = site !== undefined && !('refused' in site) ? site.mcpResource : undefined
  if (appUrl === undefined && !isLoopback(host)) {
    warnings.push(`apps such as ChatGPT and Claude cannot sign in: ${site !== undefined && 'refused' in site ? site.refused : 'its public address is not known; give --public-url https://…'}`)
  }
  for (const warning of warnings) app.log.warn(warning)
  const url = `${scheme}://${urlHost(host)}:${boundPort}`
  app.log.info({url, appUrl, dataDir, database, tokenSource: resolved.source}, 'jarvis server listening')
  let closing: Promise<void> | undefined
  return {
    url,
    ...(appUrl === undefined ? {} : {appUrl}),
    wsUrl: `${tls ? 'wss' : 'ws'}://${urlHost(host)}:${boundPort}/ws/memory`,
    host,
    port: boundPort,
    dataDir,
    ...(database === undefined ? {} : {database}),
    tokens: resolved.byAgent,
    tokenSource: resolved.source,
    tokensFile: resolved.file,
    tokensGenerated: resolved.generated,
    warnings,
    agents: [...new Set(Object.values(resolved.tokens))].sort(),
    app,
    close() {
      closing ??= app.close().then(() => undefined)
      return closing
    },
  }
}
