#!/usr/bin/env node
// A plughost guardrail hook in Node.js. It serves no tools; the host asks it
// questions on the Hooks stream of contract 2 (proto/plugin.proto), at the
// points Describe offers (offers.hooks), wherever the operator's hooks { }
// block names this plugin:
//
//   - before_call: refuses a call whose arguments ask for a recursive
//     delete ("rm -rf");
//   - after_call: redacts AWS access key ids (AKIA…) from results;
//   - on_definitions: hides a definition that addresses the model in an
//     <IMPORTANT> tag (a tool-poisoning pattern).
//
// Each HookCall has an id; the plugin answers each with one HookAnswer of
// the same id, in any order. A HookCall with cancel set says the host
// stopped waiting for that id. stdout carries the handshake line and
// nothing else; log to stderr.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const COOKIE_KEY = 'PLUGHOST_PLUGIN';
const COOKIE_VALUE = '019544a273a2bc73910caf0182d93962b8325e5cc6bd15d4';
const CONTRACT = 2;

if (process.env[COOKIE_KEY] !== COOKIE_VALUE) {
  process.stderr.write('This is a plughost plugin: plughost starts it (drop it into a plugin directory).\n');
  process.exit(1);
}
const offered = (process.env.PLUGIN_PROTOCOL_VERSIONS ?? '').split(',');
if (!offered.includes(String(CONTRACT))) {
  process.stderr.write(`the host offers contract versions [${offered}], this plugin serves ${CONTRACT}\n`);
  process.exit(1);
}

const here = dirname(fileURLToPath(import.meta.url));
const load = (file) => grpc.loadPackageDefinition(protoLoader.loadSync(join(here, 'proto', file), {
  longs: String, // uint64 ids stay exact
  enums: String,
  defaults: true,
  oneofs: true,
}));
const { plughost } = load('plugin.proto');
const health = load('health.proto').grpc.health.v1;
const goplugin = load('go_plugin.proto').plugin;

const text = (bytes) => Buffer.from(bytes ?? []).toString('utf8');
const accessKey = /AKIA[0-9A-Z]{16}/g;

// judge answers one question: { decision, reason, rewritten }. It may be
// async (a hook that asks a service), and signal ends when the host stops
// waiting.
async function judge(q, { signal }) {
  signal.throwIfAborted();
  switch (q.point) {
    case 'before_call':
      if (text(q.arguments).includes('rm -rf')) {
        return { decision: 'REFUSE', reason: 'recursive deletes are not allowed' };
      }
      return { decision: 'PASS' };
    case 'after_call': {
      const result = text(q.result);
      if (!accessKey.test(result)) return { decision: 'PASS' };
      accessKey.lastIndex = 0;
      // An access key id holds no quote or backslash: the JSON stays valid.
      return { decision: 'REWRITE', reason: 'AWS access key ids redacted', rewritten: Buffer.from(result.replace(accessKey, '[redacted]')) };
    }
    case 'on_definitions':
      if (/<IMPORTANT>/i.test(text(q.definition))) {
        return { decision: 'HIDE', reason: `${q.kind} "${q.name}" addresses the model in an <IMPORTANT> tag` };
      }
      return { decision: 'PASS' };
  }
  throw new Error(`no hook at ${q.point}`); // the host does not ask what Describe did not offer
}

// hooks serves one Hooks stream: every question runs at once; an answer
// is written when its judge settles, unless the host cancelled it.
function hooks(stream) {
  const running = new Map(); // id → AbortController
  const send = (answer) => { if (!stream.destroyed && stream.writable) stream.write(answer); };
  stream.on('data', async (q) => {
    if (q.cancel) {
      running.get(q.id)?.abort();
      return;
    }
    const abort = new AbortController();
    running.set(q.id, abort);
    let answer;
    try {
      answer = { id: q.id, ...(await judge(q, { signal: abort.signal })) };
    } catch (err) {
      answer = { id: q.id, error: String(err?.message ?? err) }; // the host applies on_error
    }
    running.delete(q.id);
    send(answer);
  });
  const endAll = () => { for (const a of running.values()) a.abort(); };
  stream.on('end', () => { endAll(); stream.end(); });
  stream.on('error', endAll);
}

const server = new grpc.Server();
server.addService(plughost.plugin.v1.Plugin.service, {
  Describe: (call, cb) => cb(null, {
    name: 'node-guard',
    version: '1.0.0',
    contractVersion: CONTRACT,
    offers: { hooks: ['before_call', 'after_call', 'on_definitions'] },
    title: 'Node guard',
    description: 'A guardrail hook written in JavaScript: no recursive deletes, no AWS keys in results, no <IMPORTANT> tags in definitions.',
  }),
  ListTools: (call, cb) => cb(null, { tools: [] }),
  WatchTools: () => {}, // kept open: nothing ever changes
  Hooks: hooks,
});
server.addService(health.Health.service, {
  Check: (call, cb) => ['', 'plugin'].includes(call.request.service)
    ? cb(null, { status: 'SERVING' })
    : cb({ code: grpc.status.NOT_FOUND, details: `unknown service ${call.request.service}` }),
});
server.addService(goplugin.GRPCController.service, {
  Shutdown: (call, cb) => {
    cb(null, {});
    setImmediate(() => { server.forceShutdown(); process.exit(0); });
  },
});
server.addService(goplugin.GRPCStdio.service, { StreamStdio: () => {} });

const dir = process.env.PLUGIN_UNIX_SOCKET_DIR || process.env.TMPDIR || '/tmp';
const socket = join(dir, `plugin-${process.pid}.sock`);
server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    process.stderr.write(`listen on ${socket}: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`1|${CONTRACT}|unix|${socket}|grpc\n`);
});
