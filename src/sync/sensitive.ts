/**
 * Secrets and personal data never leave this machine in a push: every local file a sync is about to send (changed
 * since its base) is scanned with the rules of every other door that writes the memory, before the server sees
 * it. A file that holds one is left exactly as it is, neither pushed nor overwritten, and reported; the rest of the
 * tree syncs. The server scans every push as well, for clients that do not.
 */
import type {SensitiveFinding} from '../events/redact.js'

/** What a sync left on this machine because it holds a secret or personal data. */
export interface RefusedFile {
  path: string
  /** What was found and where (kind, rule, line, column; `field` is `.memory/<path>`): never the text itself. */
  findings: SensitiveFinding[]
}

/** Texts scanned in one call: the scanner's cost per call is paid once for many small files. */
const BATCH_FILES = 500
const BATCH_CHARS = 4 * 1024 * 1024

/**
 * Collects the texts to scan and scans them in batches, so that neither a tree of small files (one scanner call
 * each would cost ~1 ms) nor a tree of large ones (all held at once) costs more than it must.
 */
export class SensitiveScan {
  private batch = new Map<string, string>()
  private chars = 0
  readonly refused: RefusedFile[] = []

  async add(path: string, text: string): Promise<void> {
    this.batch.set(`.memory/${path}`, text)
    this.chars += text.length
    if (this.batch.size >= BATCH_FILES || this.chars >= BATCH_CHARS) await this.flush()
  }

  /** Scans what is left; `refused` then lists every file with a finding, in the order they were added. */
  async flush(): Promise<RefusedFile[]> {
    if (this.batch.size === 0) return this.refused
    const files = this.batch
    this.batch = new Map()
    this.chars = 0
    // Loaded only when a sync has something to send: a no-op sync never loads the scanner.
    const {findSensitive} = await import('../events/redact.js')
    const findings = await findSensitive(Object.fromEntries(files))
    for (const label of files.keys()) {
      const found = findings.filter((finding) => finding.field === label)
      if (found.length > 0) this.refused.push({path: label.slice('.memory/'.length), findings: found})
    }
    return this.refused
  }
}

/** Exit 5: the files left on this machine, each with what was found in it and where. */
export async function refusedFilesError(refused: RefusedFile[], data: Record<string, unknown>): Promise<Error> {
  const [{describeFindings}, {SecretRefusedError}] = await Promise.all([import('../events/redact.js'), import('../errors.js')])
  const lines = refused.map((file) => `- ${describeFindings(file.findings)}`)
  return new SecretRefusedError(
    `not synced, left on this machine as they are: secrets and personal data never leave it; remove them and sync again:\n${lines.join('\n')}`,
    {refused, ...data},
  )
}
