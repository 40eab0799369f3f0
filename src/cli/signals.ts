/** Ctrl-C and SIGTERM as a promise, for the commands that run until one of them (`sync --watch`, `telegram`). */
/** The first of these signals to arrive (while waiting, they no longer end the process at once); `dispose` stops listening. */
export function nextSignal(signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): {signal: Promise<string>; dispose(): void} {
  let handler: (signal: NodeJS.Signals) => void = () => {}
  const dispose = () => {
    for (const s of signals) process.removeListener(s, handler)
  }
  const signal = new Promise<string>((resolve) => {
    handler = (received) => {
      dispose()
      resolve(received)
    }
    for (const s of signals) process.once(s, handler)
  })
  return {signal, dispose}
}
