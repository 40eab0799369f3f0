/**
 * A stand-in for a server written from the protocol table alone (CONTRACT §3, seed 000's endpoints), with none of
 * the fields `jarvis serve` adds. It answers exactly these four routes, and each with the fewest fields the table
 * allows:
 * - `GET /api/memory/status` → `{files: {path: {updatedAt}}}`: no `serverTime`, `seq`, `serverId`, `activeProjectId`,
 *   hash, rev or tombstone; a query string (`?since=`) is ignored, as a server that does not know it would;
 * - `POST /api/memory/pull` `{files: [path]}` → `{files: {path: {content, updatedAt}}}`, a path it lacks left out; with
 *   `answers.jsonAsValue`, a `.json` file's content is the JSON value, as the contract lets a seed-style server send it;
 * - `POST /api/memory/push` `{files: {path: content}}` → what `answers.push` says (the table names no revision-less
 *   answer): the pushed paths with their new `updatedAt`, `{}`, an empty 200 or `{success: true}`. Last writer wins,
 *   no `base`, no 409, no deletions;
 * - `GET /api/projects/active` → `{projectId, switchedAt, switchedBy}` (404 before the first switch), and
 *   `POST /api/projects/active` `{projectId}` → the same three fields, or what `answers.switch` says.
 * No sync-task, event log, WebSocket (an upgrade gets 404) or health route. Listens on 127.0.0.1, on a port the OS
 * picks. `updatedAt` comes from a clock of its own that moves forward by one millisecond per write.
 */
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

import {afterEach, beforeEach} from 'vitest'

import {makeClient, removeAll, tokenMap, type TestClient} from '../helpers/world.js'

export type PushAnswer = 'timestamps' | 'empty-object' | 'no-body' | 'success'
export type SwitchAnswer = 'project' | 'project-id-only' | 'no-body'

/** One request as it arrived: the route and the parsed body. */
export interface StandInRequest {
  route: string
  query: string
  body: unknown
}

export interface ProtocolStandIn {
  url: string
  /** What it holds, to check from the test without going through the client under test. */
  files: Map<string, {content: string; updatedAt: string}>
  active: {projectId: string; switchedAt: string; switchedBy: string} | null
  /** Every request, in order. */
  requests: StandInRequest[]
  answers: {push: PushAnswer; switch: SwitchAnswer; jsonAsValue: boolean}
  /**
   * Called when a request has arrived, before it is handled (`'before'`), and when it has been handled, before it
   * is answered (`'after'`): a test writes there (`write`) what another client writes meanwhile.
   */
  hook?: (request: StandInRequest, when: 'before' | 'after') => void | Promise<void>
  /** Another client's push of one file, straight into the store (last writer wins). */
  write(path: string, content: string): void
  close(): Promise<void>
}

/** `tokens`: bearer token → agent id (built by the test at run time); `port`: one to listen on again (default: any). */
export async function startProtocolStandIn(tokens: Record<string, string>, port = 0): Promise<ProtocolStandIn> {
  let clock = Date.UTC(2026, 0, 1)
  const tick = () => new Date((clock += 1)).toISOString()
  const standIn = {
    files: new Map<string, {content: string; updatedAt: string}>(),
    active: null as ProtocolStandIn['active'],
    requests: [] as StandInRequest[],
    answers: {push: 'timestamps', switch: 'project', jsonAsValue: false} as ProtocolStandIn['answers'],
    hook: undefined as ProtocolStandIn['hook'],
    write(path: string, content: string) {
      standIn.files.set(path, {content, updatedAt: tick()})
    },
  }

  const readBody = (req: IncomingMessage) =>
    new Promise<unknown>((resolve, reject) => {
      let text = ''
      req.setEncoding('utf8')
      req.on('data', (chunk: string) => (text += chunk))
      req.on('end', () => {
        try {
          resolve(text ? JSON.parse(text) : undefined)
        } catch (error) {
          reject(error)
        }
      })
    })

  /** The answer's status and body (`undefined`: an empty body). */
  const handle = (request: StandInRequest): [number, unknown] => {
    const body = (request.body ?? {}) as Record<string, unknown>
    switch (request.route) {
      case 'GET /api/memory/status':
        return [200, {files: Object.fromEntries([...standIn.files].map(([path, file]) => [path, {updatedAt: file.updatedAt}]))}]
      case 'POST /api/memory/pull': {
        const wanted = body.files as string[]
        const pulled = (path: string) => {
          const {content, updatedAt} = standIn.files.get(path)!
          return {content: standIn.answers.jsonAsValue && path.endsWith('.json') ? JSON.parse(content) : content, updatedAt}
        }
        return [200, {files: Object.fromEntries(wanted.filter((path) => standIn.files.has(path)).map((path) => [path, pulled(path)]))}]
      }
      case 'POST /api/memory/push': {
        const pushed = Object.entries(body.files as Record<string, string>)
        for (const [path, content] of pushed) standIn.write(path, content)
        const answer = standIn.answers.push
        if (answer === 'timestamps') return [200, {files: Object.fromEntries(pushed.map(([path]) => [path, {updatedAt: standIn.files.get(path)!.updatedAt}]))}]
        return [200, answer === 'empty-object' ? {} : answer === 'success' ? {success: true} : undefined]
      }
      case 'GET /api/projects/active':
        return standIn.active ? [200, standIn.active] : [404, {error: 'no active project'}]
      case 'POST /api/projects/active': {
        standIn.active = {projectId: String(body.projectId), switchedAt: tick(), switchedBy: 'user-web'}
        const answer = standIn.answers.switch
        return [200, answer === 'project' ? standIn.active : answer === 'project-id-only' ? {projectId: standIn.active.projectId} : undefined]
      }
      default:
        return [404, {error: 'not found'}]
    }
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, value: unknown) => {
      res.statusCode = status
      if (value === undefined) return res.end()
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(value))
    }
    if (!tokens[(req.headers.authorization ?? '').replace(/^Bearer /, '')]) return send(401, {error: 'unauthorized'})
    const url = new URL(req.url ?? '/', 'http://stand-in')
    readBody(req).then(
      async (body) => {
        const request: StandInRequest = {route: `${req.method} ${url.pathname}`, query: url.search, body}
        standIn.requests.push(request)
        await standIn.hook?.(request, 'before')
        const [status, answer] = handle(request)
        await standIn.hook?.(request, 'after')
        send(status, answer)
      },
      (error: Error) => send(400, {error: error.message}),
    )
  })
  server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n'))
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return Object.assign(standIn, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error ? reject(error) : resolve()))
      }),
  }) as ProtocolStandIn
}

/**
 * Each test of the calling file gets a stand-in of its own (the test tokens) and clients of it; both are stopped and
 * removed after the test. Call at the top of the file.
 */
export function useProtocolStandIn(): {standIn: () => ProtocolStandIn; client: (agent: string) => Promise<TestClient>} {
  let standIn: ProtocolStandIn | undefined
  const roots: string[] = []
  beforeEach(async () => {
    standIn = await startProtocolStandIn(tokenMap)
  })
  afterEach(async () => {
    await standIn?.close()
    await removeAll(roots.splice(0))
  })
  return {
    standIn: () => standIn!,
    async client(agent) {
      const made = await makeClient(standIn!.url, agent)
      roots.push(made.root)
      return made
    },
  }
}
