/**
 * The flags and arguments of a command the fast door runs, described without oclif, and a parser that accepts
 * only what it can read exactly as oclif would. Anything else — help, an unknown flag, a bad or repeated value,
 * `--`, a value oclif would read differently — is `undefined`: the door hands the call to oclif, which answers
 * with its own message and exit code. test/cli/fast.test.ts holds each spec to its command's oclif flags.
 */
import {parseArgs} from 'node:util'

export interface FlagSpec {
  type: 'string' | 'integer' | 'boolean'
  char?: string
  env?: string
  multiple?: boolean
  /** A multiple flag's values may also come as one comma-separated value. */
  delimiter?: ','
  default?: number
  min?: number
  max?: number
  /** Flags that may not be given with this one. */
  exclusive?: string[]
}

export interface ActionSpec {
  flags: Record<string, FlagSpec>
  args: Array<{name: string; required?: boolean}>
}

export type ParsedFlags = Record<string, string | string[] | number | number[] | boolean | undefined>

/** The flags every jarvis command has (base-command.ts). */
const baseFlagSpecs: Record<string, FlagSpec> = {
  json: {type: 'boolean'},
  dir: {type: 'string', env: 'JARVIS_DIR'},
}

/** cli/flags.ts's serverFlags. */
export const serverFlagSpecs: Record<string, FlagSpec> = {
  server: {type: 'string', env: 'JARVIS_SERVER'},
  agent: {type: 'string', env: 'JARVIS_AGENT'},
}

export function parseActionArgv(spec: ActionSpec, argv: string[], env: NodeJS.ProcessEnv): {flags: ParsedFlags; args: Record<string, string>} | undefined {
  if (argv.includes('--')) return undefined
  const specs = {...baseFlagSpecs, ...spec.flags}
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      tokens: true,
      // parseArgs refuses a `short` or `multiple` key that is present but undefined.
      options: Object.fromEntries(
        Object.entries(specs).map(([name, flag]) => [name, {type: flag.type === 'boolean' ? 'boolean' : 'string', multiple: flag.multiple === true, ...(flag.char ? {short: flag.char} : {})}]),
      ),
    })
  } catch {
    return undefined
  }
  const given = new Map<string, string[]>()
  let afterMultiple = false
  for (const token of parsed.tokens) {
    if (token.kind === 'option') {
      given.set(token.name, [...(given.get(token.name) ?? []), token.value ?? ''])
      afterMultiple = specs[token.name].multiple === true
    } else if (token.kind === 'positional' && afterMultiple) {
      return undefined // oclif reads a word after a multiple flag as one more of its values
    }
  }
  const flags: ParsedFlags = {}
  for (const [name, flag] of Object.entries(specs)) {
    const values = given.get(name)
    if (values && flag.exclusive?.some((other) => given.has(other))) return undefined
    if (values && !flag.multiple && values.length > 1) return undefined
    if (flag.type === 'boolean') {
      flags[name] = values !== undefined
      continue
    }
    if (values?.some((value) => value === '')) return undefined
    const raw = values ?? (flag.env && env[flag.env] ? [env[flag.env] as string] : undefined)
    if (raw === undefined) {
      if (flag.default !== undefined) flags[name] = flag.default
      continue
    }
    if (flag.type === 'integer') {
      if (!raw.every((value) => /^-?\d+$/.test(value))) return undefined
      const numbers = raw.map(Number)
      if (numbers.some((n) => (flag.min !== undefined && n < flag.min) || (flag.max !== undefined && n > flag.max))) return undefined
      flags[name] = flag.multiple ? numbers : numbers[0]
    } else {
      // oclif also unescapes `\,` and unquotes items: those few go to oclif.
      if (flag.delimiter && raw.some((value) => /[\\"']/.test(value))) return undefined
      const strings = flag.delimiter ? raw.flatMap((value) => value.split(flag.delimiter as string).map((item) => item.trim())) : raw
      flags[name] = flag.multiple ? strings : strings[0]
    }
  }
  const positionals = parsed.positionals
  if (positionals.length > spec.args.length) return undefined
  if (spec.args.some((arg, index) => arg.required && positionals[index] === undefined)) return undefined
  const args = Object.fromEntries(positionals.map((value, index) => [spec.args[index].name, value]))
  return {flags, args}
}
