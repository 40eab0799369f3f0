/**
 * Where the server is, as the apps that sign in with OAuth see it: its public address (the issuer of its tokens)
 * and the two protected resources it serves, the MCP tools at `<public>/mcp` and the REST API at `<public>`. A token
 * is bound to one of them (RFC 8707): a token for `/mcp` opens `/mcp` only.
 */
import {MCP_PATH} from '../routes/mcp.js'

/** How long each secret lives. */
export const OAUTH_LIFETIMES = {
  /** A person has this long to consent once an app asked. */
  authorizationMs: 10 * 60_000,
  /** An authorization code, from the consent to its one exchange. */
  codeMs: 5 * 60_000,
  /** An access token: short, the app refreshes it. */
  accessMs: 60 * 60_000,
  /** A refresh token; each use gives a new one (rotation) and ends this one. */
  refreshMs: 30 * 86_400_000,
} as const

export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource'
export const AUTHORIZATION_SERVER_PATH = '/.well-known/oauth-authorization-server'

export interface OAuthSite {
  /** e.g. `https://memory.example.com`: no trailing slash, no path; the issuer of every token. */
  issuer: string
  /** `<issuer>/mcp`. */
  mcpResource: string
  /** `<issuer>`: the REST API and the WebSocket. */
  apiResource: string
}

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}

/**
 * The site of a public address, or why apps cannot sign in there: an app needs HTTPS (plain HTTP only on this
 * machine's loopback address, for trying it out), and an address without a path, query or fragment.
 */
export function oauthSite(publicUrl: string): OAuthSite | {refused: string} {
  let url: URL
  try {
    url = new URL(publicUrl)
  } catch {
    return {refused: `${JSON.stringify(publicUrl)} is not a URL: give the https:// address the apps reach, like https://memory.example.com`}
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    return {refused: `${url.origin} is not HTTPS: apps such as ChatGPT and Claude sign in only over HTTPS (serve with --tls-cert and --tls-key, or behind a TLS proxy with --public-url https://…)`}
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    return {refused: `${publicUrl} has a path, query or fragment: give the server's own address, like https://memory.example.com`}
  }
  const issuer = url.origin
  return {issuer, mcpResource: `${issuer}${MCP_PATH}`, apiResource: issuer}
}

/** The resource a request to `path` needs its token to be for. */
export function resourceFor(site: OAuthSite, path: string): string {
  return path === MCP_PATH ? site.mcpResource : site.apiResource
}

/** The protected resource metadata (RFC 9728) address of the resource a request to `path` reaches. */
export function resourceMetadataUrl(site: OAuthSite, path: string): string {
  return path === MCP_PATH ? `${site.issuer}${PROTECTED_RESOURCE_PATH}${MCP_PATH}` : `${site.issuer}${PROTECTED_RESOURCE_PATH}`
}

/** The `WWW-Authenticate` of a 401 (RFC 6750, RFC 9728): where an app learns how to sign in. */
export function wwwAuthenticate(site: OAuthSite | undefined, path: string, tokenPresented: boolean): string {
  const parts = ['Bearer realm="jarvis"']
  if (site !== undefined) parts.push(`resource_metadata="${resourceMetadataUrl(site, path)}"`)
  if (tokenPresented) parts.push('error="invalid_token"')
  return parts.join(', ')
}
