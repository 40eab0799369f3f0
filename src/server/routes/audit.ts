/** `GET /api/audit`: the audit log, newest first (audit-service.ts says who reads what). */
import type {FastifyInstance} from 'fastify'

import type {AuditQueryParams, AuditService} from '../audit-service.js'

export function auditRoutes(app: FastifyInstance, audit: AuditService): void {
  app.get('/api/audit', async (request) => audit.list(request.query as AuditQueryParams, request.agentId, request.role))
}
