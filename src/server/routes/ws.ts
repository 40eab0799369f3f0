/**
 * `/ws/memory`: server → client broadcasts (MEM_UPDATE, STATE_CHANGED), a HELLO on connect with the current seq,
 * and an application heartbeat: `{type: "PING"}` is answered `{type: "PONG"}` (WebSocket ping frames are
 * answered by `ws` itself). Authentication happens before the upgrade (the app's onRequest hook), and again every
 * `recheckMs` while the socket is open: a key or an app's access revoked or expired since is told why (ERROR
 * `unauthorized`) and closed (1008), as every other request of it would be refused.
 */
import createDebug from 'debug'
import type {FastifyInstance} from 'fastify'

import {send} from '../broadcast.js'

const debug = createDebug('jarvis:server:ws')

export const WS_PATH = '/ws/memory'

export function wsRoutes(app: FastifyInstance, now: () => Date, recheckMs: number): void {
  app.get(WS_PATH, {websocket: true}, (socket, request) => {
    const agentId = request.agentId
    // The clients of the token's workspace: broadcasts of another workspace never reach this socket.
    const {broadcaster, memory} = request.workspace
    // Listeners first, then async work (a message must not arrive before its handler).
    socket.on('message', (data, isBinary) => {
      if (isBinary) {
        send(socket, {type: 'ERROR', error: 'bad_request', message: 'messages are JSON text'})
        return
      }
      let message: unknown
      try {
        message = JSON.parse(data.toString())
      } catch {
        send(socket, {type: 'ERROR', error: 'bad_json', message: 'a message must be a JSON object such as {"type":"PING"}'})
        return
      }
      const type = (message as {type?: unknown} | null)?.type
      if (type === 'PING') send(socket, {type: 'PONG', serverTime: now().toISOString()})
      else debug('ignored a client message of type %s from %s', String(type), agentId)
    })
    socket.on('error', (error) => debug('socket error from %s: %s', agentId, error.message))
    const recheck = request.recheck
    if (recheck !== undefined) {
      const timer = setInterval(() => {
        recheck().then(
          (refused) => {
            if (refused === null || socket.readyState !== socket.OPEN) return
            send(socket, {type: 'ERROR', error: 'unauthorized', message: refused})
            socket.close(1008, 'the token is refused now')
          },
          (error: Error) => debug('the token of %s could not be checked again: %s', agentId, error.message),
        )
      }, recheckMs)
      timer.unref()
      socket.once('close', () => clearInterval(timer))
    }
    broadcaster.add(socket, agentId, request.role)
    memory.seq().then(
      (seq) => send(socket, {type: 'HELLO', workspace: request.workspace.name, agentId, seq, serverTime: now().toISOString()}),
      (error: Error) => debug('HELLO failed: %s', error.message),
    )
  })
}
