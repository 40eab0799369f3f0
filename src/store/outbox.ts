/**
 * `.nexus/outbox.jsonl`: writes the server has not accepted yet (task results, memory events, active-project
 * switches). Durable before success is reported (fsync per entry); removed only after the server acknowledged
 * them (research R9). Callers hold the tree lock: `removeFromOutbox` rewrites the file, which would drop an
 * append made at the same moment by a process that does not hold it.
 */
import {join} from 'node:path'

import {parseWith} from '../schemas/parse.js'
import {type OutboxEntry, outboxEntrySchema} from '../schemas/nexus.js'
import {appendLineDurable, writeFileAtomic} from './atomic.js'
import {type BadLine, readJsonLines} from './jsonl.js'
import {nexusDir} from './root.js'

export const OUTBOX_FILE = '.nexus/outbox.jsonl'

export function outboxPath(root: string): string {
  return join(nexusDir(root), 'outbox.jsonl')
}

/** Appends one entry durably (validated first: a bad entry is refused before anything is written). */
export async function appendOutbox(root: string, entry: OutboxEntry): Promise<void> {
  const checked = parseWith(outboxEntrySchema, entry, OUTBOX_FILE)
  await appendLineDurable(outboxPath(root), JSON.stringify(checked))
}

/**
 * Every pending entry in append order. A torn last line is ignored; any other bad line → SchemaError with its line
 * and what to do: such a line is a write not sent yet, so it is never skipped without a person's say.
 */
export async function readOutbox(root: string): Promise<OutboxEntry[]> {
  return readJsonLines(outboxPath(root), OUTBOX_FILE, () => outboxEntrySchema, outboxRepairHint)
}

function outboxRepairHint(badLines: readonly BadLine[]): string {
  const which = badLines.length === 1 ? `line ${badLines[0].line} is` : `lines ${badLines.map(({line}) => line).join(', ')} are each`
  return `${which} a write the server has not received yet (a memory event, a task result or a project switch, queued while it could not be reached): fix ${badLines.length === 1 ? 'that line' : 'them'}, or remove ${badLines.length === 1 ? 'it' : 'them'} and run \`jarvis sync\` again, knowing that what ${badLines.length === 1 ? 'it holds is' : 'they hold is'} then never sent; the other lines are sent by that sync`
}

/** Drops the entries with these ids (atomic rewrite); returns how many were removed. */
export async function removeFromOutbox(root: string, ids: Iterable<string>): Promise<number> {
  const drop = new Set(ids)
  if (drop.size === 0) return 0
  const entries = await readOutbox(root)
  const keep = entries.filter((entry) => !drop.has(entry.id))
  const removed = entries.length - keep.length
  if (removed === 0) return 0
  await writeFileAtomic(outboxPath(root), keep.map((entry) => JSON.stringify(entry) + '\n').join(''))
  return removed
}
