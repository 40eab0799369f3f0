/**
 * The OAuth routes of `jarvis serve`, for the apps that sign in (ChatGPT's and Claude's connectors):
 *
 * - `/.well-known/oauth-protected-resource/mcp` and `/.well-known/oauth-protected-resource` (RFC 9728): the MCP
 *   tools and the REST API, each naming this server as its authorization server;
 * - `/.well-known/oauth-authorization-server` (RFC 8414), built by the MCP SDK;
 * - `/authorize`, `/token`, `/register`, `/revoke`: the SDK's handlers (express-app.ts), given the raw requests;
 * - `/api/oauth/authorizations/:id` (GET, POST), behind a jarvis key: the dashboard's consent page (consent.ts).
 *
 * None of it answers until the server knows its public address (start.ts: `--public-url`, or the address it
 * listens on when that is HTTPS or loopback): the routes then say why apps cannot sign in.
 */
import type {IncomingMessage, ServerResponse} from 'node:http'

import createDebug from 'debug'
import type {FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler} from 'fastify'

import {HttpError} from '../http-error.js'
import type {OAuthStorage} from '../storage/oauth-types.js'
import type {ClientDocumentFetch} from './clients.js'
import {ConsentService, type ConsentDecision} from './consent.js'
import {JarvisOAuthProvider} from './provider.js'
import {AUTHORIZATION_SERVER_PATH, type OAuthSite, PROTECTED_RESOURCE_PATH} from './site.js'
import {MCP_PATH} from '../routes/mcp.js'

const debug = createDebug('jarvis:server:oauth')

/** The SDK's endpoints and the methods they answer (OPTIONS: the CORS preflight of a browser-based client). */
const ENDPOINTS = {
  '/authorize': ['GET', 'POST'],
  '/token': ['POST', 'OPTIONS'],
  '/register': ['POST', 'OPTIONS'],
  '/revoke': ['POST', 'OPTIONS'],
} as const

export interface OAuthRoutesOptions {
  /** The site once known (after listen), or why apps cannot sign in. */
  site: () => OAuthSite | {refused: string}
  /** The default workspace's storage, which holds every grant. */
  storage: OAuthStorage
  now: () => Date
  fetchDocument?: ClientDocumentFetch
}

/** What the routes share: the provider and the express app, made once the site is known, at their first request. */
export class OAuthServer {
  private provider?: JarvisOAuthProvider
  private express?: Promise<(req: IncomingMessage, res: ServerResponse) => void>
  private consentService?: ConsentService

  constructor(private readonly options: OAuthRoutesOptions) {}

  now(): Date {
    return this.options.now()
  }

  /** The site, or a 404 saying why apps cannot sign in here. */
  site(): OAuthSite {
    const site = this.options.site()
    if ('refused' in site) throw new HttpError(404, 'not_found', `apps cannot sign in to this server with OAuth: ${site.refused}`)
    return site
  }

  private oauthProvider(): JarvisOAuthProvider {
    this.provider ??= new JarvisOAuthProvider(this.options.storage, {site: this.site(), now: this.options.now, fetchDocument: this.options.fetchDocument})
    return this.provider
  }

  consent(): ConsentService {
    this.consentService ??= new ConsentService(this.options.storage, this.site(), this.options.now)
    return this.consentService
  }

  expressApp(): Promise<(req: IncomingMessage, res: ServerResponse) => void> {
    const provider = this.oauthProvider()
    const {issuer} = this.site()
    this.express ??= import('./express-app.js').then(({oauthExpressApp}) => oauthExpressApp(provider, issuer))
    return this.express
  }

  async authorizationServerMetadata(): Promise<Record<string, unknown>> {
    const site = this.site()
    const {createOAuthMetadata} = await import('@modelcontextprotocol/sdk/server/auth/router.js')
    const metadata = createOAuthMetadata({provider: this.oauthProvider(), issuerUrl: new URL(site.issuer)})
    const clientAuth = ['client_secret_basic', 'client_secret_post', 'none']
    return {
      ...metadata,
      // The issuer exactly as the protected resources name it (a URL object would add a `/`).
      issuer: site.issuer,
      token_endpoint_auth_methods_supported: clientAuth,
      revocation_endpoint_auth_methods_supported: clientAuth,
      client_id_metadata_document_supported: true,
      // Every answer that sends the app back carries `iss` (RFC 9207), so an app talking to several servers can tell which answered.
      authorization_response_iss_parameter_supported: true,
    }
  }
}

