/**
 * Embeddings through an OpenAI-compatible `POST /v1/embeddings` (OpenAI, Ollama, LM Studio, llama.cpp, vLLM),
 * and the vectors kept in `.nexus/search/vectors-<model>.json` with the content hash each was computed from:
 * a file is embedded again only when its hash changes, and a different model has its own file.
 */
import createDebug from 'debug'

import {readNexusFile, writeNexusFile} from '../store/nexus-files.js'

const debug = createDebug('jarvis:search')

export interface EmbeddingsConfig {
  /** Base URL (`http://127.0.0.1:11434`, `https://api.openai.com/v1`) or the full `…/embeddings` endpoint. */
  url: string
  model: string
  /** Bearer key; local servers need none. */
  key?: string
  /** Per request. Default 15 s (a batch on a CPU-only local server is slow). */
  timeoutMs?: number
  /** Inputs per request. Default 64. */
  batchSize?: number
}

/** Characters of a file sent for its vector: past this a small local model's context is exceeded anyway. */
export const EMBED_MAX_CHARS = 6000

/** The provider from `JARVIS_EMBEDDINGS_URL`, `JARVIS_EMBEDDINGS_MODEL`, `JARVIS_EMBEDDINGS_KEY`; undefined when not configured. */
export function embeddingsFromEnv(env: NodeJS.ProcessEnv = process.env): EmbeddingsConfig | undefined {
  const url = env.JARVIS_EMBEDDINGS_URL?.trim()
  const model = env.JARVIS_EMBEDDINGS_MODEL?.trim()
  if (!url || !model) return undefined
  return {url, model, key: env.JARVIS_EMBEDDINGS_KEY?.trim() || undefined}
}

export function embeddingsEndpoint(url: string): string {
  const base = url.replace(/\/+$/, '')
  if (/\/embeddings$/.test(base)) return base
  return /\/v\d+$/.test(base) ? `${base}/embeddings` : `${base}/v1/embeddings`
}

export class EmbeddingsUnavailableError extends Error {}

/**
 * The shapes of a provider's answer and of the stored vectors, built at their first use: zod is loaded only when a
 * provider is configured, not by every keyword search (a recall, an agent's prompt).
 */
async function schemas() {
  const {z} = await import('zod')
  return {
    response: z.object({data: z.array(z.object({embedding: z.array(z.number()), index: z.number().int().optional()}))}),
    vectors: z.object({version: z.literal(1), model: z.string(), files: z.record(z.string(), z.object({hash: z.string(), vector: z.string()}))}),
  }
}

/** Vectors for `inputs`, in order, in batches. Any failure (network, timeout, status, shape) → EmbeddingsUnavailableError. */
export async function embed(config: EmbeddingsConfig, inputs: string[], onBatch?: (done: Float32Array[], from: number) => void): Promise<Float32Array[]> {
  const endpoint = embeddingsEndpoint(config.url)
  const batchSize = config.batchSize ?? 64
  const out: Float32Array[] = []
  for (let from = 0; from < inputs.length; from += batchSize) {
    const batch = inputs.slice(from, from + batchSize)
    let body: unknown
    try {
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: {'content-type': 'application/json', ...(config.key ? {authorization: `Bearer ${config.key}`} : {})},
        body: JSON.stringify({model: config.model, input: batch}),
        signal: AbortSignal.timeout(config.timeoutMs ?? 15_000),
      })
      if (!res.ok) throw new EmbeddingsUnavailableError(`${endpoint} answered ${res.status} ${res.statusText}`.trim())
      body = await res.json()
    } catch (error) {
      if (error instanceof EmbeddingsUnavailableError) throw error
      const cause = (error as {cause?: {code?: string; message?: string; errors?: Array<{code?: string}>}}).cause
      const code = cause?.code ?? cause?.errors?.find((e) => e.code)?.code
      const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${config.timeoutMs ?? 15_000} ms` : (code ?? cause?.message ?? (error as Error).message)
      throw new EmbeddingsUnavailableError(`${endpoint}: ${reason}`)
    }
    const parsed = (await schemas()).response.safeParse(body)
    if (!parsed.success || parsed.data.data.length !== batch.length) throw new EmbeddingsUnavailableError(`${endpoint}: not an embeddings response for ${batch.length} inputs`)
    const ordered = [...parsed.data.data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0))
    const vectors = ordered.map((d) => Float32Array.from(d.embedding))
    out.push(...vectors)
    onBatch?.(vectors, from)
  }
  return out
}

/** File name of a model's vectors: the model name made safe for a path, plus a short hash so names never collide. */
export function vectorsFile(model: string): string {
  let h = 0
  for (const ch of model) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0
  return `search/vectors-${model.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 60)}-${h.toString(16)}.json`
}

interface StoredVector {
  hash: string
  vector: Float32Array
  norm: number
}

function normOf(v: Float32Array): number {
  let s = 0
  for (let i = 0; i < v.length; i++) s += v[i] * v[i]
  return Math.sqrt(s)
}

const toBase64 = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
function fromBase64(text: string): Float32Array {
  const bytes = Buffer.from(text, 'base64')
  const copy = new Uint8Array(bytes) // aligned copy
  return new Float32Array(copy.buffer, 0, Math.floor(copy.byteLength / 4))
}

/** One model's vectors for one tree. */
export class VectorStore {
  private constructor(
    readonly root: string,
    readonly model: string,
    readonly vectors: Map<string, StoredVector>,
  ) {}

  static async load(root: string, model: string): Promise<VectorStore> {
    const text = await readNexusFile(root, vectorsFile(model)).catch(() => null)
    const vectors = new Map<string, StoredVector>()
    if (text !== null) {
      try {
        const parsed = (await schemas()).vectors.parse(JSON.parse(text))
        if (parsed.model === model) {
          for (const [path, {hash, vector}] of Object.entries(parsed.files)) {
            const v = fromBase64(vector)
            vectors.set(path, {hash, vector: v, norm: normOf(v)})
          }
        }
      } catch (error) {
        debug('vectors of %s unreadable, embedding again: %s', model, (error as Error).message)
      }
    }
    return new VectorStore(root, model, vectors)
  }

  /** Paths (of `current`, path → hash) with no vector for their current hash. Drops vectors of removed files. */
  stale(current: Map<string, string>): string[] {
    for (const path of [...this.vectors.keys()]) if (!current.has(path)) this.vectors.delete(path)
    return [...current].filter(([path, hash]) => this.vectors.get(path)?.hash !== hash).map(([path]) => path)
  }

  set(path: string, hash: string, vector: Float32Array): void {
    this.vectors.set(path, {hash, vector, norm: normOf(vector)})
  }

  async save(): Promise<void> {
    const files = Object.fromEntries([...this.vectors].map(([path, {hash, vector}]) => [path, {hash, vector: toBase64(vector)}]))
    await writeNexusFile(this.root, vectorsFile(this.model), JSON.stringify({version: 1, model: this.model, files}))
  }

  /** Paths by cosine similarity to `query`, best first. */
  rank(query: Float32Array, paths: string[], limit: number): Array<{path: string; score: number}> {
    const qn = normOf(query) || 1
    const scored: Array<{path: string; score: number}> = []
    for (const path of paths) {
      const stored = this.vectors.get(path)
      if (!stored || stored.vector.length !== query.length) continue
      let dot = 0
      for (let i = 0; i < query.length; i++) dot += query[i] * stored.vector[i]
      scored.push({path, score: dot / (qn * (stored.norm || 1))})
    }
    return scored.sort((a, b) => b.score - a.score).slice(0, limit)
  }
}
