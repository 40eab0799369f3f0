/** `jarvis mcp` on stdio, driven by the SDK's own Client against a real `jarvis serve`. */
import {spawn} from 'node:child_process'
import {readFile, writeFile, mkdir} from 'node:fs/promises'
import {join} from 'node:path'

import {Ajv} from 'ajv'
import {describe, expect, it} from 'vitest'

import {cleanEnv, eventsOnServer, fakeGithubToken} from '../cli/memory-helpers.js'
import {tempDir, TOKENS} from '../helpers/world.js'
import {builtBin, exitOf, makeTree, stdioSession, structured, textOf, TOOL_NAMES, useMcpWorld, whileLocked, type Session} from './helpers.js'

describe('jarvis mcp (stdio)', () => {
  const world = useMcpWorld()
  const {dirs, sessions} = world

  async function open(agent = 'claude'): Promise<{session: Session; tree: string}> {
    const tree = await makeTree(world.server.url, agent)
    dirs.push(tree)
    const session = await stdioSession({cwd: tree, home: world.home, agent})
    sessions.push(session)
    return {session, tree}
  }

  it('lists every tool of the contract, each with an input schema and an output schema that admits a tool error', async () => {
    const {session} = await open()
    const {tools} = await session.client.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort())
    const ajv = new Ajv({strict: false, logger: false})
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).toBe('object')
      expect(tool.outputSchema?.type, tool.name).toBe('object')
      expect(tool.description, tool.name).toBeTruthy()
      const validate = ajv.compile(tool.outputSchema!)
      expect(validate({error: {code: 'SECRET_REFUSED', message: 'refused', exit: 5}}), `${tool.name}: ${JSON.stringify(validate.errors)}`).toBe(true)
    }
    const append = tools.find((tool) => tool.name === 'memory_append')!
    expect(Object.keys(append.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['kind', 'key', 'content', 'scope', 'confidence', 'supersedes', 'ttl_days', 'dedupe_key', 'tags']))
    expect(append.inputSchema.required).toEqual(expect.arrayContaining(['kind', 'content']))
    const snapshot = tools.find((tool) => tool.name === 'memory_snapshot')!
    expect(Object.keys(snapshot.outputSchema?.properties ?? {})).toEqual(expect.arrayContaining(['pinned_md', 'recent_events', 'snapshot_id', 'error']))
  })

  it('an append then a snapshot shows it, written as the session agent through MCP', async () => {
    const {session} = await open()
    const marker = `marker_${Date.now()}`
    const appended = await session.call('memory_append', {kind: 'decision', key: 'decision:mcp_append', content: `Decided over MCP (${marker}).`, tags: ['mcp']})
    expect(appended.isError, textOf(appended)).toBeFalsy()
    const result = structured(appended)
    expect(result).toMatchObject({agent_id: 'claude', status: 'created', events: [{scope: 'global', kind: 'decision', dedupe_key: 'decision:mcp_append'}]})

    const snapshot = await session.call('memory_snapshot', {})
    expect(snapshot.isError, textOf(snapshot)).toBeFalsy()
    const events = structured(snapshot).recent_events as {event_id: string; content_md: string; source: {system: string}}[]
    const mine = events.find((event) => event.event_id === result.event_id)
    expect(mine?.content_md).toContain(marker)
    expect(mine?.content_md).toContain('#mcp')
    expect(structured(snapshot).pinned_md).toContain(marker)
    expect(textOf(snapshot)).toContain(marker)
    const stored = await eventsOnServer(world.server.url, 'claude', {dedupe_key: 'decision:mcp_append'})
    expect(stored.map((event) => event.event_id)).toContain(result.event_id)
  })

  it('a secret in memory_append or memory_write is a tool error with exit 5, and nothing is stored', async () => {
    const {session, tree} = await open()
    const secret = fakeGithubToken()
    const appended = await session.call('memory_append', {kind: 'config', key: 'config:leak_mcp', content: `the token is ${secret}`})
    expect(appended.isError).toBe(true)
    expect(exitOf(appended)).toBe(5)
    expect(structured(appended).error).toMatchObject({code: 'SECRET_REFUSED', exit: 5})
    expect(textOf(appended)).toMatch(/GitHub token/)
    expect(textOf(appended)).not.toContain(secret)
    expect(await eventsOnServer(world.server.url, 'claude', {dedupe_key: 'config:leak_mcp'})).toEqual([])

    const written = await session.call('memory_write', {path: 'notes/leak.md', content: `# Leak\n\nkey ${secret}\n`})
    expect(exitOf(written)).toBe(5)
    expect(textOf(written)).toContain('notes/leak.md')
    await expect(readFile(join(tree, '.memory', 'notes', 'leak.md'), 'utf8')).rejects.toThrow(/ENOENT/)

    // Over an existing file: refused, the file as it was.
    await session.call('memory_write', {path: 'notes/clean.md', content: '# Clean\n\nnothing here\n'})
    const edited = await session.call('memory_edit', {path: 'notes/clean.md', replace: 'nothing here', with: `pw ${secret}`})
    expect(exitOf(edited)).toBe(5)
    expect(await readFile(join(tree, '.memory', 'notes', 'clean.md'), 'utf8')).toBe('# Clean\n\nnothing here\n')
  })

  it('keeps answering after bad input: wrong types, an unknown tool, a 5 MB string', async () => {
    const {session, tree} = await open()
    const wrongType = await session.call('memory_snapshot', {limit_recent: 'many'})
    expect(wrongType.isError).toBe(true)
    expect(exitOf(wrongType)).toBe(2)
    expect(textOf(wrongType)).toMatch(/limit_recent/)

    const wrongKind = await session.call('memory_append', {kind: 'gossip', key: 'x:y', content: 'x'})
    expect(exitOf(wrongKind)).toBe(2)

    const unknown = await session.call('memory_forget_everything', {})
    expect(unknown.isError).toBe(true)
    expect(exitOf(unknown)).toBe(2)

    const huge = 'x'.repeat(5 * 1024 * 1024)
    const bigWrite = await session.call('memory_write', {path: 'notes/huge.md', content: huge})
    expect(exitOf(bigWrite)).toBe(2)
    await expect(readFile(join(tree, '.memory', 'notes', 'huge.md'), 'utf8')).rejects.toThrow(/ENOENT/)
    // Fewer characters than the bound of the input schema, more UTF-8 bytes than a sync sends: refused the same way,
    // by the write or the edit, naming the file and the limit.
    const cjk = '日本語テキスト'.repeat(300_000)
    const cjkWrite = await session.call('memory_write', {path: 'big/mcp.md', content: cjk})
    expect(exitOf(cjkWrite)).toBe(2)
    expect(textOf(cjkWrite)).toMatch(/^\.memory\/big\/mcp\.md: is 6300000 bytes, more than the 4194304 \(4 MiB\) a memory file may hold/)
    await expect(readFile(join(tree, '.memory', 'big', 'mcp.md'), 'utf8')).rejects.toThrow(/ENOENT/)
    expect(structured(await session.call('memory_write', {path: 'big/small.md', content: '# Small\n'}))).toMatchObject({created: true})
    const cjkEdit = await session.call('memory_edit', {path: 'big/small.md', replace: 'Small', with: cjk})
    expect(exitOf(cjkEdit)).toBe(2)
    expect(textOf(cjkEdit)).toContain('.memory/big/small.md: is 6300003 bytes')
    expect(await readFile(join(tree, '.memory', 'big', 'small.md'), 'utf8')).toBe('# Small\n')
    const bigAppend = await session.call('memory_append', {kind: 'fact', key: 'fact:huge', content: huge})
    expect(exitOf(bigAppend)).toBe(2)
    const bigQuery = await session.call('memory_search', {query: huge})
    expect(exitOf(bigQuery)).toBe(2)

    // A bad path and a bad regex are our own refusals, with the command's exit code.
    expect(exitOf(await session.call('memory_read', {path: '../outside.md'}))).toBe(2)
    expect(exitOf(await session.call('memory_grep', {regex: '(['}))).toBe(2)
    expect(exitOf(await session.call('memory_read', {path: 'notes/missing.md'}))).toBe(2)

    // Still answering, and nothing was stored along the way.
    const snapshot = await session.call('memory_snapshot', {})
    expect(snapshot.isError, textOf(snapshot)).toBeFalsy()
    expect((await session.client.listTools()).tools).toHaveLength(TOOL_NAMES.length)
    expect(await eventsOnServer(world.server.url, 'claude', {dedupe_key: 'fact:huge'})).toEqual([])
    expect(session.stderr()).not.toMatch(/at .*\.js:\d+/) // no stack trace
  })

  it('offers the memory files as resources and the instructions as the prompt jarvis_instructions', async () => {
    const {session, tree} = await open()
    await mkdir(join(tree, '.memory', 'projects', 'demo'), {recursive: true})
    await writeFile(join(tree, '.memory', 'projects', 'demo', 'notes.md'), '---\ntitle: Demo notes\n---\nThe build runs on Node 20.\n')
    const {resourceTemplates} = await session.client.listResourceTemplates()
    expect(resourceTemplates.map((template) => template.uriTemplate)).toContain('jarvis://memory/{+path}')
    const {resources} = await session.client.listResources()
    expect(resources).toContainEqual(expect.objectContaining({uri: 'jarvis://memory/projects/demo/notes.md', name: 'projects/demo/notes.md', title: 'Demo notes'}))
    const read = await session.client.readResource({uri: 'jarvis://memory/projects/demo/notes.md'})
    expect(read.contents[0]).toMatchObject({uri: 'jarvis://memory/projects/demo/notes.md', text: expect.stringContaining('Node 20')})
    await expect(session.client.readResource({uri: 'jarvis://memory/../../etc/passwd'})).rejects.toThrow()

    const {prompts} = await session.client.listPrompts()
    expect(prompts.map((prompt) => prompt.name)).toEqual(['jarvis_instructions'])
    const prompt = await session.client.getPrompt({name: 'jarvis_instructions'})
    const text = (prompt.messages[0].content as {text: string}).text
    expect(text).toContain('you are agent "claude"')
    expect(text).toContain('memory_snapshot')
  })

  it('lists each memory file under a URI that reads that file, whatever its name holds (%, #, ?, a space); a missing one is -32002', async () => {
    const {session, tree} = await open()
    const files = {
      'plan 2026.md': 'the REAL plan',
      'plan%202026.md': 'another file',
      'notes/100% done.md': 'everything shipped',
      'notes/C# tips.md': 'prefer records',
      'notes/why?.md': 'because',
    }
    await mkdir(join(tree, '.memory', 'notes'), {recursive: true})
    for (const [path, text] of Object.entries(files)) await writeFile(join(tree, '.memory', path), `${text}\n`)
    const {resources} = await session.client.listResources()
    for (const [path, text] of Object.entries(files)) {
      const listed = resources.find((resource) => resource.name === path)
      expect(listed, path).toBeDefined()
      const read = await session.client.readResource({uri: listed!.uri})
      expect(read.contents, path).toEqual([expect.objectContaining({uri: listed!.uri, text: `${text}\n`})])
      // A URI as a client's own URL parser writes it back, the same string: nothing in it is left raw.
      expect(new URL(listed!.uri).href, path).toBe(listed!.uri)
    }
    await expect(session.client.readResource({uri: 'jarvis://memory/notes/missing.md'})).rejects.toMatchObject({code: -32002, message: expect.stringContaining('no memory file .memory/notes/missing.md')})
  })

  it('finds a file changed on disk after the session started (the watcher), and files, events and recall in one session', async () => {
    const {session, tree} = await open()
    const first = await session.call('memory_search', {query: 'zebrafinch'})
    expect(first.isError, textOf(first)).toBeFalsy()
    expect(structured(first).files.hits).toEqual([])

    await mkdir(join(tree, '.memory', 'notes'), {recursive: true})
    await writeFile(join(tree, '.memory', 'notes', 'birds.md'), '# Birds\n\nThe zebrafinch nests in the server room.\n')
    let hits: {path: string}[] = []
    for (let attempt = 0; attempt < 50 && hits.length === 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      hits = structured(await session.call('memory_search', {query: 'zebrafinch'})).files.hits
    }
    expect(hits.map((hit) => hit.path)).toEqual(['notes/birds.md'])

    // A change to the same file is seen too, and a removed file disappears.
    await writeFile(join(tree, '.memory', 'notes', 'birds.md'), '# Birds\n\nThe kingfisher moved in.\n')
    let after: {path: string}[] = hits
    for (let attempt = 0; attempt < 50 && after.length > 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      after = structured(await session.call('memory_search', {query: 'zebrafinch'})).files.hits
    }
    expect(after).toEqual([])
    const recall = await session.call('recall', {query: 'kingfisher'})
    expect(structured(recall).block).toContain('notes/birds.md')
    const cut = await session.call('recall', {query: 'kingfisher', max_tokens: 16})
    expect(structured(cut).block.length).toBeLessThanOrEqual(64)
  })

  it('works on the tree of --dir from anywhere, and says so when the server is away (exit 3)', async () => {
    const tree = await makeTree('http://127.0.0.1:9', 'gemini')
    dirs.push(tree)
    const elsewhere = await tempDir('jarvis-mcp-cwd-')
    dirs.push(elsewhere)
    const session = await stdioSession({cwd: elsewhere, home: world.home, agent: 'gemini', args: ['--dir', tree]})
    sessions.push(session)
    const written = await session.call('memory_write', {path: 'notes/here.md', content: '# Here\n'})
    expect(written.isError, textOf(written)).toBeFalsy()
    expect(await readFile(join(tree, '.memory', 'notes', 'here.md'), 'utf8')).toBe('# Here\n')
    const snapshot = await session.call('memory_snapshot', {})
    expect(exitOf(snapshot)).toBe(3)
    expect(textOf(snapshot)).toMatch(/cannot be read/)
  })

  it('writes nothing but the protocol to stdout, and exits when the client closes stdin', async () => {
    const tree = await makeTree(world.server.url)
    dirs.push(tree)
    const child = spawn(process.execPath, [builtBin, 'mcp'], {cwd: tree, env: {...process.env, ...cleanEnv(world.home, {JARVIS_TOKEN: TOKENS.claude, DEBUG: 'jarvis:*'})}, stdio: ['pipe', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`)
    send({jsonrpc: '2.0', id: 1, method: 'initialize', params: {protocolVersion: '2025-06-18', capabilities: {}, clientInfo: {name: 'raw', version: '1'}}})
    send({jsonrpc: '2.0', method: 'notifications/initialized'})
    send({jsonrpc: '2.0', id: 2, method: 'tools/call', params: {name: 'memory_search', arguments: {query: 'anything'}}})
    send({jsonrpc: '2.0', id: 3, method: 'tools/call', params: {name: 'memory_ls', arguments: {limit: 'ten'}}})
    child.stdin.write('this line is not JSON\n')
    send({jsonrpc: '2.0', id: 4, method: 'ping'})
    // Closed at once: every call still running is answered before it exits (no clock: not exiting times the test out).
    child.stdin.end()
    expect(await exited).toBe(0)
    const lines = stdout.split('\n').filter(Boolean)
    expect(lines.map((line) => JSON.parse(line).id).sort()).toEqual([1, 2, 3, 4])
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({jsonrpc: '2.0'})
    expect(stderr).toMatch(/jarvis:mcp/) // diagnostics went to stderr
  })

  it('a tree locked by another process is a tool error with exit 6 naming the lock', async () => {
    const {session, tree} = await open()
    await whileLocked(tree, async () => {
      const written = await session.call('memory_write', {path: 'notes/locked.md', content: '# Locked\n'})
      expect(exitOf(written)).toBe(6)
      expect(structured(written).error).toMatchObject({code: 'LOCKED'})
      expect(textOf(written)).toMatch(/locked by process \d+/)
    })
    await expect(readFile(join(tree, '.memory', 'notes', 'locked.md'), 'utf8')).rejects.toThrow(/ENOENT/)
    expect((await session.call('memory_write', {path: 'notes/locked.md', content: '# Locked\n'})).isError).toBeFalsy()
  })

  it('answers the calls still running when the client closes stdin, the write completed and every answer written, before it exits', async () => {
    const tree = await makeTree(world.server.url)
    dirs.push(tree)
    // A large answer too: written whole, not cut off by the exit.
    const large = `# Large\n\n${'a line of a large memory file\n'.repeat(100_000)}`
    await mkdir(join(tree, '.memory', 'notes'), {recursive: true})
    await writeFile(join(tree, '.memory', 'notes', 'large.md'), large)
    const child = spawn(process.execPath, [builtBin, 'mcp'], {cwd: tree, env: {...process.env, ...cleanEnv(world.home, {JARVIS_TOKEN: TOKENS.claude})}, stdio: ['pipe', 'pipe', 'ignore']})
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
    const lines = [
      {jsonrpc: '2.0', id: 1, method: 'initialize', params: {protocolVersion: '2025-06-18', capabilities: {}, clientInfo: {name: 'raw', version: '1'}}},
      {jsonrpc: '2.0', method: 'notifications/initialized'},
      {jsonrpc: '2.0', id: 2, method: 'tools/call', params: {name: 'memory_append', arguments: {kind: 'decision', key: 'decision:last_words', content: 'Decided just before the client went away.'}}},
      {jsonrpc: '2.0', id: 3, method: 'tools/call', params: {name: 'memory_write', arguments: {path: 'notes/last-words.md', content: '# Last words\n'}}},
      {jsonrpc: '2.0', id: 4, method: 'tools/call', params: {name: 'memory_read', arguments: {path: 'notes/large.md'}}},
    ]
    child.stdin.end(lines.map((line) => `${JSON.stringify(line)}\n`).join(''))
    expect(await exited).toBe(0)
    expect(await readFile(join(tree, '.memory', 'notes', 'last-words.md'), 'utf8')).toBe('# Last words\n')
    const [event] = await eventsOnServer(world.server.url, 'claude', {dedupe_key: 'decision:last_words'})
    const answers = new Map(stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as {id: number; result: {isError?: boolean; content: {text: string}[]; structuredContent: Record<string, unknown>}}).map((answer) => [answer.id, answer.result]))
    expect([...answers.keys()].sort()).toEqual([1, 2, 3, 4])
    expect(answers.get(2)!.structuredContent).toMatchObject({status: 'created', event_id: event.event_id})
    expect(answers.get(3)!.structuredContent).toMatchObject({path: 'notes/last-words.md', created: true})
    expect(answers.get(4)!.content[0].text === large, 'the large answer is whole').toBe(true)
  })
})
