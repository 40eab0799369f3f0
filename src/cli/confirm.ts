import type {CleanupCandidate} from '../ops/events/cleanup.js'

/** A y/N question on the terminal, when there is one to ask on (stdin and stdout both TTYs); null otherwise. */
export function terminalConfirm(): ((candidates: CleanupCandidate[]) => Promise<boolean>) | null {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return null
  return async (candidates) => {
    const {renderCandidates} = await import('./memory-render.js')
    const {createInterface} = await import('node:readline/promises')
    process.stderr.write(renderCandidates(candidates, 'would delete') + '\n')
    const prompt = createInterface({input: process.stdin, output: process.stderr})
    try {
      const answer = await prompt.question(`Delete these ${candidates.length} event(s) from the shared memory? [y/N] `)
      return /^y(?:es)?$/i.test(answer.trim())
    } finally {
      prompt.close()
    }
  }
}
