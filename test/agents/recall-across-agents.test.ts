/**
 * Memory that stays right as the agents use it, proven by the agents themselves: one project, Claude Code, Gemini CLI
 * and Codex CLI installed from npm and wired by `jarvis agents install`, one note that answers a question, and a
 * stand-in model on 127.0.0.1 that records what each agent sends it. Claude Code asks the question first; then
 * Gemini CLI and Codex CLI ask it, three sessions each, as agents do. Every session's answer repeats the note and
 * decides something, so every session leaves an episode behind — the episodes that used to crowd the note out.
 *
 * What a user would notice: each request to the model carries the note, first in the recall for the prompt; no
 * episode holds the question or any context the hooks injected (Gemini CLI puts the session context in front of the
 * prompt it hands its hooks and its transcript); each episode names the note it was given. And each agent's prompt
 * hook is run by that agent's own jarvis mcp, the watch of the tree, so that no Node process starts for it: the
 * user's locale and certificate variables set, which an agent does not all pass to the jarvis mcp it starts.
 */
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, readFile, readdir, realpath, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {WarmAbout} from '../../src/warm/protocol.js'
import {type AgentCli, installAgentCli} from '../helpers/agent-clis.js'
import {codexStandInConfig, type ModelStandIn, standInEnv, startModelStandIn} from '../helpers/model-stand-in.js'
import {removeAll, startTestServer, tempDir, type TestServer, TOKENS} from '../helpers/world.js'
import {assertBuilt, makeProject, type Project, runJarvisBuilt, writeMemory} from '../hook/helpers.js'

const QUESTION = 'How are the Stripe webhooks verified?'
/** Debian's bundle of CA certificates, standing in for a company's. */
const SYSTEM_CERTIFICATES = '/etc/ssl/certs/ca-certificates.crt'
const NOTE = 'notes/billing.md'
const NOTE_TEXT = `---
title: Billing
tags: [billing, stripe]
---
# Billing

Stripe webhooks are verified with the signing secret (whsec) from the dashboard; a failed delivery is retried three times.
`
/** Text only jarvis or an agent writes around a prompt: none of it may end up in an episode. */
const INJECTED = /\[MEMORY CONTEXT\]|\[JARVIS SHARED MEMORY\]|hook_context|system-reminder|shared memory could not be read/

const dirs: string[] = []
const bin: Partial<Record<AgentCli, string>> = {}
let server: TestServer
let model: ModelStandIn
let project: Project
let env: NodeJS.ProcessEnv
/** The agent whose session runs. */
let asking: AgentCli | undefined
/** What `jarvis status` said of the tree's watch while the agents waited for their model, and when its process started. */
const watches: Array<(Partial<WarmAbout> & {started?: number}) | undefined> = []

/**
 * Claude Code and Codex CLI give the MCP servers they start a grace time, then run their hooks without them (measured
 * with a server slow to answer: Codex CLI about 1.05 s from the server's start, Claude Code's prompt hook about 2 s;
 * Gemini CLI waits however long it takes); jarvis then runs the hook in Node, as it must. A watch that answered within
 * this much of its process's start was there for the hooks, and must have run them.
 */
const GRACE_MS: Record<AgentCli, number> = {claude: 1_800, codex: 800, gemini: Infinity}

/** When a process started (ms since the epoch), from /proc: its start in clock ticks (100 a second) after boot. */
async function processStartedAt(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19])
    const uptime = Number((await readFile('/proc/uptime', 'utf8')).split(' ')[0])
    return Date.now() - (uptime - ticks / 100) * 1000
  } catch {
    return undefined // gone already
  }
}

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

function run(file: string, args: string[]): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, {cwd: project.root, env, timeout: 180_000, maxBuffer: 32 * 1024 * 1024}, (error, stdout, stderr) => {
      if (error && typeof error.code === 'string') return reject(error)
      resolve({code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr})
    })
    child.stdin?.end() // Codex reads a piped stdin to its end before it starts
  })
}

const said = (ran: Ran) => `exit ${ran.code}\n--- stdout\n${ran.stdout.slice(-3000)}\n--- stderr\n${ran.stderr.slice(-3000)}`

/** The requests each agent sends its model (Gemini's routing request left out). */
const ENDPOINT: Record<AgentCli, (url: string, body: string) => boolean> = {
  claude: (url) => /\/v1\/messages$/.test(url.split('?')[0]),
  gemini: (url, body) => /:(stream)?[gG]enerateContent$/.test(url.split('?')[0]) && !/complexity_score/.test(body),
  codex: (url) => /\/v1\/responses$/.test(url.split('?')[0]),
}

