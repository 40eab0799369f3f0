/** Content hashes: sha256 hex of the exact bytes. The only notion of "changed" the sync uses (CONTRACT §4). */
import {createHash} from 'node:crypto'

/** sha256 hex of raw bytes. */
export function hashBytes(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex')
}

/** sha256 hex of a string's UTF-8 bytes: equal to `hashBytes` of the file that `writeFileAtomic(path, text)` writes. */
export function hashText(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}
