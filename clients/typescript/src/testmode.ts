// Runs riskapi's test mode end to end with a client typed from the served OpenAPI document
// (openapi-typescript) and openapi-fetch: for every product and scenario it generates cases
// (POST /v1/test/generate), posts each item's request to the product's analysis endpoint
// exactly as it came (no casts: the document types items[].request as that endpoint's body),
// lists the product's results and reads back each one it made; then it registers a webhook
// endpoint and reads usage. First it posts a Meridian request with checks of many types and a
// Great Expectations suite, and a Cascade request with scenarios of several types, written out
// as a user writes them. Any error response, or a result that disagrees with the
// generator's planted verdict, exits non-zero.
//
//   RISKAPI_URL=http://127.0.0.1:8080 RISKAPI_KEY=sk_test_... node dist/testmode.js
//
// RISKAPI_WEBHOOK_URL is the endpoint it registers (and deletes again); by default a public
// https URL, which the service accepts only when its host resolves. Against a local server
// started with RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true, a loopback URL works offline.
import createClient from "openapi-fetch";
import type { components, paths } from "./riskapi.js";

type Schemas = components["schemas"];
type Product = Schemas["TestGenerateRequest"]["product"];

const baseUrl = requiredEnv("RISKAPI_URL").replace(/\/+$/, "") + "/v1";
const api = createClient<paths>({
  baseUrl,
  headers: { Authorization: `Bearer ${requiredEnv("RISKAPI_KEY")}` },
});

const scenarios: Record<Product, string[]> = {
  drift: ["shadow_principal_detected", "aligned", "legitimate_shift", "prompt_injection"],
  convergence: ["collusion_found", "competitive", "parallel_cost_shock", "bid_rigging"],
  cascade: ["fragile_network", "robust_network", "provider_concentration"],
  meridian: ["clean", "dirty"],
};

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
}

// must returns a call's data, or throws with the error envelope and the status.
async function must<T>(
  what: string,
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  if (error !== undefined || data === undefined) {
    throw new Error(`${what}: HTTP ${response.status}: ${JSON.stringify(error)}`);
  }
  return data;
}

function expectVerdict(what: string, got: boolean, want: boolean): void {
  if (got !== want) {
    throw new Error(`${what}: verdict ${got}, the generator planted ${want}`);
  }
}

// runScenario generates a case of one scenario and analyses it; it returns the ids made.
async function runScenario(product: Product, scenario: string): Promise<string[]> {
  const generated = await must(
    `generate ${product}/${scenario}`,
    api.POST("/test/generate", { body: { product, scenario, count: 1, seed: 7 } }),
  );
  const result = generated.data;
  const ids: string[] = [];
  switch (result.product) {
    case "drift":
      for (const item of result.items) {
        const out = await must("drift analyze", api.POST("/drift/analyze", { body: item.request }));
        expectVerdict(`drift ${scenario}`, out.data.shadow_principal_detected, item.expected.shadow_principal_detected);
        ids.push(out.data.id);
      }
      break;
    case "convergence":
      for (const item of result.items) {
        const out = await must("convergence analyze", api.POST("/convergence/analyze-market", { body: item.request }));
        expectVerdict(`convergence ${scenario}`, out.data.collusion_detected, item.expected.collusion_detected);
        ids.push(out.data.id);
      }
      break;
    case "cascade":
      for (const item of result.items) {
        const out = await must("cascade simulate", api.POST("/cascade/simulate", { body: item.request }));
        const done = await completedSimulation(out.data);
        if (done.systemic_risk_detected === null) {
          throw new Error(`cascade ${scenario}: simulation ${done.id} ended ${done.status}`);
        }
        expectVerdict(`cascade ${scenario}`, done.systemic_risk_detected, item.expected.systemic_risk_detected);
        ids.push(done.id);
      }
      break;
    case "meridian":
      for (const item of result.items) {
        const out = await must("meridian quality-check", api.POST("/meridian/quality-check", { body: item.request }));
        expectVerdict(`meridian ${scenario}`, out.data.passed, item.expected.passed);
        ids.push(out.data.id);
      }
      break;
  }
  return ids;
}

