/** `GET /api/audit`: the audit log, newest first (audit-service.ts says who reads what). */
import type {FastifyInstance} from 'fastify'

import type {AuditQueryParams} from '../audit-service.js'

export function auditRoutes(app: FastifyInstance): void {
  app.get('/api/audit', async (request) => request.workspace.audit.list(request.query as AuditQueryParams, request.agentId, request.role))
}
