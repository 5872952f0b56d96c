// Browser test of the riskapi dashboard, driven by TestBrowser (browser_test.go), which starts
// `riskapi serve` and passes:
//   DASHBOARD_URL      base URL of the server, e.g. http://127.0.0.1:43121
//   CHROMIUM           the browser binary (Debian's /usr/bin/chromium)
//   PLAYWRIGHT_DIR     a directory whose node_modules holds playwright-core
//   SCREENSHOT_DIR     where the screenshots go: <page>-1280.png and <page>-390.png
//   SECRETS_FILE       where to write the keys and secrets created, for the log check
//   WEBHOOK_URL        a receiver for the webhook test event
// The flow: sign up → generate a restricted test key with drift:read only → it works on
// GET /v1/drift/analyses and gets 403 on POST /v1/drift/analyze → revoke → 401. Every page is
// shot at 1280 and 390 px and must not scroll sideways at 390 px; no page after the one that
// shows a key may contain it.
import { createRequire } from "node:module";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const base = env("DASHBOARD_URL");
const shots = env("SCREENSHOT_DIR");
const require = createRequire(join(env("PLAYWRIGHT_DIR"), "package.json"));
const { chromium } = require("playwright-core");

const widths = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];
const secrets = []; // every key and secret shown once
const htmlSeen = []; // {seq, url, body} of every HTML response, in order, its entities decoded
// unescapeHTML decodes the character references html/template writes (a base64 secret's "+"
// is sent as "&#43;"), so that a secret is found in a page however it was escaped.
const unescapeHTML = (html) =>
  html.replace(/&#(\d+);/g, (_, d) => String.fromCharCode(Number(d)))
    .replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCharCode(parseInt(h, 16)))
    .replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
let seq = 0;
const steps = [];

function assert(cond, message) {
  if (!cond) throw new Error("assertion failed: " + message);
}
function step(name) {
  steps.push(name);
  console.log("step:", name);
}

async function api(method, path, key, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: "Bearer " + key, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, text };
}

