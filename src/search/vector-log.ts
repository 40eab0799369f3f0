/**
 * The on-disk form of one model's chunk vectors for one tree (docs/store-format.md, "Search vectors"): an
 * append-only log `.nexus/search/vectors-<model>.bin`, read whole in one call and used in place — each file's
 * vectors are views into the bytes read, never copies.
 *
 * A header (`JVEC`, format, dimensions, model name), then records, each 4-byte aligned: a file's vectors (its content
 * hash, per chunk the factor that turns a dot product into a cosine, its words' rows, its int8 chunk rows), or its
 * removal. The last record of a path wins. Each record carries its length and a CRC-32 of the rest: a torn or
 * corrupt record ends the reading there (what follows is embedded again), never yields wrong vectors. A sync mark
 * may also carry the CRC-32 of every byte of the log before it: the records up to a mark that checks out are read
 * without checking each one's own (one checksum over 6 MB, not 10,000 calls of one each).
 *
 * PURE but for the functions at the end (`readLog`, `readLogInBackground`, `stampOf`, `appendLog`, `replaceLog`…),
 * which do the file's I/O.
 */
import {closeSync, constants, fstatSync, openSync, read, readSync, writeSync} from 'node:fs'
import {mkdir} from 'node:fs/promises'
import {dirname} from 'node:path'
import {crc32} from 'node:zlib'

import {writeFileAtomic} from '../store/atomic.js'

/** `JVEC`, read as a little-endian uint32. */
const MAGIC = 0x4345564a
export const LOG_FORMAT = 1
/** Length, CRC-32, path bytes, hash bytes, chunks, words: six uint32 before a record's data. */
const RECORD_HEAD = 24
/** `chunks` of a removal record. */
const REMOVED = 0xffffffff
/** `chunks` of a sync mark (`LogMark`): no path, three uint32 as its words, or four with the CRC-32 of the log before it. */
const MARK = 0xfffffffe

/**
 * "The records before me are the vectors of the keyword index whose manifest has this digest": appended by a process
 * that brought the vectors up to date with that index, with the number of files it held and the sum of their records'
 * CRC-32s, so that a reader can tell it holds exactly those records (and not, say, a log another process replaced
 * meanwhile). A new process whose index has the same manifest then needs not read the index's files at all.
 */
export interface LogMark {
  manifest: number
  files: number
  crcSum: number
  /**
   * The CRC-32 of the log's bytes before the mark, header included, as its writer knew them: when they still give
   * it, every record before the mark is whole (an older jarvis wrote marks without it).
   */
  logCrc?: number
}

/** A file's vectors as made: quantized chunk rows, per chunk its cosine factor, and its words' rows (ascending). */
export interface VectorsData {
  hash: string
  /** Per chunk, 1 over the length of its int8 row: a dot product with the row times this is a cosine similarity. */
  factors: Float32Array
  rows: Int8Array
  words: Uint32Array
}

/** Bytes of a log (or of one record) with its views of every type: the records' vectors are offsets into these. */
export interface Segment {
  bytes: Uint8Array
  f32: Float32Array
  u32: Uint32Array
  i8: Int8Array
}

/**
 * A file's vectors where its record lies: no typed array of its own (at 10,000 files, 30,000 views made and then
 * collected cost more than reading the log), and no field but where the record starts: the rest is read from its
 * head when asked (10,000 objects of a dozen fields, and their hashes as strings, kept the garbage collector
 * copying them through a search that never looks at a hash). `factors[c]` is `seg.f32[factorsAt + c]`, word `k`
 * is `seg.u32[wordsAt + k]`, chunk `c`'s row starts at `seg.i8[rowsAt + c * dims]`.
 */
export class FileVectors {
  private decodedHash: string | undefined

  constructor(
    readonly seg: Segment,
    /** The record's byte offset in `seg`. */
    readonly start: number,
    private readonly dims: number,
  ) {}

  /** The content hash the vectors were made from. */
  get hash(): string {
    if (this.decodedHash === undefined) {
      const w = this.start >>> 2
      const at = this.rowsAt + this.chunks * this.dims + this.seg.u32[w + 2]
      this.decodedHash = newDecoder().decode(this.seg.bytes.subarray(at, at + this.seg.u32[w + 3]))
    }
    return this.decodedHash
  }

