/** What a command reads besides its flags: stdin and files named on the command line. */
import {readFile} from 'node:fs/promises'
import {resolve} from 'node:path'

import {BadInputError} from '../errors.js'

/**
 * Bytes a command was given as text, as UTF-8 — or bad input naming where, and the line: a byte that is not UTF-8 is
 * never replaced with U+FFFD and stored as if it were what the person gave (a sync refuses such a file too).
 */
async function asText(bytes: Buffer, name: string): Promise<string> {
  try {
    return new TextDecoder('utf-8', {fatal: true, ignoreBOM: true}).decode(bytes)
  } catch {
    const {lineAt} = await import('../sync/validate.js')
    const read = bytes.toString('utf8')
    throw new BadInputError(`${name}: line ${lineAt(read, read.indexOf('\uFFFD'))}: not UTF-8 text; save it as UTF-8 and run again (nothing was written)`, {file: name})
  }
}

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return asText(Buffer.concat(chunks), '<stdin>')
}

/** A file named by a flag (`-` for stdin) as `{name, text}`; a file that cannot be read is bad input naming it. */
export async function readNamedInput(file: string, what: string): Promise<{name: string; text: string}> {
  if (file === '-') return {name: '<stdin>', text: await readStdin()}
  let bytes: Buffer
  try {
    bytes = await readFile(resolve(file))
  } catch (error) {
    throw new BadInputError(`${file}: cannot read ${what}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {file}, error)
  }
  return {name: file, text: await asText(bytes, file)}
}

/** The content of a write: `--file PATH`, `--file -` or piped stdin; a terminal on stdin without `--file` is bad usage. */
export async function readContent(file: string | undefined): Promise<string> {
  if (file !== undefined) return (await readNamedInput(file, 'the content')).text
  if (process.stdin.isTTY) throw new BadInputError('no content: pipe it on stdin or pass --file PATH (--file - reads stdin)')
  return readStdin()
}
