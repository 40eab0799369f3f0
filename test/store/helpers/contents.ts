/** Two large contents that differ in every line and in length, so any torn mix of them is recognisable. */
export function contentA(bytes: number): string {
  const line = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n'
  return line.repeat(Math.ceil(bytes / line.length))
}

export function contentB(bytes: number): string {
  const line = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n'
  return line.repeat(Math.ceil(bytes / line.length) + 3)
}
