/**
 * One HTTP request with node:http(s): the global fetch starts undici's WebAssembly parser on its first request
 * (about 25 ms here, more on a slow machine), paid by every networked command. Connections are kept alive for the
 * process (a sync makes several requests) and never keep it from exiting: node unrefs an idle pooled socket.
 */
import {Agent as HttpAgent, request as httpRequest, type IncomingMessage} from 'node:http'
import type {Agent as HttpsAgent} from 'node:https'

export interface HttpAnswer {
  status: number
  text: string
}

const agents: {http: HttpAgent; https?: HttpsAgent} = {http: new HttpAgent({keepAlive: true})}

/** node:https (and TLS behind it, ~2 ms to load) only for a server that asks for it. */
async function transport(secure: boolean): Promise<{request: typeof httpRequest; agent: HttpAgent}> {
  if (!secure) return {request: httpRequest, agent: agents.http}
  const https = await import('node:https')
  agents.https ??= new https.Agent({keepAlive: true})
  return {request: https.request, agent: agents.https}
}

/**
 * An error with the code of what failed (`ECONNREFUSED`, `ETIMEDOUT`, `ABORT_ERR`…), as callers report it. `onSent`:
 * called once the request is handed to the kernel (or has failed), for a caller that then keeps the thread busy: a
 * request still waiting for its connection's turn of the event loop would leave only after that work. `signal`: the
 * request is dropped, its connection closed, when it aborts.
 */
export async function requestText(url: string, options: {method: string; headers: Record<string, string>; body?: string; timeoutMs: number; onSent?: () => void; signal?: AbortSignal}): Promise<HttpAnswer> {
  const target = new URL(url)
  const secure = target.protocol === 'https:'
  const headers = options.body === undefined ? options.headers : {...options.headers, 'content-length': String(Buffer.byteLength(options.body))}
  const {request: send, agent} = await transport(secure)
  return new Promise<HttpAnswer>((resolve, reject) => {
    const request = send(target, {method: options.method, headers, agent, signal: options.signal}, (response: IncomingMessage) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8')}))
      response.on('error', reject)
    })
    request.setTimeout(options.timeoutMs, () => request.destroy(Object.assign(new Error(`no answer within ${options.timeoutMs / 1000} s`), {code: 'ETIMEDOUT'})))
    request.on('error', reject)
    // 'finish' comes when the socket has written the request, so after its connection was made.
    if (options.onSent) {
      request.once('finish', options.onSent)
      request.once('error', options.onSent)
    }
    request.end(options.body)
  })
}
