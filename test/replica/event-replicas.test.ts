/**
 * The ai-memory and obsidian replicas against a real `jarvis serve` on 127.0.0.1: events go in through the
 * protocol client, `replicate()` (the operation behind `jarvis replicate`) writes them out, and a person's edits
 * are made by writing the files as a person would.
 */
import {mkdir, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import fc from 'fast-check'
import moment from 'moment'
import {afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi} from 'vitest'

import {replicate} from '../../src/ops/replicate.js'
import {EventsClient} from '../../src/protocol/events.js'
import {replicaFailure} from '../../src/replica/ops.js'
import {blockIdOf} from '../../src/replica/obsidian-note.js'
import type {MemoryEventInput, StoredMemoryEvent} from '../../src/schemas/index.js'
import {memoryEventSchema} from '../../src/schemas/index.js'
import {initTree} from '../../src/store/index.js'
import {closedPort} from '../cli/memory-helpers.js'
import {fakeGithubToken} from '../files/helpers.js'
import {removeAll, startTestServer, tempDir, type TestServer, TOKENS} from '../helpers/world.js'

let server: TestServer
const dirs: string[] = []
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  await server.close()
  await removeAll(dirs)
})

let root: string
let out: string
let gemini: EventsClient
let claude: EventsClient
let run = 0

beforeEach(async () => {
  run++
  root = await tempDir('jarvis-event-replica-')
  out = await tempDir('jarvis-replica-out-')
  dirs.push(root, out)
  // Each test its own project, so the shared server's log of one test does not show in another's replica.
  await initTree(root, {server: server.url, agent: 'claude', project: `replica-${run}`})
  vi.stubEnv('JARVIS_TOKEN', TOKENS.claude)
  vi.stubEnv('JARVIS_SERVER', '')
  vi.stubEnv('JARVIS_AGENT', '')
  vi.stubEnv('XDG_CONFIG_HOME', join(out, '.xdg'))
  gemini = new EventsClient({server: server.url, token: TOKENS.gemini})
  claude = new EventsClient({server: server.url, token: TOKENS.claude})
})
afterEach(async () => {
  vi.unstubAllEnvs()
  await gemini.close()
  await claude.close()
})

const scope = () => `project:replica-${run}`

async function configure(replicas: unknown[]): Promise<void> {
  const file = join(root, '.nexus/config.json')
  await writeFile(file, JSON.stringify({...JSON.parse(await readFile(file, 'utf8')), replicas}, null, 2))
}

async function append(fields: Partial<MemoryEventInput> & {dedupe_key: string; content_md: string}, client = gemini): Promise<string> {
  const event = memoryEventSchema.parse({agent_id: client === gemini ? 'gemini' : 'claude', run_id: `run-${Math.random()}`, scope: scope(), kind: 'decision', confidence: 'high', source: {system: 'cli'}, ...fields})
  return (await client.append(event)).event_id
}

async function eventsOf(key: string): Promise<StoredMemoryEvent[]> {
  return (await claude.events({scope: scope(), dedupe_key: key, include_deprecated: true})).events
}

const read = (path: string) => readFile(path, 'utf8').catch(() => null)
const put = async (path: string, text: string) => {
  await mkdir(dirname(path), {recursive: true})
  await writeFile(path, text)
}
const go = () => replicate({dir: root})

