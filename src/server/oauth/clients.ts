/**
 * The apps that may ask for access: those that registered (Dynamic Client Registration, RFC 7591, through the MCP
 * SDK's handler) and those whose client id is the HTTPS address of their metadata document (Client ID Metadata
 * Documents, which the MCP specification prefers for a client the server has never seen).
 *
 * A registered client's secret is stored as its sha256 only. The SDK compares the presented secret with what
 * `getClient` answers, so `getClient` answers the stored hash and the bridge (express-app.ts) hashes the presented
 * secret before the SDK sees it.
 */
import {lookup} from 'node:dns/promises'
import {BlockList, isIP} from 'node:net'

import {InvalidClientMetadataError} from '@modelcontextprotocol/sdk/server/auth/errors.js'
import type {OAuthRegisteredClientsStore} from '@modelcontextprotocol/sdk/server/auth/clients.js'
import {OAuthClientMetadataSchema, type OAuthClientInformationFull} from '@modelcontextprotocol/sdk/shared/auth.js'
import createDebug from 'debug'

import {NUL_REFUSAL, nulPath} from '../../schemas/index.js'
import type {OAuthStorage} from '../storage/oauth-types.js'
import {secretHash} from './secrets.js'

const debug = createDebug('jarvis:server:oauth')

/** Largest client metadata document read. */
const MAX_DOCUMENT_BYTES = 64 * 1024
const DOCUMENT_TIMEOUT_MS = 5000
/** How long a fetched document is used before it is fetched again. */
const DOCUMENT_CACHE_MS = 5 * 60_000

/** Fetches a client metadata document; the default one refuses addresses of this machine and its private networks. */
export type ClientDocumentFetch = (url: URL, init: {signal: AbortSignal; redirect: 'manual'; headers: Record<string, string>}) => Promise<Response>

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}

/**
 * Where an app may be sent back with its code: an HTTPS address, an HTTP one on the app's own machine (a desktop
 * app's loopback listener), or a desktop app's own scheme (`com.example.app:/callback`); never plain HTTP elsewhere.
 */
export function redirectUriProblem(uri: string): string | null {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return `${uri} is not a URL`
  }
  if (url.hash !== '') return `${uri} has a fragment`
  if (url.protocol === 'https:') return null
  if (url.protocol === 'http:') return isLoopbackHost(url.hostname) ? null : `${uri} is plain HTTP on another machine: use https`
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol) ? null : `${uri} uses the scheme ${url.protocol} (a desktop app's scheme is reverse-DNS, like com.example.app:)`
}

/** Client metadata whose text holds a NUL (schemas/common.ts): its field and why, or null. */
function nulProblem(metadata: object): string | null {
  const path = nulPath(metadata)
  return path === null ? null : `${path} ${NUL_REFUSAL}`
}

/** The app's name as a person reads it on the consent page and in `token list`. */
export function clientName(client: Pick<OAuthClientInformationFull, 'client_name' | 'client_uri' | 'client_id'>): string {
  const name = client.client_name?.trim()
  if (name) return name.slice(0, 100)
  try {
    if (client.client_uri) return new URL(client.client_uri).host
  } catch {
    // not a URL: the id then
  }
  return client.client_id
}

/** A client id that is the address of a metadata document: HTTPS with a path. */
export function isClientDocumentUrl(clientId: string): boolean {
  try {
    const url = new URL(clientId)
    return url.protocol === 'https:' && url.pathname !== '/' && url.hash === ''
  } catch {
    return false
  }
}