  get chunks(): number {
    return this.seg.u32[(this.start >>> 2) + 4]
  }

  get words(): number {
    return this.seg.u32[(this.start >>> 2) + 5]
  }

  get factorsAt(): number {
    return (this.start >>> 2) + 6
  }

  get wordsAt(): number {
    return (this.start >>> 2) + 6 + this.chunks
  }

  get rowsAt(): number {
    return this.start + RECORD_HEAD + (this.chunks + this.words) * 4
  }

  /** The record's length in bytes. */
  get length(): number {
    return this.seg.u32[this.start >>> 2]
  }

  /** The record's CRC-32. */
  get crc(): number {
    return this.seg.u32[(this.start >>> 2) + 1]
  }
}

/** `bytes` (4-byte aligned: copied when not) with its views. PURE. */
export function segmentOf(bytes: Uint8Array): Segment {
  // Views need 4-byte alignment: a small file's buffer may sit at any offset of Node's pool.
  if (bytes.byteOffset % 4 !== 0) bytes = new Uint8Array(bytes)
  const {buffer, byteOffset, byteLength} = bytes
  return {bytes, f32: new Float32Array(buffer, byteOffset, byteLength >>> 2), u32: new Uint32Array(buffer, byteOffset, byteLength >>> 2), i8: new Int8Array(buffer, byteOffset, byteLength)}
}

/** A file's vectors as arrays of their own (tests, an older store's rows). */
export function vectorsData(v: FileVectors, dims: number): VectorsData {
  return {
    hash: v.hash,
    factors: v.seg.f32.slice(v.factorsAt, v.factorsAt + v.chunks),
    rows: v.seg.i8.slice(v.rowsAt, v.rowsAt + v.chunks * dims),
    words: v.seg.u32.slice(v.wordsAt, v.wordsAt + v.words),
  }
}

/** The bytes of a file's record, as they were read or made. */
export const recordOf = (v: FileVectors): Uint8Array => v.seg.bytes.subarray(v.start, v.start + v.length)

const pad4 = (n: number) => (n + 3) & ~3
const encoder = new TextEncoder()
/**
 * The paths and hashes of records: a leading U+FEFF is kept, as `encoder` wrote it (a TextDecoder drops it by
 * default, and a file whose name starts with one had its vectors filed under another name: embedded again by every
 * new process).
 */
const newDecoder = () => new TextDecoder('utf-8', {ignoreBOM: true})

/** The log's header for `model` of `dims` dimensions. PURE. */
export function logHeader(model: string, dims: number): Uint8Array {
  const name = encoder.encode(model)
  const out = new Uint8Array(16 + pad4(name.length))
  const head = new DataView(out.buffer)
  head.setUint32(0, MAGIC, true)
  head.setUint32(4, LOG_FORMAT, true)
  head.setUint32(8, dims, true)
  head.setUint32(12, name.length, true)
  out.set(name, 16)
  return out
}

/** A record of `path`'s vectors, or of its removal (`vectors` undefined). PURE. */
export function encodeRecord(path: string, vectors: VectorsData | undefined): Uint8Array {
  const pathBytes = encoder.encode(path)
  const hashBytes = encoder.encode(vectors?.hash ?? '')
  const chunks = vectors?.factors.length ?? 0
  const words = vectors?.words.length ?? 0
  const rowBytes = vectors?.rows.byteLength ?? 0
  const length = pad4(RECORD_HEAD + chunks * 4 + words * 4 + rowBytes + pathBytes.length + hashBytes.length)
  const out = new Uint8Array(length)
  const head = new DataView(out.buffer)
  head.setUint32(0, length, true)
  head.setUint32(8, pathBytes.length, true)
  head.setUint32(12, hashBytes.length, true)
  head.setUint32(16, vectors ? chunks : REMOVED, true)
  head.setUint32(20, words, true)
  let at = RECORD_HEAD
  if (vectors) {
    out.set(new Uint8Array(vectors.factors.buffer, vectors.factors.byteOffset, chunks * 4), at)
    at += chunks * 4
    out.set(new Uint8Array(vectors.words.buffer, vectors.words.byteOffset, words * 4), at)
    at += words * 4
    out.set(new Uint8Array(vectors.rows.buffer, vectors.rows.byteOffset, rowBytes), at)
    at += rowBytes
  }
  out.set(pathBytes, at)
  out.set(hashBytes, at + pathBytes.length)
  head.setUint32(4, crc32(out.subarray(8)), true)
  return out
}