const ARGS: Record<AgentCli, string[]> = {
  claude: ['-p', QUESTION, '--output-format', 'json', '--max-turns', '1'],
  gemini: ['-p', QUESTION],
  // Codex runs a project's hooks only once the user trusted them (`/hooks` in its terminal UI); this flag is its
  // own way for automation to run hooks it already vetted, the ones `jarvis agents install` wrote here.
  codex: ['exec', '--skip-git-repo-check', '--dangerously-bypass-hook-trust', QUESTION],
}

/** Every string in a JSON request body. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value)) return value.flatMap(stringsOf)
  if (value && typeof value === 'object') return Object.values(value).flatMap(stringsOf)
  return []
}

/** The files named by each recall block (`[MEMORY CONTEXT]`, then `- path` / `  Summary: …` pairs) in the requests. */
function recallBlocksIn(bodies: string[]): string[][] {
  const blocks: string[][] = []
  for (const text of bodies.flatMap((body) => stringsOf(JSON.parse(body) as unknown))) {
    for (const match of text.matchAll(/\[MEMORY CONTEXT\]\n((?:- [^\n]+\n {2}Summary: [^\n]*(?:\n|$))+)/g)) {
      blocks.push([...match[1].matchAll(/^- (.+)$/gm)].map((m) => m[1]))
    }
  }
  return blocks
}

/** One session of `agent` asking the question; what it sent its model. */
async function ask(agent: AgentCli): Promise<{ran: Ran; bodies: string[]}> {
  const before = model.requests.length
  asking = agent
  const ran = await run(bin[agent]!, ARGS[agent]).finally(() => (asking = undefined))
  const bodies = model.requests
    .slice(before)
    .filter((r) => ENDPOINT[agent](r.url, r.body))
    .map((r) => r.body)
  expect(bodies.length, `${agent} sent nothing to its model:\n${said(ran)}`).toBeGreaterThan(0)
  return {ran, bodies}
}

async function episodes(): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  const base = join(project.memory, 'episodes')
  for (const day of await readdir(base).catch(() => [] as string[])) {
    for (const name of await readdir(join(base, day))) out.set(`episodes/${day}/${name}`, await readFile(join(base, day, name), 'utf8'))
  }
  return out
}

beforeAll(async () => {
  assertBuilt()
  server = await startTestServer()
  dirs.push(server.dataDir)
  // Each answer repeats the note and decides something, so the session is recorded (a session that only asked is not).
  model = await startModelStandIn({
    reply: (n) => `Stripe webhooks are verified with the signing secret from the dashboard. We decided to log every failed delivery (answer ${n}).`,
    beforeReply: async (request) => {
      if (asking === undefined || !ENDPOINT[asking](request.url, request.body)) return
      const status = await runJarvisBuilt(['status', '--offline', '--json'], {cwd: project.root, env, installed: true})
      try {
        const watch = JSON.parse(status.stdout).result.watch as Partial<WarmAbout> | undefined
        watches.push(watch && {...watch, started: watch.pid ? await processStartedAt(watch.pid) : undefined})
      } catch {
        watches.push({process: `jarvis status failed (exit ${status.code}): ${status.stderr}`})
      }
    },
  })
  for (const agent of ['claude', 'gemini', 'codex'] as const) bin[agent] = await installAgentCli(agent)

  project = await makeProject(server.url, {agent: 'claude', autoSync: false})
  project = {...project, root: await realpath(project.root), memory: await realpath(project.memory)}
  const home = await realpath(await tempDir('jarvis-recall-agents-home-'))
  dirs.push(project.root, home)
  await writeMemory(project, NOTE, NOTE_TEXT)
  // One user, one token per agent for this server (the user config's `tokens`), as when several agents share a machine.
  await mkdir(join(home, '.config', 'jarvis'), {recursive: true})
  await writeFile(join(home, '.config', 'jarvis', 'config.json'), JSON.stringify({tokens: {[server.url]: {claude: TOKENS.claude, gemini: TOKENS.gemini, chatgpt: TOKENS.chatgpt}}}), {mode: 0o600})
  // Each agent as a user who already works here: the folder trusted where the agent asks, the model a stand-in.
  await writeFile(join(home, '.claude.json'), JSON.stringify({projects: {[project.root]: {hasTrustDialogAccepted: true}}}))
  await mkdir(join(home, '.gemini'), {recursive: true})
  await writeFile(join(home, '.gemini', 'settings.json'), JSON.stringify({security: {auth: {selectedType: 'gemini-api-key'}}, general: {enableAutoUpdate: false, sessionRetention: {enabled: false}}, privacy: {usageStatisticsEnabled: false}}))
  await writeFile(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({[project.root]: 'TRUST_FOLDER'}))
  const codexHome = join(home, '.codex')
  await mkdir(codexHome, {recursive: true})
  await writeFile(join(codexHome, 'config.toml'), codexStandInConfig(model, project.root))
  const keep = ['PATH', 'LANG', 'TMPDIR']
  const base: NodeJS.ProcessEnv = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]))
  env = {
    ...base,
    HOME: home,
    CODEX_HOME: codexHome,
    NO_COLOR: '1',
    CI: '1',
    // A user's locale and company certificates: Codex hands its jarvis mcp LANG and LC_ALL but not LC_CTYPE, and
    // Gemini CLI strips every *CERT* variable. The hooks get them all.
    LANG: 'C.UTF-8',
    LC_CTYPE: 'C.UTF-8',
    ...(existsSync(SYSTEM_CERTIFICATES) ? {NODE_EXTRA_CA_CERTS: SYSTEM_CERTIFICATES} : {}),
    ...standInEnv(model),
  }
  for (const agent of ['claude', 'gemini', 'codex']) {
    const installed = await runJarvisBuilt(['agents', 'install', '--agent', agent], {cwd: project.root, env})
    expect(installed.code, installed.stderr).toBe(0)
  }
}, 900_000)