describe('ai-memory: the confirmed decisions, one file per key', () => {
  const withScope = () => configure([{kind: 'ai-memory', path: out, scopes: [scope()]}])
  const file = (key: string) => join(out, scope().replace(':', '.'), `${key.replaceAll(':', '.')}.md`)

  it('writes decisions at or above the confidence, nothing else; a second run writes nothing', async () => {
    await withScope()
    await append({dedupe_key: 'decision:db', content_md: 'PostgreSQL for the orders service.'})
    await append({dedupe_key: 'decision:queue', content_md: 'Maybe Kafka.', confidence: 'low'})
    await append({dedupe_key: 'config:port', content_md: 'Port 8080.', kind: 'config'})
    const first = await go()
    expect(first.replicas[0]).toMatchObject({kind: 'ai-memory', written: [`${scope().replace(':', '.')}/decision.db.md`], kept: []})
    const text = await read(file('decision:db'))
    expect(text).toContain('status: current')
    expect(text).toContain('# decision:db\n\nPostgreSQL for the orders service.\n')
    expect(await read(file('decision:queue'))).toBeNull()
    expect(await read(file('config:port'))).toBeNull()

    const before = (await stat(file('decision:db'))).mtimeMs
    const second = await go()
    expect(second.replicas[0].written).toEqual([])
    expect((await stat(file('decision:db'))).mtimeMs).toBe(before)

    await configure([{kind: 'ai-memory', path: out, scopes: [scope()], minConfidence: 'low'}])
    expect((await go()).replicas[0].written).toEqual([`${scope().replace(':', '.')}/decision.queue.md`])
  })

  it('marks a superseded decision, links what replaced it, and lists a key’s earlier decisions as superseded', async () => {
    await withScope()
    const old = await append({dedupe_key: 'decision:deploy_day', content_md: 'Deploys go out on Fridays.'})
    await append({dedupe_key: 'decision:deploy_day', content_md: 'Deploys go out on Tuesdays.'})
    await append({dedupe_key: 'decision:cache', content_md: 'Redis for sessions.'})
    await go()
    const deploy = await read(file('decision:deploy_day'))
    expect(deploy).toContain('Deploys go out on Tuesdays.')
    expect(deploy).toMatch(/## Earlier decisions \(superseded\)\n\n- ~~Deploys go out on Fridays\.~~ \(gemini, \d{4}-\d{2}-\d{2}, evt_/)
    expect(deploy).toContain(old)

    const cacheId = (await eventsOf('decision:cache'))[0].event_id
    await append({dedupe_key: 'decision:sessions', content_md: 'Sessions live in PostgreSQL now.', supersedes: cacheId})
    const result = await go()
    expect(result.replicas[0].written).toEqual(expect.arrayContaining([`${scope().replace(':', '.')}/decision.cache.md`, `${scope().replace(':', '.')}/decision.sessions.md`]))
    const cache = await read(file('decision:cache'))
    expect(cache).toContain('status: superseded')
    expect(cache).toContain('> [!warning] Superseded by [[decision.sessions]]')
  })

  it('never writes over nor re-creates a file a person changed, and says so when a newer decision is not written there', async () => {
    await withScope()
    await append({dedupe_key: 'decision:db', content_md: 'PostgreSQL.'})
    await append({dedupe_key: 'decision:lang', content_md: 'TypeScript.'})
    await go()
    const mine = `${await read(file('decision:db'))}\nMy note: we benchmarked this in March.\n`
    await writeFile(file('decision:db'), mine)
    await rm(file('decision:lang'))
    expect((await go()).replicas[0]).toMatchObject({written: [], kept: []})

    await append({dedupe_key: 'decision:db', content_md: 'PostgreSQL 17.'})
    const result = await go()
    expect(result.replicas[0].kept).toEqual([{path: `${scope().replace(':', '.')}/decision.db.md`, reason: expect.stringContaining('edited by a person, kept as it is')}])
    expect(await read(file('decision:db'))).toBe(mine)
    expect(await read(file('decision:lang'))).toBeNull()
  })

  it('defaults to the scopes global and the tree’s project', async () => {
    await configure([{kind: 'ai-memory', path: out}])
    await append({dedupe_key: 'decision:lint', content_md: 'ESLint flat config.'})
    await go()
    expect(await read(file('decision:lint'))).toContain('ESLint flat config.')
  })
})

describe('obsidian: the day’s events in the daily note', () => {
  const today = () => moment().format('YYYY-MM-DD')
  const note = (name = `${today()}.md`) => join(out, name)
  beforeEach(async () => {
    await mkdir(join(out, '.obsidian'), {recursive: true})
    await configure([{kind: 'obsidian', path: out, scopes: [scope()]}])
  })

  it('adds a block to the note the person started, keeps their text and front matter keys; a second run writes nothing', async () => {
    const mine = '---\ntitle: My day\ntags: [journal]\n---\n# Today\n\nWalked the dog.\n'
    await put(note(), mine)
    const id = await append({dedupe_key: 'decision:deploy_day', content_md: 'Deploys go out on Tuesdays.'})
    const first = await go()
    expect(first.replicas[0]).toMatchObject({kind: 'obsidian', written: [`${today()}.md`], appended: []})
    const text = (await read(note()))!
    expect(text.startsWith('---\ntitle: My day\ntags: [ journal, jarvis ]\n---\n# Today\n\nWalked the dog.\n\n<!-- jarvis:begin -->\n## Jarvis\n\n- ')).toBe(true)
    expect(text).toContain(`· decision · decision:deploy_day · gemini ^${blockIdOf(id)}\n  Deploys go out on Tuesdays.\n<!-- jarvis:end -->\n`)

    const mtime = (await stat(note())).mtimeMs
    const second = await go()
    expect(second.replicas[0]).toMatchObject({written: [], appended: []})
    expect((await stat(note())).mtimeMs).toBe(mtime)
    expect(await read(note())).toBe(text)
  })

  it('follows the Daily notes settings: folder and date format, with the ISO date as an alias', async () => {
    await put(join(out, '.obsidian/daily-notes.json'), JSON.stringify({folder: 'Journal/Daily/', format: 'dddd, MMMM Do YYYY'}))
    await append({dedupe_key: 'fact:coffee', kind: 'fact', content_md: 'The office coffee machine is fixed.'})
    const name = `Journal/Daily/${moment().format('dddd, MMMM Do YYYY')}.md`
    expect((await go()).replicas[0].written).toEqual([name])
    const text = (await read(join(out, name)))!
    expect(text).toMatch(new RegExp(`^---\\ntags:\\n  - jarvis\\naliases:\\n  - ${today()}\\n---\\n<!-- jarvis:begin -->\\n## Jarvis\\n\\n- `))
    expect(text).toContain('The office coffee machine is fixed.')
  })

  it('a person’s text outside the block survives every later run, wherever they write it', async () => {
    await append({dedupe_key: 'todo:release', kind: 'todo', content_md: 'Tag the release.'})
    await go()
    const first = (await read(note()))!
    const [fm, rest] = [first.slice(0, first.indexOf('<!-- jarvis:begin -->')), first.slice(first.indexOf('<!-- jarvis:begin -->'))]
    const edited = `${fm}Morning: standup moved to 10:00.\n\n${rest}\n## Evening\n- [ ] water the plants\n`
    await writeFile(note(), edited)
    for (const n of [1, 2, 3]) {
      await append({dedupe_key: `log:step_${n}`, kind: 'log', content_md: `Step ${n} done.`})
      await go()
      const text = (await read(note()))!
      expect(text).toContain(`Step ${n} done.`)
      expect(text.startsWith(`${fm}Morning: standup moved to 10:00.\n\n<!-- jarvis:begin -->`)).toBe(true)
      expect(text.endsWith('<!-- jarvis:end -->\n\n## Evening\n- [ ] water the plants\n')).toBe(true)
    }
  })

  it('a person’s edit inside the block becomes an event (source obsidian) that supersedes the one they edited; nothing twice', async () => {
    const id = await append({dedupe_key: 'decision:deploy_day', content_md: 'Deploys go out on Tuesdays.'})
    await go()
    const text = (await read(note()))!
    await writeFile(note(), text.replace('  Deploys go out on Tuesdays.', '  Deploys go out on Wednesdays, after the review.').replace('<!-- jarvis:end -->', '- ask Sam about the freeze\n<!-- jarvis:end -->'))

    const result = await go()
    expect(result.replicas[0].appended).toEqual([
      {path: `${today()}.md`, event_id: expect.stringMatching(/^evt_/), dedupe_key: 'decision:deploy_day', status: 'created'},
      {path: `${today()}.md`, event_id: expect.stringMatching(/^evt_/), dedupe_key: expect.stringMatching(new RegExp(`^obsidian:${today()}-[0-9a-f]{8}$`)), status: 'created'},
    ])
    const versions = await eventsOf('decision:deploy_day')
    const edit = versions.find((e) => e.event_id === result.replicas[0].appended[0].event_id)!
    expect(edit).toMatchObject({agent_id: 'claude', content_md: 'Deploys go out on Wednesdays, after the review.', supersedes: id, source: {system: 'obsidian', thread_id: `${today()}.md`}})
    expect(versions.find((e) => e.event_id === id)!.deprecated).toBe(true)
    const added = await eventsOf(result.replicas[0].appended[1].dedupe_key)
    expect(added[0]).toMatchObject({kind: 'log', scope: scope(), content_md: 'ask Sam about the freeze', source: {system: 'obsidian'}})

    const after = (await read(note()))!
    expect(after).toMatch(new RegExp(`- ~~\\d\\d:\\d\\d · decision · decision:deploy_day · gemini~~ · superseded by \\[\\[#\\^${blockIdOf(edit.event_id)}\\|\\d\\d:\\d\\d\\]\\] \\^${blockIdOf(id)}`))
    expect(after).toMatch(new RegExp(`· decision:deploy_day · claude · after \\[\\[#\\^${blockIdOf(id)}\\|\\d\\d:\\d\\d\\]\\] \\^${blockIdOf(edit.event_id)}\\n  Deploys go out on Wednesdays, after the review.`))

    const again = await go()
    expect(again.replicas[0]).toMatchObject({written: [], appended: []})
    expect(await read(note())).toBe(after)
    expect(await eventsOf('decision:deploy_day')).toHaveLength(2)
  })

  it('refuses a secret typed into the block with the CLI’s message and leaves the note exactly as the person wrote it', async () => {
    await append({dedupe_key: 'config:ci', kind: 'config', content_md: 'CI runs on every push.'})
    await go()
    const token = fakeGithubToken()
    const typed = (await read(note()))!.replace('  CI runs on every push.', `  CI runs on every push; its token is ${token}`)
    await writeFile(note(), typed)

    const refused = await go()
    expect(refused.replicas[0].refused).toEqual([{path: `${today()}.md`, reason: expect.stringMatching(/^refused: .*GitHub/)}])
    expect(replicaFailure(refused)).toMatchObject({exit: 5})
    expect(await read(note())).toBe(typed)
    expect(await eventsOf('config:ci')).toHaveLength(1)
    // Another run refuses again and still loses nothing; new events wait until the person has fixed it.
    await append({dedupe_key: 'log:later', kind: 'log', content_md: 'Later event.'})
    expect((await go()).replicas[0].refused).toHaveLength(1)
    expect(await read(note())).toBe(typed)

    await writeFile(note(), typed.replace(`; its token is ${token}`, '; its token is in the vault'))
    const fixed = await go()
    expect(fixed.replicas[0].appended.map((a) => a.dedupe_key)).toEqual(['config:ci'])
    const text = (await read(note()))!
    expect(text).toContain('CI runs on every push; its token is in the vault')
    expect(text).toContain('Later event.')
    expect(text).not.toContain(token)
  })

  it('leaves a note whose markers a person broke as it is, and says which line', async () => {
    await append({dedupe_key: 'log:one', kind: 'log', content_md: 'One.'})
    await go()
    const broken = (await read(note()))!.replace('<!-- jarvis:end -->\n', '')
    await writeFile(note(), broken)
    const result = await go()
    expect(result.replicas[0].kept).toEqual([{path: `${today()}.md`, reason: expect.stringMatching(/line \d+: the jarvis block's markers .* are not one pair/)}])
    expect(await read(note())).toBe(broken)
  })

  it('writes no note on a day without events, and skips a vault that is not there', async () => {
    expect((await go()).replicas[0].written).toEqual([])
    expect(await read(note())).toBeNull()
    await configure([{kind: 'obsidian', path: join(out, 'nope')}])
    expect((await go()).replicas[0].skipped).toContain('is not a directory')
  })
})

describe('dry run, and a server that does not answer', () => {
  it('--dry-run says what it would write and which edits would become events, and changes nothing', async () => {
    await mkdir(join(out, 'vault/.obsidian'), {recursive: true})
    await configure([{kind: 'obsidian', path: join(out, 'vault'), scopes: [scope()]}, {kind: 'ai-memory', path: join(out, 'ai'), scopes: [scope()]}])
    await append({dedupe_key: 'decision:db', content_md: 'PostgreSQL.'})
    await go()
    const note = join(out, 'vault', `${moment().format('YYYY-MM-DD')}.md`)
    const edited = (await read(note))!.replace('  PostgreSQL.', '  PostgreSQL 17.')
    await writeFile(note, edited)
    await append({dedupe_key: 'decision:lang', content_md: 'TypeScript.'})
    const dry = await replicate({dir: root, dryRun: true})
    expect(dry.replicas[0].appended).toEqual([{path: `${moment().format('YYYY-MM-DD')}.md`, event_id: '(dry run)', dedupe_key: 'decision:db', status: 'planned'}])
    expect(dry.replicas[1].written).toEqual([`${scope().replace(':', '.')}/decision.lang.md`])
    expect(await read(note)).toBe(edited)
    expect(await read(join(out, 'ai', scope().replace(':', '.'), 'decision.lang.md'))).toBeNull()
    expect(await eventsOf('decision:db')).toHaveLength(1)
  })

  it('exit 3 when the event log cannot be read; an openclaw replica beside it still runs', async () => {
    const ws = join(out, 'openclaw')
    await put(join(ws, 'MEMORY.md'), '# long-term\n')
    await configure([{kind: 'ai-memory', path: join(out, 'ai')}, {kind: 'openclaw', path: ws}])
    vi.stubEnv('JARVIS_SERVER', `http://127.0.0.1:${await closedPort()}`)
    const result = await go()
    expect(result.replicas[0].error).toMatchObject({code: 'UNREACHABLE'})
    expect(result.replicas[1].changes).toEqual([expect.objectContaining({action: 'to-memory', memoryPath: 'openclaw/MEMORY.md'})])
    expect(replicaFailure(result)).toMatchObject({exit: 3})
  })
})

describe('property: a person’s text around the block, against the real server', () => {
  /** Lines a person may write around the block: anything but jarvis's marker lines, and no leading front matter. */
  const line = fc
    .oneof(fc.string({maxLength: 20}), fc.constantFrom('# Notes', '## Jarvis', '- [ ] buy milk', '  - nested', '---', '', '^evt-x', '- 09:14 · log · fake'))
    .filter((l) => !/[\r\n]/.test(l) && !/^<!-- jarvis:(?:begin|end) -->[ \t]*$/.test(l))
  const text = fc.array(line, {maxLength: 5}).map((lines) => (lines.length ? `${lines.join('\n')}\n` : ''))
  const step = fc.oneof(
    fc.record({op: fc.constant('event' as const), n: fc.integer({min: 1, max: 3})}),
    fc.constant({op: 'run' as const}),
    fc.record({op: fc.constant('edit-inside' as const), words: fc.constantFrom('moved to Thursday', 'ask Sam', 'done ✓')}),
  )

  it('survives any sequence of events, runs and edits inside the block; a last run writes nothing', async () => {
    let round = 0
    await fc.assert(
      fc.asyncProperty(text, text, fc.array(step, {minLength: 1, maxLength: 6}), async (before, after, steps) => {
        fc.pre(!/^---[ \t]*$/.test(`${before}${after}`.split('\n')[0]))
        round++
        const vault = join(out, `vault-${round}`)
        await mkdir(join(vault, '.obsidian'), {recursive: true})
        const project = `prop-${run}-${round}`
        const file = join(root, '.nexus/config.json')
        await writeFile(file, JSON.stringify({...JSON.parse(await readFile(file, 'utf8')), project, replicas: [{kind: 'obsidian', path: vault, scopes: [`project:${project}`]}]}, null, 2))
        const note = join(vault, `${moment().format('YYYY-MM-DD')}.md`)
        await writeFile(note, `${before}<!-- jarvis:begin -->\n<!-- jarvis:end -->\n${after}`)
        let events = 0
        for (const s of steps) {
          if (s.op === 'event') {
            for (let i = 0; i < s.n; i++) await append({scope: `project:${project}`, kind: 'log', dedupe_key: `log:e${events++}`, content_md: `event ${events}`})
          } else if (s.op === 'edit-inside') {
            const current = (await read(note))!
            await writeFile(note, current.replace(/\n {2}event (\d+)\n/, `\n  event $1, ${s.words}\n`).replace('<!-- jarvis:end -->', `- ${s.words}\n<!-- jarvis:end -->`))
          } else await go()
          // Between any two steps the person's text is where they wrote it.
          const current = (await read(note))!
          const body = current.startsWith('---\n') ? current.slice(current.indexOf('\n---\n', 3) + 5) : current
          expect(body.startsWith(before)).toBe(true)
          expect(body.endsWith(after)).toBe(true)
        }
        await go()
        const settled = await read(note)
        const last = await go()
        expect(last.replicas[0]).toMatchObject({written: [], appended: [], refused: []})
        expect(await read(note)).toBe(settled)
      }),
      {numRuns: 25},
    )
  }, 120_000)
})
