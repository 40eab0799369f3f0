/** Durations as people write them on the command line: `12h`, `30d`, `2w`. PURE. */
import {BadInputError} from '../errors.js'

export const DURATION = /^(\d+(?:\.\d+)?)(h|d|w)$/
const HOURS_PER_UNIT = {h: 1, d: 24, w: 24 * 7} as const

/** `30d`, `12h`, `2w` → days (12h → 0.5); anything else is a usage error naming the flag. */
export function parseDuration(text: string, flag: string): number {
  const match = DURATION.exec(text.trim())
  if (!match) throw new BadInputError(`${flag}: ${JSON.stringify(text)} is not a duration: use a number and h, d or w, e.g. 12h, 30d, 2w`, {field: flag})
  return (Number(match[1]) * HOURS_PER_UNIT[match[2] as keyof typeof HOURS_PER_UNIT]) / 24
}
