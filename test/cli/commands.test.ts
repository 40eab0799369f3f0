import {spawn} from 'node:child_process'
import {mkdir, writeFile} from 'node:fs/promises'
import {type AddressInfo} from 'node:net'
import {createServer} from 'node:http'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {afterAll, describe, expect, it} from 'vitest'

import {envelope, jarvisBin, runJarvis} from '../helpers/cli.js'
import {cleanEnv} from './memory-helpers.js'
import {removeAll, tempDir, TOKENS} from '../helpers/world.js'

const cleanup: string[] = []
afterAll(async () => removeAll(cleanup))

async function dir(): Promise<string> {
  const made = await tempDir('jarvis-cli-')
  cleanup.push(made)
  return made
}

describe('the jarvis command line', () => {
  it('lists its commands and topics in --help', async () => {
    const run = await runJarvis(['--help'])
    expect(run.code).toBe(0)
    for (const word of ['init', 'sync', 'serve', 'switch-project', 'task', 'hooks']) expect(run.stdout).toContain(word)
  })

  it('an unknown command is bad usage (exit 2) and names the nearest one; -h is help', async () => {
    const typo = await runJarvis(['synk'])
    expect(typo.code).toBe(2)
    expect(typo.stderr.replace(/\s*›\s*/g, ' ')).toContain('"synk" is not a jarvis command. Did you mean `jarvis sync`?')
    const nested = await runJarvis(['memory', 'apend'])
    expect(nested.code).toBe(2)
    expect(nested.stderr.replace(/\s*›\s*/g, ' ')).toContain('Did you mean `jarvis memory append`?')
    // Its arguments are not taken for the command's words; under --json, the envelope.
    const withArgs = await runJarvis(['memory', 'serach', 'deploy', 'day', '--json'])
    expect(withArgs.code).toBe(2)
    expect(envelope(withArgs)).toMatchObject({status: 2, error: {code: 'USAGE', message: '"memory serach" is not a jarvis command. Did you mean `jarvis memory search`? `jarvis --help` lists them all.'}})
    // A misspelt topic is named as a command is; with the word after it, the command they name.
    const topic = await runJarvis(['memry'])
    expect(topic.code).toBe(2)
    expect(topic.stderr.replace(/\s*›\s*/g, ' ')).toContain('"memry" is not a jarvis command. Did you mean `jarvis memory`?')
    const topicThenCommand = await runJarvis(['memry', 'search', 'deploy', '--json'])
    expect(envelope(topicThenCommand)).toMatchObject({status: 2, error: {message: '"memry search" is not a jarvis command. Did you mean `jarvis memory search`? `jarvis --help` lists them all.'}})
    const nothingClose = await runJarvis(['frobnicate'])
    expect(nothingClose.code).toBe(2)
    expect(nothingClose.stderr).not.toContain('Did you mean')
    const help = await runJarvis(['sync', '-h'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('USAGE')
  })

  it('runs from the TypeScript sources too (bin/dev.js through tsx), so a broken tsx is caught', async () => {
    const dev = fileURLToPath(new URL('../../bin/dev.js', import.meta.url))
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [dev, 'init', '--help'], {stdio: ['ignore', 'pipe', 'pipe']})
      let out = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
      child.on('error', reject)
      child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`bin/dev.js exited ${code}`))))
    })
    expect(stdout).toContain('--server')
  })

  it('init creates both trees once and says so when run again', async () => {
    const cwd = await dir()
    const first = await runJarvis(['init', '--agent', 'claude', '--json'], {cwd})
    expect(first.code).toBe(0)
    const created = envelope<{changed: boolean; created: string[]}>(first)
    expect(created).toMatchObject({status: 0, warnings: []})
    expect(created.result!.changed).toBe(true)
    expect(created.result!.created).toEqual(expect.arrayContaining(['.memory/', '.nexus/config.json']))
    const again = await runJarvis(['init', '--agent', 'claude'], {cwd})
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(/nothing changed/)
    // A tree made inside it is its own, and init says so; once made, it says nothing more of it.
    const inner = join(cwd, 'packages', 'web')
    const nested = await runJarvis(['init', '--dir', inner, '--json'], {cwd})
    expect(nested.code).toBe(0)
    expect(envelope(nested).warnings).toEqual([`${inner} is inside the jarvis tree of ${cwd}: commands run here now use this new tree and its own memory, not that one's`])
    expect(envelope((await runJarvis(['init', '--dir', inner, '--json'], {cwd}))).warnings).toEqual([])
  })

  it('init in an initialised tree says when it changes the agent, server or project', async () => {
    const cwd = await dir()
    expect((await runJarvis(['init', '--agent', 'claude', '--project', 'atlas'], {cwd})).code).toBe(0)
    const changed = await runJarvis(['init', '--agent', 'gemini', '--project', 'atlas'], {cwd})
    expect(changed.code).toBe(0)
    expect(changed.stderr.replace(/\s*›\s*/g, ' ')).toContain('the agent of this tree was claude; it is now gemini')
    expect(changed.stderr).not.toContain('project of this tree')
    const same = await runJarvis(['init', '--agent', 'gemini'], {cwd})
    expect(same.stderr).toBe('')
  })

  it('outside a jarvis tree: exit 2 and a one-line message, no stack trace', async () => {
    const cwd = await dir()
    const human = await runJarvis(['sync', '--server', 'http://127.0.0.1:9'], {cwd})
    expect(human.code).toBe(2)
    expect(human.stderr).toMatch(/not a jarvis tree.*jarvis init/)
    expect(human.stderr).not.toMatch(/\n\s+at /)
    const json = await runJarvis(['sync', '--server', 'http://127.0.0.1:9', '--json'], {cwd})
    expect(json.code).toBe(2)
    expect(envelope(json)).toMatchObject({status: 2, error: {code: 'NOT_A_TREE'}})
  })

  it('a malformed .nexus/config.json: exit 2 naming the file and the line', async () => {
    const cwd = await dir()
    await runJarvis(['init'], {cwd})
    await writeFile(join(cwd, '.nexus', 'config.json'), '{\n  "server": "http://x",\n  "sync": {,}\n}\n')
    const run = await runJarvis(['sync', '--json'], {cwd})
    expect(run.code).toBe(2)
    expect(envelope(run).error?.message).toMatch(/config\.json.*line 3/)
  })

  it('a --server that is some other web server: exit 3 saying so in a line, not its page', async () => {
    const page = '<!DOCTYPE html>\n<html><body><h1>Error response</h1><p>Error code: 404</p></body></html>\n'
    const web = createServer((_request, response) => response.writeHead(404, {'content-type': 'text/html'}).end(page))
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve))
    try {
      const cwd = await dir()
      await runJarvis(['init'], {cwd})
      const url = `http://127.0.0.1:${(web.address() as AddressInfo).port}`
      const run = await runJarvis(['sync', '--server', url], {cwd})
      expect(run.code).toBe(3)
      expect(run.stderr).toContain(`${url} does not look like a jarvis server: GET /api/memory/status answered HTTP 404 with a web page, not JSON`)
      expect(run.stderr).not.toContain('<html>')
    } finally {
      await new Promise((resolve) => web.close(resolve))
    }
  })

  it('an unknown flag is a usage error (exit 2)', async () => {
    const run = await runJarvis(['sync', '--no-such-flag'], {cwd: await dir()})
    expect(run.code).toBe(2)
  })

  it('a flag given twice, or without its value, is a usage error too (exit 2), with --json as well', async () => {
    const cwd = await dir()
    for (const args of [['memory', 'list', '--scope', 'global', '--scope', 'project:x'], ['agents', 'install', '--agent', 'claude', '--agent', 'gemini', '--dry-run'], ['memory', 'list', '--scope']]) {
      const run = await runJarvis(args, {cwd})
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toMatch(/Flag --\w+ (can only be specified once|expects a value)/)
    }
    const json = await runJarvis(['memory', 'list', '--json', '--scope', 'global', '--scope', 'project:x'], {cwd})
    expect(json.code).toBe(2)
    expect(envelope(json)).toMatchObject({status: 2, error: {code: 'USAGE', message: 'Flag --scope can only be specified once'}})
  })

  it('a flag value outside its allowed list is a usage error too (exit 2)', async () => {
    const run = await runJarvis(['serve', '--log-level', 'bogus'], {cwd: await dir()})
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--log-level')
  })

  it('serve and its subcommands with --data naming a file: exit 2 naming --data and asking for a directory', async () => {
    const cwd = await dir()
    await writeFile(join(cwd, 'dfile'), 'hi\n')
    await writeFile(join(cwd, 'tokens.json'), JSON.stringify({[TOKENS.claude]: 'claude'}))
    const env = {JARVIS_SERVER_TOKENS: ''}
    for (const args of [
      ['serve', '--port', '0', '--data', 'dfile', '--tokens', 'tokens.json'],
      ['serve', '--port', '0', '--data', 'dfile'],
      ['serve', 'token', 'create', '--agent', 'claude', '--data', 'dfile'],
    ]) {
      const run = await runJarvis(args, {cwd, env})
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toContain('--data: dfile is a file, not a directory: give --data a directory')
    }
    const under = await runJarvis(['serve', '--port', '0', '--data', join('dfile', 'sub'), '--tokens', 'tokens.json'], {cwd, env})
    expect(under.code).toBe(2)
    expect(under.stderr).toContain(`--data: ${join('dfile', 'sub')} goes through a file, not a directory`)
  })

  it('a user config path that is a directory: exit 2 naming it, for auth login and every other command', async () => {
    const cwd = await dir()
    const env = cleanEnv(cwd)
    const file = join(env.XDG_CONFIG_HOME!, 'jarvis', 'config.json')
    expect((await runJarvis(['init', '--agent', 'claude', '--server', 'http://127.0.0.1:9'], {cwd, env})).code).toBe(0)
    await mkdir(file, {recursive: true})
    const said = `${file} is a directory, not jarvis's user config file: remove or rename that directory`
    const login = await runJarvis(['auth', 'login', '--agent', 'claude', '--with-token', '--no-verify'], {cwd, env, input: `${TOKENS.claude}\n`})
    expect(login.code).toBe(2)
    expect(login.stderr).toContain(said)
    const status = await runJarvis(['status', '--offline'], {cwd, env})
    expect(status.code).toBe(2)
    expect(status.stderr).toContain(said)
  })

  it('serve --json says where it listens as soon as it does, and gives its envelope when it stops', async () => {
    const data = await dir()
    const tokens = join(data, 'tokens.json')
    await writeFile(tokens, JSON.stringify({[TOKENS.claude]: 'claude'}))
    const child = spawn(process.execPath, [jarvisBin, 'serve', '--json', '--port', '0', '--data', join(data, 'db'), '--tokens', tokens], {stdio: ['ignore', 'pipe', 'pipe']})
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve))
    try {
      const first = await new Promise<string>((resolve, reject) => {
        const check = () => (out.includes('\n') ? resolve(out.split('\n')[0]) : undefined)
        child.stdout.on('data', check)
        child.on('close', () => reject(new Error(`serve ended before it said where it listens: ${out}`)))
      })
      const listening = JSON.parse(first) as {event: string; url: string}
      expect(listening).toMatchObject({event: 'listening', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/)})
      const answer = await fetch(`${listening.url}/api/memory/status`, {headers: {authorization: `Bearer ${TOKENS.claude}`}})
      expect(answer.status).toBe(200)
    } finally {
      child.kill('SIGTERM')
    }
    expect(await closed).toBe(0)
    const last = out.trim().split('\n').at(-1)!
    expect(JSON.parse(last)).toMatchObject({status: 0, result: {stoppedBy: 'SIGTERM'}})
  })

  it('JARVIS_CONTENT_TYPE=json turns on the JSON envelope without --json', async () => {
    const cwd = await dir()
    const run = await runJarvis(['init'], {cwd, env: {JARVIS_CONTENT_TYPE: 'json'}})
    expect(envelope(run).status).toBe(0)
  })
})
