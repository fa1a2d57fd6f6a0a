#!/usr/bin/env node
// A plughost plugin in Node.js, with one tool: greet. It serves what the host
// needs from a plugin in any language (docs/plugins-in-any-language.md):
//
//   - go-plugin's handshake: a gRPC server on a unix socket in
//     PLUGIN_UNIX_SOCKET_DIR, announced by one line on stdout;
//   - go-plugin's services: grpc.health.v1.Health ("plugin" is SERVING),
//     plugin.GRPCController (Shutdown exits), plugin.GRPCStdio (optional);
//   - the plughost contract, version 2 (proto/plugin.proto): Describe,
//     ListTools, WatchTools and CallsV2.
//
// stdout carries the handshake line and nothing else; log to stderr, which
// the host logs under the plugin's name.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

// What the host sets when it starts a plugin (go-plugin's handshake).
const COOKIE_KEY = 'PLUGHOST_PLUGIN';
const COOKIE_VALUE = '019544a273a2bc73910caf0182d93962b8325e5cc6bd15d4';
const CONTRACT = 2; // the contract version this plugin serves

if (process.env[COOKIE_KEY] !== COOKIE_VALUE) {
  process.stderr.write('This is a plughost plugin: plughost starts it (drop it into a plugin directory).\n');
  process.exit(1);
}
const offered = (process.env.PLUGIN_PROTOCOL_VERSIONS ?? '').split(',');
if (!offered.includes(String(CONTRACT))) {
  process.stderr.write(`the host offers contract versions [${offered}], this plugin serves ${CONTRACT}\n`);
  process.exit(1);
}

const here = dirname(fileURLToPath(import.meta.url)); // the real directory, symlinks resolved
const load = (file) => grpc.loadPackageDefinition(protoLoader.loadSync(join(here, 'proto', file), {
  longs: String, // uint64 call ids stay exact
  enums: String,
  defaults: true,
  oneofs: true, // frame.msg names the field of a oneof that is set
}));
const { plughost } = load('plugin.proto');
const health = load('health.proto').grpc.health.v1;
const goplugin = load('go_plugin.proto').plugin;

// The tool, as an MCP Tool object.
const greetTool = {
  name: 'greet',
  description: 'Greets someone by name, from Node.js.',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string', description: 'Who to greet' } },
    required: ['name'],
  },
};

// greet returns an MCP CallToolResult. The host has already checked the
// arguments against inputSchema.
async function greet(args, { signal, progress }) {
  signal.throwIfAborted();
  progress?.(1, 1, 'greeting');
  return { content: [{ type: 'text', text: `Hello, ${args.name}! (Node.js ${process.version})` }] };
}

const tools = new Map([[greetTool.name, { def: greetTool, run: greet }]]);
const json = (v) => Buffer.from(JSON.stringify(v));

// CallsV2 carries every call on one stream: Start (maybe followed by
// Arguments chunks), Cancel; the plugin answers progress or log frames,
// then exactly one result or error frame per call.
function callsV2(stream) {
  const calls = new Map(); // call id → { start, chunks, abort }
  const send = (frame) => { if (!stream.destroyed && stream.writable) stream.write(frame); };
  const run = async (id, c) => {
    const tool = tools.get(c.start.tool);
    if (!tool) {
      calls.delete(id);
      send({ callId: id, error: { code: grpc.status.NOT_FOUND, message: `no tool named ${JSON.stringify(c.start.tool)}` } });
      return;
    }
    let result;
    try {
      const args = JSON.parse(Buffer.concat(c.chunks).toString('utf8') || '{}');
      const progress = c.start.progress
        ? (p, total, message) => send({ callId: id, progress: { progress: p, total, message } })
        : undefined;
      result = await tool.run(args, { signal: c.abort.signal, progress });
    } catch (err) {
      // A failure the model should see: an isError result.
      result = { content: [{ type: 'text', text: String(err?.message ?? err) }], isError: true };
    }
    calls.delete(id);
    send({ callId: id, result: json(result) });
  };
  stream.on('data', (frame) => {
    const id = frame.callId;
    switch (frame.msg) {
      case 'start': {
        const c = { start: frame.start, chunks: [frame.start.arguments], abort: new AbortController() };
        calls.set(id, c);
        if (!frame.start.moreArguments) run(id, c);
        break;
      }
      case 'arguments': { // the rest of a Start's arguments, over 64 KiB
        const c = calls.get(id);
        if (!c) break;
        c.chunks.push(frame.arguments.data);
        if (!frame.arguments.more) run(id, c);
        break;
      }
      case 'cancel': // the answer still follows; the host may have stopped waiting
        calls.get(id)?.abort.abort();
        break;
    }
  });
  const endAll = () => { for (const c of calls.values()) c.abort.abort(); };
  stream.on('end', () => { endAll(); stream.end(); });
  stream.on('error', endAll); // the host went away
}

// WatchTools stays open for the plugin's lifetime; a write announces a change
// ({tools: true} makes the host call ListTools again). This plugin's tools
// never change, so it only keeps the streams.
const watchers = new Set();

const server = new grpc.Server();
server.addService(plughost.plugin.v1.Plugin.service, {
  Describe: (call, cb) => cb(null, {
    name: 'node-greeter',
    version: '1.0.0',
    contractVersion: CONTRACT,
    title: 'Node greeter',
    description: 'Greets people by name: an example plugin written in JavaScript.',
  }),
  ListTools: (call, cb) => cb(null, { tools: [...tools.values()].map((t) => json(t.def)) }),
  WatchTools: (call) => {
    watchers.add(call);
    call.on('cancelled', () => watchers.delete(call));
  },
  CallsV2: callsV2,
  // Every other rpc answers UNIMPLEMENTED; the host calls ListResources,
  // ListPrompts, Complete… only for what Describe offers (nothing here).
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
server.addService(goplugin.GRPCStdio.service, {
  StreamStdio: () => {}, // kept open, nothing to mirror: stderr reaches the host directly
});

// The socket goes in the directory go-plugin made for it (the sandbox lets
// the plugin write there, and the host connect).
const dir = process.env.PLUGIN_UNIX_SOCKET_DIR || process.env.TMPDIR || '/tmp';
const socket = join(dir, `plugin-${process.pid}.sock`);
server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    process.stderr.write(`listen on ${socket}: ${err.message}\n`);
    process.exit(1);
  }
  // go-plugin core protocol 1, contract 2, the address, gRPC.
  process.stdout.write(`1|${CONTRACT}|unix|${socket}|grpc\n`);
});
