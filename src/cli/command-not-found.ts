/**
 * oclif's `command_not_found` hook: an unknown command is bad usage (exit 2), and the nearest command is named,
 * as git does for `git comit`.
 */
import type {Hook} from '@oclif/core'
import {distance} from 'fastest-levenshtein'

const hook: Hook<'command_not_found'> = async function (options) {
  const {bin, commands} = options.config
  const typed = options.id.replaceAll(':', ' ')
  const nearest = commands
    .filter((command) => !command.hidden)
    .map((command) => ({id: command.id, far: distance(command.id, options.id)}))
    .sort((a, b) => a.far - b.far)[0]
  const close = nearest !== undefined && nearest.far <= Math.max(2, Math.floor(options.id.length / 3))
  const hint = close ? ` Did you mean \`${bin} ${nearest.id.replaceAll(':', ' ')}\`?` : ''
  this.error(`"${typed}" is not a ${bin} command.${hint} \`${bin} --help\` lists them all.`, {exit: 2})
}

export default hook
