/**
 * `jarvis telegram` as a process, against a real `jarvis serve` and a stand-in of Telegram's Bot API on
 * 127.0.0.1 (the real one is a third-party service): the bot answers allowed chats only, writes events with
 * `source: telegram` that every agent's next snapshot shows, refuses a secret with the CLI's own message, and
 * stops cleanly on SIGTERM.
 */
import {type ChildProcess, spawn} from 'node:child_process'
import {createServer, type Server} from 'node:http'
import {randomBytes} from 'node:crypto'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {fakeGithubToken} from '../files/helpers.js'
import {jarvisBin, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, tempDir, TOKENS, type TestClient, type TestServer} from '../helpers/world.js'

interface Sent {
  chat_id: number
  text: string
}

/** Just enough of the Bot API for a long-polling bot: getMe, getUpdates (held briefly), sendMessage. */
class BotApiStandIn {
  readonly sent: Sent[] = []
  private readonly updates: unknown[] = []
  private nextUpdate = 1
  private nextMessage = 1
  private server!: Server
  url = ''

  async start(token: string): Promise<void> {
    this.server = createServer((request, response) => {
      let body = ''
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      request.on('end', () => void this.answer(token, request.url ?? '', body ? (JSON.parse(body) as Record<string, unknown>) : {}).then((result) => response.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify(result))))
    })
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as {port: number}).port}`
  }

  private async answer(token: string, url: string, body: Record<string, unknown>): Promise<{ok: boolean; result?: unknown; description?: string}> {
    const [, bot, method] = url.split('/')
    if (bot !== `bot${token}`) return {ok: false, description: 'Unauthorized'}
    switch (method) {
      case 'getMe':
        return {ok: true, result: {id: 7, is_bot: true, first_name: 'Jarvis', username: 'jarvis_test_bot'}}
      case 'getUpdates': {
        const offset = Number(body.offset ?? 0)
        for (let waited = 0; waited < 200 && !this.updates.some((u) => (u as {update_id: number}).update_id >= offset); waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
        return {ok: true, result: this.updates.filter((u) => (u as {update_id: number}).update_id >= offset)}
      }
      case 'sendMessage':
        this.sent.push({chat_id: Number(body.chat_id), text: String(body.text)})
        return {ok: true, result: {message_id: this.nextMessage++, date: 0, chat: {id: Number(body.chat_id), type: 'private'}, text: body.text}}
      default:
        return {ok: true, result: true}
    }
  }

  /** A person types `text` in chat `chat`; resolves with the bot's answer to it. */
  async say(chat: number, text: string): Promise<string> {
    const before = this.sent.filter((m) => m.chat_id === chat).length
    const command = /^\/\w+/.exec(text)?.[0]
    this.updates.push({
      update_id: this.nextUpdate++,
      message: {message_id: 100 + this.nextUpdate, date: Math.floor(Date.now() / 1000), chat: {id: chat, type: 'private'}, from: {id: chat, is_bot: false, first_name: 'Ana'}, text, ...(command ? {entities: [{type: 'bot_command', offset: 0, length: command.length}]} : {})},
    })
    for (let i = 0; i < 600; i++) {
      const mine = this.sent.filter((m) => m.chat_id === chat)
      if (mine.length > before) return mine[before].text
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error(`no answer to ${JSON.stringify(text)} in chat ${chat}`)
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

describe('jarvis telegram', () => {
  let server: TestServer
  let tree: TestClient
  let api: BotApiStandIn
  let bot: ChildProcess
  let botExit: Promise<number | null>
  let stderr = ''
  let home: string
  const botToken = `${Date.now() % 1_000_000}:${randomBytes(18).toString('base64url')}`

  beforeAll(async () => {
    server = await startTestServer()
    tree = await makeClient(server.url, 'claude')
    home = await tempDir('jarvis-telegram-home-')
    await tree.write('notes/pgbouncer.md', '# pgbouncer\n\nRun pgbouncer in transaction pooling mode.\n')
    api = new BotApiStandIn()
    await api.start(botToken)
    bot = spawn(process.execPath, [jarvisBin, 'telegram', '--allow-chat', '42', '--api-root', api.url], {
      cwd: tree.root,
      env: {...process.env, NO_COLOR: '1', JARVIS_TELEGRAM_TOKEN: botToken, JARVIS_TOKEN: TOKENS.claude, JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', XDG_CONFIG_HOME: `${home}/xdg`},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    bot.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    botExit = new Promise((resolve) => bot.once('exit', (code) => resolve(code)))
  }, 60_000)

  afterAll(async () => {
    if (bot && bot.exitCode === null) {
      bot.kill('SIGTERM')
      await botExit
    }
    await api?.close()
    await server?.close()
    await removeAll([server?.dataDir, tree?.root, home].filter(Boolean) as string[])
  })

  it('answers the allowed chat, through the same operations as the commands', async () => {
    const appended = await api.say(42, '/append decision decision:deploy_day Deploys go out on Tuesdays.')
    expect(appended, stderr).toContain('appended decision decision:deploy_day to global')

    // Every agent's next snapshot has it, written as a Telegram event from chat 42.
    const gemini = await runJarvis(['memory', 'snapshot', '--server', server.url, '--agent', 'gemini', '--json'], {env: {JARVIS_TOKEN: TOKENS.gemini, XDG_CONFIG_HOME: `${home}/xdg`, JARVIS_DIR: ''}, cwd: home})
    const recent = (JSON.parse(gemini.stdout) as {result: {recent_events: Array<{content_md: string; source: {system: string; thread_id?: string}}>}}).result.recent_events
    expect(recent.find((event) => event.content_md === 'Deploys go out on Tuesdays.')?.source).toMatchObject({system: 'telegram', thread_id: '42'})

    expect(await api.say(42, '/snapshot')).toContain('Deploys go out on Tuesdays.')
    expect(await api.say(42, '/search deploys')).toContain('Deploys go out on Tuesdays.')
    expect(await api.say(42, '/recall pgbouncer pooling')).toContain('notes/pgbouncer.md')
    expect(await api.say(42, '/switch atlas')).toContain('active project: atlas')
    const active = (await (await fetch(`${server.url}/api/projects/active`, {headers: {authorization: `Bearer ${TOKENS.gemini}`}})).json()) as {projectId: string}
    expect(active.projectId).toBe('atlas')
  })

  it('stores an /append as typed, takes a decision changed back, and names a bad argument as the chat command has it', async () => {
    const snapshot = async () => {
      const run = await runJarvis(['memory', 'snapshot', '--server', server.url, '--agent', 'gemini', '--json'], {env: {JARVIS_TOKEN: TOKENS.gemini, XDG_CONFIG_HOME: `${home}/xdg`, JARVIS_DIR: ''}, cwd: home})
      return (JSON.parse(run.stdout) as {result: {pinned_md: string; recent_events: Array<{dedupe_key: string; content_md: string}>}}).result
    }
    // Lines and runs of spaces kept; only the space between the key and the text left out.
    const text = 'Deploys go out on Tuesdays.\nSecond line:  never on Friday.\n  - not even a hotfix'
    expect(await api.say(42, `/append decision decision:deploy_rules   ${text}`)).toContain('appended decision decision:deploy_rules')
    expect((await snapshot()).recent_events.find((event) => event.dedupe_key === 'decision:deploy_rules')?.content_md).toBe(text)

    // Each message is a run of its own: a decision changed back is stored again, and pinned as it is now.
    for (const time of ['noon', 'one', 'noon']) expect(await api.say(42, `/append decision decision:lunch Lunch at ${time}`)).toContain('appended decision decision:lunch')
    const pinned = (await snapshot()).pinned_md
    expect(pinned).toContain('Lunch at noon')
    expect(pinned).not.toContain('Lunch at one')

    const refused = await api.say(42, '/append rumour decision:lunch Lunch at two')
    expect(refused).toBe(
      '/append: kind: must be one of decision, config, constraint, workflow, fact, bug, todo, log, deprecation, conflict_resolution\nusage: /append <kind> <key> <text>, e.g. /append decision decision:deploy_day Deploys go out on Tuesdays.',
    )
  })

  it('refuses a secret with the message the CLI prints, and stores nothing', async () => {
    const secret = fakeGithubToken()
    const text = `The bot token is ${secret} for now.`
    const reply = await api.say(42, `/append config config:bot_token ${text}`)
    const cli = await runJarvis(['memory', 'append', '--kind', 'config', '--key', 'config:bot_token', '--content', text], {cwd: tree.root, env: {JARVIS_TOKEN: TOKENS.claude, XDG_CONFIG_HOME: `${home}/xdg`, JARVIS_DIR: ''}})
    expect(cli.code).toBe(5)
    expect(reply).toBe(cli.stderr.trim())
    expect(reply).not.toContain(secret)
    expect(await api.say(42, '/snapshot')).not.toContain('bot token is')
  })

  it('tells another chat it is not allowed, shows it nothing, and stops cleanly on SIGTERM', async () => {
    const refused = await api.say(99, '/snapshot')
    expect(refused).toContain('This chat (99) is not allowed')
    expect(refused).not.toContain('Tuesdays')
    bot.kill('SIGTERM')
    expect(await botExit).toBe(0)
    expect(stderr).toContain('@jarvis_test_bot answers chat(s) 42')
  })
})
