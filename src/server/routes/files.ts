/**
 * `POST /api/memory/write`: one memory file written by a person (the dashboard's editor), with the revision it was
 * read at. Unlike a push (a sync merges on its own side first), the server itself refuses a secret here, with the
 * message of `jarvis memory write`, and answers a stale revision with the file as it is now so the page can merge.
 */
import type {FastifyInstance} from 'fastify'

const writeBody = {
  type: 'object',
  required: ['path', 'content', 'base'],
  properties: {
    path: {type: 'string', minLength: 1},
    content: {type: 'string'},
    base: {type: ['integer', 'null'], minimum: 0},
  },
} as const

export function fileRoutes(app: FastifyInstance): void {
  app.post('/api/memory/write', {schema: {body: writeBody}, config: {writes: true}}, async (request) => {
    const body = request.body as {path: string; content: string; base: number | null}
    return request.workspace.memory.write(body.path, body.content, body.base === 0 ? null : body.base, request.agentId)
  })
}
