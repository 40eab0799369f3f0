/**
 * A date-time as jarvis writes it (`Date.prototype.toISOString`), checked by hand where zod would cost more than the
 * check: the sync state's entries, and what a no-op sync reads and writes without loading zod (a status that lists
 * no file, its audit line). Every such string is one zod's `isoDateTimeSchema` accepts unchanged.
 */
const WRITTEN_DATE_TIME = /^(\d{4})-(\d\d)-(\d\d)T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/**
 * An ISO date-time as `Date.prototype.toISOString` prints it, and a real one (no 30 February). By its digits: the
 * round trip through Date (the same answer, property-tested) was a third of a 10,000-file push's own work, every
 * entry being checked at each of the state's writes.
 */
export function isWrittenDateTime(value: unknown): value is string {
  if (typeof value !== 'string' || value.length !== 24) return false
  // The files of one batch share their dates, to the millisecond: each is checked once.
  if (writtenDates.has(value)) return true
  if (!isWrittenDateTimeByDigits(value)) return false
  if (writtenDates.size >= MAX_REMEMBERED_DATES) writtenDates.clear()
  writtenDates.add(value)
  return true
}

const writtenDates = new Set<string>()
const MAX_REMEMBERED_DATES = 100_000

function isWrittenDateTimeByDigits(value: string): boolean {
  const found = WRITTEN_DATE_TIME.exec(value)
  if (found === null) return false
  const year = Number(found[1])
  const month = Number(found[2])
  const day = Number(found[3])
  if (month < 1 || month > 12 || day < 1) return false
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])
}