const userDataDir = mkdtempSync(join(tmpdir(), "riskapi-e2e-profile-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: env("CHROMIUM"),
  headless: true,
  viewport: widths[0],
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let failed = null;
try {
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15000);
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    // The 404 page is visited on purpose; its status shows up as a console error.
    if (m.type() === "error" && !m.location().url.includes("/no-such-page")) pageErrors.push(m.text());
  });
  page.on("response", async (res) => {
    const type = res.headers()["content-type"] || "";
    if (!type.startsWith("text/html")) return;
    const n = ++seq;
    try { htmlSeen.push({ seq: n, url: res.url(), body: unescapeHTML(await res.text()) }); } catch { /* redirects have no body */ }
  });

  // shoot saves the page at both widths and checks that at 390 px nothing is wider than the screen.
  async function shoot(name) {
    for (const size of widths) {
      await page.setViewportSize(size);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert(overflow <= 1, `${name} at ${size.width}px scrolls sideways by ${overflow}px`);
      await page.screenshot({ path: join(shots, `${name}-${size.width}.png`), fullPage: true });
    }
    await page.setViewportSize(widths[0]);
  }
  const go = async (path) => {
    const res = await page.goto(base + path);
    return res.status();
  };

  step("sign-in page");
  assert((await go("/dashboard/signin")) === 200, "sign-in page loads");
  await shoot("signin");

  step("sign up");
  await page.click("text=Create one");
  await shoot("signup");
  const email = `e2e-${Date.now()}@example.com`;
  const password = "correct horse battery staple";
  await page.fill("#name", "E2E Analytics");
  await page.fill("#email", email);
  await page.fill("#password", password);
  await Promise.all([page.waitForURL("**/dashboard/settings/keys**"), page.click("button:has-text('Create account')")]);
  assert(await page.isVisible("text=Your account is ready"), "welcome notice after sign-up");
  await shoot("keys-empty");

  step("generate a restricted test key with drift:read only");
  await page.click("text=Generate New Key");
  await page.waitForURL("**/settings/keys/new");
  await shoot("key-new");
  await page.fill("#name", "drift reader");
  await page.selectOption("#type", "restricted");
  await page.selectOption("#mode", "test");
  await page.check("input[name=scopes][value='drift:read']");
  await page.fill("#rate_limit", "500");
  await page.click("button:has-text('Generate key')");
  await page.waitForSelector("#new-key");
  const key = (await page.textContent("#new-key")).trim();
  secrets.push(key);
  assert(/^sk_rstr_[0-9A-Za-z]{38}$/.test(key), "a restricted key is shown: " + key.slice(0, 8));
  const createdSeq = seq;
  await page.click("button[data-copy=new-key]");
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert(copied === key, "the copy button puts the key on the clipboard");
  await shoot("key-created");

  step("the key reads Drift analyses and may not run one");
  let r = await api("GET", "/v1/drift/analyses", key);
  assert(r.status === 200, `GET /v1/drift/analyses with drift:read: ${r.status} ${r.text}`);
  r = await api("POST", "/v1/drift/analyze", key, { agent_id: "agent_7" });
  assert(r.status === 403, `POST /v1/drift/analyze with drift:read: ${r.status} ${r.text}`);
  assert(JSON.parse(r.text).error.code === "FORBIDDEN", "403 is FORBIDDEN");

  step("the list shows the key by prefix and last four only");
  await page.click("text=back to API Keys");
  await page.waitForURL("**/dashboard/settings/keys");
  const display = `sk_rstr_…${key.slice(-4)}`;
  assert(await page.isVisible(`text=${display}`), "the list shows " + display);
  assert((await page.content()).includes("drift:read"), "the list shows the key's scope");
  await shoot("keys");

  step("a test key writes a Drift analysis, shown on the Analyses page");
  await page.click("text=Generate New Key");
  await page.selectOption("#type", "test");
  await page.fill("#name", "writer");
  await page.click("button:has-text('Generate key')");
  const writer = (await page.textContent("#new-key")).trim();
  secrets.push(writer);
  assert(writer.startsWith("sk_test_"), "a test key is shown");
  const events = [];
  const t0 = Date.UTC(2026, 10, 1);
  for (let i = 0; i < 60; i++) {
    const late = i >= 30;
    events.push({ id: "e" + i, timestamp: new Date(t0 + i * 3600_000).toISOString(), action: "purchase",
      principal_value: late ? 80 : 95, best_alternative_value: 96,
      beneficiaries: late ? [{ party: "vendor_x", value: 12 }] : [{ party: "vendor_y", value: 0.5 }] });
  }
  r = await api("POST", "/v1/drift/analyze", writer, { agent_id: "agent_7", principal_id: "user_42", events });
  assert(r.status === 200, `POST /v1/drift/analyze with a test key: ${r.status} ${r.text.slice(0, 300)}`);
  const analysisID = JSON.parse(r.text).data.id;
  await page.click("text=back to API Keys");
  await go("/dashboard/analyses");
  assert(await page.isVisible(`text=${analysisID}`), "the Analyses page lists " + analysisID);
  await shoot("analyses");

  step("a monitor of agent_7 looks at its stored events; the agent's timeline shows its alert");
  r = await api("POST", "/v1/drift/monitors", writer, { agent_id: "agent_7", principal_id: "user_42", min_events: 20 });
  assert(r.status === 201, `POST /v1/drift/monitors: ${r.status} ${r.text.slice(0, 300)}`);
  const monitorID = JSON.parse(r.text).data.id;
  r = await api("POST", "/v1/drift/events", writer, { agent_id: "agent_7", events });
  assert(r.status === 200, `POST /v1/drift/events: ${r.status} ${r.text.slice(0, 300)}`);
  let looks = 0;
  for (let i = 0; i < 100 && looks === 0; i++) {
    r = await api("GET", "/v1/drift/monitors/" + monitorID, writer);
    looks = JSON.parse(r.text).data.looks;
    if (looks === 0) await new Promise((done) => setTimeout(done, 100));
  }
  assert(looks >= 1, "the monitor looked within 10 s");
  assert((await go("/dashboard/agents/agent_7")) === 200, "the agent's page loads");
  assert((await page.locator("svg.chart polyline").count()) >= 1, "the timeline draws the parties' shares");
  assert(await page.isVisible(`text=${monitorID}`), "the agent's page shows its monitor");
  await shoot("agent");

  step("usage");
  await page.click("nav >> text=Usage");
  await page.waitForURL("**/dashboard/usage");
  assert(await page.isVisible("text=Test mode, every endpoint"), "the test-mode daily limit is shown");
  assert((await page.locator("svg.meter").count()) >= 2, "rate limits are drawn");
  await shoot("usage");

  step("webhooks: add, secret once, test, disable, delete");
  await page.click("nav >> text=Webhooks");
  await shoot("webhooks-empty");
  await page.fill("#url", env("WEBHOOK_URL"));
  await page.click("button:has-text('Add webhook')");
  await page.waitForSelector("#new-secret");
  const secret = (await page.textContent("#new-secret")).trim();
  secrets.push(secret);
  assert(secret.startsWith("whsec_"), "a signing secret is shown once");
  await shoot("webhook-created");
  await page.click("text=show the webhook");
  await page.click("button:has-text('Send test event')");
  await page.waitForSelector("text=A webhook.test event is on its way");
  // The dispatcher sends it within a moment; reload until the log shows it delivered.
  let delivered = false;
  for (let i = 0; i < 40 && !delivered; i++) {
    delivered = (await page.locator("td[data-label=Status]:has-text('succeeded')").count()) > 0;
    if (!delivered) { await page.waitForTimeout(250); await page.reload(); }
  }
  assert(delivered, "the test delivery succeeded and shows in the log");
  await shoot("webhook");
  await page.click("button:has-text('Disable')");
  await page.waitForSelector("text=The webhook is disabled");
  await page.click("nav >> text=Webhooks");
  await shoot("webhooks");
  await page.click("text=Deliveries and actions");
  await page.click("a:has-text('Delete')");
  await shoot("webhook-delete");
  await page.click("button:has-text('Delete webhook')");
  await page.waitForSelector("text=The webhook and its delivery log were deleted");

  step("revoke the restricted key");
  await page.click("nav >> text=Settings");
  await page.waitForURL("**/dashboard/settings/keys");
  await page.click(`tr:has-text("${display}") >> text=Revoke`);
  await page.waitForURL("**/revoke");
  await shoot("key-revoke");
  await page.click("button:has-text('Revoke key')");
  await page.waitForSelector("text=The key was revoked");
  r = await api("GET", "/v1/drift/analyses", key);
  assert(r.status === 401, `the revoked key: ${r.status} ${r.text}`);
  await shoot("keys-after-revoke");

  step("settings, live mode, sign out");
  await page.click(".subnav >> text=Account");
  await page.waitForURL("**/dashboard/settings");
  await shoot("settings");
  await page.click("button[name=mode][value=live]");
  await page.waitForSelector(".banner.live");
  assert(page.url().endsWith("/dashboard/settings"), "the mode switch returns to the same page");
  await page.click("nav >> text=Usage");
  await page.waitForSelector("text=Drift (per hour)");
  await shoot("usage-live");
  await page.click("button[name=mode][value=test]");
  await page.waitForSelector(".banner.test");
  assert((await go("/dashboard/no-such-page")) === 404, "an unknown page is 404");
  await shoot("not-found");
  await go("/dashboard/settings");
  await page.click("button:has-text('Sign out')");
  await page.waitForURL("**/dashboard/signin");
  assert((await go("/dashboard/settings/keys")) === 200 && page.url().endsWith("/dashboard/signin"), "signed out: pages ask to sign in");

  step("no page after the one-time display contains a key");
  for (const s of secrets) {
    const shownOn = htmlSeen.filter((h) => h.body.includes(s));
    assert(shownOn.length === 1, `a key or secret appears on ${shownOn.length} pages: ${shownOn.map((h) => h.url).join(", ")}`);
  }
  assert(htmlSeen.filter((h) => h.seq > createdSeq).length > 10, "pages were checked after the key was shown");
  assert(pageErrors.length === 0, "no script or console errors: " + pageErrors.join("; "));
  console.log(JSON.stringify({ ok: true, steps: steps.length, pages: htmlSeen.length }));
} catch (e) {
  failed = e;
} finally {
  writeFileSync(env("SECRETS_FILE"), JSON.stringify(secrets));
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
if (failed) {
  console.error(`FAILED after step "${steps.at(-1)}": ${failed.stack || failed}`);
  process.exit(1);
}
