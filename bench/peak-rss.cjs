// Loaded with `node --require` by bench/process.ts: writes the process's peak resident memory (KiB) at exit.
process.on('exit', () => {
  if (process.env.JARVIS_BENCH_PEAK_FILE) require('node:fs').writeFileSync(process.env.JARVIS_BENCH_PEAK_FILE, String(process.resourceUsage().maxRSS))
})
