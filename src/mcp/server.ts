/**
 * The MCP server of both doors: the tool table (tools.ts), the memory files as resources
 * (`jarvis://memory/<path>`) and the shared-memory instructions as the prompt `jarvis_instructions`, over a backend.
 * The transports (stdio.ts for `jarvis mcp`, server/routes/mcp.ts for `/mcp`) connect it.
 */
import {McpServer, ResourceTemplate} from '@modelcontextprotocol/sdk/server/mcp.js'
import {CallToolRequestSchema, type CallToolResult, McpError} from '@modelcontextprotocol/sdk/types.js'
import createDebug from 'debug'

import {BadInputError, ExitCode, isJarvisError} from '../errors.js'
import {MemoryFileNotFoundError} from '../files/index.js'
import {jarvisVersion} from '../invocation.js'
import type {McpBackend} from './backend.js'
import {publishedOutput, type ToolErrorContent} from './schemas.js'
import {TOOLS} from './tools.js'

const debug = createDebug('jarvis:mcp')

export const SERVER_NAME = 'jarvis'
export const RESOURCE_PREFIX = 'jarvis://memory/'
export const PROMPT_NAME = 'jarvis_instructions'
/**
 * The JSON-RPC error of a resource that does not exist, as the specification of every protocol version the SDK
 * speaks (up to 2025-11-25) names it; the SDK has no constant for it (SEP-2164 moves it to -32602 from 2026-07-28).
 */
export const RESOURCE_NOT_FOUND = -32002
/** Resources listed at most (the rest stay readable by URI and through memory_ls). */
export const MAX_LISTED_RESOURCES = 1000
/** `data` of an error larger than this (JSON) is left out of the structured content. */
const MAX_ERROR_DATA_CHARS = 8 * 1024

export interface McpServerOptions {
  version: string
  /** Said to the client at initialize: what this server is. */
  instructions?: string
  /** Tool calls still running are kept here, so that a session that ends can let them finish (a write completes). */
  inflight?: Set<Promise<unknown>>
  /**
   * The most bytes of JSON one answer may be, when the transport's client reads no more of one message (stdio). A
   * tool's answer over it is sent as a tool error (exit 2) saying so, a resource's as a protocol error: either way the
   * session goes on, where a message the client cannot read closes it.
   */
  maxAnswerBytes?: number
}

/** The structured `error` of a tool error: the command's message and exit code (CONTRACT §2). */
export function errorContent(error: unknown): ToolErrorContent {
  if (isJarvisError(error)) {
    const content: ToolErrorContent = {code: error.code, message: error.message, exit: error.exit}
    const data = jsonSafe(error.data)
    if (data !== undefined && Object.keys(data).length > 0) content.data = data
    return content
  }
  const message = error instanceof Error ? error.message : String(error)
  return {code: 'FAILED', message, exit: ExitCode.failed}
}

