/**
 * `jarvis telegram` as a process, against a real `jarvis serve` and a stand-in of Telegram's Bot API on
 * 127.0.0.1 (the real one is a third-party service): the bot answers allowed chats only, writes events with
 * `source: telegram` that every agent's next snapshot shows, refuses a secret with the CLI's own message, and
 * stops cleanly on SIGTERM. The stand-in also fails as the real one does (429 with retry_after, 502, a dropped
 * connection, 403 for a blocked user or a kicked bot, 401 for a wrong token, not listening at all): the bot goes on,
 * stops with the contract's exit codes, and never prints its token.
 */
import {type ChildProcess, spawn} from 'node:child_process'
import {createServer, type Server} from 'node:http'
import {randomBytes} from 'node:crypto'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {fakeGithubToken} from '../files/helpers.js'
import {jarvisBin, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, tempDir, TOKENS, until, type TestClient, type TestServer} from '../helpers/world.js'
import {API_RETRY, retryDelayMs} from '../../src/telegram/api.js'
import {clipToMessage, HELP} from '../../src/telegram/bot.js'

interface Sent {
  chat_id: number
  text: string
}

type ChatType = 'private' | 'group' | 'supergroup'

/** How the stand-in fails a sendMessage: an error answer of the Bot API (its HTTP status and body), or a dropped connection. */
type SendFailure = {status: number; body: Record<string, unknown>} | 'drop'

/** Just enough of the Bot API for a long-polling bot: getMe, getUpdates (held briefly), sendMessage — and its failures. */
class BotApiStandIn {
  readonly sent: Sent[] = []
  /** Every sendMessage asked for, answered or not. */
  readonly attempts: Sent[] = []
  /** sendMessage calls that came before the `retry_after` of a 429 had passed (Telegram would refuse them again). */
  early = 0
  private readonly updates: unknown[] = []
  private readonly sendFailures: SendFailure[] = []
  /** Chats the bot was removed from: Telegram answers any message to them with a 403. */
  private readonly kickedFrom = new Set<number>()
  private retryNotBefore = 0
  private nextUpdate = 1
  private nextMessage = 1
  private server!: Server
  url = ''

