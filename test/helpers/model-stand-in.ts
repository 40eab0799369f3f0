/**
 * A stand-in model on 127.0.0.1 for running the real agent CLIs in tests (agent-wiring research, "Proving it
 * end to end without a model"): it answers the Anthropic Messages API (Claude Code: `ANTHROPIC_BASE_URL`), the
 * Gemini API (Gemini CLI: `GOOGLE_GEMINI_BASE_URL`) and the OpenAI Responses API (Codex CLI: a model provider whose
 * `base_url` is `<url>/v1`) with a fixed short reply, and records every request body, so a test can see exactly
 * what the agent sent to its model.
 */
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

export interface RecordedRequest {
  method: string
  url: string
  headers: IncomingMessage['headers']
  /** The raw body text. */
  body: string
}

export interface ModelStandIn {
  url: string
  requests: RecordedRequest[]
  /** Every recorded body that reached a model endpoint (messages, generateContent, streamGenerateContent, responses), joined. */
  modelBodies(): string
  close(): Promise<void>
}

const sse = (res: ServerResponse, events: Array<[string | undefined, unknown]>) => {
  res.writeHead(200, {'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive'})
  for (const [event, data] of events) res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`)
  res.end()
}

const json = (res: ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, {'content-type': 'application/json'})
  res.end(JSON.stringify(value))
}

/** Anthropic Messages API: a streamed (SSE) or plain reply with one text block. */
function anthropic(res: ServerResponse, body: {stream?: boolean; model?: string}, reply: string): void {
  const model = body.model ?? 'claude-stand-in'
  const id = `msg_standin_${Date.now()}`
  const usage = {input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0}
  if (!body.stream) {
    json(res, 200, {id, type: 'message', role: 'assistant', model, content: [{type: 'text', text: reply}], stop_reason: 'end_turn', stop_sequence: null, usage})
    return
  }
  sse(res, [
    ['message_start', {type: 'message_start', message: {id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage}}],
    ['content_block_start', {type: 'content_block_start', index: 0, content_block: {type: 'text', text: ''}}],
    ['content_block_delta', {type: 'content_block_delta', index: 0, delta: {type: 'text_delta', text: reply}}],
    ['content_block_stop', {type: 'content_block_stop', index: 0}],
    ['message_delta', {type: 'message_delta', delta: {stop_reason: 'end_turn', stop_sequence: null}, usage: {output_tokens: 5}}],
    ['message_stop', {type: 'message_stop'}],
  ])
}

/** A Gemini answer; the router's classification request (it asks for a JSON complexity score) gets one. */
function geminiCandidate(requestBody: string, reply: string) {
  const text = /complexity_score|complexity_reasoning/.test(requestBody) ? JSON.stringify({complexity_reasoning: 'A simple request.', complexity_score: 10}) : reply
  return {
    candidates: [{content: {role: 'model', parts: [{text}]}, finishReason: 'STOP', index: 0}],
    usageMetadata: {promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15},
    modelVersion: 'gemini-stand-in',
  }
}

/** OpenAI Responses API, streamed (SSE): one assistant message holding the reply. */
function responses(res: ServerResponse, body: {model?: string}, reply: string): void {
  const id = `resp_standin_${Date.now()}`
  const model = body.model ?? 'gpt-stand-in'
  const item = {type: 'message', id: `msg_standin_${Date.now()}`, role: 'assistant', status: 'completed', content: [{type: 'output_text', text: reply, annotations: []}]}
  const usage = {input_tokens: 10, input_tokens_details: {cached_tokens: 0}, output_tokens: 5, output_tokens_details: {reasoning_tokens: 0}, total_tokens: 15}
  sse(res, [
    ['response.created', {type: 'response.created', response: {id, object: 'response', model, status: 'in_progress', output: []}}],
    ['response.output_item.added', {type: 'response.output_item.added', output_index: 0, item: {...item, status: 'in_progress', content: []}}],
    ['response.output_text.delta', {type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta: reply}],
    ['response.output_item.done', {type: 'response.output_item.done', output_index: 0, item}],
    ['response.completed', {type: 'response.completed', response: {id, object: 'response', model, status: 'completed', output: [item], usage}}],
  ])
}

/**
 * `reply`: the text of every answer, or a function of the answer's number (1, 2, …) when a test needs answers that
 * differ, as a real model's do. `beforeReply`: run before each request is answered, while the agent waits for it
 * (its session, and its jarvis mcp, still running).
 */
export async function startModelStandIn(options: {reply?: string | ((n: number) => string); beforeReply?: (request: RecordedRequest) => Promise<void>} = {}): Promise<ModelStandIn> {
  const replyOf = typeof options.reply === 'function' ? options.reply : () => (options.reply as string | undefined) ?? 'Stand-in model reply.'
  let answers = 0
  const requests: RecordedRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const request = {method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body}
      requests.push(request)
      await options.beforeReply?.(request)
      const path = (req.url ?? '/').split('?')[0]
      let parsed: Record<string, unknown> = {}
      try {
        parsed = body ? (JSON.parse(body) as Record<string, unknown>) : {}
      } catch {
        // not JSON: answered below like any other request
      }
      if (req.method === 'POST' && /\/v1\/messages\/count_tokens$/.test(path)) return json(res, 200, {input_tokens: 10})
      const reply = () => replyOf(++answers)
      if (req.method === 'POST' && /\/v1\/messages$/.test(path)) return anthropic(res, parsed, reply())
      if (req.method === 'POST' && /\/v1\/responses$/.test(path)) return responses(res, parsed, reply())
      if (req.method === 'GET' && /\/v1\/models$/.test(path)) return json(res, 200, {object: 'list', data: [], models: []})
      if (req.method === 'POST' && /:streamGenerateContent$/.test(path)) return sse(res, [[undefined, geminiCandidate(body, reply())]])
      if (req.method === 'POST' && /:generateContent$/.test(path)) return json(res, 200, geminiCandidate(body, reply()))
      if (req.method === 'POST' && /:countTokens$/.test(path)) return json(res, 200, {totalTokens: 10})
      if (req.method === 'POST' && /:(batchEmbedContents|embedContent)$/.test(path)) return json(res, 200, {embeddings: [{values: [0, 0, 0]}]})
      json(res, 404, {error: {type: 'not_found_error', message: `the stand-in model does not serve ${req.method} ${path}`}})
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const {port} = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    modelBodies: () => requests.filter((r) => /\/v1\/messages$|:(stream)?[gG]enerateContent$/.test(r.url.split('?')[0]) || /\/v1\/responses$/.test(r.url.split('?')[0])).map((r) => r.body).join('\n'),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * The environment that points each agent CLI at `model` (agent-wiring research): Claude Code's base URL and a key
 * it accepts, Gemini CLI's, the key the Codex provider of `codexStandInConfig` reads; no update checks, no telemetry.
 */
export function standInEnv(model: Pick<ModelStandIn, 'url'>): NodeJS.ProcessEnv {
  return {
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: ['sk', 'ant', 'stand-in'].join('-'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    GOOGLE_GEMINI_BASE_URL: model.url,
    GEMINI_API_KEY: 'stand-in-key',
    STANDIN_API_KEY: 'stand-in-key',
  }
}

/** `$CODEX_HOME/config.toml` of a user whose Codex talks to `model` (Responses API) and who trusted `project`. */
export function codexStandInConfig(model: Pick<ModelStandIn, 'url'>, project: string): string {
  return [
    'model = "gpt-5.5"',
    'model_provider = "standin"',
    '[model_providers.standin]',
    'name = "stand-in"',
    `base_url = "${model.url}/v1"`,
    'wire_api = "responses"',
    'env_key = "STANDIN_API_KEY"',
    `[projects."${project}"]`,
    'trust_level = "trusted"',
    '',
  ].join('\n')
}
