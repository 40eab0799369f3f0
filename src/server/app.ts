/**
 * `buildServer(options)`: the fastify app of `jarvis serve` (routes, auth, errors, WebSocket), over the storages of
 * its workspaces. Tests use it with `inject`; `startServer` (start.ts) adds the data directory, tokens and listen.
 *
 * Every authenticated route reads the services of its request's workspace (`request.workspace`, set by the auth
 * hook from the token) and nothing else: a route registered in the authenticated scope cannot reach another
 * workspace's memory because it is never handed one.
 */
import type {IncomingMessage} from 'node:http'

import websocket from '@fastify/websocket'
import Fastify, {type FastifyError, type FastifyInstance, type FastifyServerOptions, LogController} from 'fastify'

import {SchemaError} from '../errors.js'
import {MAX_FILE_BYTES} from '../schemas/file-size.js'
import {parseJsonText} from '../schemas/index.js'
import {AGENT_HEADER} from '../schemas/protocol-headers.js'
import {type AppGrant, TokenAuthenticator, bearerToken, readOnlyRefusal} from './auth.js'
import type {TokenMap} from './config.js'
import {HttpError} from './http-error.js'
import type {ClientDocumentFetch} from './oauth/clients.js'
import {consentRoutes, OAuthServer, oauthRoutes} from './oauth/routes.js'
import {oauthSite, type OAuthSite, resourceFor, wwwAuthenticate} from './oauth/site.js'
import {auditRoutes} from './routes/audit.js'
import {dashboardRoutes} from './routes/dashboard.js'
import {eventRoutes} from './routes/events.js'
import {fileRoutes} from './routes/files.js'
import {mcpRoutes} from './routes/mcp.js'
import {memoryRoutes} from './routes/memory.js'
import {projectRoutes} from './routes/projects.js'
import {searchRoutes} from './routes/search.js'
import {WS_PATH, wsRoutes} from './routes/ws.js'
import {isStorageOutage} from './storage/outage.js'
import type {KeyRole, ServerStorage} from './storage/types.js'
import {DEFAULT_WORKSPACE} from './storage/workspace-name.js'
import {trackUpgrades} from './upgrades.js'
import {type Workspace, WorkspaceRegistry} from './workspaces.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The services of the token's workspace (set by the auth hook): the only memory the request can reach. */
    workspace: Workspace
    /** The agent of the request's bearer token (set by the auth hook before anything else runs). */
    agentId: string
    /** What the token may do: a `read` key is refused by every route marked {writes: true}. */
    role: KeyRole
    /** The grant of an app's OAuth access token; null for a jarvis key. */
    grant: AppGrant | null
    /**
     * Asks again whether the request's token is still good: null, or why it is refused now (a key or an app's access
     * revoked or expired since). Set on the WebSocket's request, which stays open long after its upgrade.
     */
    recheck?: () => Promise<string | null>
  }
  interface FastifyContextConfig {
    /** The route changes the memory: a `read` key gets 403. */
    writes?: boolean
  }
}

/** Largest request body (the whole push), in bytes. */
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024
/** Largest content of one file, in UTF-8 bytes: the limit of a memory file (src/schemas/file-size.ts). */
export const DEFAULT_MAX_FILE_BYTES = MAX_FILE_BYTES
/** Largest message a WebSocket client may send (they only send heartbeats). */
export const WS_MAX_PAYLOAD = 64 * 1024
/** How long close() lets in-flight requests and WebSocket close handshakes run before cutting them. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000
/** How often an open WebSocket's token is checked again (a revoked or expired one: the socket is closed). */
export const DEFAULT_WS_RECHECK_MS = 60_000

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
/** The levels that write the line of each request. */
const REQUEST_LINE_LEVELS: ReadonlySet<LogLevel> = new Set(['info', 'debug', 'trace'])

