/**
 * The connections that asked for a WebSocket and are not one yet. While the server closes, fastify answers a new
 * request 503 on its fast path, which skips the hook the websocket plugin ends an upgrade's socket with: such a
 * socket (a client reconnecting just as the server stops) would stay open, and `close()` would wait for it forever.
 * The server cuts these connections when it starts closing and every one that knocks after.
 */
import type {IncomingMessage, Server} from 'node:http'
import type {Duplex} from 'node:stream'

export interface PendingUpgrades {
  /** The upgrade became a WebSocket: the server's close handshake (1001) takes care of it from now on. */
  upgraded(request: IncomingMessage): void
  /** Cuts every pending upgrade, and from now on each new one once it has had its answer. */
  cutAll(): void
}

export function trackUpgrades(server: Pick<Server, 'on'>): PendingUpgrades {
  const pending = new Set<Duplex>()
  let cutting = false
  server.on('upgrade', (_request: IncomingMessage, socket: Duplex) => {
    if (cutting) {
      // After the plugin's listener has written its 503, which it does in this same turn.
      setImmediate(() => socket.destroy())
      return
    }
    pending.add(socket)
    socket.once('close', () => pending.delete(socket))
  })
  return {
    upgraded(request) {
      pending.delete(request.socket)
    },
    cutAll() {
      cutting = true
      for (const socket of pending) socket.destroy()
      pending.clear()
    },
  }
}
