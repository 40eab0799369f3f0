/**
 * `/mcp` on `jarvis serve`: the same tools behind the same bearer tokens, and the private-scope rule of `/v1/*`:
 * agent B cannot read agent A's private events through any tool, over `/mcp` or over stdio with B's token.
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {describe, expect, it} from 'vitest'
import {request} from 'undici'

import {eventsOnServer, fakeGithubToken} from '../cli/memory-helpers.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {storageFlags, TOKENS} from '../helpers/world.js'
import {exitOf, httpSession, makeTree, stdioSession, structured, textOf, TOOL_NAMES, useMcpWorld, type Session} from './helpers.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'
import {echoEpisode, NOTE, QUESTION} from '../ops/echoes.js'

const MCP_HEADERS = {'content-type': 'application/json', accept: 'application/json, text/event-stream'}
const INITIALIZE = {jsonrpc: '2.0', id: 1, method: 'initialize', params: {protocolVersion: '2025-06-18', capabilities: {}, clientInfo: {name: 'curl', version: '1'}}}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('/mcp on jarvis serve', () => {
    const world = useMcpWorld()
    const {dirs, sessions} = world

    async function http(agent: string): Promise<Session> {
      const session = await httpSession(world.server.url, TOKENS[agent])
      sessions.push(session)
      return session
    }

    async function stdio(agent: string): Promise<{session: Session; tree: string}> {
      const tree = await makeTree(world.server.url, agent)
      dirs.push(tree)
      const session = await stdioSession({cwd: tree, home: world.home, agent})
      sessions.push(session)
      return {session, tree}
    }

    it('answers 401 without a token or with a wrong one, and nothing is run', async () => {
      for (const authorization of [undefined, 'Bearer not-a-token', `Basic ${TOKENS.claude}`]) {
        const answer = await request(`${world.server.url}/mcp`, {method: 'POST', headers: {...MCP_HEADERS, ...(authorization ? {authorization} : {})}, body: JSON.stringify(INITIALIZE)})
        expect(answer.statusCode, authorization).toBe(401)
        expect(answer.headers['www-authenticate']).toMatch(/^Bearer/)
        await answer.body.text()
      }
      await expect(httpSession(world.server.url, 'wrong-token')).rejects.toThrow(/401|unauthorized|not known/i)
      const ok = await request(`${world.server.url}/mcp`, {method: 'POST', headers: {...MCP_HEADERS, authorization: `Bearer ${TOKENS.claude}`}, body: JSON.stringify(INITIALIZE)})
      expect(ok.statusCode).toBe(200)
      expect(JSON.parse(await ok.body.text())).toMatchObject({id: 1, result: {serverInfo: {name: 'jarvis'}}})
    })

    it('lists the same tools with the same schemas as jarvis mcp on stdio', async () => {
      const overHttp = (await (await http('claude')).client.listTools()).tools
      const overStdio = (await (await stdio('claude')).session.client.listTools()).tools
      expect(overHttp.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort())
      expect(overHttp).toEqual(overStdio)
    })

    it('runs the tools on the server as the token\'s agent: append then snapshot, a secret refused with exit 5, sync refused clearly', async () => {
      const session = await http('gemini')
      const marker = `http_${Date.now()}`
      const appended = await session.call('memory_append', {kind: 'fact', dedupe_key: 'fact:mcp_http', content: `Seen over /mcp (${marker}).`})
      expect(appended.isError, textOf(appended)).toBeFalsy()
      expect(structured(appended)).toMatchObject({agent_id: 'gemini', status: 'created'})
      const snapshot = structured(await session.call('memory_snapshot', {}))
      expect(snapshot.recent_events.map((event: {content_md: string}) => event.content_md).join('\n')).toContain(marker)
      expect((await eventsOnServer(world.server.url, 'gemini', {dedupe_key: 'fact:mcp_http'}))[0]).toMatchObject({agent_id: 'gemini'})

      const secret = fakeGithubToken()
      const refused = await session.call('memory_append', {kind: 'config', key: 'config:leak_http', content: `token ${secret}`})
      expect(exitOf(refused)).toBe(5)
      expect(await eventsOnServer(world.server.url, 'gemini', {dedupe_key: 'config:leak_http'})).toEqual([])
      const write = await session.call('memory_write', {path: 'notes/leak-http.md', content: `# x\n${secret}\n`})
      expect(exitOf(write)).toBe(5)
      expect(exitOf(await session.call('memory_read', {path: 'notes/leak-http.md'}))).toBe(2) // not there

      const written = await session.call('memory_write', {path: 'notes/http.md', content: '---\ntitle: Over HTTP\ntags: [web]\n---\nThe pelican checks the dashboard.\n'})
      expect(written.isError, textOf(written)).toBeFalsy()
      expect(structured(await session.call('memory_ls', {prefix: 'notes/'})).files).toContainEqual(expect.objectContaining({path: 'notes/http.md', title: 'Over HTTP', tags: ['web']}))
      expect(structured(await session.call('memory_search', {query: 'pelican'})).files.hits.map((hit: {path: string}) => hit.path)).toEqual(['notes/http.md'])
      expect(structured(await session.call('recall', {query: 'pelican'})).block).toContain('notes/http.md')
      expect(structured(await session.call('memory_grep', {regex: 'pelican'})).hits).toEqual([{path: 'notes/http.md', line: 5, text: 'The pelican checks the dashboard.'}])
      const task = await session.call('task_complete', {type: 'review', taskId: `t-${marker}`})
      expect(structured(task)).toMatchObject({agentId: 'gemini', workerMemory: {workerId: 'gemini'}})
      const sync = await session.call('sync', {})
      expect(exitOf(sync)).toBe(2)
      expect(textOf(sync)).toMatch(/sync runs on a client/)
      const read = await session.client.readResource({uri: 'jarvis://memory/notes/http.md'})
      expect(read.contents[0]).toMatchObject({text: expect.stringContaining('pelican')})
    })

    it('lists each memory file under a URI that reads that file, as over stdio (one code for both doors); a missing one is -32002', async () => {
      const session = await http('claude')
      const files = {'notes/plan 2026.md': 'the REAL plan', 'notes/plan%202026.md': 'another file', 'notes/C# tips.md': 'prefer records'}
      for (const [path, text] of Object.entries(files)) {
        const written = await session.call('memory_write', {path, content: `${text}\n`})
        expect(written.isError, textOf(written)).toBeFalsy()
      }
      const {resources} = await session.client.listResources()
      for (const [path, text] of Object.entries(files)) {
        const listed = resources.find((resource) => resource.name === path)
        expect(listed, path).toBeDefined()
        const read = await session.client.readResource({uri: listed!.uri})
        expect(read.contents, path).toEqual([expect.objectContaining({uri: listed!.uri, text: expect.stringContaining(text)})])
        expect(new URL(listed!.uri).href, path).toBe(listed!.uri)
      }
      await expect(session.client.readResource({uri: 'jarvis://memory/notes/missing.md'})).rejects.toMatchObject({code: -32002})
    })

    it('serves memory_snapshot to the key of an agent outside the four (a CI job): global alone by default', async () => {
      const key = await runJarvis(['serve', 'token', 'create', '--agent', 'ci-bot', '--json', ...storageFlags(world.server)], {env: {...process.env, HOME: world.home}})
      expect(key.code, key.stderr).toBe(0)
      const session = await httpSession(world.server.url, envelope<{token: string}>(key).result!.token)
      sessions.push(session)
      const claude = await http('claude')
      const shared = structured(await claude.call('memory_append', {kind: 'fact', key: 'fact:deploy_day_ci', content: 'Deploys go out on Tuesdays.'}))
      const snapshot = await session.call('memory_snapshot', {})
      expect(snapshot.isError, textOf(snapshot)).toBeFalsy()
      expect(structured(snapshot)).toMatchObject({agent_id: 'ci-bot', scopes: ['global']})
      expect(structured(snapshot).recent_events.map((e: {event_id: string}) => e.event_id)).toContain(shared.event_id)
    })

    it("recall over /mcp ranks as `jarvis recall` does: the note that answers before the sessions that only repeated the question", async () => {
      const session = await http('claude')
      const files = [[NOTE.path, NOTE.text], ...Array.from({length: 12}, (_, n) => echoEpisode(n))]
      for (const [path, content] of files) {
        const written = await session.call('memory_write', {path, content})
        expect(written.isError, textOf(written)).toBeFalsy()
      }
      const recalled = structured(await session.call('recall', {query: QUESTION, limit: 5}))
      expect(recalled.hits.map((hit: {path: string}) => hit.path)[0]).toBe(NOTE.path)

      // Each file is shown by the line that answers the question, not by its first line.
      const staging = '# Staging\n\nThe staging database password rotates monthly.\nThe staging deploy runs every night at 18:00 UTC.\n'
      expect((await session.call('memory_write', {path: 'notes/staging.md', content: staging})).isError).toBeFalsy()
      const block: string = structured(await session.call('recall', {query: 'When does the staging deploy run?'})).block
      expect(block).toContain('- notes/staging.md\n  Summary: “The staging deploy runs every night at 18:00 UTC.”')
    })

    it('keeps answering after bad input over HTTP: wrong types, an unknown tool, a 5 MB string, broken JSON', async () => {
      const session = await http('claude')
      expect(exitOf(await session.call('memory_snapshot', {limit_recent: -3}))).toBe(2)
      expect(exitOf(await session.call('no_such_tool', {}))).toBe(2)
      expect(exitOf(await session.call('memory_write', {path: 'notes/huge.md', content: 'y'.repeat(5 * 1024 * 1024)}))).toBe(2)
      // Fewer characters than the input schema's bound, more UTF-8 bytes than a file may hold: the words of `jarvis mcp`.
      const cjk = await session.call('memory_write', {path: 'notes/huge.md', content: '日本語テキスト'.repeat(300_000)})
      expect(exitOf(cjk)).toBe(2)
      expect(textOf(cjk)).toMatch(/^\.memory\/notes\/huge\.md: is 6300000 bytes, more than the 4194304 \(4 MiB\) a memory file may hold/)
      const broken = await request(`${world.server.url}/mcp`, {method: 'POST', headers: {...MCP_HEADERS, authorization: `Bearer ${TOKENS.claude}`}, body: '{"jsonrpc": "2.0", "id": '})
      expect(broken.statusCode).toBe(400)
      await broken.body.text()
      expect((await session.call('memory_snapshot', {})).isError).toBeFalsy()
      expect(exitOf(await session.call('memory_read', {path: 'notes/huge.md'}))).toBe(2)
    })

    it('stops a regular expression that backtracks without end, and keeps serving every other client meanwhile', async () => {
      const session = await http('claude')
      const written = await session.call('memory_write', {path: 'notes/backtrack.md', content: `# Backtrack\n\n${'a'.repeat(40)}!\n`})
      expect(written.isError, textOf(written)).toBeFalsy()
      expect(structured(await session.call('memory_grep', {regex: '^a+!$'}))).toMatchObject({hits: [{path: 'notes/backtrack.md', line: 3}]})

      const stalled = session.call('memory_grep', {regex: '^(a+)+$'})
      // While it runs, the server answers another agent at once.
      const other = await http('gemini')
      expect((await other.call('memory_ls', {})).isError).toBeFalsy()
      const answer = await stalled
      expect(exitOf(answer)).toBe(2)
      expect(textOf(answer)).toMatch(/was stopped: make it simpler/)
    })

    it('agent B cannot read agent A\'s private events through any tool, resource or prompt, over /mcp or stdio', async () => {
      // The queries name `word`; the private event also holds `marker`, which no answer to B may contain.
      const word = `zanzibar${Date.now()}`
      const marker = `privmarker${Date.now()}`
      const a = await http('claude')
      const written = await a.call('memory_append', {kind: 'config', key: 'config:private_mcp', scope: 'agent:claude', content: `Only claude may read this: ${word} ${marker}.`})
      expect(written.isError, textOf(written)).toBeFalsy()
      // A sees it: the check below can fail.
      expect(JSON.stringify(structured(await a.call('memory_snapshot', {})))).toContain(marker)
      expect(JSON.stringify(structured(await a.call('memory_search', {query: word})))).toContain(marker)

      // B writes to A's private scope: refused as on /v1.
      const b = await http('gemini')
      const intrude = await b.call('memory_append', {kind: 'fact', key: 'fact:intrude', scope: 'agent:claude', content: 'hello'})
      expect(exitOf(intrude)).toBe(2)
      expect(textOf(intrude)).toMatch(/private scope/)

      const {session: bStdio, tree} = await stdio('gemini')
      await mkdir(join(tree, '.memory', 'notes'), {recursive: true})
      await writeFile(join(tree, '.memory', 'notes', 'b.md'), `# B\n\nnothing private here\n`)
      for (const [door, session] of [['/mcp', b], ['stdio', bStdio]] as const) {
        const seen: string[] = []
        const calls: Array<[string, Record<string, unknown>]> = [
          ['memory_snapshot', {}],
          ['memory_snapshot', {scopes: ['global', 'agent:claude']}],
          ['memory_snapshot', {scopes: ['agent:claude'], limit_recent: 500}],
          ['memory_search', {query: word}],
          ['memory_search', {query: word, scope: 'agent:claude'}],
          ['memory_search', {query: word, scope: 'agent:*'}],
          ['memory_search', {query: 'claude may read', kind: 'config'}],
          ['recall', {query: word}],
          ['memory_ls', {}],
          ['memory_grep', {regex: word}],
          ['memory_read', {path: 'jarvis/claude.md'}],
        ]
        for (const [name, args] of calls) {
          const result = await session.call(name, args)
          seen.push(JSON.stringify(result))
          if (name === 'memory_snapshot' && JSON.stringify(args).includes('agent:claude')) {
            expect(result.isError, `${door} ${name}`).toBe(true)
            expect(exitOf(result)).toBe(3)
          }
          if (name === 'memory_search' && args.scope === 'agent:claude') expect(exitOf(result), door).toBe(2)
        }
        seen.push(JSON.stringify(await listAll(session.client)))
        expect(seen.join('\n'), door).not.toContain(marker)
      }
    })
  })

  /** Everything a client can list or get besides tools. */
  async function listAll(client: Client): Promise<unknown[]> {
    const {resources} = await client.listResources()
    const contents = await Promise.all(resources.map((resource) => client.readResource({uri: resource.uri})))
    const prompt = await client.getPrompt({name: 'jarvis_instructions'})
    return [resources, contents, prompt]
  }
})