function jsonSafe(data: Record<string, unknown>): Record<string, unknown> | undefined {
  try {
    const text = JSON.stringify(data)
    return text.length <= MAX_ERROR_DATA_CHARS ? (JSON.parse(text) as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** A refused or failed call: `isError`, the message as text, `{error: {code, message, exit}}` as structured content. */
export function toolError(error: unknown): CallToolResult {
  const content = errorContent(error)
  return {isError: true, content: [{type: 'text', text: content.message}], structuredContent: {error: content}}
}

/**
 * The SDK answers a call it refuses itself (arguments that fail the input schema, an unknown tool) with a text-only
 * tool error; this gives it the same structured `error` as ours, as bad input (exit 2).
 */
function withStructuredError(result: CallToolResult): CallToolResult {
  if (!result.isError || result.structuredContent !== undefined) return result
  const message = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n') || 'the call failed'
  const badInput = /^(Input validation error|Tool .* not found|Tool .* disabled|MCP error -32602)/.test(message)
  const content: ToolErrorContent = badInput ? {code: 'BAD_INPUT', message, exit: ExitCode.badInput} : {code: 'FAILED', message, exit: ExitCode.failed}
  return {...result, structuredContent: {error: content}}
}

/** Refuses (BadInputError, exit 2) an answer larger than `max` bytes of JSON, naming what answered and why. */
function checkAnswerSize(answer: unknown, max: number | undefined, what: string): void {
  if (max === undefined) return
  const bytes = Buffer.byteLength(JSON.stringify(answer), 'utf8')
  if (bytes <= max) return
  throw new BadInputError(
    `the answer of ${what} is ${bytes} bytes of JSON, more than the ${max} one message may carry to an MCP client over stdio, so it was not sent (the call itself ran): ask for less (a smaller limit, a narrower prefix, pattern or query), or run the same jarvis command in a shell`,
    {bytes, limit: max},
  )
}

/**
 * The URI of a memory file: each segment of its path percent-encoded, so that a name holding `%`, `#`, `?` or a space
 * reads back that same file (`plan%202026.md` and `plan 2026.md` are two files, two URIs).
 */
export function memoryResourceUri(path: string): string {
  return RESOURCE_PREFIX + path.split('/').map(encodeURIComponent).join('/')
}

/** The path a resource URI names (the template's `{+path}`, still percent-encoded); malformed encoding is left as is (no such file). */
function decodePath(value: string | string[] | undefined): string {
  const raw = Array.isArray(value) ? value.join('/') : (value ?? '')
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

export function createMcpServer(backend: McpBackend, options: McpServerOptions): McpServer {
  const mcp = new McpServer({name: SERVER_NAME, version: options.version}, {instructions: options.instructions})
  // The tool-call handler is installed by the first registerTool below: wrap it as it is installed.
  const low = mcp.server
  const setRequestHandler = low.setRequestHandler.bind(low)
  low.setRequestHandler = ((schema: unknown, handler: (...args: unknown[]) => unknown) =>
    setRequestHandler(
      schema as typeof CallToolRequestSchema,
      schema === CallToolRequestSchema
        ? async (...args: unknown[]) => withStructuredError((await handler(...args)) as CallToolResult)
        : (handler as Parameters<typeof setRequestHandler>[1]),
    )) as typeof low.setRequestHandler

  for (const definition of TOOLS) {
    mcp.registerTool(
      definition.name,
      {
        title: definition.title,
        description: definition.description,
        inputSchema: definition.input,
        outputSchema: publishedOutput(definition.output),
        annotations: definition.annotations,
      },
      async (input: Record<string, unknown>): Promise<CallToolResult> => {
        const call = (async (): Promise<CallToolResult> => {
          try {
            const result = await definition.run(backend, input)
            const structured = definition.structured ? definition.structured(result) : result
            const answer: CallToolResult = {content: [{type: 'text', text: definition.text(result)}], structuredContent: structured as Record<string, unknown>}
            checkAnswerSize(answer, options.maxAnswerBytes, definition.name)
            return answer
          } catch (error) {
            debug('%s failed: %s', definition.name, error instanceof Error ? error.message : String(error))
            return toolError(error)
          }
        })()
        options.inflight?.add(call)
        void call.finally(() => options.inflight?.delete(call))
        return call
      },
    )
  }
  low.setRequestHandler = setRequestHandler as typeof low.setRequestHandler

  mcp.registerResource(
    'memory',
    new ResourceTemplate(`${RESOURCE_PREFIX}{+path}`, {
      list: async () => {
        const {files} = await backend.ls({limit: MAX_LISTED_RESOURCES})
        return {
          resources: files.map((file) => ({uri: memoryResourceUri(file.path), name: file.path, title: file.title, mimeType: 'text/markdown', size: file.size})),
        }
      },
    }),
    {title: 'Memory files', description: 'The Markdown files of .memory/ (long-term memory), by path.', mimeType: 'text/markdown'},
    async (uri, variables) => {
      const path = decodePath(variables.path)
      let file: Awaited<ReturnType<McpBackend['read']>>
      try {
        file = await backend.read({path})
      } catch (error) {
        if (error instanceof MemoryFileNotFoundError) throw new McpError(RESOURCE_NOT_FOUND, error.message, {uri: uri.href})
        throw error
      }
      // The URI as listed, whichever spelling of it was asked for: a client matches the answer to its list by it.
      const listed = memoryResourceUri(file.path)
      const answer = {contents: [{uri: listed, mimeType: 'text/markdown', text: file.text}]}
      checkAnswerSize(answer, options.maxAnswerBytes, listed)
      return answer
    },
  )

  mcp.registerPrompt(
    PROMPT_NAME,
    {title: 'Shared-memory instructions', description: 'How to use the shared memory (jarvis prompt): read it first, look things up, write what was settled, never store secrets.'},
    async () => ({
      description: 'The shared-memory instructions for this agent',
      messages: [{role: 'user', content: {type: 'text', text: await backend.instructions()}}],
    }),
  )
  return mcp
}

/** jarvis's version, for the server info of both doors. */
export const JARVIS_VERSION: string = jarvisVersion()
