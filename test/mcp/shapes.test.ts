/**
 * Every tool in every shape its result can take, called as an agent calls it: through the SDK's own Client, which
 * lists the tools first and from then on checks each result against the tool's published output schema (a result
 * with a field the schema does not list is error -32602 in every real agent). Over both doors: `jarvis mcp` spawned
 * from the built bin (stdio) and `/mcp` on a real `jarvis serve`. The calls use the design's argument names of the
 * file tools: memory_ls(prefix, limit), memory_read(path), memory_write(path, content, tags?, metadata?),
 * memory_edit(path, patch), memory_grep(pattern, prefix?, limit?).
 */
import {mkdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {AjvJsonSchemaValidator} from '@modelcontextprotocol/sdk/validation/ajv'
import {describe, expect, it} from 'vitest'

import {parseMemoryFile} from '../../src/files/index.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {MAX_FILE_BYTES} from '../../src/schemas/file-size.js'
import {hashText, initTree, readConfig} from '../../src/store/index.js'
import {fakeGithubToken} from '../cli/memory-helpers.js'
import {startTestServer, tempDir, TOKENS} from '../helpers/world.js'
import {exitOf, httpSession, makeTree, stdioSession, structured, textOf, TOOL_NAMES, useMcpWorld, whileLocked, type Session} from './helpers.js'

const PLAN = ['# Plan', '', 'line one', 'line two', 'line three', 'line four', 'line five', ''].join('\n')
/** A unified diff of PLAN, as `diff -u` prints it: line two becomes line 2. */
const PLAN_DIFF = ['--- a/notes/plan.md', '+++ b/notes/plan.md', '@@ -3,3 +3,3 @@', ' line one', '-line two', '+line 2', ' line three', ''].join('\n')

/** The design's argument names of the file tools (and the event tools' own), as each tool must publish them. */
const DESIGN_ARGUMENTS: Record<string, string[]> = {
  memory_ls: ['prefix', 'limit'],
  memory_read: ['path'],
  memory_write: ['path', 'content', 'tags', 'metadata'],
  memory_edit: ['path', 'patch'],
  memory_grep: ['pattern', 'prefix', 'limit'],
  sync: ['dry_run'],
}

/** A call that must succeed: the result, its structured content checked by the client against the listed schema. */
async function ok(session: Session, name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const result = await session.call(name, args)
  expect(result.isError, `${name} ${JSON.stringify(args)}: ${textOf(result)}`).toBeFalsy()
  return structured(result)
}

/** memory_read, which must succeed: its structured content, the file's text (its text content) and the body of that text. */
async function read(session: Session, path: string): Promise<Record<string, any> & {text: string; body: string}> {
  const result = await session.call('memory_read', {path})
  expect(result.isError, `memory_read ${path}: ${textOf(result)}`).toBeFalsy()
  const text = textOf(result)
  return {...structured(result), text, body: parseMemoryFile(path, text).body}
}

/** A call that must be refused with `exit`: the error's structured content, checked against the listed schema too. */
async function refused(session: Session, name: string, args: Record<string, unknown>, exit: number): Promise<{code: string; message: string; exit: number; data?: Record<string, any>}> {
  const result = await session.call(name, args)
  expect(result.isError, `${name} ${JSON.stringify(args)} should be refused: ${textOf(result)}`).toBe(true)
  expect(exitOf(result), `${name}: ${textOf(result)}`).toBe(exit)
  return structured(result).error
}

describe('every tool in every result shape, through a client that listed the tools first', () => {
  const world = useMcpWorld()
  const {dirs, sessions} = world

  async function stdio(options: {agent?: string; server?: string; tree?: string} = {}): Promise<{session: Session; tree: string}> {
    const tree = options.tree ?? (await makeTree(options.server ?? world.server.url, options.agent ?? 'claude'))
    dirs.push(tree)
    const session = await stdioSession({cwd: tree, home: world.home, agent: options.agent ?? 'claude'})
    sessions.push(session)
    return {session, tree}
  }

  async function http(agent = 'claude'): Promise<Session> {
    const session = await httpSession(world.server.url, TOKENS[agent])
    sessions.push(session)
    return session
  }

  const onDisk = (tree: string, path: string) => readFile(join(tree, '.memory', ...path.split('/')), 'utf8').catch(() => null)
  async function putOnDisk(tree: string, path: string, text: string): Promise<void> {
    await mkdir(join(tree, '.memory', ...path.split('/').slice(0, -1)), {recursive: true})
    await writeFile(join(tree, '.memory', ...path.split('/')), text)
  }

  describe.each(['stdio', '/mcp'] as const)('over %s', (door) => {
    it('publishes schemas the client can check, with the design\'s argument names, and a result with an unlisted field fails that check', async () => {
      const session = door === 'stdio' ? (await stdio()).session : await http()
      expect(session.tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES].sort())
      const validator = new AjvJsonSchemaValidator()
      for (const tool of session.tools) {
        const check = validator.getValidator(tool.outputSchema!)
        expect(check({error: {code: 'LOCKED', message: 'locked', exit: 6}}).valid, tool.name).toBe(true)
        // The check bites: a field the schema does not list is refused, as `waiting` was. Only the snapshot admits
        // any field (a newer server may send more).
        expect(check({not_a_field_of_this_result: 1}).valid, tool.name).toBe(tool.name === 'memory_snapshot')
        const names = Object.keys(tool.inputSchema.properties ?? {})
        expect(names, tool.name).toEqual(expect.arrayContaining(DESIGN_ARGUMENTS[tool.name] ?? []))
        // Every design name can be sent alone: none of the optional ones is required by the published schema.
        for (const name of names) if (!['path', 'content', 'query', 'kind', 'type'].includes(name)) expect(tool.inputSchema.required ?? [], `${tool.name}.${name}`).not.toContain(name)
      }
    })

    it('the file tools: list, write, read, edit by patch or diff, grep by pattern; each success and each refusal', async () => {
      const {session, tree} = door === 'stdio' ? await stdio() : {session: await http(), tree: undefined}
      const dir = `shapes-${door === 'stdio' ? 'local' : 'hosted'}-${Date.now()}`
      const plan = `${dir}/plan.md`

      expect(await ok(session, 'memory_ls', {prefix: `${dir}/`, limit: 10})).toEqual({prefix: `${dir}/`, files: []})
      const created = await ok(session, 'memory_write', {path: plan, content: PLAN, tags: ['plan'], metadata: {project: 'demo', owner: 'claude'}})
      expect(created).toMatchObject({path: plan, created: true, changed: true})
      const first = await read(session, plan)
      expect(first.frontMatter).toEqual({project: 'demo', owner: 'claude', tags: ['plan']})
      expect(first.tags).toEqual(['plan'])
      expect(first.body).toBe(PLAN)
      expect(first.hash).toBe(hashText(first.text))
      expect(await ok(session, 'memory_write', {path: plan, content: first.text})).toMatchObject({created: false, changed: false})
      // A list the limit cuts says so, through the published schema the client checks.
      await ok(session, 'memory_write', {path: `${dir}/second.md`, content: '# Second\n'})
      expect(await ok(session, 'memory_ls', {prefix: `${dir}/`, limit: 1})).toMatchObject({files: [{path: plan}], truncated: true})
      expect((await ok(session, 'memory_ls', {prefix: `${dir}/`, limit: 2})).truncated).toBeUndefined()

      // memory_edit(path, patch): a string replacement, then a unified diff; the old names still work.
      expect(await ok(session, 'memory_edit', {path: plan, patch: {replace: 'line one', with: 'line 1'}})).toMatchObject({path: plan})
      const diff = PLAN_DIFF.replace(' line one', ' line 1').replaceAll('notes/plan.md', plan)
      expect(await ok(session, 'memory_edit', {path: plan, patch: diff})).toMatchObject({path: plan})
      expect(await ok(session, 'memory_edit', {path: plan, replace: 'line three', with: 'line 3'})).toMatchObject({path: plan})
      const edited = await read(session, plan)
      expect(edited.body).toBe(PLAN.replace('line one', 'line 1').replace('line two', 'line 2').replace('line three', 'line 3'))
      // A diff made from another text does not apply: refused, the file as it was.
      expect((await refused(session, 'memory_edit', {path: plan, patch: PLAN_DIFF.replaceAll('notes/plan.md', plan)}, 2)).message).toMatch(/does not apply/)
      await refused(session, 'memory_edit', {path: plan, patch: 'make line four shorter'}, 2)
      await refused(session, 'memory_edit', {path: plan}, 2)
      expect((await read(session, plan)).text).toBe(edited.text)

      // With the hash read: merged with a change made meanwhile, refused where the changes overlap.
      const theirs = edited.text.replace('line 1', 'line 1 (theirs)')
      await (tree ? putOnDisk(tree, plan, theirs) : new MemoryClient({server: world.server.url, token: TOKENS.gemini}).push({[plan]: theirs}))
      expect(await ok(session, 'memory_edit', {path: plan, patch: {replace: 'line four', with: 'line 4'}, base_hash: edited.hash})).toMatchObject({merged: true, hash: expect.stringMatching(/^[0-9a-f]{64}$/)})
      expect(await ok(session, 'memory_write', {path: plan, content: `${edited.text}more\n`, base_hash: edited.hash})).toMatchObject({merged: true, changed: true})
      const overlap = await refused(session, 'memory_edit', {path: plan, patch: {replace: 'line 1', with: 'line one, mine'}, base_hash: edited.hash}, 4)
      expect(overlap.code).toBe('CONFLICT_LEFT')
      const merged = await read(session, plan)
      expect(merged.body).toBe(`${PLAN.replace('line one', 'line 1 (theirs)').replace('line two', 'line 2').replace('line three', 'line 3').replace('line four', 'line 4')}more\n`)

      // memory_grep(pattern, prefix?, limit?): hits, none, the old name `regex`, a bad pattern.
      const lineOf = (text: string) => merged.text.split('\n').indexOf(text) + 1
      expect(await ok(session, 'memory_grep', {pattern: 'line [0-9]$', prefix: `${dir}/`, limit: 2})).toEqual({regex: 'line [0-9]$', prefix: `${dir}/`, hits: [{path: plan, line: lineOf('line 2'), text: 'line 2'}, {path: plan, line: lineOf('line 3'), text: 'line 3'}]})
      expect((await ok(session, 'memory_grep', {pattern: 'no such line anywhere', prefix: `${dir}/`})).hits).toEqual([])
      expect((await ok(session, 'memory_grep', {regex: 'LINE 4', ignore_case: true, prefix: `${dir}/`})).hits).toEqual([{path: plan, line: lineOf('line 4'), text: 'line 4'}])
      expect((await refused(session, 'memory_grep', {pattern: '(['}, 2)).message).toMatch(/regular expression/)
      expect((await refused(session, 'memory_grep', {prefix: `${dir}/`}, 2)).message).toMatch(/pattern/)

      // A listing with a file whose front matter does not parse: listed, with its problem.
      const broken = `${dir}/broken.md`
      if (tree) await putOnDisk(tree, broken, '---\ntitle: [unclosed\n---\nbody\n')
      else await new MemoryClient({server: world.server.url, token: TOKENS.gemini}).push({[broken]: '---\ntitle: [unclosed\n---\nbody\n'})
      const listed = await ok(session, 'memory_ls', {prefix: `${dir}/`})
      expect(listed.files.map((file: {path: string}) => file.path)).toEqual([broken, plan, `${dir}/second.md`])
      expect(listed.files[0].problem).toBeTruthy()
      expect(listed.files[1]).toMatchObject({tags: ['plan'], size: expect.any(Number), updatedAt: expect.any(String)})

      // Refusals: a missing file, a bad path, a secret (nothing written).
      await refused(session, 'memory_read', {path: `${dir}/missing.md`}, 2)
      await refused(session, 'memory_read', {path: '../outside.md'}, 2)
      expect((await refused(session, 'memory_write', {path: `${dir}/leak.md`, content: `key ${fakeGithubToken()}\n`}, 5)).code).toBe('SECRET_REFUSED')
      await refused(session, 'memory_read', {path: `${dir}/leak.md`}, 2)
      if (tree) {
        await whileLocked(tree, async () => {
          expect((await refused(session, 'memory_write', {path: `${dir}/locked.md`, content: '# Locked\n'}, 6)).code).toBe('LOCKED')
        })
        expect(await onDisk(tree, `${dir}/locked.md`)).toBeNull()
      }
    })

    it('reads the largest files a sync allows, of characters JSON escapes or of multi-byte ones; an answer too large for the client is a tool error', async () => {
      const {session, tree} = door === 'stdio' ? await stdio() : {session: await http(), tree: undefined}
      const dir = `large-${door === 'stdio' ? 'local' : 'hosted'}-${Date.now()}`
      const put = (path: string, text: string) => (tree ? putOnDisk(tree, path, text) : new MemoryClient({server: world.server.url, token: TOKENS.gemini}).push({[path]: text}))
      // Each 4 MiB of UTF-8, the most a memory file may hold: 8 MiB as a JSON string, and 4 MiB in 1.4 M characters.
      const large = {[`${dir}/escaped.md`]: `${'"\\'.repeat(MAX_FILE_BYTES / 2 - 1)}"\n`, [`${dir}/cjk.md`]: `${'語'.repeat((MAX_FILE_BYTES - 1) / 3)}\n`}
      for (const [path, text] of Object.entries(large)) {
        expect(Buffer.byteLength(text)).toBe(MAX_FILE_BYTES)
        await put(path, text)
        const file = await read(session, path)
        expect(file.text === text, `${path}: the text read is the file`).toBe(true)
        expect(file).toMatchObject({path, tags: [], frontMatter: {}, hash: hashText(text)})
        const resource = await session.client.readResource({uri: `jarvis://memory/${path}`})
        expect((resource.contents[0] as {text: string}).text === text, `${path} as a resource`).toBe(true)
      }

      // 2 MiB of control characters, each 6 bytes as JSON (\u0001): 12 MiB, more than the SDK's client reads of one
      // message on stdio. There the answer is a tool error (exit 2) and the session goes on; over HTTP it is read.
      const controls = `${'\u0001'.repeat(1023)}\n`.repeat(2048)
      await put(`${dir}/controls.md`, controls)
      if (door === 'stdio') {
        expect((await refused(session, 'memory_read', {path: `${dir}/controls.md`}, 2)).message).toMatch(/^the answer of memory_read is \d+ bytes of JSON, more than the 9437184 one message may carry/)
        expect((await refused(session, 'memory_grep', {pattern: '\u0001', prefix: `${dir}/`, limit: 10_000}, 2)).message).toMatch(/ask for less/)
        await expect(session.client.readResource({uri: `jarvis://memory/${dir}/controls.md`})).rejects.toThrow(/bytes of JSON/)
      } else {
        expect((await read(session, `${dir}/controls.md`)).text === controls).toBe(true)
      }
      expect((await ok(session, 'memory_ls', {prefix: `${dir}/`})).files).toHaveLength(3)
    })

    it('the event tools: snapshot, append (created, duplicate, refused), search and recall with and without hits, task_complete', async () => {
      const {session} = door === 'stdio' ? await stdio() : {session: await http()}
      const word = `quokka${door === 'stdio' ? 'local' : 'hosted'}${Date.now()}`
      const appended = await ok(session, 'memory_append', {kind: 'decision', key: `decision:${word}`, content: `We keep the ${word} (decided in a test).`, tags: ['shapes']})
      expect(appended).toMatchObject({status: 'created', events: [{status: 'created', dedupe_key: `decision:${word}`}]})
      // The same event again in one session of `jarvis mcp` (one run) is a duplicate; each call of the stateless /mcp is a run of its own.
      const again = await ok(session, 'memory_append', {kind: 'decision', key: `decision:${word}`, content: `We keep the ${word} (decided in a test).`, tags: ['shapes']})
      expect(again.status).toBe(door === 'stdio' ? 'duplicate' : 'created')
      expect((await refused(session, 'memory_append', {kind: 'config', key: 'config:leak', content: `token ${fakeGithubToken()}`}, 5)).code).toBe('SECRET_REFUSED')

      const snapshot = await ok(session, 'memory_snapshot', {limit_recent: 5})
      expect(snapshot.recent_events.map((event: {event_id: string}) => event.event_id)).toContain(appended.event_id)

      await ok(session, 'memory_write', {path: `notes/${word}.md`, content: `# The ${word}\n\nThe ${word} lives on the roof.\n`})
      const found = await ok(session, 'memory_search', {query: word, limit: 5})
      expect(found.files.hits.map((hit: {path: string}) => hit.path)).toEqual([`notes/${word}.md`])
      expect(found.events.events.map((event: {event_id: string}) => event.event_id)).toContain(appended.event_id)
      const nothing = await ok(session, 'memory_search', {query: `nothing${Date.now()}matches`})
      expect(nothing.files.hits).toEqual([])
      expect(nothing.events.events).toEqual([])
      expect((await ok(session, 'recall', {query: word})).block).toContain(`notes/${word}.md`)
      expect((await ok(session, 'recall', {query: `nothing${Date.now()}matches`})).hits).toEqual([])
      expect((await ok(session, 'recall', {query: word, max_tokens: 16})).block.length).toBeLessThanOrEqual(64)

      const task = await ok(session, 'task_complete', {type: 'review', taskId: `task-${word}`, success: true, filesModified: ['a.ts']})
      expect(task).toMatchObject({queued: false, taskId: `task-${word}`, workerMemory: {recentTasks: expect.arrayContaining([expect.objectContaining({taskId: `task-${word}`})])}})
      // A refusal names the tool and the argument, as the agent gave them (not the command line flags).
      expect((await refused(session, 'task_complete', {type: 'review', taskId: 'task\u0000nul'}, 2)).message).toMatch(/^task_complete: taskId: /)
    })
  })

  describe('over stdio, where the server may be away and the tree has no server at all', () => {
    it('a server that cannot be reached: snapshot, search, task_complete and sync are refused with exit 3; the file tools still work', async () => {
      const {session} = await stdio({server: 'http://127.0.0.1:9', agent: 'gemini'})
      await refused(session, 'memory_snapshot', {}, 3)
      await refused(session, 'memory_search', {query: 'anything'}, 3)
      const queued = await refused(session, 'task_complete', {type: 'review'}, 3)
      expect(queued.data).toMatchObject({queued: true})
      await refused(session, 'sync', {}, 3)
      await ok(session, 'memory_write', {path: 'notes/offline.md', content: '# Offline\n'})
      expect((await ok(session, 'memory_grep', {pattern: 'Offline'})).hits).toHaveLength(1)
    })

    it('a tree with no server: the search answers the files alone and says why', async () => {
      const dir = await tempDir('jarvis-mcp-noserver-')
      await initTree(dir, {agent: 'claude', project: 'demo'})
      const {session} = await stdio({tree: dir})
      await ok(session, 'memory_write', {path: 'notes/alone.md', content: '# Alone\n\nThe wombat sleeps here.\n'})
      const found = await ok(session, 'memory_search', {query: 'wombat'})
      expect(found.files.hits.map((hit: {path: string}) => hit.path)).toEqual(['notes/alone.md'])
      expect(found.events).toBeNull()
      expect(found.notes.length).toBeGreaterThan(0)
    })
  })

  describe('sync over stdio, in each shape of its report', () => {
    it('pushes, then a dry run shows its plan and changes nothing, then a conflict keeps a backup, and the next sync names it as waiting', async () => {
      const {session, tree} = await stdio()
      await putOnDisk(tree, 'notes/plan.md', PLAN)
      const first = await ok(session, 'sync', {})
      expect(first).toMatchObject({pushed: ['notes/plan.md'], conflicts: [], backups: [], waiting: [], dryRun: false})

      await putOnDisk(tree, 'notes/new.md', '# New\n')
      const dry = await ok(session, 'sync', {dry_run: true})
      expect(dry).toMatchObject({dryRun: true, pushed: [], plan: expect.objectContaining({push: ['notes/new.md']})})
      expect(await new MemoryClient({server: world.server.url, token: TOKENS.claude}).pull(['notes/new.md'])).toMatchObject({files: {}})

      // Another client changes line three on the server, and this tree changes it too: the server's side wins.
      const other = new MemoryClient({server: world.server.url, token: TOKENS.gemini})
      await other.push({'notes/plan.md': PLAN.replace('line three', 'line three (server)')})
      await putOnDisk(tree, 'notes/plan.md', PLAN.replace('line three', 'line three (local)'))
      const conflicted = await ok(session, 'sync', {})
      expect(conflicted.conflicts).toEqual([expect.objectContaining({path: 'notes/plan.md'})])
      expect(conflicted.backups).toEqual([{path: 'notes/plan.md', backup: expect.stringContaining('notes/plan')}])
      expect(await onDisk(tree, 'notes/plan.md')).toContain('line three (server)')
      expect(await onDisk(tree, conflicted.backups[0].backup)).toContain('line three (local)')

      const next = await ok(session, 'sync', {})
      expect(next.waiting).toEqual([conflicted.backups[0].backup])
      expect(textOf(await session.call('sync', {}))).toContain(conflicted.backups[0].backup)
    })

    it('runs the configured replicas and reports them', async () => {
      const {session, tree} = await stdio()
      const workspace = await tempDir('jarvis-mcp-openclaw-')
      dirs.push(workspace)
      await writeFile(join(workspace, 'MEMORY.md'), '# OpenClaw memory\n\nThe lighthouse keeper.\n')
      const config = await readConfig(tree)
      await writeFile(join(tree, '.nexus', 'config.json'), JSON.stringify({...config, replicas: [{kind: 'openclaw', path: workspace}]}, null, 2))
      const synced = await ok(session, 'sync', {})
      expect(synced.replicas[0]).toMatchObject({kind: 'openclaw', workspace, changes: [{action: 'to-memory', memoryPath: 'openclaw/MEMORY.md', workspacePath: 'MEMORY.md'}]})
      expect(synced.pushed).toContain('openclaw/MEMORY.md')
    })

    it('refuses with the command\'s exit code: a deletion too large (4), a malformed file (2), a locked tree (6)', async () => {
      // A server of its own: the deletion guard counts every file the tree knows.
      const own = await startTestServer()
      dirs.push(own.dataDir)
      try {
        await refusals(await stdio({server: own.url}))
      } finally {
        await own.close()
      }
    })

    async function refusals({session, tree}: {session: Session; tree: string}): Promise<void> {
      for (const name of ['a', 'b', 'c']) await putOnDisk(tree, `notes/${name}.md`, `# ${name}\n`)
      expect((await ok(session, 'sync', {})).pushed).toHaveLength(3)
      await rm(join(tree, '.memory', 'notes', 'a.md'))
      await rm(join(tree, '.memory', 'notes', 'b.md'))
      const guard = await refused(session, 'sync', {}, 4)
      expect(guard.code).toBe('CONFLICT_LEFT')
      expect(guard.message).toMatch(/--force/)
      await putOnDisk(tree, 'notes/a.md', '# a\n')
      await putOnDisk(tree, 'notes/b.md', '# b\n')

      await putOnDisk(tree, 'settings.json', '{"unclosed": ')
      const invalid = await refused(session, 'sync', {}, 2)
      expect(invalid.message).toContain('settings.json')
      await rm(join(tree, '.memory', 'settings.json'))

      await whileLocked(tree, async () => {
        expect((await refused(session, 'sync', {}, 6)).code).toBe('LOCKED')
      })
      expect((await ok(session, 'sync', {})).conflicts).toEqual([])
    }
  })

  it('over /mcp, sync (a dry run too) is refused clearly: sync runs on a client', async () => {
    const session = await http('gemini')
    expect((await refused(session, 'sync', {}, 2)).message).toMatch(/sync runs on a client/)
    expect((await refused(session, 'sync', {dry_run: true}, 2)).message).toMatch(/sync runs on a client/)
  })
})
