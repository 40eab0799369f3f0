/**
 * A deterministic corpus of memory files for the search tests: 20 topics × (3 decisions, 3 bugs, 3 episodes,
 * 2 configs) = 220 files, written like an agent's notes, with shared filler so that common words do not
 * single a file out. `QUERIES` are the questions an agent would ask, each with the files that answer it.
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

interface Topic {
  slug: string
  name: string
  tags: string[]
  decisions: Array<[title: string, why: string]>
  bugs: Array<[symptom: string, fix: string]>
  episodes: string[]
  config: Array<[key: string, value: string]>
}

const TOPICS: Topic[] = [
  {slug: 'postgres', name: 'Postgres', tags: ['database'], decisions: [['Run pgbouncer in transaction pooling mode', 'session pooling exhausted the 100 connection limit during deploys'], ['Upgrade Postgres 15 to 16 with logical replication', 'pg_upgrade needed a long downtime window'], ['Autovacuum tuned per table for the events table', 'bloat reached 40 GB on the events table']], bugs: [['Deadlock between the invoice writer and the ledger reconciler', 'take row locks in id order in both jobs'], ['Replication lag spikes to 90 seconds on the read replica', 'a long analytics query held back the WAL replay'], ['Migration 0042 locked the users table for six minutes', 'create the index concurrently']], episodes: ['Restored the staging database from the nightly basebackup', 'Paired on the slow query log and added three indexes', 'Rehearsed failover to the replica'], config: [['max_connections', '200'], ['shared_buffers', '4GB']]},
  {slug: 'redis', name: 'Redis', tags: ['cache'], decisions: [['Cache sessions in Redis with a 24 hour TTL', 'cookie sessions grew past 4 KB'], ['Use Redis streams instead of pub/sub for job events', 'pub/sub drops messages when a consumer restarts'], ['Evict with allkeys-lru', 'volatile-lru left keys without TTL forever']], bugs: [['Cache stampede when the pricing key expired', 'jittered TTL and a single-flight lock'], ['Redis OOM killed during the Black Friday peak', 'maxmemory was unset on the new node'], ['Stale feature flags served from cache after rollback', 'publish an invalidation on flag change']], episodes: ['Migrated the cache cluster to Redis 7', 'Measured hit ratio after the TTL change', 'Cleaned up orphaned keys from the old session format'], config: [['maxmemory', '6gb'], ['maxmemory-policy', 'allkeys-lru']]},
  {slug: 'kubernetes', name: 'Kubernetes', tags: ['infra'], decisions: [['Adopt Helm charts for every service', 'kustomize overlays drifted between clusters'], ['Set CPU requests but no CPU limits', 'CFS throttling doubled p99 latency'], ['Move ingress to the Gateway API', 'nginx ingress annotations were unmaintainable']], bugs: [['Pods stuck in CrashLoopBackOff after the node pool upgrade', 'the liveness probe hit an endpoint that needs the database'], ['Evicted pods because of ephemeral storage pressure', 'log rotation on the node was off'], ['HPA flapping between 3 and 12 replicas', 'stabilization window of five minutes']], episodes: ['Drained and upgraded the node pool to 1.29', 'Wrote the runbook for a stuck namespace deletion', 'Set up cluster autoscaler on the spot pool'], config: [['replicas', '3'], ['podDisruptionBudget.minAvailable', '2']]},
  {slug: 'ssh', name: 'SSH runner', tags: ['infra', 'security'], decisions: [['Use short-lived SSH certificates for the runner', 'static keys were copied to laptops'], ['Jump host only through the bastion', 'direct access exposed port 22'], ['Rotate host keys yearly', 'an auditor asked for it']], bugs: [['runner_exec auth failures after the key rotation', 'the known_hosts entry still had the old host key'], ['SSH agent forwarding leaked into CI jobs', 'disable ForwardAgent in the CI config'], ['Connection timeouts to the build box at night', 'the bastion idle timeout was 10 minutes']], episodes: ['Debugged the runner_exec authentication failures with the ops team', 'Set up the certificate authority for SSH', 'Audited who has shell access'], config: [['ServerAliveInterval', '30'], ['CertificateFile', '~/.ssh/id_runner-cert.pub']]},
  {slug: 'auth', name: 'Authentication', tags: ['security'], decisions: [['Use OAuth PKCE for the mobile app', 'the implicit flow is deprecated'], ['Store refresh tokens hashed', 'a leaked dump must not be replayable'], ['JWT access tokens valid for 15 minutes', 'revocation lists were too slow']], bugs: [['Login loop on Safari because of SameSite cookies', 'set SameSite=None and Secure on the auth cookie'], ['Password reset emails sent twice', 'the retry middleware replayed the POST'], ['Clock skew made fresh JWTs look expired', 'allow 30 seconds of leeway']], episodes: ['Implemented single sign-on with the identity provider', 'Reviewed the MFA enrolment flow', 'Rotated the JWT signing key'], config: [['tokenTtlSeconds', '900'], ['issuer', 'https://id.example.test']]},
  {slug: 'billing', name: 'Billing', tags: ['payments'], decisions: [['Charge in the customer currency', 'conversion at checkout confused customers'], ['Idempotency keys on every Stripe call', 'double charges on retries'], ['Invoices are immutable once finalized', 'accountants need a stable record']], bugs: [['Proration wrong when downgrading mid-cycle', 'compute proration from the period start'], ['Webhook signature failures after the secret rotation', 'accept both secrets during the overlap'], ['Tax rounding off by one cent on EU invoices', 'round per line, not per invoice']], episodes: ['Launched annual plans with a discount', 'Reconciled the Stripe payouts for March', 'Migrated legacy customers to the new price book'], config: [['currency', 'EUR'], ['dunningRetries', '4']]},
  {slug: 'frontend', name: 'Frontend', tags: ['web'], decisions: [['Migrate the dashboard from webpack to Vite', 'dev server cold start took 40 seconds'], ['Use React Query for server state', 'hand-written caching in Redux had bugs'], ['Design tokens for colours and spacing', 'three shades of the same blue']], bugs: [['Hydration mismatch on the pricing page', 'the date was rendered with the server timezone'], ['Memory leak in the chart component', 'the resize observer was never disconnected'], ['Layout shift when the web font loads', 'font-display optional and size-adjust']], episodes: ['Shipped the dark mode toggle', 'Measured Core Web Vitals on the landing page', 'Removed moment.js from the bundle'], config: [['vite.build.target', 'es2022'], ['chunkSizeWarningLimit', '800']]},
  {slug: 'ci', name: 'CI pipeline', tags: ['tooling'], decisions: [['Cache node_modules keyed by the lockfile hash', 'installs took four minutes'], ['Run the e2e suite only on merge queue', 'flaky runs blocked every pull request'], ['Self-hosted runners for the GPU jobs', 'hosted runners have no GPU']], bugs: [['Flaky e2e test on the checkout page', 'wait for the network idle instead of a fixed sleep'], ['Cache poisoning between branches', 'scope the cache key by branch'], ['Artifacts expired before the release job ran', 'raise retention to 14 days']], episodes: ['Cut the pipeline from 22 to 9 minutes', 'Added the merge queue', 'Split the test suite into four shards'], config: [['timeout-minutes', '30'], ['concurrency.group', 'ci-${{ github.ref }}']]},
  {slug: 'logging', name: 'Logging', tags: ['observability'], decisions: [['Structured JSON logs with pino', 'grep over free text did not scale'], ['Ship logs with Vector to Loki', 'the Elasticsearch bill tripled'], ['Sample debug logs at one percent', 'debug logging filled the disk']], bugs: [['Log lines truncated at 16 KB by the container runtime', 'split large payloads'], ['Personal data found in request logs', 'redact email and phone fields in the serializer'], ['Loki queries time out over 7 days', 'add the service label to every stream']], episodes: ['Built the error budget dashboard', 'Removed noisy health check logs', 'Traced a request across services with the correlation id'], config: [['level', 'info'], ['redact', 'req.headers.authorization']]},
  {slug: 'metrics', name: 'Metrics and alerting', tags: ['observability'], decisions: [['Prometheus with Thanos for long retention', 'local retention was 15 days'], ['Alert on SLO burn rate, not on CPU', 'pages at night for harmless spikes'], ['Histograms instead of summaries', 'summaries cannot be aggregated']], bugs: [['Cardinality explosion from the user id label', 'drop the label at the scrape'], ['Alertmanager sent duplicate pages', 'two replicas without clustering'], ['Grafana dashboard showed gaps after the upgrade', 'the scrape interval changed to 60s']], episodes: ['Defined the SLOs for the API', 'Tuned the paging policy with on-call', 'Migrated dashboards to Grafana 10'], config: [['scrape_interval', '30s'], ['retention', '15d']]},
  {slug: 'email', name: 'Email delivery', tags: ['messaging'], decisions: [['Send transactional email through Postmark', 'SES bounced too many to Outlook'], ['Separate domain for marketing email', 'marketing complaints hurt transactional delivery'], ['DMARC policy to quarantine', 'spoofed invoices were sent in our name']], bugs: [['Emails landing in spam at Gmail', 'DKIM key was 1024 bits; rotated to 2048'], ['Unsubscribe link broken in plain text emails', 'the template escaped the URL twice'], ['Bounce webhook not processed', 'the queue consumer crashed on an unknown event type']], episodes: ['Warmed up the new sending IP', 'Rewrote the welcome email sequence', 'Checked SPF and DKIM records after the DNS move'], config: [['from', 'noreply@example.test'], ['dmarc', 'p=quarantine']]},
  {slug: 'search', name: 'Product search', tags: ['search'], decisions: [['Use Meilisearch for product search', 'Elasticsearch was too heavy to operate'], ['Synonyms maintained by the merchandising team', 'engineers were the bottleneck'], ['Typo tolerance off for SKUs', 'fuzzy matches returned wrong parts']], bugs: [['Search results stale after price updates', 'reindex on the price change event'], ['Facet counts wrong for variants', 'count the parent product once'], ['Autocomplete slow on mobile networks', 'debounce and cache the prefix queries']], episodes: ['Tuned ranking rules with the merchandisers', 'Indexed the catalogue of 2 million products', 'Added search analytics for zero-result queries'], config: [['rankingRules', 'words,typo,proximity'], ['maxTotalHits', '1000']]},
  {slug: 'backup', name: 'Backups', tags: ['infra', 'database'], decisions: [['Nightly snapshots kept for 35 days', 'compliance asks for a month'], ['Offsite copy in another region', 'a region outage would take the backups too'], ['Restore drill every quarter', 'an untested backup is not a backup']], bugs: [['Backup job silently failing for two weeks', 'alert when the last snapshot is older than 26 hours'], ['Restore took nine hours', 'parallel restore with four jobs'], ['Snapshot encryption key missing in the DR region', 'replicate the KMS key']], episodes: ['Ran the quarterly restore drill', 'Measured the recovery time objective', 'Documented the disaster recovery plan'], config: [['retentionDays', '35'], ['schedule', '0 3 * * *']]},
  {slug: 'mobile', name: 'Mobile app', tags: ['mobile'], decisions: [['Ship the app with React Native', 'one team for iOS and Android'], ['Over-the-air updates for JavaScript only', 'app store review takes days'], ['Offline first with a local SQLite cache', 'field workers lose signal']], bugs: [['Crash on Android 14 when opening the camera', 'request the new photo picker permission'], ['Push notifications not delivered on iOS', 'the APNs certificate expired'], ['Deep links open the browser instead of the app', 'the apple-app-site-association file was missing']], episodes: ['Released version 3.2 to the stores', 'Profiled the cold start on low-end Android', 'Set up crash reporting with symbol upload'], config: [['minSdkVersion', '26'], ['bundleId', 'test.example.field']]},
  {slug: 'dns', name: 'DNS and CDN', tags: ['infra', 'network'], decisions: [['Move DNS to Cloudflare', 'the registrar DNS had no API'], ['Cache static assets at the CDN for a year', 'assets are content hashed'], ['Lower TTL to 60 seconds before migrations', 'changes took hours to propagate']], bugs: [['TLS certificate expired on the docs subdomain', 'the renewal used an old DNS challenge record'], ['CDN served a cached 500 page', 'do not cache 5xx responses'], ['CNAME flattening broke the apex redirect', 'use an ALIAS record']], episodes: ['Migrated the zone to Cloudflare', 'Set up certificate expiry monitoring', 'Purged the CDN after the logo change'], config: [['ttl', '300'], ['cacheControl', 'public, max-age=31536000, immutable']]},
  {slug: 'queue', name: 'Job queue', tags: ['backend'], decisions: [['Use BullMQ for background jobs', 'cron scripts had no retries'], ['Dead letter queue after five attempts', 'poison messages blocked the worker'], ['Exactly one consumer group per job type', 'shared workers starved the slow jobs']], bugs: [['Jobs processed twice after a worker crash', 'make the handlers idempotent'], ['Queue backlog of 200k jobs on Monday', 'the export job was enqueued per row'], ['Delayed jobs fired an hour early after DST', 'schedule in UTC']], episodes: ['Moved the PDF rendering to the queue', 'Added the queue depth dashboard', 'Drained the dead letter queue by hand'], config: [['attempts', '5'], ['backoff', 'exponential']]},
  {slug: 'gateway', name: 'API gateway', tags: ['backend', 'network'], decisions: [['Rate limit per API key at the gateway', 'one customer took the API down'], ['Version the API in the URL path', 'header versioning confused clients'], ['GraphQL only for the internal dashboard', 'public clients want REST']], bugs: [['429 responses for a customer under the limit', 'the limiter counted preflight OPTIONS requests'], ['Gateway timeouts on the report endpoint', 'make the report asynchronous'], ['CORS errors from the new admin domain', 'add it to the allowed origins']], episodes: ['Published the v2 API reference', 'Onboarded the partner integration', 'Load tested the gateway at 5k requests per second'], config: [['rateLimit.perMinute', '600'], ['timeoutMs', '29000']]},
  {slug: 'ml', name: 'Recommendation model', tags: ['ml'], decisions: [['Retrain the recommender weekly', 'daily retrains did not improve click-through'], ['Serve embeddings from a feature store', 'training and serving features diverged'], ['Offline evaluation with recall at ten', 'click-through alone was noisy']], bugs: [['Model served stale predictions after the deploy', 'the model registry alias was not updated'], ['Training job ran out of GPU memory', 'gradient accumulation with smaller batches'], ['Data leakage from the future in the training set', 'split by time, not randomly']], episodes: ['Ran the A/B test of the new ranking model', 'Labelled 5000 examples with the support team', 'Profiled the inference latency on CPU'], config: [['batchSize', '256'], ['learningRate', '0.0003']]},
  {slug: 'onboarding', name: 'Team onboarding', tags: ['process'], decisions: [['Every new hire ships to production in week one', 'momentum and confidence'], ['A buddy for the first month', 'questions went unasked'], ['Onboarding docs live in the repo', 'the wiki went stale']], bugs: [['Laptop setup script fails on Apple silicon', 'install the arm64 Homebrew first'], ['New hires lacked access to the staging VPN', 'add the VPN group to the HR checklist'], ['Seed data missing in the local environment', 'run the seed task after migrations']], episodes: ['Onboarded two backend engineers', 'Recorded the architecture walkthrough video', 'Collected feedback from the last cohort'], config: [['buddyWeeks', '4'], ['checklist', 'docs/onboarding.md']]},
  {slug: 'incident', name: 'Incident response', tags: ['process', 'observability'], decisions: [['Blameless postmortems within five days', 'lessons were lost'], ['One incident commander per incident', 'three people gave orders at once'], ['Status page updates every 30 minutes', 'customers asked support instead']], bugs: [['Pager did not escalate to the secondary', 'the escalation policy had no second level'], ['Status page stuck on degraded after recovery', 'the automation ignored resolved events'], ['Incident channel created without the runbook link', 'fix the bot template']], episodes: ['Ran the tabletop exercise for a database outage', 'Wrote the postmortem for the checkout outage', 'Reviewed the on-call rotation'], config: [['ackTimeoutMinutes', '5'], ['severityLevels', 'sev1,sev2,sev3']]},
]

const FILLER = [
  'We agreed to revisit this in the next planning meeting.',
  'The change was reviewed by two people before it went out.',
  'Numbers are from the production dashboard that week.',
  'Open question: does this need a follow-up ticket?',
  'Noted here so the next agent does not have to rediscover it.',
  'See the linked pull request for the discussion.',
  'This affected staging first, then production.',
  'The team lead signed off on the plan.',
]

/** Small deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const slugify = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 48)

export function corpusFiles(): Map<string, string> {
  const files = new Map<string, string>()
  const random = rng(4)
  const filler = () => [FILLER[Math.floor(random() * FILLER.length)], FILLER[Math.floor(random() * FILLER.length)]].join(' ')
  const fm = (title: string, tags: string[], date: string) => `---\ntitle: ${JSON.stringify(title)}\ntags: [${tags.join(', ')}]\ndate: ${date}\n---\n`
  TOPICS.forEach((topic, t) => {
    const day = (n: number) => `2026-0${1 + ((t + n) % 6)}-${String(1 + ((t * 7 + n * 5) % 27)).padStart(2, '0')}`
    topic.decisions.forEach(([title, why], n) => {
      files.set(`decisions/${topic.slug}/${slugify(title)}.md`, `${fm(`Decision: ${title}`, [...topic.tags, 'decision'], day(n))}# Decision: ${title}\n\nContext: ${topic.name}.\nDecision: ${title}.\nWhy: ${why}.\n\n${filler()}\n`)
    })
    topic.bugs.forEach(([symptom, fix], n) => {
      files.set(`bugs/${topic.slug}/${slugify(symptom)}.md`, `${fm(`Bug: ${symptom}`, [...topic.tags, 'bug'], day(n + 3))}# Bug: ${symptom}\n\nArea: ${topic.name}.\nSymptom: ${symptom}.\nFix: ${fix}.\n\n${filler()}\n`)
    })
    topic.episodes.forEach((what, n) => {
      const date = day(n + 6)
      files.set(`episodes/${date}/${topic.slug}-${slugify(what).slice(0, 30)}.md`, `${fm(what, [...topic.tags, 'episode'], date)}# Episode: ${what}\n\nDate: ${date}\nTopic: ${topic.name}\nOutcome: ${what.toLowerCase()}; follow-ups tracked.\n\nSummary:\n- ${filler()}\n- ${filler()}\n`)
    })
    files.set(`configs/${topic.slug}.md`, `${fm(`${topic.name} configuration`, [...topic.tags, 'config'], day(9))}# ${topic.name} configuration\n\n${topic.config.map(([k, v]) => `- \`${k}\`: ${v}`).join('\n')}\n\n${filler()}\n`)
    files.set(`configs/${topic.slug}-staging.md`, `${fm(`${topic.name} staging overrides`, [...topic.tags, 'config'], day(10))}# ${topic.name} staging overrides\n\n${topic.config.map(([k]) => `- \`${k}\`: reduced for staging`).join('\n')}\n`)
  })
  return files
}

/** Questions with the files that answer them (any of them in the top 5 counts; recall@5 is over all of them). */
export const QUERIES: Array<{query: string; expected: string[]}> = [
  {query: 'pgbouncer pooling mode', expected: ['decisions/postgres/run-pgbouncer-in-transaction-pooling-mode.md']},
  {query: 'deadlock invoice ledger', expected: ['bugs/postgres/deadlock-between-the-invoice-writer-and-the-ledg.md']},
  {query: 'replica lag', expected: ['bugs/postgres/replication-lag-spikes-to-90-seconds-on-the-read.md']},
  {query: 'cache stampede pricing', expected: ['bugs/redis/cache-stampede-when-the-pricing-key-expired.md']},
  {query: 'redis eviction policy', expected: ['decisions/redis/evict-with-allkeys-lru.md', 'configs/redis.md']},
  {query: 'CrashLoopBackOff node pool', expected: ['bugs/kubernetes/pods-stuck-in-crashloopbackoff-after-the-node-po.md']},
  {query: 'cpu throttling limits', expected: ['decisions/kubernetes/set-cpu-requests-but-no-cpu-limits.md']},
  {query: 'runner_exec auth failures', expected: ['bugs/ssh/runner-exec-auth-failures-after-the-key-rotation.md']},
  {query: 'ssh certificates', expected: ['decisions/ssh/use-short-lived-ssh-certificates-for-the-runner.md']},
  {query: 'safari login loop samesite', expected: ['bugs/auth/login-loop-on-safari-because-of-samesite-cookies.md']},
  {query: 'jwt expiry clock skew', expected: ['bugs/auth/clock-skew-made-fresh-jwts-look-expired.md']},
  {query: 'stripe idempotency double charge', expected: ['decisions/billing/idempotency-keys-on-every-stripe-call.md']},
  {query: 'proration downgrade', expected: ['bugs/billing/proration-wrong-when-downgrading-mid-cycle.md']},
  {query: 'vite webpack migration', expected: ['decisions/frontend/migrate-the-dashboard-from-webpack-to-vite.md']},
  {query: 'hydration mismatch timezone', expected: ['bugs/frontend/hydration-mismatch-on-the-pricing-page.md']},
  {query: 'flaky e2e checkout test', expected: ['bugs/ci/flaky-e2e-test-on-the-checkout-page.md']},
  {query: 'personal data in logs redact', expected: ['bugs/logging/personal-data-found-in-request-logs.md']},
  {query: 'loki log shipping', expected: ['decisions/logging/ship-logs-with-vector-to-loki.md']},
  {query: 'label cardinality prometheus', expected: ['bugs/metrics/cardinality-explosion-from-the-user-id-label.md']},
  {query: 'slo burn rate alerts', expected: ['decisions/metrics/alert-on-slo-burn-rate-not-on-cpu.md']},
  {query: 'gmail spam dkim', expected: ['bugs/email/emails-landing-in-spam-at-gmail.md']},
  {query: 'meilisearch product search', expected: ['decisions/search/use-meilisearch-for-product-search.md']},
  {query: 'restore drill', expected: ['decisions/backup/restore-drill-every-quarter.md']},
  {query: 'backup failing silently', expected: ['bugs/backup/backup-job-silently-failing-for-two-weeks.md']},
  {query: 'android camera crash', expected: ['bugs/mobile/crash-on-android-14-when-opening-the-camera.md']},
  {query: 'apns push notifications ios', expected: ['bugs/mobile/push-notifications-not-delivered-on-ios.md']},
  {query: 'expired tls certificate docs', expected: ['bugs/dns/tls-certificate-expired-on-the-docs-subdomain.md']},
  {query: 'jobs processed twice', expected: ['bugs/queue/jobs-processed-twice-after-a-worker-crash.md']},
  {query: 'dead letter queue', expected: ['decisions/queue/dead-letter-queue-after-five-attempts.md']},
  {query: 'rate limit api key', expected: ['decisions/gateway/rate-limit-per-api-key-at-the-gateway.md']},
  {query: 'cors admin domain', expected: ['bugs/gateway/cors-errors-from-the-new-admin-domain.md']},
  {query: 'recommender retraining', expected: ['decisions/ml/retrain-the-recommender-weekly.md']},
  {query: 'gpu out of memory training', expected: ['bugs/ml/training-job-ran-out-of-gpu-memory.md']},
  {query: 'apple silicon laptop setup', expected: ['bugs/onboarding/laptop-setup-script-fails-on-apple-silicon.md']},
  {query: 'pager escalation secondary', expected: ['bugs/incident/pager-did-not-escalate-to-the-secondary.md']},
  {query: 'postmortem checkout outage', expected: ['episodes/2026-03-07/incident-wrote-the-postmortem-for-the-c.md']},
  // Typos and prefixes: the fuzzy and prefix terms at work.
  {query: 'kubernets autoscaler', expected: ['episodes/2026-05-01/kubernetes-set-up-cluster-autoscaler-on-t.md']},
  {query: 'meilisaerch', expected: ['decisions/search/use-meilisearch-for-product-search.md']},
  {query: 'postgr upgrad', expected: ['decisions/postgres/upgrade-postgres-15-to-16-with-logical-replicati.md']},
  {query: 'dmarc quarantine spoofing', expected: ['decisions/email/dmarc-policy-to-quarantine.md', 'configs/email.md']},
]

