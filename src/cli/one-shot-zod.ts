/**
 * A process of the fast door parses each zod schema once or twice: zod's compiled fast path (`new Function` per
 * object schema on its first parse) costs more than it saves. Imported first by each fast door bundle (scripts/bundle.mjs),
 * before any schema is made; the server, which parses the same schemas all day, keeps it.
 */
import {config} from 'zod'

config({jitless: true})
