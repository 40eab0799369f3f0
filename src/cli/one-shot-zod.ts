/**
 * A process of the fast door parses each zod schema once or twice: zod's compiled fast path (`new Function` per
 * object schema on its first parse) costs more than it saves. Imported first by each fast door bundle (scripts/bundle.mjs),
 * before any schema is made; the server, which parses the same schemas all day, keeps it.
 *
 * Set without loading zod: `memory ls`, `recall` and the prompt hook never make a schema, and loading zod cost them
 * ~2 ms. zod keeps its settings in `globalThis.__zod_globalConfig` (shared by every copy of zod in a process), which
 * it takes as it is when it loads, and which `config()` returns (test/cli/one-shot-zod.test.ts).
 */
const shared = globalThis as {__zod_globalConfig?: Record<string, unknown>}
shared.__zod_globalConfig = Object.assign(shared.__zod_globalConfig ?? {}, {jitless: true})
