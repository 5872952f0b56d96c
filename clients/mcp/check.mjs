// The official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in package.json) against
// riskapi's tools, as CI runs it (.ci/run): over Streamable HTTP at /mcp, then over stdio
// with `riskapi mcp` (StdioClientTransport). For each transport it lists the tools with their
// schemas, calls each tool with a request from POST /v1/test/generate and compares the answer
// with the REST endpoint's for the same input and seed, checks that a validation error is an
// isError result carrying the API's error object, and that a restricted key without the
// tool's scope is refused.
//
// Environment: RISKAPI_URL (the server), RISKAPI_KEY (a test key), RISKAPI_RESTRICTED_KEY (a
// test-mode restricted key with meridian:read only), RISKAPI_BINARY (the riskapi binary, for
// stdio).
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const base = process.env.RISKAPI_URL;
const key = process.env.RISKAPI_KEY;
const restrictedKey = process.env.RISKAPI_RESTRICTED_KEY;
const binary = process.env.RISKAPI_BINARY;
for (const [name, value] of Object.entries({ RISKAPI_URL: base, RISKAPI_KEY: key, RISKAPI_RESTRICTED_KEY: restrictedKey, RISKAPI_BINARY: binary })) {
  if (!value) throw new Error(`${name} is not set`);
}

const TOOLS = ["drift_record_events", "drift_analyze", "convergence_analyze_market", "cascade_simulate",
  "meridian_quality_check", "meridian_gate", "get_analysis"];
// The tool, its product, its REST endpoint and the test-mode scenario it is called with.
const CASES = [
  { tool: "drift_record_events", product: "drift", path: "/v1/drift/events", scenario: "aligned" },
  { tool: "drift_analyze", product: "drift", path: "/v1/drift/analyze", scenario: "shadow_principal_detected" },
  { tool: "convergence_analyze_market", product: "convergence", path: "/v1/convergence/analyze-market", scenario: "collusion_found" },
  { tool: "cascade_simulate", product: "cascade", path: "/v1/cascade/simulate", scenario: "fragile_network" },
  { tool: "meridian_quality_check", product: "meridian", path: "/v1/meridian/quality-check", scenario: "dirty" },
];
const RESULTS_PATH = { drift: "/v1/drift/analyses", convergence: "/v1/convergence/analyses",
  cascade: "/v1/cascade/simulations", meridian: "/v1/meridian/quality-checks" };

async function rest(method, path, body, apiKey = key) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

async function generate(product, scenario, seed) {
  const r = await rest("POST", "/v1/test/generate", { product, scenario, seed, count: 1 });
  assert.equal(r.status, 200, `generate ${product}/${scenario}: ${JSON.stringify(r.body)}`);
  return r.body.data.items[0].request;
}

// withoutHeader drops what differs between two stored copies of one result.
function withoutHeader(obj) {
  const { id, created_at, completed_at, ...rest } = obj;
  return rest;
}

function text(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function connect(transportName, apiKey) {
  const client = new Client({ name: "riskapi-ci", version: "1.0.0" });
  const transport = transportName === "http"
    ? new StreamableHTTPClientTransport(new URL(base + "/mcp"), { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } })
    : new StdioClientTransport({ command: binary, args: ["mcp"], env: { ...process.env, RISKAPI_BASE_URL: base, RISKAPI_API_KEY: apiKey }, stderr: "inherit" });
  await client.connect(transport);
  return client;
}