function protectedResource(site: OAuthSite, kind: 'mcp' | 'api'): Record<string, unknown> {
  return {
    resource: kind === 'mcp' ? site.mcpResource : site.apiResource,
    authorization_servers: [site.issuer],
    bearer_methods_supported: ['header'],
    resource_name: kind === 'mcp' ? 'jarvis shared memory (MCP tools)' : 'jarvis shared memory (REST API)',
  }
}

/** The public routes: metadata and the SDK's endpoints (no jarvis key: the apps have none). */
export function oauthRoutes(app: FastifyInstance, oauth: OAuthServer): void {
  const metadata = (reply: FastifyReply, body: Record<string, unknown>) =>
    reply.header('access-control-allow-origin', '*').header('cache-control', 'public, max-age=300').send(body)
  app.get(`${PROTECTED_RESOURCE_PATH}${MCP_PATH}`, async (_request, reply) => metadata(reply, protectedResource(oauth.site(), 'mcp')))
  app.get(PROTECTED_RESOURCE_PATH, async (_request, reply) => metadata(reply, protectedResource(oauth.site(), 'api')))
  app.get(AUTHORIZATION_SERVER_PATH, async (_request, reply) => metadata(reply, await oauth.authorizationServerMetadata()))

  // Handed over before fastify reads the body: the SDK's handlers parse their own forms and JSON.
  const handOver: onRequestHookHandler = (request, reply, done) => {
    let site: OAuthSite
    try {
      site = oauth.site()
    } catch (error) {
      done(error as Error)
      return
    }
    reply.hijack()
    // Fastify's own line per request is not written for a hijacked reply: the same line, here.
    reply.raw.once('finish', () => request.log.info({method: request.method, url: request.url.split('?')[0], status: reply.raw.statusCode}, 'request'))
    oauth.expressApp().then(
      (handle) => handle(request.raw, reply.raw),
      (error: Error) => {
        debug('the OAuth endpoints of %s could not start: %s', site.issuer, error.message)
        reply.raw.writeHead(500, {'content-type': 'application/json'}).end(JSON.stringify({error: 'server_error', error_description: 'the sign-in for apps could not start'}))
      },
    )
    done()
  }
  for (const [path, methods] of Object.entries(ENDPOINTS)) {
    app.route({method: [...methods], url: path, onRequest: handOver, handler: async () => undefined})
  }
}

/** The consent page's API, in the scope of routes that need a jarvis key (app.ts): never an app's own token. */
export function consentRoutes(scope: FastifyInstance, oauth: OAuthServer): void {
  const consenter = (request: FastifyRequest) => {
    if (request.grant !== null) throw new HttpError(403, 'forbidden', "an app's token cannot answer an app's request: sign in to the dashboard with a jarvis key")
    return {agentId: request.agentId, role: request.role, workspace: request.workspace.name}
  }
  scope.get<{Params: {id: string}}>('/api/oauth/authorizations/:id', async (request) => oauth.consent().view(request.params.id, consenter(request)))
  scope.post<{Params: {id: string}; Body: ConsentDecision}>(
    '/api/oauth/authorizations/:id',
    {
      schema: {
        body: {
          type: 'object',
          required: ['allow'],
          properties: {allow: {type: 'boolean'}, agent: {type: 'string'}, role: {type: 'string'}},
        },
      },
    },
    async (request) => {
      const who = consenter(request)
      const outcome = await oauth.consent().decide(request.params.id, who, request.body)
      const grant = outcome.grant
      await request.workspace.audit.record({
        at: oauth.now().toISOString(),
        agent: who.agentId,
        kind: 'key',
        paths: [],
        event_ids: [],
        count: 1,
        detail: grant === null ? 'an app was refused access on the consent page' : `app ${JSON.stringify(grant.clientName)} allowed to act as ${grant.agentId} (role ${grant.role}) through ${grant.resource}: ${grant.id}`,
      })
      return outcome
    },
  )
}