  async start(token: string): Promise<void> {
    this.server = createServer((request, response) => {
      let body = ''
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      request.on('end', () => {
        void this.answer(token, request.url ?? '', body ? (JSON.parse(body) as Record<string, unknown>) : {}).then((answer) => {
          if (answer === 'drop') request.socket.destroy()
          else response.writeHead(answer.status, {'content-type': 'application/json'}).end(JSON.stringify(answer.body))
        })
      })
    })
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as {port: number}).port}`
  }

  private async answer(token: string, url: string, body: Record<string, unknown>): Promise<SendFailure> {
    const ok = (result: unknown) => ({status: 200, body: {ok: true, result}})
    const [, bot, method] = url.split('/')
    if (bot !== `bot${token}`) return {status: 401, body: {ok: false, error_code: 401, description: 'Unauthorized'}}
    switch (method) {
      case 'getMe':
        return ok({id: 7, is_bot: true, first_name: 'Jarvis', username: 'jarvis_test_bot'})
      case 'getUpdates': {
        const offset = Number(body.offset ?? 0)
        for (let waited = 0; waited < 200 && !this.updates.some((u) => (u as {update_id: number}).update_id >= offset); waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
        return ok(this.updates.filter((u) => (u as {update_id: number}).update_id >= offset))
      }
      case 'sendMessage': {
        const message = {chat_id: Number(body.chat_id), text: String(body.text)}
        this.attempts.push(message)
        if (Date.now() < this.retryNotBefore) {
          this.early++
          return tooManyRequests(1)
        }
        if (this.kickedFrom.has(message.chat_id)) return {status: 403, body: {ok: false, error_code: 403, description: 'Forbidden: bot was kicked from the group chat'}}
        const failure = this.sendFailures.shift()
        if (failure !== undefined) {
          const retryAfter = failure === 'drop' ? undefined : (failure.body.parameters as {retry_after?: number} | undefined)?.retry_after
          if (retryAfter !== undefined) this.retryNotBefore = Date.now() + retryAfter * 1000
          return failure
        }
        this.sent.push(message)
        return ok({message_id: this.nextMessage++, date: 0, chat: {id: message.chat_id, type: 'private'}, text: body.text})
      }
      default:
        return ok(true)
    }
  }

  /** The next sendMessage fails this way (once). */
  failNextSend(failure: SendFailure): void {
    this.sendFailures.push(failure)
  }

  /** The bot is removed from `chat`: Telegram sends it a my_chat_member update, and refuses its messages there. */
  removeBotFrom(chat: number, type: ChatType): void {
    this.kickedFrom.add(chat)
    const member = (status: string) => ({status, user: {id: 7, is_bot: true, first_name: 'Jarvis', username: 'jarvis_test_bot'}})
    this.updates.push({
      update_id: this.nextUpdate++,
      my_chat_member: {chat: {id: chat, type, title: 'strangers'}, from: {id: 1234, is_bot: false, first_name: 'Eve'}, date: Math.floor(Date.now() / 1000), old_chat_member: member('member'), new_chat_member: member('left')},
    })
  }

  /** A person types `text` in chat `chat`, and the test does not wait for an answer. */
  post(chat: number, text: string, type: ChatType = 'private'): void {
    const command = /^\/\w+(@\w+)?/.exec(text)?.[0]
    this.updates.push({
      update_id: this.nextUpdate++,
      message: {message_id: 100 + this.nextUpdate, date: Math.floor(Date.now() / 1000), chat: {id: chat, type, ...(type === 'private' ? {} : {title: 'team'})}, from: {id: 4242, is_bot: false, first_name: 'Ana'}, text, ...(command ? {entities: [{type: 'bot_command', offset: 0, length: command.length}]} : {})},
    })
  }

  /** A person types `text` in chat `chat`; resolves with the bot's next answer in that chat. */
  async say(chat: number, text: string, type: ChatType = 'private'): Promise<string> {
    const before = this.sentTo(chat).length
    this.post(chat, text, type)
    for (let i = 0; i < 600; i++) {
      const mine = this.sentTo(chat)
      if (mine.length > before) return mine[before].text
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error(`no answer to ${JSON.stringify(text)} in chat ${chat}`)
  }

  sentTo(chat: number): Sent[] {
    return this.sent.filter((m) => m.chat_id === chat)
  }

  /** Gone at once, as a Bot API the network lost: the long poll in flight is cut too. */
  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    this.server.closeAllConnections()
    return closed
  }
}

function tooManyRequests(retryAfter: number): SendFailure {
  return {status: 429, body: {ok: false, error_code: 429, description: `Too Many Requests: retry after ${retryAfter}`, parameters: {retry_after: retryAfter}}}
}

/** A port nothing listens on: one the system gave and took back. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as {port: number}).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

function newBotToken(): string {
  return `${Date.now() % 1_000_000}:${randomBytes(18).toString('base64url')}`
}

/** What a person would call a crash dump: grammy's own alarm, a stack frame, an unhandled rejection. */
const CRASH = /No error handler|Stopping bot|^\s+at |Unhandled|FetchError/m

interface BotProcess {
  child: ChildProcess
  exit: Promise<number | null>
  stderr(): string
}

/** Every bot a test started, so that one a failed test left running is stopped. */
const spawned: ChildProcess[] = []

afterAll(() => {
  for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

function spawnBot(args: string[], options: {token: string; cwd: string; env?: NodeJS.ProcessEnv}): BotProcess {
  const child = spawn(process.execPath, [jarvisBin, 'telegram', ...args], {
    cwd: options.cwd,
    env: {...process.env, NO_COLOR: '1', JARVIS_TELEGRAM_TOKEN: options.token, JARVIS_TELEGRAM_API_ROOT: '', ...options.env},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  spawned.push(child)
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  child.stdout!.resume()
  return {child, exit: new Promise((resolve) => child.once('exit', (code) => resolve(code))), stderr: () => stderr}
}

describe('jarvis telegram', () => {
  let server: TestServer
  let tree: TestClient
  let api: BotApiStandIn
  let bot: BotProcess
  let home: string
  const botToken = newBotToken()
  const team = -1001

  beforeAll(async () => {
    server = await startTestServer()
    tree = await makeClient(server.url, 'claude')
    home = await tempDir('jarvis-telegram-home-')
    await tree.write('notes/pgbouncer.md', '# pgbouncer\n\nRun pgbouncer in transaction pooling mode.\n')
    api = new BotApiStandIn()
    await api.start(botToken)
    bot = spawnBot(['--allow-chat', '42', '--allow-chat', String(team), '--api-root', api.url], {
      token: botToken,
      cwd: tree.root,
      env: {JARVIS_TOKEN: TOKENS.claude, JARVIS_AGENT: '', JARVIS_SERVER: '', JARVIS_DIR: '', XDG_CONFIG_HOME: `${home}/xdg`},
    })
  }, 60_000)

  afterAll(async () => {
    if (bot && bot.child.exitCode === null) {
      bot.child.kill('SIGTERM')
      await bot.exit
    }
    await api?.close()
    await server?.close()
    await removeAll([server?.dataDir, tree?.root, home].filter(Boolean) as string[])
  })

  it('answers the allowed chat, through the same operations as the commands', async () => {
    const appended = await api.say(42, '/append decision decision:deploy_day Deploys go out on Tuesdays.')
    expect(appended, bot.stderr()).toContain('appended decision decision:deploy_day to global')

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

  it('waits out a 429 for its retry_after, tries a 502 and a dropped connection again, and answers', async () => {
    api.failNextSend(tooManyRequests(1))
    expect(await api.say(42, '/help')).toBe(HELP)
    expect(api.early).toBe(0)

    api.failNextSend({status: 502, body: {ok: false, error_code: 502, description: 'Bad Gateway'}})
    expect(await api.say(42, '/search')).toBe('usage: /search <words>')

    api.failNextSend('drop')
    expect(await api.say(42, '/recall')).toBe('usage: /recall <words>')

    expect(bot.stderr()).toContain('sendMessage failed (429: Too Many Requests: retry after 1); trying again in 1 s')
    expect(bot.stderr()).not.toContain(botToken)
    expect(bot.stderr()).not.toMatch(CRASH)
  })

  it('logs a reply it cannot send (the user blocked the bot) in one line, and goes on answering', async () => {
    api.failNextSend({status: 403, body: {ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user'}})
    api.post(42, '/help')
    expect(await api.say(42, '/search')).toBe('usage: /search <words>')
    const logged = bot.stderr().split('\n').filter((line) => line.includes('blocked'))
    expect(logged).toEqual(["jarvis telegram: no answer to chat 42: Call to 'sendMessage' failed! (403: Forbidden: bot was blocked by the user)"])
    expect(bot.stderr()).not.toMatch(CRASH)
  })

  it('says nothing when a stranger adds it to a group and removes it, and goes on answering', async () => {
    api.removeBotFrom(-555, 'group')
    expect(await api.say(42, '/search')).toBe('usage: /search <words>')
    expect(api.attempts.filter((m) => m.chat_id === -555)).toEqual([])
    expect(bot.stderr()).not.toMatch(CRASH)
  })

  it('in a group, answers its own commands only: not the talk, not a command for another bot', async () => {
    api.post(team, 'hi team, lunch at noon?', 'supergroup')
    api.post(team, '/snapshot@some_other_bot', 'supergroup')
    expect(await api.say(team, '/search@jarvis_test_bot', 'supergroup')).toBe('usage: /search <words>')
    expect(await api.say(team, '/search', 'supergroup')).toBe('usage: /search <words>')
    expect(api.sentTo(team)).toHaveLength(2)

    // A group not on the list hears why only when it speaks to the bot.
    api.post(-777, 'anyone seen the deploy notes?', 'group')
    expect(await api.say(-777, '/snapshot', 'group')).toContain('This chat (-777) is not allowed')
    expect(api.sentTo(-777)).toHaveLength(1)

    // In a private chat, anything that is not a command gets the help.
    expect(await api.say(42, 'hi')).toBe(HELP)
  })

  it('tells another chat it is not allowed, shows it nothing, and stops cleanly on SIGTERM', async () => {
    const refused = await api.say(99, '/snapshot')
    expect(refused).toContain('This chat (99) is not allowed')
    expect(refused).not.toContain('Tuesdays')
    bot.child.kill('SIGTERM')
    expect(await bot.exit).toBe(0)
    expect(bot.stderr()).toContain(`@jarvis_test_bot answers chat(s) 42, ${team}`)
  })
})

describe('jarvis telegram, when the Bot API fails it', () => {
  let home: string
  const botToken = newBotToken()

  beforeAll(async () => {
    home = await tempDir('jarvis-telegram-alone-')
  })

  afterAll(async () => {
    await removeAll([home])
  })

  /** SIGTERM: the bot exits 0, with no crash and without its token in anything it printed. */
  async function stopsCleanly(bot: BotProcess): Promise<void> {
    bot.child.kill('SIGTERM')
    expect(await bot.exit, bot.stderr()).toBe(0)
    expect(bot.stderr()).not.toContain(botToken)
    expect(bot.stderr()).not.toMatch(CRASH)
  }

  it('stops cleanly on SIGTERM after the Bot API went away, never printing the token', async () => {
    const api = new BotApiStandIn()
    await api.start(botToken)
    const bot = spawnBot(['--allow-chat', '42', '--api-root', api.url], {token: botToken, cwd: home})
    await until('the bot to start', () => (bot.stderr().includes('answers chat(s) 42') ? true : undefined), 45_000)
    await api.close()
    await stopsCleanly(bot)
  })

  it('stops cleanly on SIGTERM while it waits for a Bot API that cannot be reached', async () => {
    const apiRoot = `http://127.0.0.1:${await closedPort()}`
    const bot = spawnBot(['--allow-chat', '42', '--api-root', apiRoot], {token: botToken, cwd: home})
    await until('the first retry', () => (bot.stderr().includes('getMe failed') ? true : undefined), 45_000)
    await stopsCleanly(bot)
  })

  it('gives up on a Bot API that cannot be reached with exit 3, naming it and what to do', async () => {
    const apiRoot = `http://127.0.0.1:${await closedPort()}`
    const run = await runJarvis(['telegram', '--allow-chat', '42', '--api-root', apiRoot], {cwd: home, env: {JARVIS_TELEGRAM_TOKEN: botToken, JARVIS_TELEGRAM_API_ROOT: ''}})
    expect(run.code, run.stderr).toBe(3)
    expect(run.stderr).toContain(`jarvis: the Telegram Bot API at ${apiRoot} cannot be reached`)
    expect(run.stderr).toContain('--api-root')
    expect(run.stderr).not.toContain(botToken)
  })

  it('names JARVIS_TELEGRAM_TOKEN when the Bot API refuses the token, with exit 3', async () => {
    const api = new BotApiStandIn()
    await api.start(newBotToken())
    try {
      const run = await runJarvis(['telegram', '--allow-chat', '42', '--api-root', api.url], {cwd: home, env: {JARVIS_TELEGRAM_TOKEN: botToken, JARVIS_TELEGRAM_API_ROOT: ''}})
      expect(run.code, run.stderr).toBe(3)
      expect(run.stderr).toContain(`jarvis: the Bot API at ${api.url} refused the bot token in JARVIS_TELEGRAM_TOKEN (401: Unauthorized): set JARVIS_TELEGRAM_TOKEN to the token @BotFather gave this bot`)
      expect(run.stderr).not.toContain(botToken)
    } finally {
      await api.close()
    }
  })
})

