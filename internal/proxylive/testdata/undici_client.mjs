// Node's undici fetching a URL list through its ProxyAgent, for proxylive.
// Prints "STATUS URL" per URL, 0 for an error.
//
// node undici_client.mjs PROXY LISTFILE [CAFILE] [tunnel|notunnel]
//
// CAFILE is trusted for the origin's TLS (requestTls.ca: inside the CONNECT
// tunnel the proxy presents its leaf). undici 7's ProxyAgent tunnels plain
// http:// with CONNECT too unless proxyTunnel is false; "notunnel" sends
// plain HTTP as absolute-form requests to the proxy instead.
import { readFileSync } from 'node:fs'
import { ProxyAgent, request } from 'undici'

const [proxy, list, caFile, mode] = process.argv.slice(2)
const opts = { uri: proxy }
if (caFile) opts.requestTls = { ca: readFileSync(caFile) }
if (mode === 'notunnel') opts.proxyTunnel = false
const agent = new ProxyAgent(opts)
const urls = readFileSync(list, 'utf8').split('\n').filter(Boolean)
let failed = 0
for (const url of urls) {
  try {
    const { statusCode, body } = await request(url, { dispatcher: agent, headersTimeout: 120e3, bodyTimeout: 120e3 })
    await body.dump()
    console.log(`${statusCode} ${url}`)
  } catch (e) {
    failed++
    console.log(`0 ${url} ${e.code || e.name}`)
  }
}
await agent.close()
process.exit(failed ? 1 : 0)
