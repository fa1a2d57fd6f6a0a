// A stdio MCP server, on the official TypeScript SDK, whose tool "greet"
// is described with markup meant to run in whatever page shows it: a
// script element, an image whose onerror runs script, a javascript: link
// and a right-to-left override (U+202E) that would reverse what follows.
// The console's browser test (console_e2e_test.go) approves it and checks
// that its page shows the description as text and runs none of it. Run
// with NODE_PATH set to conformance/node_modules.
const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

// The description the test looks for, character for character, in the page's text.
const description =
  'Says hello. <script>alert("script")</script>"><img src=x onerror=alert("img") data-injected=1>' +
  '<a href="javascript:alert(1)">click</a> \u202Eevil';

const tools = [{ name: "greet", description, inputSchema: { type: "object", properties: {} } }];

const server = new Server({ name: "hostile", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: "hello" }] }));
server.connect(new StdioServerTransport());