async function check(transportName) {
  const client = await connect(transportName, key);
  const tag = `[${transportName}]`;

  // tools/list: the spec's names, each with an object schema from the contract.
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort(), `${tag} tool names`);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, "object", `${tag} ${t.name}: schema type`);
    assert.ok(t.description && t.description.length > 20, `${tag} ${t.name}: description`);
    if (t.name !== "get_analysis") assert.ok(t.inputSchema.properties.idempotency_key, `${tag} ${t.name}: idempotency_key`);
    assert.ok(!JSON.stringify(t.inputSchema).includes("#/components/"), `${tag} ${t.name}: unresolved OpenAPI $ref`);
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.ok(byName.drift_analyze.inputSchema.$defs.DriftEvent, `${tag} drift_analyze: $defs.DriftEvent`);
  assert.deepEqual(byName.meridian_gate.inputSchema, byName.meridian_quality_check.inputSchema, `${tag} meridian_gate input`);

  // Each tool answers what its REST endpoint answers for the same input and seed.
  for (const c of CASES) {
    let request = await generate(c.product, c.scenario, 17);
    let restRequest = request;
    if (c.tool === "drift_record_events") {
      request = { agent_id: `mcp-${transportName}-record`, events: request.events };
      restRequest = { ...request, agent_id: `mcp-${transportName}-record-rest` };
    } else if (c.tool === "drift_analyze") {
      request = restRequest = { ...request, agent_id: `mcp-${transportName}-analyze` };
    }
    const result = await client.callTool({ name: c.tool, arguments: request });
    assert.ok(!result.isError, `${tag} ${c.tool}: isError: ${text(result)}`);
    const r = await rest("POST", c.path, restRequest);
    assert.equal(r.status, 200, `${tag} ${c.tool}: REST ${JSON.stringify(r.body)}`);
    let got = result.structuredContent, want = r.body.data;
    if (c.tool === "drift_record_events") {
      got = { ...got, agent_id: "" };
      want = { ...want, agent_id: "" };
    }
    assert.deepEqual(withoutHeader(got), withoutHeader(want), `${tag} ${c.tool}: tool and REST differ`);
    assert.ok(text(result).length > 40, `${tag} ${c.tool}: summary "${text(result)}"`);
    if (got.id) {
      const read = await client.callTool({ name: "get_analysis", arguments: { kind: c.product, id: got.id } });
      const stored = await rest("GET", `${RESULTS_PATH[c.product]}/${got.id}`);
      assert.deepEqual(read.structuredContent, stored.body.data, `${tag} get_analysis ${got.id}`);
    }
    console.log(`${tag} ${c.tool}: same as POST ${c.path}`);
  }

  // meridian_gate: the quality check's gate.
  const feed = await generate("meridian", "dirty", 23);
  const gate = await client.callTool({ name: "meridian_gate", arguments: feed });
  const q = (await rest("POST", "/v1/meridian/quality-check", feed)).body.data;
  assert.ok(!gate.isError, `${tag} meridian_gate: ${text(gate)}`);
  assert.equal(gate.structuredContent.gating, q.gating, `${tag} gating`);
  assert.equal(gate.structuredContent.score, q.score, `${tag} score`);
  assert.equal(gate.structuredContent.tier, q.tier, `${tag} tier`);
  assert.deepEqual(gate.structuredContent.failed_checks.map((f) => f.id), q.checks.filter((x) => !x.success).map((x) => x.id), `${tag} failed_checks`);
  console.log(`${tag} meridian_gate: ${gate.structuredContent.gating}, as the quality check`);

  // A validation error: an isError result with the API's error object.
  const bad = { agent_id: "not valid!" };
  const invalid = await client.callTool({ name: "drift_analyze", arguments: bad });
  const restInvalid = await rest("POST", "/v1/drift/analyze", bad);
  assert.equal(invalid.isError, true, `${tag} validation error is not isError`);
  assert.equal(restInvalid.status, 400);
  assert.deepEqual(invalid.structuredContent.error, restInvalid.body.error, `${tag} error object`);
  assert.ok(text(invalid).includes(restInvalid.body.error.code), `${tag} error text "${text(invalid)}"`);
  console.log(`${tag} validation error: isError with ${restInvalid.body.error.code}`);
  await client.close();

  // A restricted key without convergence:write is refused: over HTTP with status 403 and a
  // JSON-RPC error, over stdio with the JSON-RPC error.
  const restricted = await connect(transportName, restrictedKey);
  const market = await generate("convergence", "competitive", 5);
  let refused;
  try {
    await restricted.callTool({ name: "convergence_analyze_market", arguments: market });
  } catch (err) {
    refused = err;
  }
  assert.ok(refused, `${tag} restricted key was not refused`);
  if (transportName === "http") {
    assert.equal(refused.code, 403, `${tag} refusal status: ${refused}`);
    assert.match(String(refused.message), /-32043/, `${tag} refusal body: ${refused}`);
  } else {
    assert.equal(refused.code, -32043, `${tag} refusal code: ${refused}`);
  }
  assert.match(String(refused.message), /convergence:write/, `${tag} refusal names the scope`);
  console.log(`${tag} restricted key without convergence:write: refused`);
  await restricted.close().catch(() => {});
}

await check("http");
await check("stdio");
console.log("MCP TypeScript SDK: every check passed over Streamable HTTP and stdio");