describe('retryDelayMs', () => {
  it('waits a 429 out for its retry_after, backs off on a 5xx or a lost connection, and gives up after four attempts', () => {
    expect(retryDelayMs({error_code: 429, parameters: {retry_after: 3}}, 1)).toBe(3000)
    expect([1, 2, 3].map((attempt) => retryDelayMs({error_code: 502}, attempt))).toEqual([1000, 2000, 4000])
    expect(retryDelayMs('network', 1)).toBe(1000)
    expect(retryDelayMs('network', API_RETRY.attempts)).toBeUndefined()
    // Asked to wait an hour, a reply is given up rather than holding every other chat's answer.
    expect(retryDelayMs({error_code: 429, parameters: {retry_after: 3600}}, 1)).toBeUndefined()
    // A blocked user, a kicked bot, a bad request: the same call would fail the same way.
    expect(retryDelayMs({error_code: 403, description: 'Forbidden: bot was blocked by the user'}, 1)).toBeUndefined()
    expect(retryDelayMs({error_code: 400}, 1)).toBeUndefined()
  })
})

describe('clipToMessage', () => {
  it('cuts a long reply to one message of 4096 units, never inside an emoji', () => {
    const clipped = clipToMessage(`x${'🎉'.repeat(3000)}`)
    expect(clipped.length).toBeLessThanOrEqual(4096)
    expect(clipped.endsWith('🎉\n…')).toBe(true)
    expect(/\p{Cs}/u.test(clipped)).toBe(false)
    expect(clipToMessage('short')).toBe('short')
  })
})
