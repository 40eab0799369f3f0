/**
 * oclif's `command_not_found` hook: an unknown command is bad usage (exit 2), and the nearest command is named,
 * as git does for `git comit`; under `--json`, in the envelope every command prints. A misspelt topic (`memry`)
 * is named too, or, given the word after it (`memry search`), the command it then names.
 */
import type {Hook} from '@oclif/core'
import {distance} from 'fastest-levenshtein'

import {errorEnvelope, jsonText} from './envelope.js'

const hook: Hook<'command_not_found'> = async function (options) {
  const {bin, commands, topics} = options.config
  // oclif cannot tell the command's words from its arguments (`memory serach x` is id memory:serach:x): the words
  // are the topics named, and one more.
  const words = options.id.split(':')
  const topicNames = new Set(topics.filter((topic) => !topic.hidden).map((topic) => topic.name))
  let named = 1
  while (named < words.length && topicNames.has(words.slice(0, named).join(':'))) named++
  const commandIds = commands.filter((command) => !command.hidden).map((command) => command.id)
  // oclif lists every command among its topics: a topic of its own is one that is no command (`memory`).
  const ownTopics = [...topicNames].filter((name) => !commandIds.includes(name))
  let id = words.slice(0, named).join(':')
  let nearest = nearestOf(id, [...commandIds, ...ownTopics])
  if (nearest !== undefined && ownTopics.includes(nearest) && named < words.length) {
    // The word after a misspelt topic is its command's (`memry search` is memory:search), not an argument.
    const under = nearestOf(`${nearest}:${words[named]}`, commandIds.filter((command) => command.startsWith(`${nearest}:`)))
    if (under !== undefined) [id, nearest] = [words.slice(0, named + 1).join(':'), under]
  }
  const hint = nearest === undefined ? '' : ` Did you mean \`${bin} ${nearest.replaceAll(':', ' ')}\`?`
  const message = `"${id.replaceAll(':', ' ')}" is not a ${bin} command.${hint} \`${bin} --help\` lists them all.`
  if ((options.argv ?? []).includes('--json') || process.env.JARVIS_CONTENT_TYPE === 'json') {
    process.stdout.write(`${jsonText(errorEnvelope(Object.assign(new Error(message), {oclif: {exit: 2}}), []))}\n`)
    this.exit(2)
  }
  this.error(message, {exit: 2})
}

/** The id nearest to `id` when it is close enough to be what was meant (a third of its letters, at least 2, differ). */
function nearestOf(id: string, ids: readonly string[]): string | undefined {
  const nearest = ids.map((candidate) => ({id: candidate, far: distance(candidate, id)})).sort((a, b) => a.far - b.far)[0]
  return nearest !== undefined && nearest.far <= Math.max(2, Math.floor(id.length / 3)) ? nearest.id : undefined
}

export default hook
