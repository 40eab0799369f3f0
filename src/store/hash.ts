/** Content hashes: sha256 hex of the exact bytes. The only notion of "changed" the sync uses (CONTRACT §4). */
import {hash} from 'node:crypto'

// crypto.hash, one call, not createHash().update().digest(): no Hash object per file; about three times faster
// on the small files a sync hashes by the thousand (client and server).

/** The length of every hash: 64 hex digits. */
export const HASH_HEX_LENGTH = 64

/** sha256 hex of raw bytes. */
export function hashBytes(data: Uint8Array): string {
  return hash('sha256', data, 'hex')
}

/** sha256 hex of a string's UTF-8 bytes: equal to `hashBytes` of the file that `writeFileAtomic(path, text)` writes. */
export function hashText(text: string): string {
  return hash('sha256', text, 'hex')
}
