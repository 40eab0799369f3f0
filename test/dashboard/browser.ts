/**
 * A real headless Chromium (Debian's `chromium`, driven by playwright-core) for the dashboard's tests: one browser
 * per test file, a fresh profile each launch, and screenshots of a page at desktop and phone width.
 */
import {existsSync} from 'node:fs'
import {mkdir, mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {chromium, type BrowserContext, type Locator, type Page} from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))

export const DESKTOP = {width: 1280, height: 800}
export const PHONE = {width: 390, height: 844}

export interface Browser {
  context: BrowserContext
  /** A new tab (its own sessionStorage: signed out) at desktop size. */
  newPage(): Promise<Page>
  close(): Promise<void>
}

/** `args`: more Chromium flags (e.g. to trust a test CA's server key). */
export async function launchBrowser(options: {args?: string[]} = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run installs it)`)
  const profile = await mkdtemp(join(tmpdir(), 'jarvis-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...(options.args ?? [])],
    viewport: DESKTOP,
    // Times in screenshots read the same on every machine.
    timezoneId: 'UTC',
    locale: 'en-GB',
  })
  return {
    context,
    async newPage() {
      const page = await context.newPage()
      await page.setViewportSize(DESKTOP)
      return page
    },
    async close() {
      await context.close()
      await rm(profile, {recursive: true, force: true})
    },
  }
}

/** docs/screenshots/<name>-desktop.png and <name>-phone.png of the page as it is now; `mask` hides what must not be committed. */
export async function screenshots(page: Page, name: string, mask: Locator[] = []): Promise<void> {
  await mkdir(SCREENSHOTS, {recursive: true})
  const before = page.viewportSize() ?? DESKTOP
  for (const [size, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
    await page.setViewportSize(viewport)
    await page.screenshot({path: join(SCREENSHOTS, `${name}-${size}.png`), fullPage: true, animations: 'disabled', mask, maskColor: '#9aa3ad'})
  }
  await page.setViewportSize(before)
}

/**
 * Makes `page` note each answer it reads from the server (its URL and text) once the page has had its turn to use
 * it: its own continuations and Preact's render run as microtasks, before the task that notes it. A test can then
 * wait until a late answer was handled, and only then look, instead of sleeping. Holds until the next navigation.
 */
export async function noteAnswers(page: Page): Promise<void> {
  await page.evaluate(`(() => {
    const read = Response.prototype.text
    window.answersHandled = []
    Response.prototype.text = async function () {
      const text = await read.call(this)
      setTimeout(() => window.answersHandled.push(this.url + '\\n' + text), 0)
      return text
    }
  })()`)
}

/** Waits until `page` (see noteAnswers) has handled an answer whose URL or text contains `part`. */
export async function answerHandled(page: Page, part: string): Promise<void> {
  await page.waitForFunction((wanted) => (globalThis as unknown as {answersHandled: string[]}).answersHandled.some((answer) => answer.includes(wanted)), part)
}

/** Holds the page's requests that `matches` picks until release() (a slow answer, made to arrive last); `asked` resolves at the first. */
export async function holdRequests(page: Page, matches: (url: string, body: string) => boolean): Promise<{asked: Promise<void>; release: () => void}> {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let seen!: () => void
  const asked = new Promise<void>((resolve) => (seen = resolve))
  await page.route(
    (url) => url.pathname.startsWith('/api/') || url.pathname.startsWith('/v1/'),
    async (route) => {
      const request = route.request()
      if (!matches(request.url(), request.postData() ?? '')) return route.fallback()
      seen()
      await released
      await route.continue()
    },
  )
  return {asked, release}
}
