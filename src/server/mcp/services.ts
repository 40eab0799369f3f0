/**
 * The server's services as the MCP tools see them (mcp/hosted.ts HostedServices), for the agent of one bearer
 * token: the same EventService and MemoryService calls the `/v1` and `/api` routes make, so every rule those
 * routes enforce (private scopes from the token, secret scan, path guard, sizes, revisions) holds here unchanged.
 * Their HTTP errors become the contract's exit codes, as the protocol client maps them for a command.
 */
import {ConflictLeftError, BadInputError, ExitCode, JarvisError, SecretRefusedError, UnreachableError} from '../../errors.js'
import type {HostedServices} from '../../mcp/hosted.js'
import {type AppGrant, readOnlyRefusal} from '../auth.js'
import type {EventService, ListQuery} from '../events-service.js'
import {HttpError} from '../http-error.js'
import type {MemoryService} from '../service.js'
import type {KeyRole} from '../storage/types.js'

/** An HTTP refusal of a service as the JarvisError a command gets for the same answer (protocol/client.ts). */
export function asJarvisError(error: unknown): unknown {
  if (!(error instanceof HttpError)) return error
  const data = {status: error.status, ...error.extra}
  if (error.status === 422 && error.code === 'sensitive') return new SecretRefusedError(error.message, data)
  if (error.status === 409) return new ConflictLeftError(error.message, data)
  if (error.status === 401) return new UnreachableError(error.message, data)
  if (error.status >= 500) return new JarvisError(error.message, {code: 'FAILED', exit: ExitCode.failed, data})
  return new BadInputError(error.message, data)
}

async function mapped<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    throw asJarvisError(error)
  }
}

export function hostedServices(options: {agentId: string; role?: KeyRole; app?: AppGrant; url?: string; events: EventService; memory: MemoryService; readOnly?: boolean}): HostedServices {
  const {agentId, events, memory} = options
  const services = hostedServicesFor(agentId, options.role, options.url, events, memory)
  if (!options.readOnly && options.role !== 'read') return services
  // A `read` key or app through MCP: the tools that change the memory answer what `/v1/memory/append` would, 403.
  const readOnly = (what: string) => Promise.reject(asJarvisError(readOnlyRefusal(what, options.app)))
  return {...services, append: () => readOnly('memory_append'), write: () => readOnly('writing a memory file'), syncTask: () => readOnly('task_complete')}
}

function hostedServicesFor(agentId: string, role: KeyRole | undefined, url: string | undefined, events: EventService, memory: MemoryService): HostedServices {
  return {
    agentId,
    url,
    snapshot: (query) =>
      mapped(() => events.snapshot(query, agentId, role)).catch((error: unknown) => {
        // As `memory snapshot` says it: whatever stops a snapshot means the memory cannot be read (exit 3).
        if (error instanceof JarvisError && error.exit !== ExitCode.unreachable) {
          throw new UnreachableError(`the shared memory cannot be read, so nothing is shown: ${error.message}`, error.data, error)
        }
        throw error
      }),
    append: (event, idempotencyKey) => mapped(() => events.append(event, agentId, idempotencyKey)),
    events: (query) => mapped(() => events.list(query as ListQuery, agentId, role)),
    changes: (since) =>
      mapped(async () => {
        const status = await memory.status(since)
        return {seq: status.seq, full: status.full, files: Object.entries(status.files).map(([path, meta]) => ({path, ...meta}))}
      }),
    read: (paths) =>
      mapped(async () => {
        const answer = await memory.pull(paths)
        return new Map(Object.entries(answer.files).map(([path, file]) => [path, {path, ...file}]))
      }),
    write: (path, content, baseRev) =>
      mapped(async () => {
        try {
          const answer = await memory.push({files: {[path]: content}, base: {[path]: baseRev}}, agentId)
          const written = answer.files[path]
          return {ok: true as const, rev: written.rev, hash: written.hash}
        } catch (error) {
          if (error instanceof HttpError && error.status === 409) return {ok: false as const}
          throw error
        }
      }),
    syncTask: (task) => mapped(async () => (await memory.syncTask(task, agentId)).memory),
  }
}
