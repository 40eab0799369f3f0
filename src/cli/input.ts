/** What a command reads besides its flags: stdin and files named on the command line. */
import {readFile} from 'node:fs/promises'
import {resolve} from 'node:path'

import {BadInputError} from '../errors.js'

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** A file named by a flag (`-` for stdin) as `{name, text}`; a file that cannot be read is bad input naming it. */
export async function readNamedInput(file: string, what: string): Promise<{name: string; text: string}> {
  const name = file === '-' ? '<stdin>' : file
  try {
    return {name, text: file === '-' ? await readStdin() : await readFile(resolve(file), 'utf8')}
  } catch (error) {
    throw new BadInputError(`${name}: cannot read ${what}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {file: name}, error)
  }
}

/** The content of a write: `--file PATH`, `--file -` or piped stdin; a terminal on stdin without `--file` is bad usage. */
export async function readContent(file: string | undefined): Promise<string> {
  if (file !== undefined) return (await readNamedInput(file, 'the content')).text
  if (process.stdin.isTTY) throw new BadInputError('no content: pipe it on stdin or pass --file PATH (--file - reads stdin)')
  return readStdin()
}