// completedSimulation waits for a simulation accepted for the background (202) to finish.
async function completedSimulation(sim: Schemas["CascadeSimulation"]): Promise<Schemas["CascadeSimulation"]> {
  for (let i = 0; sim.status === "queued" || sim.status === "running"; i++) {
    if (i === 600) {
      throw new Error(`cascade simulation ${sim.id} still ${sim.status} after 60 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const got = await must("cascade get", api.GET("/cascade/simulations/{id}", { params: { path: { id: sim.id } } }));
    sim = got.data;
  }
  return sim;
}

// listAndGet lists a product's results (newest first) and reads back each id it made.
async function listAndGet(product: Product, ids: string[]): Promise<void> {
  const query = { limit: 100 };
  let listed: { id: string }[];
  switch (product) {
    case "drift":
      listed = (await must("drift list", api.GET("/drift/analyses", { params: { query } }))).data;
      for (const id of ids) {
        await must(`drift get ${id}`, api.GET("/drift/analyses/{id}", { params: { path: { id } } }));
      }
      break;
    case "convergence":
      listed = (await must("convergence list", api.GET("/convergence/analyses", { params: { query } }))).data;
      for (const id of ids) {
        await must(`convergence get ${id}`, api.GET("/convergence/analyses/{id}", { params: { path: { id } } }));
      }
      break;
    case "cascade":
      listed = (await must("cascade list", api.GET("/cascade/simulations", { params: { query } }))).data;
      for (const id of ids) {
        await must(`cascade get ${id}`, api.GET("/cascade/simulations/{id}", { params: { path: { id } } }));
      }
      break;
    case "meridian":
      listed = (await must("meridian list", api.GET("/meridian/quality-checks", { params: { query } }))).data;
      for (const id of ids) {
        await must(`meridian get ${id}`, api.GET("/meridian/quality-checks/{id}", { params: { path: { id } } }));
      }
      break;
  }
  const seen = new Set(listed.map((item) => item.id));
  const missing = ids.filter((id) => !seen.has(id));
  if (missing.length > 0) {
    throw new Error(`${product}: the list lacks ${missing.join(", ")}`);
  }
}

// handWritten posts requests written out here, as a user would, with checks and scenarios of
// several types: the per-type schemas must accept them without casts.
async function handWritten(): Promise<void> {
  const checks: Schemas["MeridianCheck"][] = [
    { type: "not_null", column: "price" },
    { type: "null", column: "note", severity: "warning" },
    { type: "between", column: "price", min: 0, strict_min: true },
    { type: "not_in_set", column: "currency", values: ["XXX"] },
    { type: "not_regex", column: "currency", patterns: ["^x", "^y"], match_on: "any" },
    { type: "unique_within_record", columns: ["price", "cost"], ignore_row_if: "any_value_is_missing" },
    { type: "compound_unique", columns: ["currency", "price"] },
    { type: "column_comparison", column: "price", operator: ">=", other: "cost" },
    { type: "statistic_between", column: "price", statistic: "distinct_ratio", min: 0, max: 1 },
    { type: "row_count_between", min: 1, strict_max: false },
    { type: "columns_present", columns: ["price"], exact: false },
  ];
  const check = await must(
    "meridian hand-written",
    api.POST("/meridian/quality-check", {
      body: {
        source_id: "typescript-hand-written",
        data: { records: [{ price: 2, cost: 1, currency: "EUR", note: null }, { price: 3, cost: 1, currency: "USD", note: null }] },
        checks,
        expectation_suite: {
          name: "prices",
          expectations: [
            { type: "expect_column_values_to_not_be_null", kwargs: { column: "price" } },
            { expectation_type: "expect_column_values_to_be_between", kwargs: { column: "price", min_value: 0, max_value: null } },
          ],
        },
      },
    }),
  );
  const failed = check.data.checks.filter((c) => !c.success).map((c) => c.id);
  if (failed.length > 0) {
    throw new Error(`meridian hand-written: checks ${failed.join(", ")} failed`);
  }
  const sim = await must(
    "cascade hand-written",
    api.POST("/cascade/simulate", {
      body: {
        network: {
          nodes: [{ id: "a", capital: 1 }, { id: "b", capital: 0.5, provider: "p" }, { id: "c", provider: "p" }],
          edges: [{ source: "a", target: "b", weight: 1 }, { source: "b", target: "c", weight: 1 }],
        },
        model: "debtrank",
        simulations: 10,
        seed: 1,
        scenarios: [
          { type: "node_failure", nodes: ["a"] },
          { type: "shock", loss_fraction: 0.5 },
          { type: "targeted_attack", count: 1, by: "degree" },
          { type: "provider_outage", provider: "p", name: "p down" },
        ],
      },
    }),
  );
  await completedSimulation(sim.data);
  console.log(`hand-written: ${check.data.checks.length} Meridian checks passed; Cascade simulation ${sim.data.id}`);
}

async function main(): Promise<void> {
  await handWritten();
  for (const product of Object.keys(scenarios) as Product[]) {
    const ids: string[] = [];
    for (const scenario of scenarios[product]) {
      ids.push(...(await runScenario(product, scenario)));
    }
    await listAndGet(product, ids);
    console.log(`${product}: ${ids.length} generated cases analysed, listed and read back`);
  }

  const endpoint = await must(
    "webhook create",
    api.POST("/webhooks", {
      body: {
        url: process.env["RISKAPI_WEBHOOK_URL"] ?? "https://hooks.example.com/riskapi",
        events: ["*"],
        secret: "whsec_" + "0123456789abcdef".repeat(2),
        description: "TypeScript test-mode run",
      },
    }),
  );
  await must("webhook get", api.GET("/webhooks/{id}", { params: { path: { id: endpoint.data.id } } }));
  await must("webhook delete", api.DELETE("/webhooks/{id}", { params: { path: { id: endpoint.data.id } } }));
  console.log(`webhook ${endpoint.data.id} registered, read and deleted`);

  const now = new Date();
  const from = new Date(now.getTime() - 24 * 3600 * 1000);
  const usage = await must(
    "usage",
    api.GET("/usage", { params: { query: { from: from.toISOString().slice(0, 10), to: now.toISOString().slice(0, 10) } } }),
  );
  console.log(`usage: ${usage.data.days.length} days, ${usage.data.rate_limits.length} rate-limit states (livemode ${usage.data.livemode})`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
