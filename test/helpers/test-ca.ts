/**
 * A certificate authority made for one test run (openssl, at run time: no key material in the repository) and a
 * server certificate it signed for 127.0.0.1 and localhost, so that `jarvis serve --tls-cert --tls-key` is reached
 * over real HTTPS. Clients trust the CA only: Node through the `ca` option (`caFetch`) or NODE_EXTRA_CA_CERTS (`caFile`),
 * Chromium through the server key's SPKI hash (`chromiumTrust`).
 */
import {execFile} from 'node:child_process'
import {createHash, createPublicKey} from 'node:crypto'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {Agent, fetch as undiciFetch} from 'undici'

const run = promisify(execFile)

export interface TestCa {
  /** The CA's certificate (PEM file): what NODE_EXTRA_CA_CERTS names. */
  caFile: string
  caPem: string
  /** The server's certificate and key (PEM files), for --tls-cert and --tls-key. */
  certFile: string
  keyFile: string
  /** A fetch that trusts this CA (and no other), for the MCP SDK's `fetch` / `fetchFn` options. */
  caFetch: typeof fetch
  /** Chromium flags that make it accept the server's certificate, and only that key. */
  chromiumTrust: string[]
  remove(): Promise<void>
}

export async function makeTestCa(): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'jarvis-test-ca-'))
  const at = (name: string) => join(dir, name)
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
  await run('openssl', ['req', '-x509', ...ec, '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '2', '-subj', '/CN=jarvis test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'])
  await run('openssl', ['req', ...ec, '-keyout', at('server.key'), '-out', at('server.csr'), '-subj', '/CN=localhost'])
  await writeFile(at('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n')
  await run('openssl', ['x509', '-req', '-in', at('server.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('server.pem'), '-days', '2', '-extfile', at('server.ext')])
  const caPem = await readFile(at('ca.pem'), 'utf8')
  const spki = createPublicKey(await readFile(at('server.key'), 'utf8')).export({type: 'spki', format: 'der'})
  const agent = new Agent({connect: {ca: caPem}})
  const caFetch = ((input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(input as string, {...(init as object), dispatcher: agent} as Parameters<typeof undiciFetch>[1])) as unknown as typeof fetch
  return {
    caFile: at('ca.pem'),
    caPem,
    certFile: at('server.pem'),
    keyFile: at('server.key'),
    caFetch,
    chromiumTrust: [`--ignore-certificate-errors-spki-list=${createHash('sha256').update(spki).digest('base64')}`],
    async remove() {
      await agent.close()
      await rm(dir, {recursive: true, force: true})
    },
  }
}
