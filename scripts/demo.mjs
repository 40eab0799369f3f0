#!/usr/bin/env node
// The main job on its embedded default: a real `jarvis serve` on 127.0.0.1 and two real client trees
// that sync against it. Uses the built binary (run `npm run build` first). Leaves nothing behind.
import {spawn, execFile} from 'node:child_process'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

const run = promisify(execFile)
const bin = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const work = await mkdtemp(join(tmpdir(), 'jarvis-demo-'))
const say = (line) => process.stdout.write(`${line}\n`)

const server = spawn(process.execPath, [bin, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', join(work, 'server')], {stdio: ['ignore', 'pipe', 'inherit']})
try {
  const url = await new Promise((resolve, reject) => {
    let seen = ''
    server.stdout.setEncoding('utf8').on('data', (chunk) => {
      seen += chunk
      const match = /listening on (http:\/\/\S+)/.exec(seen)
      if (match) resolve(match[1])
    })
    server.on('exit', (code) => reject(new Error(`jarvis serve exited with ${code}:\n${seen}`)))
  })
  say(`$ jarvis serve --port 0 --data ${join(work, 'server')}   → ${url}`)
  const tokens = JSON.parse(await readFile(join(work, 'server', 'tokens.json'), 'utf8'))
  const tokenOf = (agent) => Object.entries(tokens).find(([, a]) => a === agent)?.[0] ?? tokens[agent]
  const jarvis = async (cwd, agent, ...args) => {
    say(`[${agent}] $ jarvis ${args.join(' ')}`)
    const {stdout} = await run(process.execPath, [bin, ...args], {cwd, env: {...process.env, JARVIS_TOKEN: tokenOf(agent), NO_COLOR: '1'}})
    if (stdout.trim()) say(stdout.trimEnd().replace(/^/gm, '    '))
  }

  const laptop = join(work, 'laptop')
  const desktop = join(work, 'desktop')
  for (const [dir, agent] of [[laptop, 'claude'], [desktop, 'gemini']]) {
    await run('mkdir', ['-p', dir])
    await jarvis(dir, agent, 'init', '--server', url, '--agent', agent, '--project', 'demo')
  }
  await writeFile(join(laptop, '.memory', 'PROJECT_MEMORY.md'), '# Demo project\n\n## Decisions\n- use jarvis for shared memory\n\n## Open questions\n- none yet\n')
  await jarvis(laptop, 'claude', 'sync')
  await jarvis(desktop, 'gemini', 'sync')
  // Both machines edit different parts of the same file: a three-way merge keeps both edits.
  const edit = async (dir, from, to) => {
    const file = join(dir, '.memory', 'PROJECT_MEMORY.md')
    await writeFile(file, (await readFile(file, 'utf8')).replace(from, to))
  }
  await edit(laptop, '- use jarvis for shared memory\n', '- use jarvis for shared memory\n- sync after every commit (git hook)\n')
  await edit(desktop, '- none yet\n', '- how long to keep episodes?\n')
  await jarvis(laptop, 'claude', 'sync')
  await jarvis(desktop, 'gemini', 'sync')
  await jarvis(laptop, 'claude', 'sync')
  const [a, b] = await Promise.all([laptop, desktop].map((dir) => readFile(join(dir, '.memory', 'PROJECT_MEMORY.md'), 'utf8')))
  if (a !== b || !a.includes('git hook') || !a.includes('episodes')) throw new Error(`the two trees did not converge:\n${a}\n---\n${b}`)
  say('\nBoth trees now hold the same PROJECT_MEMORY.md, with both edits:\n')
  say(a.replace(/^/gm, '    '))
} finally {
  server.kill('SIGTERM')
  await new Promise((resolve) => (server.exitCode === null ? server.on('exit', resolve) : resolve()))
  await rm(work, {recursive: true, force: true})
}
