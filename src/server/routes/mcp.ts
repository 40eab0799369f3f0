/**
 * `/mcp`: the MCP tools of `jarvis mcp` over Streamable HTTP, behind the same bearer tokens as every route (the
 * app's auth hook answers 401 before this runs). Stateless: each POST is one JSON-RPC exchange on a fresh
 * transport and server (docs/decisions/mcp-sdk.md); the state worth keeping (the file index, the texts read) is
 * the app's HostedState. GET and DELETE (a stream, a session) answer 405: there is no session to stream or end.
 */
import {StreamableHTTPServerTransport} from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import createDebug from 'debug'
import type {FastifyInstance, FastifyReply, FastifyRequest} from 'fastify'

import {HostedBackend} from '../../mcp/hosted.js'
import {createMcpServer, JARVIS_VERSION} from '../../mcp/server.js'
import {hostedServices} from '../mcp/services.js'

const debug = createDebug('jarvis:server:mcp')

export const MCP_PATH = '/mcp'

export function mcpRoutes(app: FastifyInstance, now: () => Date): void {
  app.post(MCP_PATH, async (request, reply) => {
    const {events, memory, hosted} = request.workspace
    const services = hostedServices({agentId: request.agentId, role: request.role, app: request.grant ?? undefined, url: `${request.protocol}://${request.host}`, events, memory})
    const server = createMcpServer(new HostedBackend(services, hosted, now), {version: JARVIS_VERSION})
    const transport = new StreamableHTTPServerTransport({sessionIdGenerator: undefined, enableJsonResponse: true})
    reply.hijack()
    reply.raw.on('close', () => {
      void transport.close()
      void server.close()
    })
    try {
      await server.connect(transport)
      await transport.handleRequest(request.raw, reply.raw, request.body)
    } catch (error) {
      debug('mcp request failed: %s', (error as Error).message)
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, {'content-type': 'application/json'})
        reply.raw.end(JSON.stringify({jsonrpc: '2.0', error: {code: -32603, message: 'internal server error'}, id: null}))
      }
    }
  })

  const noSession = async (_request: FastifyRequest, reply: FastifyReply) =>
    reply
      .code(405)
      .header('allow', 'POST')
      .send({jsonrpc: '2.0', error: {code: -32000, message: 'this MCP endpoint is stateless: send each request as a POST'}, id: null})
  app.get(MCP_PATH, noSession)
  app.delete(MCP_PATH, noSession)
}
