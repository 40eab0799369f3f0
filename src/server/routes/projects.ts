/** `/api/projects/active`: the active project, kept as `.memory/active_project.json`. */
import type {FastifyInstance} from 'fastify'

import {type ActiveProject, projectActiveRequestSchema} from '../../schemas/index.js'
import {parseBody} from '../query-params.js'

/** Who switched when the body does not say: the command line (CONTRACT §2, `jarvis switch-project`). */
export const DEFAULT_SWITCHED_BY: ActiveProject['switchedBy'] = 'user-cli'

const switchBody = {
  type: 'object',
  required: ['projectId'],
  properties: {
    projectId: {type: 'string', minLength: 1, maxLength: 200},
    switchedBy: {type: 'string', enum: ['system', 'user-cli', 'user-web']},
  },
} as const

export function projectRoutes(app: FastifyInstance): void {
  app.get('/api/projects/active', async (request) => request.workspace.memory.activeProject())

  app.post('/api/projects/active', {schema: {body: switchBody}, config: {writes: true}}, async (request) => {
    const body = parseBody(projectActiveRequestSchema, request.body)
    return request.workspace.memory.switchProject(body.projectId, body.switchedBy ?? DEFAULT_SWITCHED_BY, request.agentId)
  })
}
