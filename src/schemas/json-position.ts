/**
 * Where JSON text first goes wrong. Node 20's JSON.parse names the offset for some errors only
 * ("Unexpected token 'x', "..." is not valid JSON" has none), and an error on line 3 of a long file must not be
 * reported at its end. A strict RFC 8259 scan, used only after JSON.parse has already failed.
 */
const WS = new Set([0x20, 0x09, 0x0a, 0x0d])

class Stop {
  constructor(readonly offset: number) {}
}

/** Offset of the first character that breaks the JSON grammar, or `undefined` when the text is valid JSON. */
export function jsonErrorOffset(text: string): number | undefined {
  let i = 0
  const fail = (): never => {
    throw new Stop(i)
  }
  const skip = () => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i++
  }
  const literal = (word: string) => {
    for (const ch of word) {
      if (text[i] !== ch) fail()
      i++
    }
  }
  const digits = () => {
    const start = i
    while (text[i] >= '0' && text[i] <= '9') i++
    if (i === start) fail()
  }
  const number = () => {
    if (text[i] === '-') i++
    if (text[i] === '0') i++
    else digits()
    if (text[i] === '.') {
      i++
      digits()
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++
      if (text[i] === '+' || text[i] === '-') i++
      digits()
    }
  }
  const string = () => {
    i++ // opening quote
    for (;;) {
      if (i >= text.length || text.charCodeAt(i) < 0x20) fail()
      const ch = text[i++]
      if (ch === '"') return
      if (ch !== '\\') continue
      if (text[i] === 'u') {
        i++
        for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? '')) fail()
      } else if ('"\\/bfnrt'.includes(text[i] ?? 'x')) i++
      else fail()
    }
  }
  const value = (): void => {
    skip()
    const ch = text[i]
    if (ch === '{') {
      i++
      skip()
      if (text[i] === '}') return void i++
      for (;;) {
        skip()
        if (text[i] !== '"') fail()
        string()
        skip()
        if (text[i] !== ':') fail()
        i++
        value()
        skip()
        if (text[i] === '}') return void i++
        if (text[i] !== ',') fail()
        i++
      }
    }
    if (ch === '[') {
      i++
      skip()
      if (text[i] === ']') return void i++
      for (;;) {
        value()
        skip()
        if (text[i] === ']') return void i++
        if (text[i] !== ',') fail()
        i++
      }
    }
    if (ch === '"') return string()
    if (ch === 't') return literal('true')
    if (ch === 'f') return literal('false')
    if (ch === 'n') return literal('null')
    if (ch === '-' || (ch >= '0' && ch <= '9')) return number()
    fail()
  }
  try {
    value()
    skip()
    return i < text.length ? i : undefined
  } catch (error) {
    // Anything else is a stack overflow on absurdly deep nesting: no position then, rather than a crash.
    return error instanceof Stop ? error.offset : undefined
  }
}
