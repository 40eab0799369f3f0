/**
 * `/v1/memory/*`: the shared event log (docs/event-log.md, docs/protocol.md). Bodies and queries are checked by
 * the service (zod and the rules of events/), so that every refusal names its field the same way.
 */
import type {FastifyInstance} from 'fastify'

import type {ListQuery, SnapshotQuery} from '../events-service.js'
import {HttpError} from '../http-error.js'

const objectBody = {type: 'object'} as const

function idempotencyHeader(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) {
    throw new HttpError(400, 'bad_request', 'header/idempotency-key must be given once', {field: 'header/idempotency-key'})
  }
  return value
}

export function eventRoutes(app: FastifyInstance): void {
  app.post('/v1/memory/append', {schema: {body: objectBody}, config: {writes: true}}, async (request) =>
    request.workspace.events.append(request.body, request.agentId, idempotencyHeader(request.headers['idempotency-key'])),
  )

  app.get('/v1/memory/snapshot', async (request) => request.workspace.events.snapshot(request.query as SnapshotQuery, request.agentId, request.role))

  app.get('/v1/memory/events', async (request) => request.workspace.events.list(request.query as ListQuery, request.agentId, request.role))

  // The body is optional (nothing in it is read); an empty POST with no content-type is fine.
  app.post('/v1/memory/consolidate', {config: {writes: true}}, async (request) => request.workspace.events.consolidate(request.agentId))

  app.post('/v1/memory/cleanup', {schema: {body: objectBody}, config: {writes: true}}, async (request) => request.workspace.events.cleanup(request.body, request.agentId, request.role))
}
