// A real OAuth 2.1 / OpenID Connect authorization server for plughost's end-to-end tests: oidc-provider (pinned in
// package.json; an OpenID-certified implementation we did not write), configured as a team's authorization server
// in front of MCP servers. cmd/plughost's oidc_helpers_test.go starts it, one per test.
//
//   node oidc-provider.mjs [--opaque RESOURCE]...
//
// It listens on 127.0.0.1 at a free port and, when it serves, prints one JSON line on stdout:
//
//   {"issuer":"http://127.0.0.1:PORT","kid":"<the signing key's id>"}
//
// What it issues: access tokens by the client credentials grant (POST /token, the client's id and secret in HTTP
// Basic) for the one resource the request names (RFC 8707's resource parameter, required), as JWTs (typ at+jwt,
// RS256, the kid an RFC 7638 thumbprint, as oidc-provider chooses) whose "aud" is that resource, whose "scope" is
// the requested scopes that the resource server has (SCOPES), whose "sub" and "client_id" are the client's id (with
// client credentials the identity is the client), and whose "groups" claim is the client's (CLIENTS), so that rules
// can tell the identities apart. Any absolute URL is accepted as a resource: every resource server has SCOPES.
// Tokens for a resource named by --opaque are opaque instead, for the resource server to check at the introspection
// endpoint (POST /token/introspection, RFC 7662), which answers only the client "plughost" (the resource server's
// credentials; no other client may introspect).
// Metadata is at /.well-known/openid-configuration (OpenID Connect discovery; oidc-provider serves no RFC 8414
// document), keys at /jwks.
//
// People, too: the end users ACCOUNTS (alice, bob) sign in through a browser, by the authorization code grant with
// PKCE (S256), at oidc-provider's own development login page (GET /interaction/UID: a form with a login field, any
// password, button "Sign-in"; then the consent page, button "Continue"), for the public client "plughost-console"
// (CONSOLE_CLIENT: plughost's browser console). Its redirect URI is http://127.0.0.1/console/oauth/callback on any
// port (a native client's loopback redirect, RFC 8252 section 7.3, which oidc-provider matches without the port). The
// authorization and token requests name the resource (RFC 8707); the access token is then a JWT like the others, but
// its "sub" is the account, "client_id" plughost-console, and "groups" the account's (ACCOUNTS). A login that is not
// an account is refused at the end of the login (no such account: no code).
//
// Commands, one per line on stdin, each answered by one JSON line on stdout:
//
//   rotate   a new RSA key becomes the signing key, published first in the JWKS; the older keys stay published
//            (so tokens they signed still verify). The provider is built anew on the same listener: same issuer,
//            same port. Answers {"rotated":"<new kid>","kids":[<published kids, newest first>]}.
//   stats    answers {"jwks_fetches":N,"last_jwks_fetch_ms":<Unix ms of the last GET /jwks, 0 if none>}: whether a
//            resource server came back for the keys, and when.
//
// It exits when stdin closes (the test ended, or its process died), so it never outlives its test.
//
// Test credentials, for loopback tests only: each client's secret is "<id>-secret".
import crypto from "node:crypto";
import http from "node:http";
import readline from "node:readline";
import { parseArgs } from "node:util";
import Provider from "oidc-provider";

// The scopes every resource server has: a token carries those of its requested scopes that are among them.
const SCOPES = "mcp:tools mcp:admin";

// The clients: their ids are the identities. "shortlived" gets tokens that expire after 1 s (for expiry tests).
const CLIENTS = {
  alice: { groups: ["writers", "readers"] },
  bob: { groups: ["readers"] },
  shortlived: { groups: ["readers"], ttl: 1 },
};
const DEFAULT_TTL = 600; // seconds

// The end users, by login: their "groups" claims (in the access tokens issued to the console on their behalf).
const ACCOUNTS = {
  alice: { groups: ["ops", "readers"] },
  bob: { groups: ["readers"] },
};