afterAll(async () => {
  await model?.close()
  await server?.close()
  await removeAll(dirs)
})

describe('the same question in many sessions of three real agents', () => {
  it('after Claude Code asked it, every Gemini CLI and Codex session gets the note first; no episode holds the question or injected text', async () => {
    const order: AgentCli[] = ['claude', 'gemini', 'codex', 'gemini', 'codex', 'gemini', 'codex']
    for (const [i, agent] of order.entries()) {
      const asked = watches.length
      const {ran, bodies} = await ask(agent)
      const why = `session ${i + 1} (${agent}):\n${said(ran)}`
      // While the agent waited for its model, its own jarvis mcp watched the tree and had run its prompt hook (Gemini
      // CLI's pre-compress hook too) when it was up within the agent's grace time, and had left none to a Node process.
      const seen = watches.slice(asked)
      expect(seen.length, why).toBeGreaterThan(0)
      for (const watch of seen) {
        expect(watch, why).toMatchObject({process: `jarvis mcp --agent ${agent === 'codex' ? 'chatgpt' : agent}`, declined: 0})
        const answeredAfter = watch!.since && watch!.started !== undefined ? Date.parse(watch!.since) - watch!.started : Infinity
        if (answeredAfter <= GRACE_MS[agent]) expect(watch!.ran, `${why}\nwatch up ${answeredAfter} ms after its start`).toBeGreaterThanOrEqual(1)
      }
      // The session started with the memory read, not with the notice that it could not be.
      expect(bodies.join('\n'), why).toContain('[JARVIS SHARED MEMORY]')
      const blocks = recallBlocksIn(bodies)
      expect(blocks.length, `${why}\nno recall for the prompt reached the model`).toBeGreaterThan(0)
      // The recall for the prompt: the note first, however many sessions asked before.
      for (const block of blocks) expect(block[0], `${why}\nrecall: ${block.join(', ')}`).toBe(NOTE)
      expect(bodies.join('\n')).toContain('verified with the signing secret (whsec) from the dashboard')
    }

    const written = await episodes()
    // Every session decided something: one episode each (Claude Code's Stop and SessionEnd update the same one).
    expect(written.size, [...written.keys()].join('\n')).toBe(order.length)
    for (const [path, text] of written) {
      expect(text, path).not.toMatch(INJECTED)
      expect(text, path).not.toContain(QUESTION)
      expect(text, path).toContain(`## Memory used\n- ${NOTE}`)
      expect(text, path).toContain('## Decided\n- We decided to log every failed delivery')
    }
    expect(await readFile(join(project.root, '.nexus', 'hooks.log'), 'utf8').catch(() => '')).toBe('')
  }, 1_800_000)
})
