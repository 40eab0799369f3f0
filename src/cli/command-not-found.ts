/**
 * oclif's `command_not_found` hook: an unknown command is bad usage (exit 2), and the nearest command is named,
 * as git does for `git comit`; under `--json`, in the envelope every command prints.
 */
import type {Hook} from '@oclif/core'
import {distance} from 'fastest-levenshtein'

import {errorEnvelope, jsonText} from './envelope.js'

const hook: Hook<'command_not_found'> = async function (options) {
  const {bin, commands, topics} = options.config
  // oclif cannot tell the command's words from its arguments (`memory serach x` is id memory:serach:x): the words
  // are the topics named, and one more.
  const words = options.id.split(':')
  const topicNames = new Set(topics.map((topic) => topic.name))
  let named = 1
  while (named < words.length && topicNames.has(words.slice(0, named).join(':'))) named++
  const id = words.slice(0, named).join(':')
  const nearest = commands
    .filter((command) => !command.hidden)
    .map((command) => ({id: command.id, far: distance(command.id, id)}))
    .sort((a, b) => a.far - b.far)[0]
  const close = nearest !== undefined && nearest.far <= Math.max(2, Math.floor(id.length / 3))
  const hint = close ? ` Did you mean \`${bin} ${nearest.id.replaceAll(':', ' ')}\`?` : ''
  const message = `"${id.replaceAll(':', ' ')}" is not a ${bin} command.${hint} \`${bin} --help\` lists them all.`
  if ((options.argv ?? []).includes('--json') || process.env.JARVIS_CONTENT_TYPE === 'json') {
    process.stdout.write(`${jsonText(errorEnvelope(Object.assign(new Error(message), {oclif: {exit: 2}}), []))}\n`)
    this.exit(2)
  }
  this.error(message, {exit: 2})
}

export default hook