/** The record of a sync mark. PURE. */
export function encodeMark(mark: LogMark): Uint8Array {
  const words = mark.logCrc === undefined ? 3 : 4
  const out = new Uint8Array(RECORD_HEAD + words * 4)
  const head = new DataView(out.buffer)
  head.setUint32(0, out.length, true)
  head.setUint32(16, MARK, true)
  head.setUint32(20, words, true)
  head.setUint32(24, mark.manifest, true)
  head.setUint32(28, mark.files, true)
  head.setUint32(32, mark.crcSum, true)
  if (mark.logCrc !== undefined) head.setUint32(36, mark.logCrc, true)
  head.setUint32(4, crc32(out.subarray(8)), true)
  return out
}

/** What reading a log's bytes found. */
export interface LogRead {
  /** The sync mark that was the last record read, if it was one. */
  mark?: LogMark
  /** Bytes read up to the end of the last good record (where the next read of the same file starts). */
  end: number
  /** The header was not this model's (another format, model or size): nothing was read; the file is to be replaced. */
  foreign: boolean
  /** A torn or corrupt record ended the reading before the end of the bytes. */
  torn: boolean
  /** Of a whole log (`from` 0): the CRC-32 of its bytes up to `end`, what a sync mark appended at `end` carries. */
  crc?: number
  /** `mark` carries the CRC-32 of the log before it, and it held. */
  vouched: boolean
}

/**
 * Reads the records of `bytes` (a whole log when `from` is 0, else the part of it from `from`, a record's start),
 * calling `each` per record in order (`vectors` undefined: a removal); the vectors point into `bytes`. PURE.
 */
export function readRecords(bytes: Uint8Array, from: number, model: string, dims: number, each: (path: string, vectors: FileVectors | undefined) => void): LogRead {
  const seg = segmentOf(bytes)
  const end = seg.bytes.byteLength
  let at = 0
  if (from === 0) {
    const header = logHeader(model, dims)
    if (end < header.length || Buffer.compare(seg.bytes.subarray(0, header.length), header) !== 0) return {end: 0, foreign: true, torn: false, vouched: false}
    at = header.length
  }
  const checked = from === 0 ? checkedPrefix(seg, at) : undefined
  const trusted = checked?.end ?? 0
  const decoder = newDecoder()
  let mark: LogMark | undefined
  while (at < end) {
    const record = recordAt(seg, at, dims, decoder, at < trusted)
    if (record === undefined) break
    if ('manifest' in record) mark = record
    else {
      mark = undefined
      each(record.path, record.vectors)
    }
    at += seg.u32[at >>> 2]
  }
  const crc = from !== 0 ? undefined : checked === undefined ? crc32(seg.bytes.subarray(0, at)) : crc32(seg.bytes.subarray(checked.markAt, at), checked.crc)
  // A mark followed by a torn record is not trusted: what came after it is unknown.
  return {end: at, foreign: false, torn: at < end, mark: at < end ? undefined : mark, crc, vouched: at === end && mark !== undefined && checked?.end === end}
}

/**
 * Where the records of a whole log are vouched for by the last sync mark whose CRC-32 of the log before it holds:
 * the end of that mark, where it starts, and that CRC. The records are walked by their lengths only; a length
 * that does not hold, or no such mark, leaves every record to its own checksum. PURE.
 */
function checkedPrefix(seg: Segment, first: number): {end: number; markAt: number; crc: number} | undefined {
  const {bytes, u32} = seg
  let last = -1
  for (let at = first; bytes.byteLength - at >= RECORD_HEAD; ) {
    const length = u32[at >>> 2]
    if (length < RECORD_HEAD || length % 4 !== 0 || at + length > bytes.byteLength) break
    if (u32[(at >>> 2) + 4] === MARK && u32[(at >>> 2) + 5] === 4 && length === RECORD_HEAD + 16) last = at
    at += length
  }
  if (last < 0) return undefined
  const w = last >>> 2
  // The mark's own checksum first: a damaged mark vouches for nothing.
  if (crc32(bytes.subarray(last + 8, last + RECORD_HEAD + 16)) !== u32[w + 1]) return undefined
  const crc = crc32(bytes.subarray(0, last))
  return crc === u32[w + 9] ? {end: last + RECORD_HEAD + 16, markAt: last, crc} : undefined
}