// The console's client: public (no secret: a browser's PKCE instead), the authorization code grant only.
const CONSOLE_CLIENT = {
  client_id: "plughost-console",
  application_type: "native", // so that a loopback redirect URI matches on any port
  token_endpoint_auth_method: "none",
  grant_types: ["authorization_code"],
  response_types: ["code"],
  redirect_uris: ["http://127.0.0.1/console/oauth/callback", "http://[::1]/console/oauth/callback"],
};

// The resource servers whose tokens are opaque (checked by introspection), by resource URL.
const { values: args } = parseArgs({ options: { opaque: { type: "string", multiple: true, default: [] } } });
const OPAQUE = new Set(args.opaque);

// The resource server's own client, which may introspect tokens (and get none).
const INTROSPECTOR = "plughost";

// newKey makes an RSA signing key as a private JWK, its kid the RFC 7638 thumbprint (what oidc-provider would
// compute for a key without one), so that `rotate` can name it.
function newKey() {
  const { privateKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = privateKey.export({ format: "jwk" });
  const kid = crypto.createHash("sha256").update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n })).digest("base64url");
  return { ...jwk, kid, use: "sig", alg: "RS256" };
}

function newProvider(issuer, keys) {
  const provider = new Provider(issuer, {
    clients: [
      ...Object.keys(CLIENTS).map((id) => ({
        client_id: id,
        client_secret: `${id}-secret`,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
      })),
      { client_id: INTROSPECTOR, client_secret: `${INTROSPECTOR}-secret`, grant_types: [], response_types: [], redirect_uris: [] },
      CONSOLE_CLIENT,
    ],
    // An end user is an account only if ACCOUNTS has it.
    findAccount: async (_ctx, id) =>
      Object.hasOwn(ACCOUNTS, id) ? { accountId: id, claims: async () => ({ sub: id, groups: ACCOUNTS[id].groups }) } : undefined,
    pkce: { required: () => true },
    jwks: { keys },
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: true }, // the end users' login and consent pages
      introspection: { enabled: true, allowedPolicy: async (_ctx, client) => client.clientId === INTROSPECTOR },
      resourceIndicators: {
        enabled: true,
        // A token request must name its resource: none is assumed.
        defaultResource: async () => undefined,
        useGrantedResource: async () => false,
        getResourceServerInfo: async (_ctx, resource, client) => ({
          scope: SCOPES,
          accessTokenTTL: CLIENTS[client.clientId]?.ttl ?? DEFAULT_TTL,
          ...(OPAQUE.has(resource) ? { accessTokenFormat: "opaque" } : { accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } }),
        }),
      },
    },
    // A user's token speaks for the account, a client credentials token for the client.
    extraTokenClaims: async (_ctx, token) => ({
      groups: (token.accountId ? ACCOUNTS[token.accountId]?.groups : CLIENTS[token.clientId]?.groups) ?? [],
    }),
    // A token without a resource (opaque, for the UserInfo endpoint) lives as long as the others.
    ttl: { ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? DEFAULT_TTL },
  });
  return provider.callback();
}

let keys = [newKey()];
let jwksFetches = 0;
let lastJWKSFetch = 0;
let handler = () => {};
const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/jwks") {
    jwksFetches++;
    lastJWKSFetch = Date.now();
  }
  handler(req, res);
});
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  handler = newProvider(issuer, keys);
  const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
  out({ issuer, kid: keys[0].kid });

  const lines = readline.createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    switch (line.trim()) {
      case "rotate":
        keys = [newKey(), ...keys];
        handler = newProvider(issuer, keys);
        out({ rotated: keys[0].kid, kids: keys.map((k) => k.kid) });
        break;
      case "stats":
        out({ jwks_fetches: jwksFetches, last_jwks_fetch_ms: lastJWKSFetch });
        break;
      default:
        out({ error: `unknown command ${JSON.stringify(line)}: want rotate or stats` });
    }
  });
  lines.on("close", () => process.exit(0));
});
