/**
 * `GET /api/search?q=&limit=`: memory files and events ranked for a query, the answer of the `memory_search` tool
 * (the same HostedBackend, over the same file index), for the dashboard's search page.
 */
import type {FastifyInstance} from 'fastify'

import {HostedBackend} from '../../mcp/hosted.js'
import {JarvisError} from '../../errors.js'
import {HttpError} from '../http-error.js'
import {hostedServices} from '../mcp/services.js'
import {single} from '../query-params.js'

export const DEFAULT_SEARCH_LIMIT = 10
const MAX_SEARCH_LIMIT = 50

function searchLimit(value: unknown): number {
  if (value === undefined) return DEFAULT_SEARCH_LIMIT
  if (typeof value === 'string' && /^[1-9][0-9]?$/.test(value) && Number(value) <= MAX_SEARCH_LIMIT) return Number(value)
  throw new HttpError(400, 'bad_request', `querystring/limit must be an integer from 1 to ${MAX_SEARCH_LIMIT}`, {field: 'querystring/limit'})
}

export function searchRoutes(app: FastifyInstance, now: () => Date): void {
  app.get('/api/search', async (request) => {
    const query = request.query as {q?: unknown; limit?: unknown}
    const q = single(query.q, 'querystring/q')
    if (q === undefined || q.trim() === '' || q.length > 500) {
      throw new HttpError(400, 'bad_request', 'querystring/q must be a query of 1 to 500 characters', {field: 'querystring/q'})
    }
    const limit = searchLimit(query.limit)
    const {events, memory, hosted} = request.workspace
    const services = hostedServices({agentId: request.agentId, role: request.role, events, memory, readOnly: true})
    try {
      return await new HostedBackend(services, hosted, now).search({query: q, limit})
    } catch (error) {
      // The backend speaks the commands' errors; answer them as the route's own.
      if (error instanceof JarvisError && error.exit === 2) throw new HttpError(400, 'bad_request', error.message)
      throw error
    }
  })
}