/** The vectors of a record just made (encodeRecord), as the store keeps them. PURE. */
export function vectorsOfRecord(record: Uint8Array, dims: number): FileVectors {
  const read = recordAt(segmentOf(record), 0, dims, newDecoder(), false)
  if (read === undefined || 'manifest' in read || read.vectors === undefined) throw new Error('not the record of a file\'s vectors')
  return read.vectors
}

/**
 * The record at byte `at` of `seg`; undefined when its length, shape or checksum does not hold (the checksum is not
 * computed again for a record a sync mark vouched for: `checked`).
 */
function recordAt(seg: Segment, at: number, dims: number, decoder: {decode(bytes: Uint8Array): string}, checked: boolean): {path: string; vectors: FileVectors | undefined} | LogMark | undefined {
  const {bytes, u32} = seg
  const w = at >>> 2
  const length = bytes.byteLength - at >= RECORD_HEAD ? u32[w] : 0
  if (length < RECORD_HEAD || length % 4 !== 0 || at + length > bytes.byteLength) return undefined
  const crc = u32[w + 1]
  if (!checked && crc32(bytes.subarray(at + 8, at + length)) !== crc) return undefined
  const pathBytes = u32[w + 2]
  const hashBytes = u32[w + 3]
  const chunks = u32[w + 4]
  const words = u32[w + 5]
  if (chunks === MARK) {
    if (length !== RECORD_HEAD + words * 4 || (words !== 3 && words !== 4)) return undefined
    return {manifest: u32[w + 6], files: u32[w + 7], crcSum: u32[w + 8], ...(words === 4 ? {logCrc: u32[w + 9]} : {})}
  }
  const removed = chunks === REMOVED
  const dataBytes = removed ? 0 : chunks * 4 + words * 4 + chunks * dims
  if (pad4(RECORD_HEAD + dataBytes + pathBytes + hashBytes) !== length || (removed && words !== 0)) return undefined
  const text = at + RECORD_HEAD + dataBytes
  const path = decoder.decode(bytes.subarray(text, text + pathBytes))
  return {path, vectors: removed ? undefined : new FileVectors(seg, at, dims)}
}

/** A file's identity and size, to tell whether another process appended to it or replaced it. */
export interface LogStamp {
  ino: number
  size: number
}

/** The log at `file` open for reading, with its inode and size; undefined when there is none. */
function openLog(file: string): {fd: number; ino: number; size: number} | undefined {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  try {
    const {ino, size} = fstatSync(fd)
    return {fd, ino, size}
  } catch (error) {
    closeSync(fd)
    throw error
  }
}

/** The bytes of the log at `file` from `from` (all of it when 0), and its stamp; undefined when there is no file. */
export function readLog(file: string, from = 0): {bytes: Uint8Array; stamp: LogStamp} | undefined {
  const log = openLog(file)
  if (log === undefined) return undefined
  try {
    // One read into one fresh buffer (aligned, not from Node's pool): the views of every file's vectors point into it.
    const bytes = new Uint8Array(new ArrayBuffer(Math.max(0, log.size - from)))
    let got = 0
    while (got < bytes.length) {
      const n = readSync(log.fd, bytes, got, bytes.length - got, from + got)
      if (n === 0) break
      got += n
    }
    return {bytes: bytes.subarray(0, got), stamp: {ino: log.ino, size: from + got}}
  } finally {
    closeSync(log.fd)
  }
}

/**
 * readLog of the whole log, its read on the thread pool: for a caller with other work to do on its own thread
 * meanwhile (ChunkVectorStore.prefetch). The file is opened and sized here, then read by one job of the pool: a job
 * per step would wait for this thread, busy, between two steps.
 */