export interface BuildServerOptions {
  /**
   * The default workspace's storage (its memory files and event log, and every workspace's keys); the app owns it
   * from now on and closes it when the app closes.
   */
  storage: ServerStorage
  /** Opens (creating when new) the storage of another workspace, at its first request; without it only the default one is served. */
  openWorkspace?: (workspace: string) => Promise<ServerStorage>
  /** token → agent id. */
  tokens: TokenMap
  /** pino level of fastify's logger; default `info`. Tests pass `silent`. */
  logLevel?: LogLevel
  /** Where log lines go; default stderr (stdout is for results, STYLE.md habit 8). */
  logStream?: NodeJS.WritableStream
  /** Largest request body in bytes (413 above it); default 16 MiB. */
  bodyLimit?: number
  /** Largest file content in bytes (413 above it); default 4 MiB. */
  maxFileBytes?: number
  /** Clock, for tests; default `() => new Date()`. */
  now?: () => Date
  /** See DEFAULT_CLOSE_TIMEOUT_MS. */
  closeTimeoutMs?: number
  /**
   * The public address apps sign in at with OAuth (oauth/site.ts), asked at each request that needs it (start.ts
   * knows it once the server listens); none, or one that is not HTTPS: apps cannot sign in, keys work as ever.
   */
  publicUrl?: () => string | undefined
  /** Serve HTTPS with this certificate and key (PEM). */
  https?: {cert: Buffer; key: Buffer}
  /** How client metadata documents are fetched (tests: a test CA, an address on this machine). */
  clientDocumentFetch?: ClientDocumentFetch
  /** See DEFAULT_WS_RECHECK_MS. */
  wsRecheckMs?: number
}

/** The OAuth site of a public address getter, worked out once the address is known. */
function siteOf(publicUrl: (() => string | undefined) | undefined): () => OAuthSite | {refused: string} {
  let site: OAuthSite | {refused: string} | undefined
  return () => {
    if (site !== undefined) return site
    const url = publicUrl?.()
    if (url === undefined) return {refused: 'its public address is not known: start it with --public-url https://…'}
    site = oauthSite(url)
    return site
  }
}

/** `?token=` is accepted on the WebSocket path (browsers cannot set headers there): never log it. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]')
}

function loggerOptions(options: BuildServerOptions): FastifyServerOptions['logger'] {
  return {
    level: options.logLevel ?? 'info',
    stream: options.logStream ?? process.stderr,
    serializers: {
      req(request: {method: string; url: string; ip?: string; socket?: {remoteAddress?: string}}) {
        return {method: request.method, url: redactUrl(request.url), remoteAddress: request.ip ?? request.socket?.remoteAddress}
      },
    },
  }
}

/** JSON-pointer segments (`~1` is `/`) back to plain text, so `files/jarvis~1claude.json` reads `files/jarvis/claude.json`. */
function unescapePointer(pointer: string): string {
  return pointer.replace(/~1/g, '/').replace(/~0/g, '~')
}

/** Any error a request can end with → the HttpError that is answered. */
export function toHttpError(error: unknown, bodyLimit: number): HttpError {
  if (error instanceof HttpError) return error
  const fastifyError = error as Partial<FastifyError> & {message?: string}
  if (Array.isArray(fastifyError.validation) && fastifyError.validation.length > 0) {
    const first = fastifyError.validation[0]
    const context = fastifyError.validationContext ?? 'body'
    const missing = first.keyword === 'required' ? `/${String((first.params as {missingProperty?: string}).missingProperty ?? '')}` : ''
    const field = `${context}${unescapePointer(first.instancePath)}${missing}`
    const message = first.keyword === 'required' ? `${field} is required` : `${field} ${first.message ?? 'is invalid'}`
    return new HttpError(400, 'bad_request', message, {field})
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError(413, 'too_large', `the request body is larger than ${bodyLimit} bytes`, {limit: bodyLimit})
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HttpError(415, 'unsupported_media_type', 'send the body as application/json')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpError(400, 'bad_json', 'the body is empty but its content-type is application/json', {field: 'body'})
    default:
      break
  }
  if (isStorageOutage(error)) return new HttpError(503, 'unavailable', 'the storage does not answer; try again')
  const status = fastifyError.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new HttpError(status, status === 404 ? 'not_found' : 'bad_request', fastifyError.message ?? 'bad request')
  }
  return new HttpError(500, 'internal', 'internal server error')
}

/**
 * Whether a request failed because its client went away before sending the whole body: the error is the request
 * stream's own (Node's `aborted`, code ECONNRESET), which is no database connection reset and no outage.
 */
export function isClientAbort(error: unknown, request: Pick<IncomingMessage, 'errored' | 'readableAborted' | 'complete'>): boolean {
  return error != null && (error === request.errored || (request.readableAborted && !request.complete))
}

