/**
 * The web dashboard in a real headless Chromium against a real `jarvis serve` process on 127.0.0.1, with real
 * `jarvis` CLI clients beside it: what a person does on the page reaches the agents, and what the agents do
 * reaches the page without a reload. The run writes docs/screenshots/ (each page at desktop and phone width).
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {auth} from '@modelcontextprotocol/sdk/client/auth.js'
import type {Page} from 'playwright-core'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {fakeGithubToken} from '../files/helpers.js'
import {envelope, jarvisBin, runJarvis} from '../helpers/cli.js'
import {removeAll, startServerProcess, tempDir, TOKENS, type ServerProcess} from '../helpers/world.js'
import {call} from '../server/helpers.js'
import {TestApp} from '../server/oauth-helpers.js'
import {answerHandled, holdRequests, launchBrowser, noteAnswers, screenshots, type Browser} from './browser.js'

/** Polls until `probe` returns a value: an overall deadline for a step, not a timed assertion. */
async function until<T>(what: string, probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, deadlineMs = 30_000): Promise<T> {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== null && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

interface Tree {
  root: string
  memory: string
  env: NodeJS.ProcessEnv
  jarvis(args: string[], input?: string): ReturnType<typeof runJarvis>
}

let browser: Browser
let server: ServerProcess
let dataDir: string
let alice: Tree
const dirs: string[] = []
const children: ChildProcess[] = []

async function makeTree(agent: 'claude' | 'gemini', url: string): Promise<Tree> {
  const root = await tempDir(`jarvis-dash-${agent}-`)
  dirs.push(root)
  const env = {JARVIS_TOKEN: TOKENS[agent], XDG_CONFIG_HOME: join(root, 'xdg')}
  const tree: Tree = {root, memory: join(root, '.memory'), env, jarvis: (args, input) => runJarvis(args, {cwd: root, env, input})}
  const init = await tree.jarvis(['init', '--server', url, '--agent', agent, '--json'])
  expect(init.code, init.stderr).toBe(0)
  return tree
}

async function sync(tree: Tree): Promise<void> {
  const run = await tree.jarvis(['sync', '--json'])
  expect(run.code, run.stdout + run.stderr).toBe(0)
}

/** A tab signed in with `token`, showing `hash`. */
async function signedIn(token: string, hash = '#/files'): Promise<Page> {
  const page = await browser.newPage()
  await page.goto(`${server.url}/${hash}`)
  await page.getByLabel('Token').fill(token)
  await page.getByRole('button', {name: 'Sign in'}).click()
  await page.getByRole('navigation', {name: 'Pages'}).waitFor()
  await page.getByText(/signed in as /).waitFor()
  return page
}

async function serverFile(path: string, agent: 'claude' | 'gemini' = 'claude'): Promise<{content: string; rev: number} | undefined> {
  const answer = await call(server.url, TOKENS[agent], 'POST', '/api/memory/pull', {files: [path]})
  return answer.body.files[path]
}

async function events(agent: 'claude' | 'gemini', params = ''): Promise<{event_id: string; content_md: string; scope: string}[]> {
  const answer = await call(server.url, TOKENS[agent], 'GET', `/v1/memory/events?include_deprecated=true&limit=500${params}`)
  expect(answer.status).toBe(200)
  return answer.body.events
}

const PLAN = '---\ntitle: Release plan\ntags: [release]\n---\n# Release plan\n\n- ship the dashboard\n- write the docs\n- tell the agents\n'

beforeAll(async () => {
  // Outside CI a developer's dist/ may be older than the page's sources: bundle the dashboard first.
  if (!process.env.CI) await (await import('../../scripts/bundle-dashboard.mjs')).buildDashboard()
  const base = await tempDir('jarvis-dash-server-')
  dirs.push(base)
  dataDir = join(base, 'data')
  server = await startServerProcess(dataDir)
  browser = await launchBrowser()
  alice = await makeTree('claude', server.url)
  await mkdir(join(alice.memory, 'notes'), {recursive: true})
  await writeFile(join(alice.memory, 'notes', 'plan.md'), PLAN)
  await writeFile(join(alice.memory, 'PROJECT_MEMORY.md'), '# Project memory\n\nThe dashboard is served by `jarvis serve` at `/`.\n')
  await mkdir(join(alice.memory, 'projects', 'atlas'), {recursive: true})
  await writeFile(join(alice.memory, 'projects', 'atlas', 'summary.md'), '# Atlas\n\nA map of every service.\n')
  await sync(alice)
  for (const [kind, key, content, extra] of [
    ['decision', 'decision:dashboard_stack', 'The dashboard uses **Preact** and markdown-it, bundled by esbuild.', []],
    ['config', 'config:server_port', 'The team server listens on port 8787.', ['--confidence', 'med', '--ttl-days', '30']],
  ] as const) {
    const run = await alice.jarvis(['memory', 'append', '--kind', kind, '--key', key, '--content', content, ...extra, '--json'])
    expect(run.code, run.stdout + run.stderr).toBe(0)
  }
  const task = await alice.jarvis(['task', 'complete', '--type', 'code-review', '--json'])
  expect(task.code, task.stdout + task.stderr).toBe(0)
}, 180_000)

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await browser?.close()
  await server?.stop()
  await removeAll(dirs)
})