const PRIVATE = new BlockList()
for (const [network, prefix] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4')
}
for (const [network, prefix] of [['::', 127], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6')
}

/** True when `address` (an IP) is this machine's, a private network's, or not a unicast address at all. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * The default fetch of a client metadata document: refused when the host is or resolves to a private address, so
 * an app's client id cannot make the server reach into its own network. (A name that resolves differently between
 * this check and the connection could still; the document is read as data only, never shown raw.)
 */
export const guardedDocumentFetch: ClientDocumentFetch = async (url, init) => {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const addresses = isIP(host) === 0 ? (await lookup(host, {all: true})).map((entry) => entry.address) : [host]
  const inside = addresses.find(isPrivateAddress)
  if (inside !== undefined) throw new Error(`${url.host} is a private address (${inside})`)
  return fetch(url, init)
}

/**
 * The body of a document, read no further than `limit` bytes: a host that sends more (or says it will) is refused
 * there, so an app's id cannot make the server hold whatever a host streams until the timeout.
 */
async function boundedText(response: Response, limit: number): Promise<string> {
  const tooLarge = () => new Error(`it is larger than ${limit} bytes`)
  if (Number(response.headers.get('content-length')) > limit) {
    await response.body?.cancel()
    throw tooLarge()
  }
  const reader = response.body?.getReader()
  if (reader === undefined) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength
    if (size > limit) {
      // Nothing more is read: the stream is cancelled and its connection closed.
      await reader.cancel()
      throw tooLarge()
    }
    chunks.push(read.value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

async function readDocument(url: URL, fetchDocument: ClientDocumentFetch): Promise<OAuthClientInformationFull> {
  const response = await fetchDocument(url, {signal: AbortSignal.timeout(DOCUMENT_TIMEOUT_MS), redirect: 'manual', headers: {accept: 'application/json'}})
  if (response.status !== 200) {
    await response.body?.cancel()
    throw new Error(`it answered ${response.status}`)
  }
  const text = await boundedText(response, MAX_DOCUMENT_BYTES)
  const parsed = OAuthClientMetadataSchema.safeParse(JSON.parse(text))
  if (!parsed.success) throw new Error(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '))
  const document = JSON.parse(text) as {client_id?: unknown; client_secret?: unknown}
  if (document.client_id !== url.href) throw new Error(`its client_id is ${JSON.stringify(document.client_id)}, not its own address`)
  if (document.client_secret !== undefined) throw new Error('it holds a client_secret')
  const nul = nulProblem(parsed.data)
  if (nul) throw new Error(nul)
  const method = parsed.data.token_endpoint_auth_method ?? 'none'
  if (method !== 'none') throw new Error(`its token_endpoint_auth_method is ${method}: only public clients (none) can use a metadata document here`)
  const problem = parsed.data.redirect_uris.map(redirectUriProblem).find((found) => found !== null)
  if (problem) throw new Error(`redirect_uris: ${problem}`)
  return {...parsed.data, client_id: url.href, token_endpoint_auth_method: 'none'}
}

export interface ClientStoreOptions {
  now: () => Date
  fetchDocument?: ClientDocumentFetch
}

export class JarvisClientsStore implements OAuthRegisteredClientsStore {
  private readonly documents = new Map<string, {client: OAuthClientInformationFull; until: number}>()

  constructor(
    private readonly storage: OAuthStorage,
    private readonly options: ClientStoreOptions,
  ) {}

  async getClient(clientId: string): Promise<OAuthClientInformationFull | undefined> {
    // No client has such an id (none is registered with a NUL): unknown, as on every storage, never a query that fails.
    if (nulPath(clientId) !== null) return undefined
    if (isClientDocumentUrl(clientId)) return this.documentClient(clientId)
    const row = await this.storage.client(clientId)
    if (row === null) return undefined
    const metadata = JSON.parse(row.metadata) as OAuthClientInformationFull
    return {
      ...metadata,
      client_id: row.clientId,
      ...(row.secretHash === null ? {} : {client_secret: row.secretHash}),
      ...(row.secretExpiresAt === null ? {} : {client_secret_expires_at: row.secretExpiresAt}),
    }
  }

  async registerClient(client: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'>): Promise<OAuthClientInformationFull> {
    const full = client as OAuthClientInformationFull
    const nul = nulProblem(full)
    if (nul) throw new InvalidClientMetadataError(nul)
    if (full.redirect_uris.length === 0) throw new InvalidClientMetadataError('redirect_uris: give at least one address to send the app back to')
    const problem = full.redirect_uris.map(redirectUriProblem).find((found) => found !== null)
    if (problem) throw new InvalidClientMetadataError(`redirect_uris: ${problem}`)
    const method = full.token_endpoint_auth_method ?? 'client_secret_post'
    if (!['none', 'client_secret_post', 'client_secret_basic'].includes(method)) {
      throw new InvalidClientMetadataError(`token_endpoint_auth_method ${method} is not supported: use none (with PKCE), client_secret_post or client_secret_basic`)
    }
    const {client_secret: secret, client_secret_expires_at: secretExpiresAt, ...metadata} = full
    await this.storage.addClient({
      clientId: full.client_id,
      secretHash: secret === undefined ? null : secretHash(secret),
      secretExpiresAt: secretExpiresAt === undefined || secretExpiresAt === 0 ? null : secretExpiresAt,
      metadata: JSON.stringify(metadata),
      createdAt: this.options.now().toISOString(),
    })
    return full
  }

  private async documentClient(clientId: string): Promise<OAuthClientInformationFull | undefined> {
    const now = this.options.now().getTime()
    const cached = this.documents.get(clientId)
    if (cached !== undefined && cached.until > now) return cached.client
    try {
      const client = await readDocument(new URL(clientId), this.options.fetchDocument ?? guardedDocumentFetch)
      if (this.documents.size > 1000) this.documents.clear()
      this.documents.set(clientId, {client, until: now + DOCUMENT_CACHE_MS})
      return client
    } catch (error) {
      debug('client metadata document %s refused: %s', clientId, (error as Error).message)
      return undefined
    }
  }
}
