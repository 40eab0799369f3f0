import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {compactProject, parseMemoryFile, renderEpisode, renderSummary, writeEpisode, writeMemory} from '../../src/files/index.js'
import {initTree, scanMemory} from '../../src/store/index.js'
import {removeAll, tempDir} from '../helpers/world.js'
import {fakeGithubToken} from './helpers.js'

const now = new Date('2026-01-17T15:04:05Z')

describe('episodes', () => {
  const dirs: string[] = []
  let root: string

  beforeEach(async () => {
    const dir = await tempDir('jarvis-episodes-')
    dirs.push(dir)
    root = (await initTree(dir, {})).root
  })
  afterEach(async () => removeAll(dirs.splice(0)))

  it('renders the seed template with front matter', () => {
    const text = renderEpisode({title: 'Memory design', tags: ['zerg', 'memory'], body: '- Key decision\n', now, project: 'jarvis', outcome: 'memory_files table', topic: 'Zerg memory'})
    expect(text).toBe(
      [
        '---',
        'title: Memory design',
        'tags: [zerg, memory]',
        'date: 2026-01-17',
        'project: jarvis',
        'kind: episode',
        '---',
        '# Episode: Memory design',
        'Date: 2026-01-17',
        'Topic: Zerg memory',
        'Outcome: memory_files table',
        'Tags: ["zerg","memory"]',
        '',
        'Summary:',
        '- Key decision',
        '',
      ].join('\n'),
    )
    expect(parseMemoryFile('x.md', text).frontMatter).toMatchObject({title: 'Memory design', tags: ['zerg', 'memory'], date: '2026-01-17'})
  })

  it('the same episode twice is one file; the same slug with other content is <slug>-2', async () => {
    const input = {title: 'Memory design', tags: ['memory'], body: 'We chose files.\n', now}
    expect(await writeEpisode(root, input)).toEqual({path: 'episodes/2026-01-17/memory-design.md', created: true, changed: true})
    expect(await writeEpisode(root, {...input, now: new Date('2026-01-17T23:59:00Z')})).toEqual({path: 'episodes/2026-01-17/memory-design.md', created: false, changed: false})
    expect(await writeEpisode(root, {...input, body: 'Something else.\n'})).toEqual({path: 'episodes/2026-01-17/memory-design-2.md', created: true, changed: true})
    expect(await writeEpisode(root, {...input, body: 'Something else.\n'})).toMatchObject({path: 'episodes/2026-01-17/memory-design-2.md', changed: false})
    expect(await writeEpisode(root, {...input, now: new Date('2026-01-18T00:00:00Z')})).toMatchObject({path: 'episodes/2026-01-18/memory-design.md', created: true})
    expect((await scanMemory(root)).size).toBe(3)
  })

  it('refuses a secret (exit 5) and writes nothing', async () => {
    await expect(writeEpisode(root, {title: 'Leak', body: `token ${fakeGithubToken()}`, now})).rejects.toMatchObject({exit: 5})
    expect((await scanMemory(root)).size).toBe(0)
  })
})

