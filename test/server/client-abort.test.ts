/**
 * A client that goes away in the middle of its upload (a laptop closed, a killed `jarvis sync`) is logged as that, at
 * info: never as "the storage does not answer", which would send an operator looking at a healthy database.
 */
import {request as httpRequest} from 'node:http'
import type {AddressInfo} from 'node:net'
import {PassThrough} from 'node:stream'

import {afterEach, describe, expect, it} from 'vitest'

import {buildServer} from '../../src/server/app.js'
import {openFresh} from '../helpers/backends.js'
import {until} from '../helpers/world.js'
import {Cleanup, makeTokens} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

interface LogLine {
  level: number
  msg: string
  url?: string
  [field: string]: unknown
}

describe('a client that drops mid-upload', () => {
  it.each(['/api/memory/push', '/mcp'])('on %s is logged at info as a client gone, with no storage outage claimed', async (path) => {
    const storage = await openFresh('sqlite', cleanup)
    const {byAgent, map} = makeTokens()
    const log = new PassThrough()
    const lines: LogLine[] = []
    log.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine)
    })
    const app = buildServer({storage, tokens: map, logLevel: 'info', logStream: log})
    // The server has the request and is about to read its body: the moment the client goes away in the repro.
    let reading!: () => void
    const bodyBeingRead = new Promise<void>((resolve) => (reading = resolve))
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (request.url === path) reading()
      return payload
    })
    cleanup.add(() => app.close())
    await app.listen({host: '127.0.0.1', port: 0})
    const {port} = app.server.address() as AddressInfo

    const upload = httpRequest({host: '127.0.0.1', port, path, method: 'POST', headers: {authorization: `Bearer ${byAgent.claude}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': 1_000_000}})
    upload.on('error', () => {}) // the client's own side of the abort
    upload.write(`{"files": {"notes/big.md": "${'x'.repeat(64 * 1024)}`)
    await bodyBeingRead
    upload.destroy()

    const said = await until('what the server says of the request', () => lines.find((line) => /abandoned|refused/.test(line.msg)))
    expect(said).toMatchObject({level: 30, msg: 'request abandoned: the client closed the connection before sending its whole body'})
    expect(lines.filter((line) => line.level >= 40)).toEqual([])
    expect(lines.map((line) => line.msg)).not.toContain('request refused: the storage does not answer')
  })
})
