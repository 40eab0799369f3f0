/**
 * `/api/memory/*`: status, pull, push, sync-task. Bodies are checked by fastify's JSON-schema validation
 * (shape) and then by the service (paths, sizes, JSON content, revisions).
 */
import type {FastifyInstance} from 'fastify'

import {STATUS_TEXTS_HEADER, taskResultSchema} from '../../schemas/index.js'
import {HttpError} from '../http-error.js'
import {parseBody} from '../query-params.js'
import type {PushBody} from '../service.js'

const SINCE = /^(0|[1-9][0-9]*)$/

/** `?since=` as a seq: a non-negative integer, or 400 naming the field. */
export function parseSince(value: unknown): number | undefined {
  if (value === undefined) return undefined
  if (typeof value === 'string' && SINCE.test(value)) {
    const since = Number(value)
    if (Number.isSafeInteger(since)) return since
  }
  throw new HttpError(400, 'bad_request', 'querystring/since must be a non-negative integer (the seq of an earlier status)', {
    field: 'querystring/since',
  })
}

/** The header's characters, or undefined when absent or not a positive integer (a hint: never an error). */
function textsAsked(value: unknown): {chars: number} | undefined {
  if (typeof value !== 'string' || !SINCE.test(value)) return undefined
  const chars = Number(value)
  return Number.isSafeInteger(chars) && chars > 0 ? {chars} : undefined
}

const pullBody = {
  type: 'object',
  required: ['files'],
  properties: {files: {type: 'array', items: {type: 'string'}}},
} as const

const pushBody = {
  type: 'object',
  properties: {
    files: {type: 'object', additionalProperties: {type: 'string'}},
    base: {type: 'object', additionalProperties: {type: ['integer', 'null'], minimum: 0}},
    deletes: {type: 'array', items: {type: 'string'}},
    merged: {type: 'array', items: {type: 'string'}, maxItems: 10_000},
  },
} as const

const syncTaskBody = {
  type: 'object',
  required: ['taskId', 'timestamp', 'type', 'success'],
  properties: {
    taskId: {type: 'string', minLength: 1},
    timestamp: {type: 'string'},
    type: {type: 'string', minLength: 1},
    success: {type: 'boolean'},
    agentId: {type: 'string'},
    workerId: {type: 'string'},
  },
} as const

export function memoryRoutes(app: FastifyInstance): void {
  app.get('/api/memory/status', async (request) => {
    const {since} = request.query as {since?: unknown}
    return request.workspace.memory.status(parseSince(since), textsAsked(request.headers[STATUS_TEXTS_HEADER]))
  })

  app.post('/api/memory/pull', {schema: {body: pullBody}}, async (request) => {
    const body = request.body as {files: string[]}
    return request.workspace.memory.pull(body.files)
  })

  app.post('/api/memory/push', {schema: {body: pushBody}, config: {writes: true}}, async (request) => {
    return request.workspace.memory.push(request.body as PushBody, request.agentId)
  })

  app.post('/api/memory/sync-task', {schema: {body: syncTaskBody}, config: {writes: true}}, async (request, reply) => {
    const {agentId: namedAgent, ...rest} = request.body as Record<string, unknown>
    for (const [key, named] of [['agentId', namedAgent], ['workerId', rest.workerId]] as const) {
      if (named !== undefined && named !== request.agentId) {
        throw new HttpError(403, 'forbidden', `body/${key} names ${JSON.stringify(named)}, but the token belongs to ${request.agentId}`, {
          field: `body/${key}`,
        })
      }
    }
    // agentId is the token's (checked above); it is left out so that a server-defined agent id passes the schema.
    const task = parseBody(taskResultSchema, rest)
    const result = await request.workspace.memory.syncTask(task, request.agentId)
    void reply.header('x-jarvis-rev', String(result.rev)).header('x-jarvis-seq', String(result.seq))
    return result.memory
  })
}