export async function writeCorpus(memory: string, files = corpusFiles()): Promise<void> {
  for (const [path, text] of files) {
    await mkdir(dirname(join(memory, path)), {recursive: true})
    await writeFile(join(memory, path), text)
  }
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'zi', 'bel', 'dor', 'fen', 'gal', 'hum', 'jor', 'pix', 'qua', 'sol', 'tek', 'wyn', 'xan']

/**
 * `n` memory files for scale tests and the benchmark: the fixture corpus repeated under `bulk/NN/`, each copy
 * with its own number and a few words out of an 8,000-word synthetic vocabulary, so postings and file sizes
 * look like a real tree rather than 45 copies of one.
 */
export function largeCorpus(n: number): Map<string, string> {
  const base = [...corpusFiles()]
  const random = rng(7)
  const word = () => SYLLABLES[Math.floor(random() * 20)] + SYLLABLES[Math.floor(random() * 20)] + SYLLABLES[Math.floor(random() * 20)]
  const files = new Map<string, string>()
  for (let i = 0; i < n; i++) {
    const [path, text] = base[i % base.length]
    const copy = Math.floor(i / base.length)
    const extra = Array.from({length: 12}, word).join(' ')
    files.set(`bulk/${String(copy).padStart(2, '0')}/${path.replace(/\.md$/, `-${i}.md`)}`, `${text}\nNote ${i}: ${extra}.\n`)
  }
  return files
}

/** Writes many files fast: 64 at a time. */
export async function writeCorpusFast(memory: string, files: Map<string, string>): Promise<void> {
  const entries = [...files]
  const dirsMade = new Set<string>()
  for (const [path] of entries) dirsMade.add(dirname(join(memory, path)))
  await Promise.all([...dirsMade].map((dir) => mkdir(dir, {recursive: true})))
  for (let i = 0; i < entries.length; i += 64) {
    await Promise.all(entries.slice(i, i + 64).map(([path, text]) => writeFile(join(memory, path), text)))
  }
}
