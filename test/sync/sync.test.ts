import {mkdir, readdir, readFile, rename, rm, symlink, utimes, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {ConflictLeftError, ExitCode, JarvisError, UnreachableError} from '../../src/errors.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {readConfig, SYNC_RUNNING_FILE, withTreeLock, writeConfig} from '../../src/store/index.js'
import {runSync} from '../../src/sync/run.js'
import {makeClient, removeAll, startTestServer, tempDir, TOKENS, type TestClient, type TestServer} from '../helpers/world.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

let server: TestServer
const cleanup: string[] = []

async function client(agent = 'claude'): Promise<TestClient> {
  const made = await makeClient(server.url, agent)
  cleanup.push(made.root)
  return made
}

beforeEach(async () => {
  server = await startTestServer()
  cleanup.push(server.dataDir)
})

afterEach(async () => {
  await server.close()
  await removeAll(cleanup.splice(0))
})

/** `c`'s sync (as gemini) with `race` run once between its status and its first push: that push is stale. */
async function syncRacing(c: TestClient, race: () => Promise<unknown>) {
  class Interleaved extends MemoryClient {
    private raced = false
    async push(...args: Parameters<MemoryClient['push']>): ReturnType<MemoryClient['push']> {
      if (!this.raced) {
        this.raced = true
        await race()
      }
      return super.push(...args)
    }
  }
  const config = await readConfig(c.root)
  const racing = new Interleaved({server: server.url, token: TOKENS.gemini})
  try {
    return await withTreeLock(c.root, {timeoutMs: 5000}, () => runSync({root: c.root, client: racing, settings: {...config.sync, retryDelay: 1}}))
  } finally {
    await racing.close()
  }
}

const memo = (lines: string[]) => `${lines.join('\n')}\n`
const base = memo(['# Project', '', '## Decisions', '- one', '- two', '', '## Notes', '- alpha', '- beta'])

function task(id: number, agent = 'claude') {
  return {taskId: `${agent}-${id}`, timestamp: new Date(Date.UTC(2026, 0, 1, 0, id)).toISOString(), type: 'code', input: `do ${id}`, output: 'done', success: true, responseTime: 10, model: 'm', filesModified: []}
}

function worker(agent: string, tasks: ReturnType<typeof task>[], lastActive: string, extra: Record<string, unknown> = {}) {
  return `${JSON.stringify({workerId: agent, modelId: 'model-1', status: 'online', lastActive, totalTasks: tasks.length, successRate: 1, recentTasks: tasks, expertise: {}, context: {lastFiles: [], lastTopics: [], knownIssues: []}, performance: {averageResponseTime: 1, totalTokensUsed: 1, errorRate: 0}, ...extra}, null, 2)}\n`
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('jarvis sync against a real jarvis serve', () => {
    it('pushes a first tree and pulls it into a second one, byte for byte', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('PROJECT_MEMORY.md', base)
      await a.write('projects.json', '{\n  "alpha": {"status": "active"}\n}\n')
      await a.write('episodes/2026-01-02/standup.md', '---\ntitle: standup\n---\nshipped\n')
      const first = await a.sync()
      expect(first.pushed.sort()).toEqual(['PROJECT_MEMORY.md', 'episodes/2026-01-02/standup.md', 'projects.json'])
      const second = await b.sync()
      expect(second.pulled.sort()).toEqual(first.pushed.sort())
      for (const path of first.pushed) expect(await b.read(path)).toBe(await a.read(path))
      const again = await b.sync()
      expect([...again.pushed, ...again.pulled, ...again.merged]).toEqual([])
    })

    it('syncs a tree whose .memory/ is a symlink to a folder kept elsewhere, at every sync', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      const elsewhere = await tempDir('jarvis-memory-elsewhere-')
      cleanup.push(elsewhere)
      await writeFile(join(elsewhere, 'kept.md'), 'kept elsewhere\n')
      await rm(a.memory, {recursive: true})
      await symlink(elsewhere, a.memory)
      expect((await a.sync()).pushed).toEqual(['kept.md'])
      // The second scan reuses the first one's folder hints: it too must look through the link.
      await a.write('later.md', 'written through the link\n')
      expect((await a.sync()).pushed).toEqual(['later.md'])
      expect((await b.sync()).pulled.sort()).toEqual(['kept.md', 'later.md'])
      expect(await readFile(join(elsewhere, 'later.md'), 'utf8')).toBe('written through the link\n')
    })

    it('merges edits to different parts of one Markdown file on two machines, keeping both', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('PROJECT_MEMORY.md', base)
      await a.sync()
      await b.sync()
      await a.write('PROJECT_MEMORY.md', base.replace('- two\n', '- two\n- three (from A)\n'))
      await b.write('PROJECT_MEMORY.md', base.replace('- beta\n', '- beta\n- gamma (from B)\n'))
      await a.sync()
      const merged = await b.sync()
      expect(merged.merged).toEqual(['PROJECT_MEMORY.md'])
      expect(merged.backups).toEqual([])
      await a.sync()
      const text = await a.read('PROJECT_MEMORY.md')
      expect(text).toContain('- three (from A)')
      expect(text).toContain('- gamma (from B)')
      expect(await b.read('PROJECT_MEMORY.md')).toBe(text)
    })

    it('on overlapping Markdown edits keeps the server version and saves the local one as PROJECT_MEMORY.local.bak', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('PROJECT_MEMORY.md', base)
      await a.sync()
      await b.sync()
      const fromA = base.replace('- one\n', '- one, says A\n')
      const fromB = base.replace('- one\n', '- one, says B\n')
      await a.write('PROJECT_MEMORY.md', fromA)
      await b.write('PROJECT_MEMORY.md', fromB)
      await a.sync()
      const result = await b.sync()
      expect(result.backups).toEqual([{path: 'PROJECT_MEMORY.md', backup: 'PROJECT_MEMORY.local.bak'}])
      expect(await b.read('PROJECT_MEMORY.md')).toBe(fromA)
      expect(await b.read('PROJECT_MEMORY.local.bak')).toBe(fromB)
      const audit = await readFile(join(b.root, '.nexus', 'audit.jsonl'), 'utf8')
      expect(audit).toContain('PROJECT_MEMORY.local.bak')
      // A second, different losing edit never overwrites the first backup.
      const fromB2 = fromA.replace('- alpha\n', '- alpha, says B again\n')
      const fromA2 = fromA.replace('- alpha\n', '- alpha, says A again\n')
      await b.write('PROJECT_MEMORY.md', fromB2)
      await a.write('PROJECT_MEMORY.md', fromA2)
      await a.sync()
      await b.sync()
      const backups = (await readdir(b.memory)).filter((name) => name.includes('.local.')).sort()
      expect(backups).toEqual(['PROJECT_MEMORY.local.1.bak', 'PROJECT_MEMORY.local.bak'])
      expect(await b.read('PROJECT_MEMORY.local.1.bak')).toBe(fromB)
      expect(await b.read('PROJECT_MEMORY.local.bak')).toBe(fromB2)
    })

    it('keeps the newest 50 of 60 + 60 recent tasks, identical on every client', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      const c = await client('chatgpt')
      const odd = Array.from({length: 60}, (_, i) => task(2 * i + 1))
      const even = Array.from({length: 60}, (_, i) => task(2 * i))
      await a.write('jarvis/claude.json', worker('claude', odd, '2026-01-02T00:00:00.000Z'))
      await b.write('jarvis/claude.json', worker('claude', even, '2026-01-03T00:00:00.000Z'))
      await a.sync()
      await b.sync()
      await a.sync()
      await c.sync()
      const expected = [...odd, ...even].sort((x, y) => y.timestamp.localeCompare(x.timestamp)).slice(0, 50).map((t) => t.taskId)
      for (const each of [a, b, c]) {
        const memory = JSON.parse((await each.read('jarvis/claude.json'))!)
        expect(memory.recentTasks.map((t: {taskId: string}) => t.taskId)).toEqual(expected)
      }
      expect(await a.read('jarvis/claude.json')).toBe(await b.read('jarvis/claude.json'))
      expect(await c.read('jarvis/claude.json')).toBe(await b.read('jarvis/claude.json'))
    })

    it('merges worker-memory fields: the newer lastActive wins single values, lists are united', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('jarvis/gemini.json', worker('gemini', [task(1)], '2026-01-01T00:00:00.000Z'))
      await a.sync()
      await b.sync()
      await a.write('jarvis/gemini.json', worker('gemini', [task(1), task(2)], '2026-01-05T00:00:00.000Z', {status: 'busy', context: {lastFiles: ['a.ts'], lastTopics: [], knownIssues: []}}))
      await b.write('jarvis/gemini.json', worker('gemini', [task(1), task(3)], '2026-01-04T00:00:00.000Z', {status: 'offline', context: {lastFiles: ['b.ts'], lastTopics: [], knownIssues: []}}))
      await a.sync()
      await b.sync()
      await a.sync()
      const merged = JSON.parse((await b.read('jarvis/gemini.json'))!)
      expect(merged.status).toBe('busy')
      expect(merged.lastActive).toBe('2026-01-05T00:00:00.000Z')
      expect(merged.recentTasks.map((t: {taskId: string}) => t.taskId).sort()).toEqual(['claude-1', 'claude-2', 'claude-3'])
      expect([...merged.context.lastFiles].sort()).toEqual(['a.ts', 'b.ts'])
      expect(await a.read('jarvis/gemini.json')).toBe(await b.read('jarvis/gemini.json'))
    })

    it('merges JSON key by key; a key changed on both sides goes to the server and the local document to the backup', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('projects.json', JSON.stringify({alpha: 1, beta: 1, gamma: 1}, null, 2))
      await a.sync()
      await b.sync()
      await a.write('projects.json', JSON.stringify({alpha: 2, beta: 1, gamma: 1}, null, 2))
      await b.write('projects.json', JSON.stringify({alpha: 1, beta: 3, gamma: 1}, null, 2))
      await a.sync()
      const clean = await b.sync()
      expect(clean.backups).toEqual([])
      expect(JSON.parse((await b.read('projects.json'))!)).toEqual({alpha: 2, beta: 3, gamma: 1})
      await a.sync()
      await a.write('projects.json', JSON.stringify({alpha: 2, beta: 3, gamma: 'a'}, null, 2))
      await b.write('projects.json', JSON.stringify({alpha: 2, beta: 3, gamma: 'b'}, null, 2))
      await a.sync()
      const conflicted = await b.sync()
      expect(conflicted.backups.map((x) => x.backup)).toEqual(['projects.local.bak'])
      expect(JSON.parse((await b.read('projects.json'))!).gamma).toBe('a')
      expect(JSON.parse((await b.read('projects.local.bak'))!).gamma).toBe('b')
    })

    it('syncs deletions the base proves, lets an edit beat a deletion, and guards mass deletions', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      for (const name of ['one', 'two', 'three', 'four']) await a.write(`${name}.md`, `# ${name}\n`)
      await a.sync()
      await b.sync()
      await a.remove('one.md')
      expect((await a.sync()).deleted).toEqual(['one.md'])
      expect((await b.sync()).deleted).toEqual(['one.md'])
      expect(await b.read('one.md')).toBeNull()

      // An edit beats a concurrent deletion.
      await a.remove('two.md')
      await b.write('two.md', '# two, edited\n')
      await a.sync()
      await b.sync()
      await a.sync()
      expect(await a.read('two.md')).toBe('# two, edited\n')

      // Three of four gone at once: stop and ask.
      for (const name of ['two', 'three', 'four']) await a.remove(`${name}.md`)
      const refused = await a.sync().catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(ConflictLeftError)
      expect((refused as JarvisError).exit).toBe(ExitCode.conflictLeft)
      expect(await b.sync()).toMatchObject({deleted: [], pulled: []})
      expect(await b.read('three.md')).toBe('# three\n')
      const forced = await a.sync({force: true})
      expect(forced.deleted.sort()).toEqual(['four.md', 'three.md', 'two.md'])
    })

    it('never deletes anything when the base is lost: the files come back instead', async () => {
      const a = await client('claude')
      await a.write('keep.md', 'keep\n')
      await a.sync()
      await removeAll([join(a.root, '.nexus', 'sync-state.json'), ...['', '-wal', '-shm'].map((suffix) => join(a.root, '.nexus', `base.sqlite${suffix}`))])
      await a.remove('keep.md')
      const result = await a.sync()
      expect(result.deleted).toEqual([])
      expect(await a.read('keep.md')).toBe('keep\n')
    })

    it('gives a replaced, empty server the whole tree back instead of deleting anything', async () => {
      const a = await client('claude')
      await a.write('PROJECT_MEMORY.md', base)
      await a.write('projects.json', '{"alpha": 1}\n')
      await a.sync()
      await server.close()
      server = await startTestServer(undefined, server.port)
      cleanup.push(server.dataDir)
      const result = await a.sync()
      expect(result.pushed.sort()).toEqual(['PROJECT_MEMORY.md', 'projects.json'])
      expect(result.deleted).toEqual([])
      const b = await client('gemini')
      expect((await b.sync()).pulled.sort()).toEqual(['PROJECT_MEMORY.md', 'projects.json'])
    })

    it('uploads nothing when every file was only touched', async () => {
      const a = await client('claude')
      for (let i = 0; i < 20; i++) await a.write(`notes/n${i}.md`, `note ${i}\n`)
      await a.sync()
      const later = new Date(Date.now() + 60_000)
      for (let i = 0; i < 20; i++) await utimes(join(a.memory, `notes/n${i}.md`), later, later)
      const result = await a.sync()
      expect(result.pushed).toEqual([])
      expect(result.merged).toEqual([])
    })

    it('when two clients push the same file at once, one gets 409, re-merges and loses nothing', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('PROJECT_MEMORY.md', base)
      await a.sync()
      await b.sync()
      await a.write('PROJECT_MEMORY.md', base.replace('- one\n', '- one\n- from A\n'))
      await b.write('PROJECT_MEMORY.md', base.replace('- beta\n', '- beta\n- from B\n'))
      // B reads the status, then A's push lands before B's: B's push is stale.
      const result = await syncRacing(b, () => a.sync())
      expect(result.attempts).toBe(2)
      await a.sync()
      for (const each of [a, b]) {
        const text = await each.read('PROJECT_MEMORY.md')
        expect(text).toContain('- from A')
        expect(text).toContain('- from B')
      }
    })

    it('a commit that landed between our status and our push still reaches us: only a push answered with the next change number moves our since', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('shared.md', 'shared\n')
      await a.sync()
      await b.sync()
      await b.write('from-b.md', 'from B\n')
      // B reads the status, then A commits another file, then B's push lands: B's answer names the commit after A's.
      const raced = await syncRacing(b, async () => {
        await a.write('from-a.md', 'from A\n')
        await a.sync()
      })
      expect(raced.pushed).toEqual(['from-b.md'])
      expect((await b.sync()).pulled).toEqual(['from-a.md'])
      expect(await b.read('from-a.md')).toBe('from A\n')
      // With nobody in between, B's own push is no news to it, and A gets it.
      await b.write('from-b.md', 'from B, again\n')
      expect((await b.sync()).pushed).toEqual(['from-b.md'])
      expect(await b.sync()).toMatchObject({pushed: [], pulled: [], merged: []})
      expect((await a.sync()).pulled).toEqual(['from-b.md'])
    })

    it('walks the bases for a dead writer’s temp files only after a sync that did not finish', async () => {
      const a = await client('claude')
      await a.write('notes/a.md', 'a\n')
      await a.sync()
      // pid 2^22 + 1 is above Linux's pid_max: no live process has it.
      const temp = join(a.root, '.nexus', 'base', 'notes', `.a.md.jarvis-tmp-${2 ** 22 + 1}-1`)
      await mkdir(join(temp, '..'), {recursive: true})
      await writeFile(temp, 'torn')
      await a.sync()
      expect(await readdir(join(a.root, '.nexus', 'base', 'notes'))).toContain(temp.split('/').pop())
      // A sync killed mid-way leaves its marker behind: the next one sweeps everywhere, and clears the marker.
      await writeFile(join(a.root, SYNC_RUNNING_FILE), '1\n')
      await a.sync()
      expect(await readdir(join(a.root, '.nexus', 'base', 'notes'))).toEqual([])
      expect(await readdir(join(a.root, '.nexus'))).not.toContain('sync-running')
    })

    it('a push that landed unanswered, then one that never landed: the next sync knows the server holds its own write', async () => {
      const a = await client('claude')
      await a.write('notes.md', '# notes\nr0\n')
      await a.sync()
      const config = await readConfig(a.root)
      /** Pushes as told: `landed` reaches the server but its answer is lost; `lost` never reaches it. */
      class Flaky extends MemoryClient {
        constructor(private readonly fate: 'landed' | 'lost') {
          super({server: server.url, token: TOKENS.claude})
        }
        async push(...args: Parameters<MemoryClient['push']>): ReturnType<MemoryClient['push']> {
          if (this.fate === 'landed') await super.push(...args)
          throw new UnreachableError('the server went away', {server: server.url})
        }
      }
      const syncWith = (fate: 'landed' | 'lost') => withTreeLock(a.root, {timeoutMs: 5000}, () => runSync({root: a.root, client: new Flaky(fate), settings: {...config.sync, retryDelay: 1}}))
      await a.write('notes.md', '# notes\nr1\nr0\n')
      await expect(syncWith('landed')).rejects.toThrow('the server went away')
      await a.write('notes.md', '# notes\nr2\nr1\nr0\n')
      await expect(syncWith('lost')).rejects.toThrow('the server went away')
      await a.write('notes.md', '# notes\nr3\nr2\nr1\nr0\n')
      const result = await a.sync()
      // The server held r1 (our own write): pushed over, not merged into a conflict with ourselves.
      expect(result.backups).toEqual([])
      expect(result.conflicts).toEqual([])
      const b = await client('gemini')
      await b.sync()
      expect(await b.read('notes.md')).toBe('# notes\nr3\nr2\nr1\nr0\n')
    })

    it('per-path strategies: manual leaves even a clean merge to a person; lww keeps the newer side and audits the other', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      const doc = '# Doc\n\n- one\n- two\n- three\n'
      await a.write('decisions/db.md', doc)
      await a.write('ops/deploy.log.md', doc)
      await a.sync()
      await b.sync()
      const config = await readConfig(b.root)
      await writeConfig(b.root, {...config, sync: {...config.sync, strategies: {'decisions/**': 'manual', '**/*.log.md': 'lww'}}})
      // Edits that would merge cleanly, on both paths; B's are the newer.
      for (const path of ['decisions/db.md', 'ops/deploy.log.md']) await a.write(path, doc.replace('- one', '- one (A)'))
      await a.sync()
      await new Promise((resolve) => setTimeout(resolve, 20))
      for (const path of ['decisions/db.md', 'ops/deploy.log.md']) await b.write(path, doc.replace('- three', '- three (B)'))
      const result = await b.sync()

      expect(await b.read('decisions/db.md')).toBe(doc.replace('- one', '- one (A)'))
      expect(result.backups.map((x) => x.path)).toEqual(['decisions/db.md'])
      expect(await b.read('decisions/db.local.bak')).toBe(doc.replace('- three', '- three (B)'))

      expect(await b.read('ops/deploy.log.md')).toBe(doc.replace('- three', '- three (B)'))
      const audit = (await readFile(join(b.root, '.nexus', 'audit.jsonl'), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line))
      expect(audit.find((entry) => entry.type === 'conflict' && entry.path === 'ops/deploy.log.md')).toMatchObject({rule: 'lww', lost: doc.replace('- one', '- one (A)')})
      await a.sync()
      expect(await a.read('ops/deploy.log.md')).toBe(doc.replace('- three', '- three (B)'))
    })

    it('a merge retried after a 409 is reported once', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('PROJECT_MEMORY.md', base)
      await a.sync()
      await b.sync()
      // Both edit; A's edit is on the server before B syncs, so B merges; A's second edit lands before B's push.
      await a.write('PROJECT_MEMORY.md', base.replace('- one\n', '- one\n- from A\n'))
      await a.sync()
      await b.write('PROJECT_MEMORY.md', base.replace('- beta\n', '- beta\n- from B\n'))
      const result = await syncRacing(b, async () => {
        await a.write('PROJECT_MEMORY.md', (await a.read('PROJECT_MEMORY.md'))!.replace('- from A\n', '- from A\n- again from A\n'))
        await a.sync()
      })
      expect(result.attempts).toBe(2)
      expect(result.merged).toEqual(['PROJECT_MEMORY.md'])
      expect(await b.read('PROJECT_MEMORY.md')).toContain('- again from A')
    })

    it('leaves a malformed file exactly as it is, syncs the rest and names the file and position', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      await a.write('good.md', 'fine\n')
      await a.write('broken.json', '{\n  "a": 1,\n  oops\n}\n')
      const error = await a.sync().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(JarvisError)
      expect((error as JarvisError).exit).toBe(ExitCode.badInput)
      expect((error as JarvisError).message).toMatch(/\.memory\/broken\.json: line 3, column 3/)
      expect(await a.read('broken.json')).toBe('{\n  "a": 1,\n  oops\n}\n')
      await b.sync()
      expect(await b.read('good.md')).toBe('fine\n')
      expect(await b.read('broken.json')).toBeNull()
    })

    it('leaves a file that is not UTF-8 text, holds a NUL or passes 4 MiB exactly as it is, syncs the rest and names each', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      const latin1 = Buffer.from('# Menu\n\ncaf\xe9 au lait\n', 'latin1')
      const withNul = Buffer.from('one\ntwo\0three\n', 'utf8')
      const huge = `# Dump\n${'x'.repeat(4 * 1024 * 1024)}\n`
      await a.write('good.md', 'fine\n')
      await writeFile(join(a.memory, 'menu.md'), latin1)
      await writeFile(join(a.memory, 'nul.md'), withNul)
      await a.write('dump.md', huge)
      const error = await a.sync().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(JarvisError)
      expect((error as JarvisError).exit).toBe(ExitCode.badInput)
      const message = (error as JarvisError).message
      expect(message).toMatch(/\.memory\/menu\.md: line 3: not UTF-8 text/)
      expect(message).toMatch(/\.memory\/nul\.md: line 2: holds a NUL byte/)
      expect(message).toMatch(/\.memory\/dump\.md: is 4194312 bytes, more than the 4194304/)
      // Not one byte changed, here or anywhere else: the other machine gets the good file only.
      expect(await readFile(join(a.memory, 'menu.md'))).toEqual(latin1)
      expect(await readFile(join(a.memory, 'nul.md'))).toEqual(withNul)
      await b.sync()
      expect(await b.read('good.md')).toBe('fine\n')
      for (const path of ['menu.md', 'nul.md', 'dump.md']) expect(await b.read(path)).toBeNull()
      // Saved as UTF-8, the menu syncs as any file does, once.
      await a.write('menu.md', '# Menu\n\ncafé au lait\n')
      await a.remove('nul.md')
      await a.remove('dump.md')
      expect((await a.sync()).pushed).toEqual(['menu.md'])
      expect((await a.sync()).pushed).toEqual([])
      await b.sync()
      expect(await b.read('menu.md')).toBe('# Menu\n\ncafé au lait\n')
    })

    it('names a file whose JSON one push could not carry (control characters, 6 bytes each), leaves it as it is and syncs the rest', async () => {
      const a = await client('claude')
      const b = await client('gemini')
      // Under 4 MiB, UTF-8, no NUL: 24 MB as JSON, more than a server takes in one request.
      const controls = '\x1b'.repeat(4_000_000)
      await a.write('ctl.md', controls)
      await a.write('small.md', 'small\n')
      const error = await a.sync().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(JarvisError)
      expect((error as JarvisError).exit).toBe(ExitCode.badInput)
      expect((error as JarvisError).message).toMatch(/\.memory\/ctl\.md: is 240001\d\d bytes as JSON \(a control character takes 6\), more than the 16777216 \(16 MiB\) one push may carry/)
      expect(((error as JarvisError).data.result as {pushed: string[]}).pushed).toEqual(['small.md'])
      expect(await a.read('ctl.md')).toBe(controls)
      await b.sync()
      expect(await b.read('small.md')).toBe('small\n')
      expect(await b.read('ctl.md')).toBeNull()
    })

    it('a broken sync state stops the sync with what to do, and done, the next sync loses nothing', async () => {
      const a = await client('claude')
      await a.write('notes/kept.md', 'first\n')
      await a.sync()
      await a.write('notes/kept.md', 'first, edited\n')
      await writeFile(join(a.root, '.nexus', 'sync-state.json'), '{"version": 1, "files": {')
      const error = await a.sync().catch((e: unknown) => e)
      expect((error as JarvisError).exit).toBe(ExitCode.badInput)
      expect((error as JarvisError).message).toContain('move it aside (mv .nexus/sync-state.json .nexus/sync-state.json.broken) and sync again')
      await rename(join(a.root, '.nexus', 'sync-state.json'), join(a.root, '.nexus', 'sync-state.json.broken'))
      // With no record of the last sync, its base copy still says what the edit changed: merged, nothing in a backup.
      const rebuilt = await a.sync()
      expect(rebuilt.backups).toEqual([])
      expect(rebuilt.merged).toEqual(['notes/kept.md'])
      expect(await a.read('notes/kept.md')).toBe('first, edited\n')
      expect((await a.sync()).pushed).toEqual([])
      // Without the base copies either, the edit and the server's text are two versions: the edit is kept beside it.
      await a.write('notes/kept.md', 'first, edited twice\n')
      await rm(join(a.root, '.nexus', 'sync-state.json'))
      for (const name of await readdir(join(a.root, '.nexus'))) if (name.startsWith('base.')) await rm(join(a.root, '.nexus', name))
      const twoWay = await a.sync()
      expect(twoWay.backups).toEqual([{path: 'notes/kept.md', backup: 'notes/kept.local.bak'}])
      expect(await a.read('notes/kept.local.bak')).toBe('first, edited twice\n')
      expect((await a.sync()).pushed).toEqual([])
    })

    it('stops with exit 3 and changes nothing when the server is down', async () => {
      const a = await client('claude')
      await a.write('x.md', 'x\n')
      await a.sync()
      await a.write('x.md', 'x, edited\n')
      await server.close()
      const error = await a.sync().catch((e: unknown) => e)
      expect((error as JarvisError).exit).toBe(ExitCode.unreachable)
      expect((error as JarvisError).message).toContain(server.url)
      expect(await a.read('x.md')).toBe('x, edited\n')
      server = await startTestServer(server.dataDir, server.port)
      expect((await a.sync()).pushed).toEqual(['x.md'])
    })
  })
})
