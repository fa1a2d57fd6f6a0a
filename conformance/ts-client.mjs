// A real TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json) driving a
// plughost that serves Streamable HTTP. cmd/plughost/ts_client_test.go runs it against a host
// serving the echo and conformance plugins:
//
//   node ts-client.mjs URL
//
// It reports what it observes as one JSON object per line on stdout ({"step": NAME, ...}); the Go
// test asserts on them. Steps, in order:
//
//   initialized       Client + StreamableHTTPClientTransport: initialize, the session id, the
//                     negotiated version and the server's capabilities
//   tools, echo       tools/list (every page) and a call of echo
//   ready-for-plugin  the GET stream is open and the client idles: the test now drops the clock
//                     plugin into the plugin directory
//   list_changed      notifications/tools/list_changed arrived (no request was in flight, so on the
//                     GET stream) and the new tool list, which the clock's call uses (step clock)
//   disconnected      a call of test_tool_with_progress, cut off (transport closed) as soon as
//                     its first progress notification arrived, with the last SSE event id seen
//   resumed           a second transport on the same session resumes with Last-Event-ID = that id
//                     (the SDK's resumptionToken): the progress notifications and the result the
//                     first connection missed
//   terminated        DELETE of the session, then a request with its id (which must get 404)
//   done
//
// HTTP requests are recorded through the transports' fetch option. Any failure exits 1 with the
// reason on stderr.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  ProgressNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.argv[2] ?? '');
const TIMEOUT = 30_000;

// A run that hangs fails with the step it hung in.
let step = 'start';
setTimeout(() => fail(new Error(`timed out in step ${step}`)), 90_000).unref();

function fail(err) {
  console.error(`ts-client: step ${step}: ${err?.stack ?? err}`);
  process.exit(1);
}
process.on('unhandledRejection', fail);

function emit(name, data = {}) {
  process.stdout.write(JSON.stringify({ step: name, ...data }) + '\n');
}

function within(promise, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within ${TIMEOUT} ms`)), TIMEOUT))),
  ]).finally(() => clearTimeout(timer));
}

// http records every HTTP exchange: method, whether Last-Event-ID was sent, status and media type.
const http = [];
let getStreamOpened;
const getStreamOpen = new Promise((resolve) => (getStreamOpened = resolve));
async function tap(input, init = {}) {
  const headers = new Headers(init.headers);
  const res = await fetch(input, init);
  const entry = {
    method: init.method ?? 'GET',
    lastEventId: headers.get('last-event-id') ?? undefined,
    status: res.status,
    contentType: (res.headers.get('content-type') ?? '').split(';')[0] || undefined,
  };
  http.push(entry);
  if (entry.method === 'GET' && !entry.lastEventId && res.status === 200 && entry.contentType === 'text/event-stream') {
    getStreamOpened();
  }
  return res;
}

function newClient() {
  return new Client({ name: 'plughost-ts-client', version: '1.0.0' }, { capabilities: {} });
}

async function toolNames(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names.sort();
}

try {
  // initialize
  step = 'initialized';
  const client = newClient();
  let notify = () => {};
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++;
    notify();
  });
  const nextChange = () => new Promise((resolve) => (notify = resolve));
  const transport = new StreamableHTTPClientTransport(url, { fetch: tap });
  await within(client.connect(transport), 'initialize result');
  const sessionId = transport.sessionId;
  emit(step, {
    sessionId,
    protocolVersion: transport.protocolVersion,
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
  });

  // list and call
  step = 'tools';
  emit(step, { names: await toolNames(client) });
  step = 'echo';
  emit(step, { result: await client.callTool({ name: 'echo', arguments: { text: 'hello from TypeScript' } }) });

  // list_changed on the GET stream
  step = 'ready-for-plugin';
  await within(getStreamOpen, 'GET stream');
  let changed = nextChange();
  emit(step);
  step = 'list_changed';
  let names;
  for (;;) {
    await within(changed, 'notifications/tools/list_changed');
    changed = nextChange();
    names = await toolNames(client);
    if (names.includes('get_current_time')) break;
  }
  emit(step, { names, notifications: changes });
  step = 'clock';
  emit(step, { result: await client.callTool({ name: 'get_current_time', arguments: { format: 'simple' } }) });

  // A streamed call cut off after its first progress notification.
  step = 'disconnected';
  let seen, token;
  const before = [];
  const cut = client
    .request({ method: 'tools/call', params: { name: 'test_tool_with_progress', arguments: {} } }, CallToolResultSchema, {
      onresumptiontoken: (t) => (seen = t), // called with each event's id, before its message
      onprogress: (p) => {
        before.push(p.progress);
        if (before.length === 1) {
          // Resume after the event just handled. Events already buffered may still be parsed
          // after the abort, but the closed client drops them: they count as missed.
          token = seen;
          transport.close(); // aborts every request of this transport
        }
      },
      timeout: TIMEOUT,
    })
    .then(
      (result) => ({ result }),
      (err) => ({ error: err.message }),
    );
  const outcome = await within(cut, 'end of the cut-off call');
  emit(step, { progress: before, lastEventId: token, outcome });

  // Resume it on a new connection to the same session.
  step = 'resumed';
  const resumedTransport = new StreamableHTTPClientTransport(url, { sessionId, fetch: tap });
  resumedTransport.setProtocolVersion(transport.protocolVersion);
  const resumed = newClient();
  const replayed = [];
  // Replayed notifications carry the first connection's progress token, which this client never
  // issued: record them instead of letting the SDK drop them as unknown.
  resumed.setNotificationHandler(ProgressNotificationSchema, (n) => replayed.push(n.params));
  await resumed.connect(resumedTransport); // a set session id skips initialize
  const httpBefore = http.length;
  const result = await within(
    resumed.request({ method: 'tools/call', params: { name: 'test_tool_with_progress', arguments: {} } }, CallToolResultSchema, {
      resumptionToken: token, // sent as Last-Event-ID on a GET instead of POSTing the request again
      timeout: TIMEOUT,
    }),
    'result on the resumed stream',
  );
  emit(step, {
    progress: replayed.map((p) => p.progress),
    progressTokens: [...new Set(replayed.map((p) => p.progressToken))].length,
    http: http.slice(httpBefore),
    result,
  });

  // DELETE ends the session; its id is then unknown.
  step = 'terminated';
  const httpAtDelete = http.length;
  await resumedTransport.terminateSession();
  await resumed.close();
  const stale = newClient();
  const staleTransport = new StreamableHTTPClientTransport(url, { sessionId, fetch: tap });
  staleTransport.setProtocolVersion(transport.protocolVersion);
  await stale.connect(staleTransport);
  const afterDelete = await stale.listTools().then(
    () => ({ error: null }),
    (err) => ({ error: err.message, code: err.code }),
  );
  await stale.close();
  emit(step, { http: http.slice(httpAtDelete), afterDelete });

  step = 'done';
  emit(step);
} catch (err) {
  fail(err);
}
