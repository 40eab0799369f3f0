/**
 * The arguments of the file tools as a backend takes them: the design's names (memory_grep `pattern`,
 * memory_edit `patch`) and the earlier ones (`regex`; `replace` and `with`) give one call. Two names given for one
 * argument must agree. PURE.
 */
import {BadInputError} from '../errors.js'
import type {FileEdit} from '../files/index.js'
import type {EditInput, GrepInput} from './schemas.js'

export type GrepQuery = Omit<GrepInput, 'pattern' | 'regex'> & {pattern: string}

export interface EditCall {
  path: string
  edit: FileEdit
  base_hash?: string
}

export function grepQueryOf(input: GrepInput): GrepQuery {
  const {pattern, regex, ...rest} = input
  if (pattern !== undefined && regex !== undefined && pattern !== regex) {
    throw new BadInputError(`memory_grep: pattern ${JSON.stringify(pattern)} and regex ${JSON.stringify(regex)} differ: give one of them`, {field: 'pattern'})
  }
  const given = pattern ?? regex
  if (given === undefined) throw new BadInputError('memory_grep: pattern is required: a regular expression matched line by line, e.g. "deploy.*friday"', {field: 'pattern'})
  return {...rest, pattern: given}
}

export function editCallOf(input: EditInput): EditCall {
  const {path, patch, replace, with: withText, base_hash} = input
  const call = (edit: FileEdit): EditCall => (base_hash === undefined ? {path, edit} : {path, edit, base_hash})
  if (patch !== undefined) {
    if (replace !== undefined || withText !== undefined) {
      throw new BadInputError('memory_edit: give patch, or replace and with, not both', {field: 'patch'})
    }
    return call(typeof patch === 'string' ? {diff: patch} : patch)
  }
  if (replace === undefined || withText === undefined) {
    const missing = replace === undefined && withText === undefined ? 'patch' : replace === undefined ? 'replace' : 'with'
    throw new BadInputError(
      `memory_edit: ${missing} is required: give patch (a unified diff of the file, or {replace, with}), or replace and with`,
      {field: missing},
    )
  }
  return call({replace, with: withText})
}