describe('compact', () => {
  const dirs: string[] = []
  let root: string

  beforeEach(async () => {
    const dir = await tempDir('jarvis-compact-')
    dirs.push(dir)
    root = (await initTree(dir, {})).root
    // Episodes of project "app": by front matter project, by tag; one of another project; one malformed.
    await writeEpisode(root, {title: 'SSH auth failures', body: '## Cause\nkey rotated\n## Fix\nnew key\n', outcome: 'runner_exec works again', project: 'app', now: new Date('2026-01-05T10:00:00Z')})
    await writeEpisode(root, {title: 'Ads paused', tags: ['app', 'ads'], body: 'ROAS too low.\n- Outcome: paused until March\n', now: new Date('2026-01-15T10:00:00Z')})
    await writeEpisode(root, {title: 'Ads budget', tags: ['app'], body: 'Budget cut.\n', outcome: 'budget 50/day', now: new Date('2026-01-15T11:00:00Z')})
    await writeEpisode(root, {title: 'Other project', body: 'x\n', outcome: 'unrelated', project: 'other', now: new Date('2026-01-20T10:00:00Z')})
    await writeMemory(root, 'notes/app.md', '---\nproject: app\n---\nnot an episode\n')
    await mkdir(join(root, '.memory/episodes/2026-01-10'), {recursive: true})
    await writeFile(join(root, '.memory/episodes/2026-01-10/bad.md'), '---\nproject: app\ntags: [app\n---\nOutcome: lost\n')
  })
  afterEach(async () => removeAll(dirs.splice(0)))

  it('rolls the project episodes into projects/<slug>/summary.md, newest first, deterministically and idempotently', async () => {
    const first = await compactProject(root, 'app', {now})
    expect(first).toMatchObject({path: 'projects/app/summary.md', episodes: 3, changed: true})
    expect(first.skipped).toHaveLength(1)
    expect(first.skipped[0]).toContain('.memory/episodes/2026-01-10/bad.md: line 3')
    const text = await readFile(join(root, '.memory/projects/app/summary.md'), 'utf8')
    expect(text).toBe(
      [
        '---',
        'title: "app: project summary"',
        'tags: [app, summary]',
        'project: app',
        'kind: summary',
        'episodes: 3',
        'updated: 2026-01-15',
        '---',
        '# Project app: summary',
        '',
        '<!-- jarvis:begin -->',
        'Rolled up from 3 episodes by `jarvis memory compact`, newest first. The episodes are kept; edit them, not this block: text outside it is yours, and compact keeps it.',
        '',
        '## 2026-01-15 — Ads budget',
        '',
        'Source: episodes/2026-01-15/ads-budget.md',
        '',
        '- Outcome: budget 50/day',
        '',
        '## 2026-01-15 — Ads paused',
        '',
        'Source: episodes/2026-01-15/ads-paused.md',
        '',
        '- Outcome: paused until March',
        '',
        '## 2026-01-05 — SSH auth failures',
        '',
        'Source: episodes/2026-01-05/ssh-auth-failures.md',
        '',
        '- Outcome: runner_exec works again',
        '- Cause',
        '- Fix',
        '<!-- jarvis:end -->',
        '',
      ].join('\n'),
    )
    expect(text).not.toContain('unrelated')

    const second = await compactProject(root, 'app', {now: new Date('2027-01-01T00:00:00Z')})
    expect(second).toMatchObject({path: 'projects/app/summary.md', episodes: 3, changed: false})
    expect(await readFile(join(root, '.memory/projects/app/summary.md'), 'utf8')).toBe(text)
    // The episodes stay.
    expect([...(await scanMemory(root)).keys()].filter((p) => p.startsWith('episodes/'))).toHaveLength(5)
  })

  it('keeps what a person wrote in the summary: a file of their own, and their lines around the rolled-up block', async () => {
    const summaryFile = join(root, '.memory/projects/app/summary.md')
    await mkdir(join(root, '.memory/projects/app'), {recursive: true})
    await writeFile(summaryFile, '---\ntitle: App notes\n---\nLaunch date: 2027-01-15 (agreed with finance).\n')
    expect(await compactProject(root, 'app', {now})).toMatchObject({episodes: 3, changed: true})
    const first = await readFile(summaryFile, 'utf8')
    expect(first).toMatch(/^---\ntitle: App notes\n[^]*---\nLaunch date: 2027-01-15 \(agreed with finance\)\.\n\n<!-- jarvis:begin -->\nRolled up from 3 episodes/)
    expect(first).toContain('Source: episodes/2026-01-15/ads-budget.md')

    // Lines added above and below the block stay through the next roll-up, which replaces only the block.
    await writeFile(summaryFile, `${first.replace('Launch date', 'Owner: Ana\nLaunch date')}\nRisks: the March ad freeze.\n`)
    await writeEpisode(root, {title: 'Ads resumed', tags: ['app'], body: 'Back on.\n', outcome: 'ads on again', now: new Date('2026-02-01T10:00:00Z')})
    expect(await compactProject(root, 'app', {now})).toMatchObject({episodes: 4, changed: true})
    const second = await readFile(summaryFile, 'utf8')
    expect(second).toContain('Owner: Ana\nLaunch date: 2027-01-15')
    expect(second).toMatch(/<!-- jarvis:end -->\n\nRisks: the March ad freeze\.\n$/)
    expect(second).toContain('Rolled up from 4 episodes')
    expect(second.match(/<!-- jarvis:begin -->/g)).toHaveLength(1)
    expect(await compactProject(root, 'app', {now})).toMatchObject({changed: false})
  })

  it('moves a summary written before the block into one, keeping only the lines a person added to it', async () => {
    const summaryFile = join(root, '.memory/projects/app/summary.md')
    await compactProject(root, 'app', {now})
    // The summary as compact wrote it before it had a block, with one line a person added and one section edited.
    const legacy = (await readFile(summaryFile, 'utf8'))
      .replace(/<!-- jarvis:(begin|end) -->\n/g, '')
      .replace('edit them, not this block: text outside it is yours, and compact keeps it.', 'edit them, not this file.')
      .replace('- Outcome: paused until March', '- Outcome: paused until March (Ana: until April now)')
      .replace('# Project app: summary\n', '# Project app: summary\n\nAsk Ana before touching ads.\n')
    await writeFile(summaryFile, legacy)
    await compactProject(root, 'app', {now})
    const moved = await readFile(summaryFile, 'utf8')
    const [person, block] = moved.split('<!-- jarvis:begin -->')
    expect(person).toContain('Ask Ana before touching ads.')
    expect(person).toContain('Ana: until April now')
    expect(person).not.toContain('Source: episodes/2026-01-15/ads-budget.md')
    expect(person).not.toContain('Rolled up from')
    expect(block).toContain('Source: episodes/2026-01-15/ads-budget.md')
    expect(block).toContain('Source: episodes/2026-01-15/ads-paused.md')
  })

  it('from a summary without markers keeps a note added after its last section and its heading, not the section; CRLF too', async () => {
    const summaryFile = join(root, '.memory/projects/app/summary.md')
    await compactProject(root, 'app', {now})
    // Markers removed (by hand, or by a merge tool): what compact wrote is told from what a person added all the same.
    const unmarked = (await readFile(summaryFile, 'utf8')).replace(/<!-- jarvis:(begin|end) -->\n/g, '')
    for (const text of [`${unmarked}\nAsk Ana before touching ads.\n`, `${unmarked}\nAsk Ana before touching ads.\n`.replace(/\n/g, '\r\n')]) {
      await writeFile(summaryFile, text)
      await compactProject(root, 'app', {now})
      const [person, block] = (await readFile(summaryFile, 'utf8')).split('<!-- jarvis:begin -->')
      expect(person).toMatch(/\n# Project app: summary\n\nAsk Ana before touching ads\.\n\n$/)
      expect(block).toContain('Source: episodes/2026-01-05/ssh-auth-failures.md')
    }
  })

  it('names broken markers by their line in the file, and changes nothing', async () => {
    const summaryFile = join(root, '.memory/projects/app/summary.md')
    await compactProject(root, 'app', {now})
    const broken = (await readFile(summaryFile, 'utf8')).replace('<!-- jarvis:end -->\n', '')
    await writeFile(summaryFile, broken)
    const line = broken.split('\n').indexOf('<!-- jarvis:begin -->') + 1
    await expect(compactProject(root, 'app', {now})).rejects.toMatchObject({exit: 2, message: expect.stringContaining(`.memory/projects/app/summary.md line ${line}: the jarvis block's markers`)})
    expect(await readFile(summaryFile, 'utf8')).toBe(broken)
  })

  it('leaves a summary whose front matter does not parse as it is (exit 2)', async () => {
    const summaryFile = join(root, '.memory/projects/app/summary.md')
    await mkdir(join(root, '.memory/projects/app'), {recursive: true})
    await writeFile(summaryFile, '---\ntags: [app\n---\nmy notes\n')
    await expect(compactProject(root, 'app', {now})).rejects.toMatchObject({exit: 2})
    expect(await readFile(summaryFile, 'utf8')).toBe('---\ntags: [app\n---\nmy notes\n')
  })

  it('is bounded in length however many episodes there are', () => {
    const episodes = Array.from({length: 200}, (_, i) =>
      parseMemoryFile(`episodes/2026-02-${String((i % 28) + 1).padStart(2, '0')}/e${i}.md`, renderEpisode({title: `E${i} ${'x'.repeat(300)}`, body: '## h\n'.repeat(40), outcome: 'o'.repeat(500), now})),
    )
    const summary = renderSummary('big', episodes)
    expect(summary.length).toBeLessThan(20_000)
    expect(summary).toContain('older episodes, not shown')
    expect(renderSummary('big', [...episodes].reverse())).toBe(summary)
  })

  it('writes nothing for a project without episodes and refuses bad slugs (exit 2)', async () => {
    expect(await compactProject(root, 'none', {now})).toMatchObject({path: 'projects/none/summary.md', episodes: 0, changed: false})
    await expect(compactProject(root, '../up', {now})).rejects.toMatchObject({exit: 2})
  })
})