describe('the dashboard', () => {
  it('signs in with a token kept for the tab only, and refuses an unknown one with the server’s message', async () => {
    const page = await browser.newPage()
    await page.goto(`${server.url}/`)
    await screenshots(page, 'sign-in')
    await page.getByLabel('Token').fill('not-a-token-of-this-server')
    await page.getByRole('button', {name: 'Sign in'}).click()
    await expect(page.getByRole('alert').textContent()).resolves.toContain('This token was refused: the token is not known to this server.')
    // By keyboard: the token field, then Enter.
    await page.getByLabel('Token').fill(TOKENS.claude)
    await page.getByLabel('Token').press('Enter')
    await page.getByText('signed in as claude').waitFor()
    await page.keyboard.press('Tab')
    await expect(page.evaluate('document.activeElement.textContent')).resolves.toBe('jarvis')
    expect(await page.evaluate("[sessionStorage.getItem('jarvis.token'), localStorage.length]")).toEqual([TOKENS.claude, 0])
    // A new tab is a new session: signed out.
    const other = await browser.newPage()
    await other.goto(`${server.url}/`)
    await other.getByLabel('Token').waitFor()
    await other.close()
    await page.close()
  })

  it('shows a memory file rendered, edits it with its revision, and a CLI client pulls the edit', async () => {
    const page = await signedIn(TOKENS.claude, '#/files/notes/plan.md')
    await page.getByRole('heading', {name: 'Release plan', level: 1}).waitFor()
    expect(await page.locator('.file-markdown li').allTextContents()).toEqual(['ship the dashboard', 'write the docs', 'tell the agents'])
    await screenshots(page, 'files')
    await page.getByRole('button', {name: 'Edit'}).click()
    const editor = page.getByLabel('Content of notes/plan.md')
    expect(await editor.inputValue()).toBe(PLAN)
    await editor.fill(PLAN.replace('- tell the agents\n', '- tell the agents\n- edited in the browser\n'))
    await screenshots(page, 'files-edit')
    await page.getByRole('button', {name: 'Save'}).click()
    await page.getByText('Saved notes/plan.md as revision 2.').waitFor()
    expect((await serverFile('notes/plan.md'))?.rev).toBe(2)

    await sync(alice)
    expect(await readFile(join(alice.memory, 'notes', 'plan.md'), 'utf8')).toContain('- edited in the browser\n')
    await page.close()
  })

  it('a stale edit shows the merge with a concurrent CLI edit and never overwrites it', async () => {
    const page = await signedIn(TOKENS.claude, '#/files/notes/plan.md')
    const openedRev = (await serverFile('notes/plan.md'))!.rev
    await page.getByRole('button', {name: 'Edit'}).click()
    const editor = page.getByLabel('Content of notes/plan.md')
    const opened = await editor.inputValue()
    await editor.fill(opened.replace('# Release plan\n', '# Release plan, second draft\n'))

    // Meanwhile an agent edits another line and syncs.
    const onDisk = await readFile(join(alice.memory, 'notes', 'plan.md'), 'utf8')
    await writeFile(join(alice.memory, 'notes', 'plan.md'), onDisk.replace('- write the docs\n', '- write the docs on Friday\n'))
    await sync(alice)
    const cliVersion = (await serverFile('notes/plan.md'))!
    expect(cliVersion.rev).toBe(openedRev + 1)
    await page.getByText(`claude changed this file on the server (revision ${cliVersion.rev}) while you edit it.`, {exact: false}).waitFor()

    await page.getByRole('button', {name: 'Save'}).click()
    await page.getByText(`notes/plan.md changed since you opened it (revision ${openedRev}): it is at revision ${cliVersion.rev} (by claude). Nothing was overwritten`, {exact: false}).waitFor()
    await page.getByText(/Your edit was merged with the server’s version below\. Nothing is saved yet/).waitFor()
    const merged = await editor.inputValue()
    expect(merged).toContain('- write the docs on Friday\n')
    expect(merged).toContain('# Release plan, second draft\n')
    // The stale save wrote nothing: the server still holds the CLI's version.
    expect(await serverFile('notes/plan.md')).toEqual(cliVersion)
    await screenshots(page, 'files-merge')

    await page.getByRole('button', {name: 'Save'}).click()
    await page.getByText(`Saved notes/plan.md as revision ${cliVersion.rev + 1}.`).waitFor()
    expect((await serverFile('notes/plan.md'))?.content).toBe(merged)

    // Both sides change the same line: the editor holds the server's line there, the page's whole text is kept beside it.
    await page.getByRole('button', {name: 'Edit'}).click()
    const mine = merged.replace('- tell the agents\n', '- tell the agents by mail\n')
    await editor.fill(mine)
    await sync(alice)
    await writeFile(join(alice.memory, 'notes', 'plan.md'), merged.replace('- tell the agents\n', '- tell the agents on Monday\n'))
    await sync(alice)
    const theirs = await serverFile('notes/plan.md')
    await page.getByRole('button', {name: 'Save'}).click()
    await page.getByText(/Both sides changed the same lines in 1 place/).waitFor()
    expect(await page.getByLabel('Your version (not saved)').inputValue()).toBe(mine)
    expect(await editor.inputValue()).toContain('- tell the agents on Monday\n')
    expect(await serverFile('notes/plan.md')).toEqual(theirs)
    await page.getByRole('button', {name: 'Discard edit'}).click()
    await page.close()
  })

  it('refuses a secret typed into an edit with the message the CLI gives, keeping the text', async () => {
    const secret = `The deploy token is ${fakeGithubToken()}\n`
    const cli = await alice.jarvis(['memory', 'write', 'notes/plan.md', '--json'], secret)
    expect(cli.code).toBe(5)
    const cliMessage = envelope(cli).error?.message
    expect(cliMessage).toMatch(/^refused: found a GitHub token in \.memory\/notes\/plan\.md/)

    const before = await serverFile('notes/plan.md')
    const page = await signedIn(TOKENS.claude, '#/files/notes/plan.md')
    await page.getByRole('button', {name: 'Edit'}).click()
    const editor = page.getByLabel('Content of notes/plan.md')
    await editor.fill(secret)
    await page.getByRole('button', {name: 'Save'}).click()
    const alert = page.getByRole('alert')
    await alert.waitFor()
    expect((await alert.textContent())?.trim()).toBe(cliMessage)
    expect(await editor.inputValue()).toBe(secret)
    expect(await serverFile('notes/plan.md')).toEqual(before)
    // Even a fake token never goes into the repository, a picture of one included.
    await screenshots(page, 'files-secret-refused', [editor])
    await page.getByRole('button', {name: 'Discard edit'}).click()
    await page.close()
  })

  it('a file clicked while the one before is still loading shows, edits and saves its own text only', async () => {
    for (const [path, content] of [['notes/a2.md', 'a 2\n'], ['notes/a3.md', 'a 3\n']]) {
      expect((await call(server.url, TOKENS.claude, 'POST', '/api/memory/write', {path, content, base: null})).body.rev).toBe(1)
    }
    const page = await signedIn(TOKENS.claude, '#/files')
    await noteAnswers(page)
    // a2's answer is held until a3 is shown, so that it arrives last, as a slow answer does.
    const a2 = await holdRequests(page, (url, body) => url.endsWith('/api/memory/pull') && body.includes('notes/a2.md'))
    await page.getByRole('link', {name: 'a2.md', exact: true}).click()
    await a2.asked
    await page.getByRole('link', {name: 'a3.md', exact: true}).click()
    await page.locator('.file-markdown').getByText('a 3').waitFor()
    a2.release()
    await answerHandled(page, '"notes/a2.md"')
    expect(await page.getByRole('heading', {level: 2}).textContent()).toBe('notes/a3.md')
    expect((await page.locator('.file-markdown').textContent())?.trim()).toBe('a 3')

    await page.getByRole('button', {name: 'Edit'}).click()
    const editor = page.getByLabel('Content of notes/a3.md')
    expect(await editor.inputValue()).toBe('a 3\n')
    await editor.fill('a 3 edited\n')
    // While the save is on its way the text cannot change: what is typed then would be dropped when it lands.
    const write = await holdRequests(page, (url) => url.endsWith('/api/memory/write'))
    await page.getByRole('button', {name: 'Save'}).click()
    await write.asked
    expect(await editor.isEditable()).toBe(false)
    write.release()
    await page.getByText('Saved notes/a3.md as revision 2.').waitFor()
    expect(await serverFile('notes/a3.md')).toMatchObject({content: 'a 3 edited\n', rev: 2})
    expect(await serverFile('notes/a2.md')).toMatchObject({content: 'a 2\n', rev: 1})

    // A path the server refuses shows the refusal, and nothing of the file open before it.
    await page.getByLabel('New file path').fill('../evil.md')
    await page.getByRole('button', {name: 'Open'}).click()
    await page.getByRole('heading', {name: '../evil.md'}).waitFor()
    const refusal = page.getByRole('alert')
    await refusal.waitFor()
    expect(await refusal.textContent()).toMatch(/\.\.\/evil\.md/)
    const pane = page.locator('section.file')
    expect(await pane.textContent()).not.toContain('a 3')
    expect(await pane.getByRole('button', {name: /^(Edit|Create this file)$/}).count()).toBe(0)
    await page.close()
  })

  it('keeps the draft of a large file through a reload, and says so when a draft does not fit in the tab', async () => {
    // Two files just under the 4 MiB a file may hold: the text and the text it started from do not both fit in the tab's storage.
    const big = `${'x'.repeat(99)}\n`.repeat(40_000)
    for (const path of ['notes/big.txt', 'notes/big-too.txt']) expect((await call(server.url, TOKENS.claude, 'POST', '/api/memory/write', {path, content: big, base: null})).status).toBe(200)
    const page = await signedIn(TOKENS.claude, '#/files/notes/big.txt')
    await page.getByRole('button', {name: 'Edit'}).click()
    const editor = page.getByLabel('Content of notes/big.txt')
    await editor.focus()
    await page.keyboard.press('Control+End')
    await page.keyboard.insertText('typed at the end')
    await page.reload()
    expect(await editor.inputValue()).toBe(`${big}typed at the end`)
    expect(await page.getByRole('alert').count()).toBe(0)

    // A second such draft does not fit beside the first: the editor says a reload would lose it.
    await page.getByRole('link', {name: 'big-too.txt', exact: true}).click()
    await page.getByRole('button', {name: 'Edit'}).click()
    await page.getByRole('alert').getByText('This draft is too large for the tab’s storage', {exact: false}).waitFor()
    await page.getByRole('button', {name: 'Discard edit'}).click()

    await page.getByRole('link', {name: 'big.txt', exact: true}).click()
    await page.getByRole('button', {name: 'Save'}).click()
    await page.getByText('Saved notes/big.txt as revision 2.').waitFor()
    expect((await serverFile('notes/big.txt'))?.content).toBe(`${big}typed at the end`)
    await page.close()
  })

  it('shows an append from the CLI live, with its confidence and TTL', async () => {
    const page = await signedIn(TOKENS.claude, '#/events')
    const port = page.getByRole('article', {name: /config config:server_port by claude/})
    await port.waitFor()
    expect(await port.textContent()).toContain('confidence med')
    expect(await port.textContent()).toMatch(/TTL 30 days, expires/)
    const run = await alice.jarvis(['memory', 'append', '--kind', 'fact', '--key', 'fact:live_check', '--content', 'Appended from the CLI while the page was open.', '--json'])
    expect(run.code, run.stdout + run.stderr).toBe(0)
    await page.getByText('Appended from the CLI while the page was open.').waitFor()
    await page.getByLabel('Kind').selectOption('config')
    await until('the kind filter', async () => (await page.locator('article.event').count()) === 1)
    expect(await page.locator('article.event .key').allTextContents()).toEqual(['config:server_port'])
    await page.getByLabel('Kind').selectOption('')
    await page.getByLabel('Text', {exact: true}).fill('Preact')
    await until('the text filter', async () => (await page.locator('article.event').count()) === 1)
    await page.getByLabel('Text', {exact: true}).fill('')
    await until('the whole list', async () => (await page.locator('article.event').count()) === 3)
    await screenshots(page, 'events')
    await page.close()
  })

  it('forgets an event only after a confirmation', async () => {
    const [target] = (await events('claude', '&dedupe_key=fact:live_check'))
    const page = await signedIn(TOKENS.claude, '#/events')
    const card = page.getByRole('article', {name: /fact fact:live_check/})
    await card.getByRole('button', {name: 'Forget fact:live_check'}).click()
    const dialog = page.getByRole('dialog', {name: 'Forget this event?'})
    await dialog.waitFor()
    await screenshots(page, 'events-forget-confirm')
    await dialog.getByRole('button', {name: 'Cancel'}).click()
    expect((await events('claude')).map((event) => event.event_id)).toContain(target.event_id)

    await card.getByRole('button', {name: 'Forget fact:live_check'}).click()
    await dialog.getByRole('button', {name: 'Forget'}).click()
    await page.getByText(`Forgot ${target.event_id}: its text is deleted from the shared memory.`).waitFor()
    const after = await events('claude')
    expect(after.map((event) => event.event_id)).not.toContain(target.event_id)
    expect(after.some((event) => event.content_md.includes('Appended from the CLI'))).toBe(false)
    const snapshot = await call(server.url, TOKENS.claude, 'GET', '/v1/memory/snapshot')
    expect(snapshot.text).not.toContain('Appended from the CLI')
    await page.close()
  })

  it('switches the active project for every client: a `jarvis sync --watch` client gets it as user-web', async () => {
    const bob = await makeTree('gemini', server.url)
    const watch = spawn(process.execPath, [...(process.env.CI ? [] : ['--import', 'tsx']), jarvisBin, 'sync', '--watch', '--json', '--dir', bob.root], {
      env: {...process.env, NO_COLOR: '1', ...bob.env},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(watch)
    let stdout = ''
    watch.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    await until('the watch client’s first sync', () => stdout.includes('\n'))

    const page = await signedIn(TOKENS.claude, '#/project')
    await page.getByText('No active project has been set.').waitFor()
    await page.getByLabel('Switch every client to project').fill('atlas')
    await page.getByRole('button', {name: 'Switch'}).click()
    await page.getByText('Switched every client to atlas.').waitFor()
    const pulled = await until('the watch client’s active_project.json', async () => {
      const text = await readFile(join(bob.memory, 'active_project.json'), 'utf8').catch(() => '')
      return text.includes('atlas') ? (JSON.parse(text) as {projectId: string; switchedBy: string}) : undefined
    })
    expect(pulled).toMatchObject({projectId: 'atlas', switchedBy: 'user-web'})

    // And a switch from the CLI reaches the open page live.
    const other = await signedIn(TOKENS.gemini, '#/project')
    const cli = await alice.jarvis(['switch-project', 'zephyr', '--json'])
    expect(cli.code, cli.stdout + cli.stderr).toBe(0)
    await other.getByText('The active project is now zephyr (switched by user-cli).').waitFor()
    expect(await other.locator('.project-id').textContent()).toBe('zephyr')
    await screenshots(other, 'project')
    watch.kill('SIGINT')
    await page.close()
    await other.close()
  })

  it('shows a private event of agent A to A’s token only', async () => {
    const run = await alice.jarvis(['memory', 'append', '--kind', 'fact', '--key', 'fact:claude_private', '--scope', 'agent:claude', '--content', 'Only claude may read this note.', '--json'])
    expect(run.code, run.stdout + run.stderr).toBe(0)
    const asClaude = await signedIn(TOKENS.claude, '#/events')
    await asClaude.getByText('Only claude may read this note.').waitFor()
    const asGemini = await signedIn(TOKENS.gemini, '#/events')
    await asGemini.getByRole('article', {name: /decision decision:dashboard_stack/}).waitFor()
    expect(await asGemini.locator('main').textContent()).not.toContain('Only claude may read this note.')
    await asGemini.getByLabel('Scope').fill('agent:claude')
    await asGemini.getByRole('alert').waitFor()
    expect(await asGemini.getByRole('alert').textContent()).toContain('agent:claude is another agent’s private scope'.replace('’', "'"))
    // The list of the filters before is not left under the refusal, as if it answered this one.
    expect(await asGemini.getByRole('article').count()).toBe(0)
    await asGemini.goto(`${server.url}/#/search`)
    await asGemini.getByLabel('Search memory files and events').fill('claude may read')
    await asGemini.getByRole('button', {name: 'Search'}).click()
    await asGemini.getByText('No event matches.').waitFor()
    await asClaude.close()
    await asGemini.close()
  })

  it('signed in with a key of another workspace, shows that workspace\'s memory only and names it', async () => {
    const created = await runJarvis(['serve', 'token', 'create', '--workspace', 'team-a', '--agent', 'gemini', '--data', dataDir, '--json'], {env: {JARVIS_DATABASE_URL: ''}})
    expect(created.code, created.stderr).toBe(0)
    const token = envelope<{token: string}>(created).result!.token
    expect((await call(server.url, token, 'POST', '/api/memory/push', {files: {'notes/team-a-only.md': '# Team A\n\nOur own plan.\n'}})).status).toBe(200)
    const page = await signedIn(token, '#/files')
    await page.getByText('signed in as gemini · workspace team-a').waitFor()
    await page.getByText('team-a-only.md').first().waitFor()
    expect(await page.locator('main').textContent()).not.toContain('plan.md')
    await page.goto(`${server.url}/#/search`)
    await page.getByLabel('Search memory files and events').fill('dashboard')
    await page.getByRole('button', {name: 'Search'}).click()
    await page.getByText('No event matches.').waitFor()
    expect(await page.locator('main').textContent()).not.toContain('Preact')
    await page.close()
    // The default workspace's page does not show team A's file.
    const ofDefault = await signedIn(TOKENS.claude, '#/files')
    await ofDefault.getByText('plan.md').first().waitFor()
    expect(await ofDefault.locator('main').textContent()).not.toContain('team-a-only')
    await ofDefault.close()
  })

  it('signed in with the key of an agent outside the event log (a CI job), reads pinned memory and events, and says why it cannot forget', async () => {
    const created = await runJarvis(['serve', 'token', 'create', '--agent', 'ci-bot', '--role', 'admin', '--data', dataDir, '--json'], {env: {JARVIS_DATABASE_URL: ''}})
    expect(created.code, created.stderr).toBe(0)
    const page = await signedIn(envelope<{token: string}>(created).result!.token, '#/pinned')
    await page.getByText(/decision:dashboard_stack/).first().waitFor()
    expect(await page.getByLabel('Scopes (comma-separated)').inputValue()).not.toContain('agent:ci-bot')
    expect(await page.locator('main [role=alert]').count()).toBe(0)
    await page.goto(`${server.url}/#/events`)
    await page.getByText("This key speaks for ci-bot, which is not one of the event log's agents").waitFor()
    await page.getByText(/decision:dashboard_stack/).first().waitFor()
    expect(await page.getByRole('button', {name: /^Forget/}).count()).toBe(0)
    await page.close()
  })

  it('an app asks to be allowed: an agent the event log does not know (a typo) is named on the consent page, and Allow waits for one it knows', async () => {
    const created = await runJarvis(['serve', 'token', 'create', '--agent', 'ops', '--role', 'admin', '--data', dataDir, '--json'], {env: {JARVIS_DATABASE_URL: ''}})
    expect(created.code, created.stderr).toBe(0)
    const app = new TestApp('ChatGPT')
    expect(await auth(app, {serverUrl: `${server.url}/mcp`})).toBe('REDIRECT')
    const page = await browser.newPage()
    await page.goto(app.authorizationUrl!.href)
    await page.getByLabel('Token').fill(envelope<{token: string}>(created).result!.token)
    await page.getByRole('button', {name: 'Sign in'}).click()
    await page.getByRole('heading', {name: 'Allow ChatGPT to use your shared memory?'}).waitFor()
    const agent = page.getByLabel('It acts as the agent')
    expect(await agent.inputValue()).toBe('chatgpt')
    expect(await page.getByRole('button', {name: 'Allow'}).isEnabled()).toBe(true)
    await agent.fill('chatgtp')
    await page.getByText('chatgtp is not one of the agents that write the shared event log (claude, gemini, chatgpt, openclaw)').waitFor()
    expect(await page.getByRole('button', {name: 'Allow'}).isDisabled()).toBe(true)
    await agent.fill('chatgpt')
    expect(await page.getByRole('button', {name: 'Allow'}).isEnabled()).toBe(true)
    expect(await page.getByText('is not one of the agents').count()).toBe(0)
    await page.close()
  })

  it('shows agents, pinned memory and search', async () => {
    const page = await signedIn(TOKENS.claude, '#/agents')
    const card = page.getByRole('article', {name: 'claude'})
    await card.getByRole('cell', {name: 'code-review'}).waitFor()
    expect(await card.textContent()).toContain('Last active')
    await screenshots(page, 'agents')

    await page.goto(`${server.url}/#/pinned`)
    await page.getByText(/\[decision\] decision:dashboard_stack: The dashboard uses \*\*Preact\*\*|\[decision\] decision:dashboard_stack: The dashboard uses Preact/).first().waitFor()
    expect(await page.locator('.pinned').textContent()).toContain('[config] config:server_port')
    await screenshots(page, 'pinned')

    await page.goto(`${server.url}/#/search`)
    await page.getByLabel('Search memory files and events').fill('service map')
    await page.getByRole('button', {name: 'Search'}).click()
    await page.getByRole('link', {name: 'projects/atlas/summary.md'}).waitFor()
    await screenshots(page, 'search')
    await page.close()
  })

  it('an answer that arrives after a newer one never replaces it (event log, pinned memory)', async () => {
    for (const [key, scope, content] of [
      ['fact:held_back', 'global', 'The zebrafish answer is held back.'],
      ['fact:answered_first', 'global', 'The quokka answer comes first.'],
      ['fact:claude_own_fish', 'agent:claude', 'The zebrafish of claude alone.'],
    ]) {
      const appended = await call(server.url, TOKENS.claude, 'POST', '/v1/memory/append', {run_id: 'race-run', scope, kind: 'fact', dedupe_key: key, confidence: 'high', content_md: content, source: {system: 'cli'}, ttl_days: 0})
      expect(appended.status).toBe(200)
    }
    const page = await signedIn(TOKENS.claude, '#/events')
    await noteAnswers(page)
    const eventsFor = await holdRequests(page, (url) => url.includes('/v1/memory/events') && url.includes('q=zebrafish'))
    const text = page.getByLabel('Text', {exact: true})
    await text.fill('zebrafish')
    await eventsFor.asked
    await text.fill('quokka')
    await page.getByRole('article', {name: /fact fact:answered_first/}).waitFor()
    eventsFor.release()
    await answerHandled(page, 'q=zebrafish')
    expect(await text.inputValue()).toBe('quokka')
    expect(await page.locator('article.event .key').allTextContents()).toEqual(['fact:answered_first'])
    expect(await page.locator('p.count').textContent()).toBe('1 event.')

    await page.getByRole('link', {name: 'Pinned memory'}).click()
    const scopes = page.getByLabel('Scopes (comma-separated)')
    await until('the default scopes', async () => (await scopes.inputValue()) !== '')
    const pinnedFor = await holdRequests(page, (url) => url.includes('/v1/memory/snapshot') && url.includes('scopes=agent%3Aclaude&'))
    await scopes.fill('agent:claude')
    await scopes.press('Tab')
    await pinnedFor.asked
    await scopes.fill('global')
    await scopes.press('Tab')
    await answerHandled(page, 'scopes=global&')
    pinnedFor.release()
    await answerHandled(page, 'scopes=agent%3Aclaude&')
    expect(await scopes.inputValue()).toBe('global')
    expect(await page.locator('.pinned').textContent()).toContain('The quokka answer comes first.')
    expect(await page.locator('main').textContent()).not.toContain('The zebrafish of claude alone.')

    // Scopes this token may not read: the refusal alone, not the snapshot of the scopes before under it.
    await scopes.fill('agent:gemini')
    await scopes.press('Tab')
    await page.getByRole('alert').waitFor()
    expect(await page.locator('.pinned').count()).toBe(0)
    expect(await page.locator('main').textContent()).not.toContain('The quokka answer comes first.')
    await page.close()
  })

  it('the audit log shows a CLI sync with a conflict, a refused secret and a forget, live, filtered by kind, and only to their agent', async () => {
    const page = await signedIn(TOKENS.claude, '#/audit')
    await page.getByRole('heading', {name: 'Audit log'}).waitFor()
    const entries = page.locator('li.audit')
    await entries.first().waitFor()
    const seen = async () => page.locator('li.audit').evaluateAll((items) => items.map((item) => item.getAttribute('data-kind')))

    // Two machines of one agent edit the same file; the second sync merges and pushes, and the server records both.
    const laptop = await makeTree('claude', server.url)
    await writeFile(join(alice.memory, 'notes', 'audit.md'), 'first line\nmiddle line\nlast line\n')
    await sync(alice)
    await sync(laptop)
    await writeFile(join(alice.memory, 'notes', 'audit.md'), 'first line, edited on the desktop\nmiddle line\nlast line\n')
    await sync(alice)
    await writeFile(join(laptop.memory, 'notes', 'audit.md'), 'first line\nmiddle line\nlast line, edited on the laptop\n')
    const merged = await laptop.jarvis(['sync', '--json'])
    expect(merged.code, merged.stdout + merged.stderr).toBe(0)
    expect(envelope<{merged: string[]}>(merged).result?.merged).toEqual(['notes/audit.md'])
    const conflict = page.getByRole('listitem', {name: 'conflict by claude'}).filter({hasText: 'notes/audit.md'})
    await conflict.waitFor()
    expect(await conflict.textContent()).toContain('merged three-way by the client')

    // A secret sent to the server is refused, and the entry says what and where, never the secret.
    const secret = fakeGithubToken()
    const refused = await call(server.url, TOKENS.claude, 'POST', '/v1/memory/append', {run_id: 'audit-run', scope: 'global', kind: 'fact', dedupe_key: 'fact:deploy_token', confidence: 'high', content_md: `The deploy token is ${secret}`, source: {system: 'cli'}, ttl_days: 0})
    expect(refused.status).toBe(422)
    const refusal = page.getByRole('listitem', {name: 'secret refused by claude'}).filter({hasText: 'a fact event for global'})
    await refusal.waitFor()
    expect(await refusal.textContent()).toContain('a GitHub token in content_md')

    // Forgotten from the CLI's side of the API: superseded, then deleted by a cleanup.
    const fact = await alice.jarvis(['memory', 'append', '--kind', 'fact', '--key', 'fact:audit_forget', '--content', 'A fact to forget.', '--json'])
    expect(fact.code, fact.stdout + fact.stderr).toBe(0)
    const [target] = await events('claude', '&dedupe_key=fact:audit_forget')
    const withdrawn = await call(server.url, TOKENS.claude, 'POST', '/v1/memory/append', {run_id: 'audit-run', scope: 'global', kind: 'deprecation', dedupe_key: 'fact:audit_forget', confidence: 'high', content_md: 'Withdrawn.', source: {system: 'cli'}, ttl_days: 0, supersedes: target.event_id})
    expect(withdrawn.status).toBe(200)
    const cleanup = await call(server.url, TOKENS.claude, 'POST', '/v1/memory/cleanup', {older_than_days: 0, dry_run: false, event_ids: [target.event_id]})
    expect(cleanup.body.deleted).toEqual([target.event_id])
    await page.getByRole('listitem', {name: 'forgotten by claude'}).filter({hasText: target.event_id}).waitFor()
    await page.getByRole('listitem', {name: 'superseded by claude'}).filter({hasText: target.event_id}).waitFor()
    // Newest first: the forget, the supersede, and before them the refusal, and before it the merged sync.
    const kinds = await seen()
    expect(kinds.slice(0, 2)).toEqual(['forget', 'supersede'])
    expect(kinds.indexOf('refused')).toBeLessThan(kinds.indexOf('conflict'))
    expect(await page.locator('main').textContent()).not.toContain(secret)
    await screenshots(page, 'audit')

    await page.getByLabel('Kind').selectOption('conflict')
    await until('the kind filter', async () => (await seen()).length > 0 && (await seen()).every((kind) => kind === 'conflict'))
    await page.getByLabel('Kind').selectOption('')
    await page.close()

    // Another agent's token sees none of claude's entries.
    const asGemini = await signedIn(TOKENS.gemini, '#/audit')
    await asGemini.getByRole('heading', {name: 'Audit log'}).waitFor()
    await until('gemini’s list', async () => (await asGemini.locator('p.count').count()) === 1)
    expect(await asGemini.locator('li.audit .agent').allTextContents()).not.toContain('claude')
    await asGemini.close()
  })

  it('the audit log keeps the older entries shown when a new one arrives live', async () => {
    const refuse = async (kind: string) => {
      const answer = await call(server.url, TOKENS.gemini, 'POST', '/v1/memory/append', {run_id: 'audit-pages', scope: 'global', kind, dedupe_key: `${kind}:refused_token`, confidence: 'high', content_md: `The token is ${fakeGithubToken()}`, source: {system: 'cli'}, ttl_days: 0})
      expect(answer.status).toBe(422)
    }
    // More than one page (50) of gemini's entries.
    for (let count = 0; count < 60; count += 1) await refuse('fact')
    const page = await signedIn(TOKENS.gemini, '#/audit')
    const entries = page.locator('li.audit')
    await until('the newest page', async () => (await entries.count()) === 50)
    await page.getByRole('button', {name: 'Show older entries'}).click()
    await until('the older entries', async () => (await entries.count()) > 50)
    const loaded = await entries.count()
    const oldest = await entries.last().textContent()

    await refuse('decision')
    await page.getByRole('listitem', {name: 'secret refused by gemini'}).filter({hasText: 'a decision event for global'}).waitFor()
    expect(await entries.count()).toBe(loaded + 1)
    expect(await entries.last().textContent()).toBe(oldest)
    await page.close()
  })

  it('a refused token and a server restart while editing give a clear message and lose nothing typed', async () => {
    const key = await runJarvis(['serve', 'token', 'create', '--agent', 'claude', '--data', dataDir, '--json'])
    expect(key.code, key.stderr).toBe(0)
    const {id, token} = envelope<{id: string; token: string}>(key).result!
    const page = await signedIn(token, '#/files/PROJECT_MEMORY.md')
    await page.getByRole('button', {name: 'Edit'}).click()
    const editor = page.getByLabel('Content of PROJECT_MEMORY.md')
    const typed = '# Project memory\n\nTyped while the key was revoked and the server restarted.\n'
    await editor.fill(typed)

    const revoke = await runJarvis(['serve', 'token', 'revoke', id, '--data', dataDir, '--json'])
    expect(revoke.code, revoke.stderr).toBe(0)
    await page.getByRole('button', {name: 'Save'}).click()
    const refused = page.getByRole('dialog', {name: 'Sign in to jarvis'})
    await refused.getByText(/The server refused the token: .*revoked.* Sign in again; nothing you typed is lost\./).waitFor()
    await screenshots(page, 'token-refused')
    await refused.getByLabel('Token').fill(TOKENS.claude)
    await refused.getByRole('button', {name: 'Sign in'}).click()
    await refused.waitFor({state: 'detached'})
    expect(await editor.inputValue()).toBe(typed)

    const port = server.port
    await server.stop()
    await page.getByText('Offline').waitFor()
    await page.getByRole('button', {name: 'Save'}).click()
    await page.getByText(/The jarvis server does not answer .* Nothing you typed is lost/).first().waitFor()
    expect(await editor.inputValue()).toBe(typed)
    server = await startServerProcess(dataDir, port)
    await page.getByText('Live', {exact: true}).waitFor()
    // A reload of the tab keeps the draft too (the tab's session storage).
    await page.reload()
    expect(await page.getByLabel('Content of PROJECT_MEMORY.md').inputValue()).toBe(typed)
    await page.getByRole('button', {name: 'Save'}).click()
    await page.getByText('Saved PROJECT_MEMORY.md as revision 2.').waitFor()
    expect((await serverFile('PROJECT_MEMORY.md'))?.content).toBe(typed)
    await page.close()
  })
})
