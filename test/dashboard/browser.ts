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