export async function readLogInBackground(file: string): Promise<{bytes: Uint8Array; stamp: LogStamp} | undefined> {
  const log = openLog(file)
  if (log === undefined) return undefined
  try {
    const bytes = new Uint8Array(new ArrayBuffer(log.size))
    let got = 0
    while (got < bytes.length) {
      const n = await new Promise<number>((resolve, reject) => read(log.fd, bytes, got, bytes.length - got, got, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead))))
      if (n === 0) break
      got += n
    }
    return {bytes: bytes.subarray(0, got), stamp: {ino: log.ino, size: got}}
  } finally {
    closeSync(log.fd)
  }
}

/** The stamp of the log at `file` now; undefined when there is none (or it cannot be opened). */
export function stampOf(file: string): LogStamp | undefined {
  let log: ReturnType<typeof openLog>
  try {
    log = openLog(file)
  } catch {
    return undefined
  }
  if (log === undefined) return undefined
  closeSync(log.fd)
  return {ino: log.ino, size: log.size}
}

/**
 * The CRC-32 of the log's bytes `[0, end)` in the file of inode `ino`, as this process read or wrote them: what
 * the sync mark it appends at `end` carries.
 */
export interface LogCrc {
  ino: number
  end: number
  crc: number
}

/** `known` carried on over `records` written at `at` of the file of inode `ino`; undefined when it was of another part or file. */
function crcAfter(known: LogCrc | undefined, ino: number, at: number, records: Uint8Array[]): LogCrc | undefined {
  if (known === undefined || known.ino !== ino || known.end !== at) return undefined
  let {crc, end} = known
  for (const record of records) {
    crc = crc32(record, crc)
    end += record.length
  }
  return {ino, end, crc}
}

/**
 * Appends to the log at `file`, in one write (O_APPEND: records of processes writing at once do not mix), the
 * records `make` gives for the CRC-32 of the log before them (undefined when `known` is not of the log as it is).
 * Returns false, writing nothing, when there is no log there yet (the caller writes it whole); else what is known
 * of the log's CRC-32 after the write. Another process appending between the look and the write makes a mark's
 * CRC wrong: readers then check each record, as without one.
 */
function append(file: string, known: LogCrc | undefined, make: (crc: number | undefined) => Uint8Array[]): false | {known: LogCrc | undefined} {
  let fd: number
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_APPEND)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw error
  }
  try {
    const {ino, size} = fstatSync(fd)
    if (size === 0) return false
    const before = known !== undefined && known.ino === ino && known.end === size ? known.crc : undefined
    const records = make(before)
    writeSync(fd, Buffer.concat(records))
    return {known: crcAfter(known, ino, size, records)}
  } finally {
    closeSync(fd)
  }
}

/** Appends `records` (see `append`). */
export function appendLog(file: string, records: Uint8Array[], known?: LogCrc): false | {known: LogCrc | undefined} {
  return append(file, known, () => records)
}

/** Appends a sync mark, with the CRC-32 of the log before it when `known` is of the log as it is (see `append`). */
export function appendMark(file: string, mark: Omit<LogMark, 'logCrc'>, known: LogCrc | undefined): false | {known: LogCrc | undefined} {
  return append(file, known, (logCrc) => [encodeMark({...mark, ...(logCrc === undefined ? {} : {logCrc})})])
}

/**
 * Replaces the log at `file` by the header and `records`, atomically (a reader sees the old log or the new one); not
 * fsynced — the vectors are a cache, and a log torn by a power cut fails its checksums and is embedded again.
 */
export async function replaceLog(file: string, header: Uint8Array, records: Uint8Array[]): Promise<{stamp: LogStamp | undefined; known: LogCrc | undefined}> {
  // Its folder is made under a `.nexus/` that is there, never with it: a long-lived watch writing the log just as
  // its tree is removed would make the tree's folders again (and fail the removal), then stay for its idle time.
  await mkdir(dirname(file)).catch((error: NodeJS.ErrnoException) => (error.code === 'EEXIST' ? undefined : Promise.reject(error)))
  const bytes = Buffer.concat([header, ...records])
  await writeFileAtomic(file, bytes, {durable: false, makeFolders: false})
  const stamp = stampOf(file)
  // Another process's log of the same size in its place meanwhile would only make a mark's CRC wrong (see `append`).
  return {stamp, known: stamp?.size === bytes.length ? {ino: stamp.ino, end: bytes.length, crc: crc32(bytes)} : undefined}
}
