/**
 * The web dashboard: `/` and its few assets, built by `npm run build` into dist/dashboard/ (web/dashboard/ is its
 * source) and shipped in the package. No token is needed to load the page (it holds no data); everything it shows
 * comes from the API, with the token the person signs in with. A fixed set of files read once and held in memory:
 * no directory is ever served, so no path from a request reaches the file system.
 */
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import createDebug from 'debug'
import type {FastifyInstance, FastifyReply} from 'fastify'

import {jarvisPackageRoot} from '../../invocation.js'

const debug = createDebug('jarvis:server:dashboard')

/** URL path → file in dist/dashboard/ and its type. */
export const DASHBOARD_ASSETS: Readonly<Record<string, {file: string; type: string}>> = {
  '/': {file: 'index.html', type: 'text/html; charset=utf-8'},
  '/dashboard/app.js': {file: 'app.js', type: 'text/javascript; charset=utf-8'},
  '/dashboard/app.css': {file: 'app.css', type: 'text/css; charset=utf-8'},
}

/**
 * Only jarvis's own scripts and styles run; the page talks to this server only (the API and its WebSocket).
 * Rendered Markdown is an agent's text: even if a tag got through, no inline script or foreign source would run.
 */
export const DASHBOARD_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

export function dashboardDir(): string {
  return join(jarvisPackageRoot(import.meta.url), 'dist', 'dashboard')
}

/** `dir`: where the built files are; default dist/dashboard/ of jarvis's package, found at the first request. */
export function dashboardRoutes(app: FastifyInstance, dir?: string): void {
  const cache = new Map<string, Buffer>()
  let where = dir
  const load = async (file: string): Promise<Buffer | null> => {
    const held = cache.get(file)
    if (held) return held
    try {
      where ??= dashboardDir()
      const content = await readFile(join(where, file))
      cache.set(file, content)
      return content
    } catch (error) {
      debug('dashboard asset %s unreadable: %s', file, (error as Error).message)
      return null
    }
  }
  const send = (reply: FastifyReply, type: string, body: Buffer | string) =>
    reply
      .header('content-type', type)
      .header('cache-control', 'no-cache')
      .header('content-security-policy', DASHBOARD_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(body)

  for (const [path, asset] of Object.entries(DASHBOARD_ASSETS)) {
    app.get(path, async (_request, reply) => {
      const content = await load(asset.file)
      if (content === null) {
        return send(reply.code(503), 'text/plain; charset=utf-8', `The dashboard is not built (${asset.file} is missing from ${where ?? 'dist/dashboard/'}): run npm run build.\n`)
      }
      return send(reply, asset.type, content)
    })
  }
}
