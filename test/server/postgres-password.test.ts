/**
 * A PostgreSQL that asks for a password (SCRAM) when the URL gives none: `jarvis serve` says so and what to do, and
 * exits, rather than hang with the half-open connection. The run's PostgreSQL trusts every local login, so a
 * stand-in speaks the first two messages of a SCRAM login: the protocol's fields only.
 */
import {createServer, type Server} from 'node:net'
import type {AddressInfo} from 'node:net'

import {afterEach, describe, expect, it} from 'vitest'

import {runJarvis} from '../helpers/cli.js'
import {Cleanup, tempDir} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

/** One authentication message (`R`): its type and its payload. */
function authentication(type: number, payload: string): Buffer {
  const body = Buffer.from(payload, 'latin1')
  const message = Buffer.alloc(9 + body.length)
  message.write('R', 0)
  message.writeInt32BE(8 + body.length, 1)
  message.writeInt32BE(type, 5)
  body.copy(message, 9)
  return message
}

/** A server that asks for SCRAM-SHA-256, answers the client's first message, and then waits, as PostgreSQL does. */
async function scramServer(): Promise<{url: string; server: Server}> {
  const server = createServer((socket) => {
    let seen = 0
    socket.on('error', () => {})
    socket.on('data', (data) => {
      seen++
      if (seen === 1) socket.write(authentication(10, 'SCRAM-SHA-256\0\0'))
      const nonce = /r=([^,\0]+)/.exec(data.toString('latin1'))?.[1]
      if (seen === 2 && nonce) socket.write(authentication(11, `r=${nonce}server,s=${Buffer.from('salt').toString('base64')},i=4096`))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanup.add(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return {url: `postgres://jarvis@127.0.0.1:${(server.address() as AddressInfo).port}/jarvis`, server}
}

describe('jarvis serve on a PostgreSQL that asks for a password the URL does not give', () => {
  it('exits 1 saying where the password goes, and does not hang', async () => {
    const {url, server} = await scramServer()
    const data = cleanup.dir(await tempDir())
    const run = await runJarvis(['serve', '--database', url, '--port', '0', '--host', '127.0.0.1', '--data', data], {env: {...process.env, PGPASSWORD: ''}})
    expect(run.code, run.stderr).toBe(1)
    expect(run.stderr).toContain('give the password in the URL (postgres://user:password@host/db), in PGPASSWORD, or in ~/.pgpass')
    // Every connection it opened is closed: none is left half-open on the server.
    const open = await new Promise<number>((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))))
    expect(open).toBe(0)
  })
})
