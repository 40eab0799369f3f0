/**
 * The authorization server's endpoints, as the MCP SDK's own handlers (`@modelcontextprotocol/sdk/server/auth`):
 * `/authorize`, `/token`, `/register` (Dynamic Client Registration) and `/revoke`, on an express app of their own,
 * which routes.ts hands the raw requests of those four paths to. Loaded at the first request that needs it: a
 * server no app signs in to never loads express.
 *
 * What is done around the SDK's handlers:
 * - client authentication is brought to the form the SDK reads (clients.ts): a secret sent the RFC 6749 way, in
 *   `Authorization: Basic`, is moved into the body, and the presented secret is replaced by its sha256, which is
 *   what the store answers for the client;
 * - the parameters are checked first (requests.ts), so a bad request is told in one line what is wrong, where the
 *   SDK would answer zod's raw issue list;
 * - every address `/authorize` sends the app back to carries the request's `state` and this server's `iss`, which
 *   the SDK's error redirects leave out.
 */
import express, {type NextFunction, type Request, type Response} from 'express'
import {authorizationHandler} from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js'
import {clientRegistrationHandler} from '@modelcontextprotocol/sdk/server/auth/handlers/register.js'
import {revocationHandler} from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js'
import {tokenHandler} from '@modelcontextprotocol/sdk/server/auth/handlers/token.js'

import type {JarvisOAuthProvider} from './provider.js'
import {authorizationClientProblem, backToApp, registrationProblem, revocationRequestProblem, tokenRequestProblem, type OAuthProblem} from './requests.js'
import {secretHash} from './secrets.js'

export const OAUTH_ENDPOINTS = {authorize: '/authorize', token: '/token', register: '/register', revoke: '/revoke'} as const

/** `Authorization: Basic base64(id:secret)` → `{id, secret}` (each form-encoded, RFC 6749 §2.3.1), or null. */
function basicCredentials(header: string | undefined): {id: string; secret: string} | null {
  const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header ?? '')
  if (!match) return null
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return null
  const unform = (text: string) => {
    try {
      return decodeURIComponent(text.replace(/\+/g, ' '))
    } catch {
      return text
    }
  }
  return {id: unform(decoded.slice(0, colon)), secret: unform(decoded.slice(colon + 1))}
}

/** Runs before the SDK's token and revocation handlers (after it parsed the form): see the file's comment. */
function hashClientSecret(req: Request, _res: Response, next: NextFunction): void {
  const body = (req.body ?? {}) as Record<string, unknown>
  const basic = basicCredentials(req.headers.authorization)
  if (basic !== null && body.client_id === undefined) {
    body.client_id = basic.id
    body.client_secret = basic.secret
  }
  if (typeof body.client_secret === 'string') body.client_secret = secretHash(body.client_secret)
  req.body = body
  next()
}

/** The parameters of a request as the SDK's handlers read them: the form of a POST, the query of a GET. */
function paramsOf(req: Request): unknown {
  return req.method === 'POST' ? ((req.body as unknown) ?? {}) : req.query
}

/**
 * Answers a `methods` request in which `check` finds a problem with 400 and that problem, before the SDK's handler
 * sees it. `cors`: the endpoint answers browser-based apps (the SDK's handler would have said so on its answers).
 */
function refuseBadParams(methods: readonly string[], check: (params: unknown) => OAuthProblem | null, cors: boolean) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const problem = methods.includes(req.method) ? check(paramsOf(req)) : null
    if (problem === null) {
      next()
      return
    }
    res.setHeader('Cache-Control', 'no-store')
    if (cors) res.setHeader('Access-Control-Allow-Origin', '*')
    res.status(400).json({error: problem.error, error_description: problem.description})
  }
}

/** Makes every redirect `/authorize` answers back to the app carry `state` and `iss` (requests.ts backToApp). */
function redirectsBackToApp(issuer: string) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const params = paramsOf(req)
    const redirect = res.redirect.bind(res) as (status: number, target: string) => void
    res.redirect = ((first: number | string, second?: string) => {
      if (typeof first === 'number') redirect(first, backToApp(second ?? '', params, issuer))
      else redirect(302, backToApp(first, params, issuer))
    }) as Response['redirect']
    next()
  }
}

/** Fewer limits than the SDK's defaults would leave a person unable to sign in twice in a row behind one proxy. */
const RATE_LIMITS = {
  authorize: {windowMs: 15 * 60_000, max: 300},
  token: {windowMs: 15 * 60_000, max: 300},
  register: {windowMs: 60 * 60_000, max: 60},
  revoke: {windowMs: 15 * 60_000, max: 300},
}

/** What a request that broke before the SDK's handlers (a body that does not parse, an unknown path) is answered. */
function answerBroken(error: {status?: number; message?: string} | undefined, res: Response): void {
  const status = typeof error?.status === 'number' && error.status >= 400 && error.status < 500 ? error.status : error === undefined ? 404 : 500
  const body = error === undefined ? {error: 'invalid_request', error_description: 'no such endpoint'} : status < 500 ? {error: 'invalid_request', error_description: error.message ?? 'bad request'} : {error: 'server_error', error_description: 'internal server error'}
  res.status(status).json(body)
}

/** The express app of the four endpoints, for the server whose issuer is `issuer`: `(req, res)` of node:http. */
export function oauthExpressApp(provider: JarvisOAuthProvider, issuer: string): express.Express {
  const app = express()
  app.disable('x-powered-by')
  // Never a stack trace in an answer (express's development default).
  app.set('env', 'production')
  // Behind a reverse proxy on this machine, the rate limits count each client by its own address.
  app.set('trust proxy', 'loopback')
  // express-rate-limit's checks write to the console; the limits themselves are what matters here.
  const limit = (max: {windowMs: number; max: number}) => ({...max, validate: false})
  const form = express.urlencoded({extended: false})
  app.use(
    OAUTH_ENDPOINTS.authorize,
    form,
    refuseBadParams(['GET', 'POST'], authorizationClientProblem, false),
    redirectsBackToApp(issuer),
    authorizationHandler({provider, rateLimit: limit(RATE_LIMITS.authorize)}),
  )
  app.use(OAUTH_ENDPOINTS.token, form, hashClientSecret, refuseBadParams(['POST'], tokenRequestProblem, true), tokenHandler({provider, rateLimit: limit(RATE_LIMITS.token)}))
  app.use(
    OAUTH_ENDPOINTS.register,
    express.json(),
    refuseBadParams(['POST'], registrationProblem, true),
    clientRegistrationHandler({clientsStore: provider.clientsStore, rateLimit: limit(RATE_LIMITS.register), clientSecretExpirySeconds: 0}),
  )
  app.use(OAUTH_ENDPOINTS.revoke, form, hashClientSecret, refuseBadParams(['POST'], revocationRequestProblem, true), revocationHandler({provider, rateLimit: limit(RATE_LIMITS.revoke)}))
  app.use((_req: Request, res: Response) => answerBroken(undefined, res))
  app.use((error: {status?: number; message?: string}, _req: Request, res: Response, _next: NextFunction) => answerBroken(error, res))
  return app
}