/** The fastify app. Not listening yet: `await app.listen(...)`, or use `app.inject` in tests. */
export function buildServer(options: BuildServerOptions): FastifyInstance {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  const now = options.now ?? (() => new Date())
  const closeTimeoutMs = options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS
  const app = Fastify({
    ...(options.https ? {https: options.https} : {}),
    logger: loggerOptions(options),
    bodyLimit,
    // Validation checks shapes and never rewrites the body: no type coercion, no removed or defaulted fields.
    ajv: {customOptions: {coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false}},
    return503OnClosing: true,
    // One line per request, with its id, written when it is answered (below), instead of fastify's two.
    logController: new LogController({disableRequestLogging: true}),
    // Every request gets a child logger bound to its id. fastify passes child options even when a route sets none
    // ({}), which takes pino down the path that copies the serializers and rebuilds the formatters for each request;
    // without them pino makes the same child (same bindings, serializers and level) for a fraction of the CPU.
    childLoggerFactory: (logger, bindings, childOptions) => logger.child(bindings, Object.keys(childOptions).length === 0 ? undefined : childOptions),
  })
  const auth = new TokenAuthenticator(options.tokens, options.storage, now)
  const site = siteOf(options.publicUrl)
  const oauth = new OAuthServer({site, storage: options.storage.oauth, now, fetchDocument: options.clientDocumentFetch})
  const openWorkspace = options.openWorkspace
  const workspaces = new WorkspaceRegistry({
    root: options.storage,
    open: (name) => (openWorkspace ? openWorkspace(name) : Promise.reject(new HttpError(503, 'unavailable', `this server hosts only the ${DEFAULT_WORKSPACE} workspace, not ${name}`))),
    now,
    maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
    // An audit entry that cannot be written is logged; the change it records stands, and its answer is not an error.
    onAuditError: (error, entry, workspace) => app.log.error({err: error, audit: entry.kind, agent: entry.agent, workspace}, 'audit entry not written'),
  })
  // Listening for the other processes' broadcasts before this one takes requests (app.ready / app.listen).
  app.addHook('onReady', async () => workspaces.listen(await workspaces.root()))

  // fastify's own JSON parser (proto-poisoning safe), with a message that says where the JSON breaks.
  const defaultJsonParser = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', {parseAs: 'string'}, (request, raw, done) => {
    const body = typeof raw === 'string' ? raw : raw.toString('utf8')
    defaultJsonParser(request, body, (error, value) => {
      if (!error) {
        done(null, value)
        return
      }
      if ((error as FastifyError).code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
        done(error, undefined)
        return
      }
      let detail = 'it holds a "__proto__" or "constructor.prototype" key, which is refused'
      try {
        parseJsonText(body, 'body')
      } catch (parseError) {
        detail = parseError instanceof SchemaError ? (parseError.problems[0] ?? 'invalid JSON') : String(parseError)
      }
      done(new HttpError(400, 'bad_json', `the body is not valid JSON: ${detail}`, {field: 'body'}), undefined)
    })
  })

  app.decorateRequest('agentId', '')
  app.decorateRequest('workspace', null as unknown as Workspace)
  app.decorateRequest('role', 'read')
  app.decorateRequest('grant', null)

  app.setErrorHandler((error, request, reply) => {
    // Nobody is left to read an answer: said once, at info, as what it is (a client gone, not the storage).
    if (isClientAbort(error, request.raw)) {
      request.log.info({detail: (error as Error).message}, 'request abandoned: the client closed the connection before sending its whole body')
      return reply.code(400).type('application/json').send({error: 'bad_request', message: 'the connection closed before the whole body was sent'})
    }
    const http = toHttpError(error, bodyLimit)
    // A database away answers every request so: one line each, not a stack trace each.
    if (isStorageOutage(error)) request.log.warn({detail: (error as Error).message}, 'request refused: the storage does not answer')
    else if (http.status >= 500) request.log.error({err: error}, 'request failed')
    else request.log.info({error: http.code, detail: http.message}, 'request refused')
    return reply.code(http.status).type('application/json').send(http.body())
  })
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({error: 'not_found', message: `no route ${request.method} ${redactUrl(request.url)}`}),
  )

  // Only at a level that writes it: below info (the default is warn) the hook would build every line for nothing.
  if (REQUEST_LINE_LEVELS.has(options.logLevel ?? 'info')) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info({method: request.method, url: redactUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10, workspace: request.workspace?.name, agent: request.agentId || undefined}, 'request')
      done()
    })
  }
  // For a load balancer or an orchestrator: no token needed. Alive, and able to reach its storage.
  app.get('/healthz', async () => ({status: 'ok'}))
  app.get('/readyz', async (_request, reply) =>
    (await options.storage.ping()) ? {status: 'ready'} : reply.code(503).send({status: 'unavailable', message: 'the storage does not answer'}),
  )

  let forceTimer: NodeJS.Timeout | undefined
  let closing = false
  const upgrades = trackUpgrades(app.server)
  app.addHook('onReady', async () => {
    app.websocketServer.on('connection', (_socket, request) => upgrades.upgraded(request))
  })
  // A keep-alive connection that is busy when close() starts would stay open after its answer: close it then.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close')
    done(null, payload)
  })
  void app.register(websocket, {
    options: {maxPayload: WS_MAX_PAYLOAD},
    // Close handshakes with every client (1001); the close goes on once they are done, or cut after the timeout.
    preClose(done) {
      closing = true
      upgrades.cutAll()
      forceTimer = setTimeout(() => {
        app.log.warn('shutdown timeout: cutting remaining connections')
        workspaces.terminateClients()
        app.server.closeAllConnections()
      }, closeTimeoutMs)
      forceTimer.unref()
      workspaces.closeClients()
      app.websocketServer.close(() => done())
    },
  })
  void app.register(async (scope) => {
    // Registered after the websocket plugin, so that its onRequest hook has marked an upgrade before a 401 ends it
    // (the plugin then destroys the socket). Unknown routes answer 404 without asking for a token.
    scope.addHook('onRequest', async (request, reply) => {
      // fastify builds request.routeOptions anew at each read: read once.
      const route = request.routeOptions
      const url = route.url ?? ''
      let token = bearerToken(request.headers.authorization)
      if (token === null && url === WS_PATH) {
        const fromQuery = (request.query as {token?: unknown}).token
        if (typeof fromQuery === 'string') token = fromQuery
      }
      const known = site()
      const here = 'refused' in known ? undefined : known
      const resource = here && resourceFor(here, url)
      const answer = await auth.authenticate(token, resource)
      if ('refused' in answer) {
        // Where an app learns how to sign in (RFC 9728), when apps can.
        void reply.header('www-authenticate', wwwAuthenticate(here, url, token !== null))
        throw new HttpError(401, 'unauthorized', answer.refused)
      }
      request.agentId = answer.identity.agentId
      const named = request.headers[AGENT_HEADER]
      if (typeof named === 'string' && named !== '' && named !== answer.identity.agentId) {
        throw new HttpError(403, 'forbidden', `${AGENT_HEADER} names ${JSON.stringify(named)}, but the token belongs to ${answer.identity.agentId}`, {field: `headers/${AGENT_HEADER}`})
      }
      request.role = answer.identity.role
      request.grant = answer.identity.app ?? null
      if (url === WS_PATH) {
        request.recheck = async () => {
          const again = await auth.authenticate(token, resource)
          return 'refused' in again ? again.refused : null
        }
      }
      if (answer.identity.role === 'read' && route.config.writes) {
        throw readOnlyRefusal(`${request.method} ${url}`, answer.identity.app)
      }
      try {
        request.workspace = await workspaces.get(answer.identity.workspace)
      } catch (error) {
        if (error instanceof HttpError) throw error
        request.log.error({err: error, workspace: answer.identity.workspace}, 'workspace unavailable')
        throw new HttpError(503, 'unavailable', `the workspace ${answer.identity.workspace} cannot be opened now; try again`)
      }
    })

    memoryRoutes(scope)
    fileRoutes(scope)
    eventRoutes(scope)
    projectRoutes(scope)
    wsRoutes(scope, now, options.wsRecheckMs ?? DEFAULT_WS_RECHECK_MS)
    mcpRoutes(scope, now)
    searchRoutes(scope, now)
    auditRoutes(scope)
    consentRoutes(scope, oauth)
  })
  // The apps' sign-in: metadata and the authorization server's endpoints, which need no jarvis key.
  oauthRoutes(app, oauth)
  // The dashboard's page and assets need no token: they hold no data (every request they make carries one).
  dashboardRoutes(app)
  app.addHook('onClose', async () => {
    if (forceTimer) clearTimeout(forceTimer)
    await workspaces.close()
  })
  return app
}
