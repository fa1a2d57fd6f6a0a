// Waits until a plughost serving Streamable HTTP answers initialize and lists every tool named on
// the command line, then ends its session and prints the endpoint's URL on stdout.
//
//   node await-ready.mjs [--pid PID] [--timeout-ms N] (--url URL | --log FILE) TOOL...
//
// With --log, the URL is read from plughost's log (its "serving MCP over Streamable HTTP: url=..."
// line), so plughost can listen on port 0. Plugins load in the background after the server starts
// listening, so a listening port is not enough: the tool list is awaited through
// notifications/tools/list_changed on the session's GET stream. While nothing answers yet, the
// log is re-read and connecting retried every 100 ms (nothing announces either), as long as the
// process PID, when given, is alive. Exits 0 when ready, 1 with the reason on stderr otherwise.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals: want } = parseArgs({
  options: {
    pid: { type: 'string' },
    url: { type: 'string' },
    log: { type: 'string' },
    'timeout-ms': { type: 'string', default: '30000' },
  },
  allowPositionals: true,
});
if (!values.url === !values.log || want.length === 0) {
  console.error('usage: node await-ready.mjs [--pid PID] [--timeout-ms N] (--url URL | --log FILE) TOOL...');
  process.exit(2);
}
const deadline = Date.now() + Number(values['timeout-ms']);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function fail(msg) {
  console.error(`await-ready: ${msg}`);
  process.exit(1);
}

function checkAlive() {
  if (!values.pid) return;
  try {
    process.kill(Number(values.pid), 0);
  } catch {
    fail(`the server (pid ${values.pid}) exited before it was ready`);
  }
}

// The endpoint: given, or announced in the log.
let url = values.url;
while (!url) {
  checkAlive();
  let log = '';
  try {
    log = readFileSync(values.log, 'utf8');
  } catch (err) {
    if (err.code !== 'ENOENT') fail(err.message);
  }
  url = /serving MCP over Streamable HTTP: url=(\S+)/.exec(log)?.[1];
  if (url) break;
  if (Date.now() > deadline) fail(`${values.log} never announced the Streamable HTTP URL`);
  await sleep(100);
}

// nextChange resolves at the first list_changed after it is called.
let notify = () => {};
const nextChange = () => new Promise((resolve) => (notify = resolve));

// getStream resolves once the session's GET stream is open: a list_changed sent before that
// would not reach this client.
let getStreamOpened;
const getStream = new Promise((resolve) => (getStreamOpened = resolve));
async function tap(input, init = {}) {
  const res = await fetch(input, init);
  if ((init.method ?? 'GET') === 'GET' && res.ok) getStreamOpened();
  return res;
}

// Connect, retrying while nothing listens yet.
let client, transport;
for (let attempt = 1; ; attempt++) {
  checkAlive();
  client = new Client({ name: 'plughost-await-ready', version: '1.0.0' });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => notify());
  transport = new StreamableHTTPClientTransport(new URL(url), { fetch: tap });
  try {
    await client.connect(transport);
    break;
  } catch (err) {
    await client.close().catch(() => {});
    if (Date.now() > deadline) fail(`no MCP server answered at ${url} (${attempt} attempts): ${err.message}`);
    await sleep(100);
  }
}

// timedOut resolves to true when promise has not settled by the deadline.
async function timedOut(promise) {
  let timer;
  const late = await Promise.race([
    promise.then(() => false),
    new Promise((resolve) => (timer = setTimeout(() => resolve(true), Math.max(0, deadline - Date.now())))),
  ]);
  clearTimeout(timer);
  return late;
}

if (await timedOut(getStream)) fail(`${url} opened no GET stream for list_changed`);

// Await the tools. Arm the notification before each listing so that a
// change between the listing and the wait is not missed.
let missing = want;
for (;;) {
  const next = nextChange();
  const have = new Set();
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    page.tools.forEach((t) => have.add(t.name));
    cursor = page.nextCursor;
  } while (cursor);
  missing = want.filter((name) => !have.has(name));
  if (missing.length === 0) break;
  const late = await timedOut(next);
  checkAlive();
  if (late) fail(`tools ${missing.join(', ')} still missing at ${url} and no list_changed arrived`);
}

await transport.terminateSession().catch(() => {});
await client.close();
console.log(url);
