// End-to-end test of the web console (/ui) in Debian's Chromium, driven by
// Playwright (playwright-core: it uses the system browser, downloads none).
//
//   node e2e.mjs [path/to/mnemo]     (default: ../../bin/mnemo, or $MNEMO_BIN)
//
// Starts two replicating nodes (alice's, which also hosts bob through a
// principal-bound token, and carol's), seeds them through the HTTP API,
// then in the browser: signs in with the owner token, searches, opens a
// memory, proposes an amendment that needs approval, approves it and sees
// it applied, sees carol's node on the cluster page, sees carol's save on
// the other node arrive live, and signs in as bob and does not see alice's
// private memory. It takes screenshots of the main pages (see shots).
// Prints "N passed, 0 failed" and exits 0; exits 1 on the first failure.
import { chromium } from "playwright-core";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const here = dirname(fileURLToPath(import.meta.url));
const bin = resolve(process.argv[2] ?? process.env.MNEMO_BIN ?? join(here, "../../bin/mnemo"));
// Screenshots go to docs/console/ (committed, shown in the README) with
// UPDATE_SCREENSHOTS=1, otherwise to the test's temporary directory, so a
// CI run does not rewrite tracked files with new ids and times.
const shotsInDocs = process.env.UPDATE_SCREENSHOTS === "1";
if (!existsSync(bin)) {
  console.error(`mnemo binary not found at ${bin}; build it with: go build -o bin/mnemo ./cmd/mnemo`);
  process.exit(1);
}

let passed = 0;
function check(name, cond, detail) {
  if (!cond) {
    throw new Error(`FAIL ${name}${detail === undefined ? "" : ": " + (typeof detail === "string" ? detail : JSON.stringify(detail))}`);
  }
  passed++;
  console.log(`ok   ${name}`);
}

const root = mkdtempSync(join(tmpdir(), "mnemo-ui-e2e-"));
const shots = shotsInDocs ? resolve(here, "../../docs/console") : join(root, "screenshots");
const procs = [];

// startNode runs `mnemo node` and resolves with its ready line's fields.
function startNode(name, extra) {
  const dir = join(root, name);
  mkdirSync(dir, { mode: 0o700 });
  // Amendments wait for an admin's approval, so the test can approve one.
  writeFileSync(join(dir, "config.json"), JSON.stringify({ approvals: { "*": ["amend"] } }));
  const p = spawn(bin, ["node", "--data", dir, "--agent", name, "--http", "127.0.0.1:0", ...extra], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  procs.push(p);
  const stderr = [];
  p.stderr.on("data", (d) => stderr.push(d));
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${name}: no ready line in 20s\n${Buffer.concat(stderr)}`)), 20000);
    p.on("exit", (code) => fail(new Error(`${name} exited (${code})\n${Buffer.concat(stderr)}`)));
    createInterface({ input: p.stdout }).on("line", (line) => {
      if (!line.startsWith("mnemo node ready")) return;
      clearTimeout(timer);
      const f = Object.fromEntries(line.split(" ").filter((w) => w.includes("=")).map((w) => w.split(/=(.*)/s).slice(0, 2)));
      ok({ name, dir, url: f.http, gossip: f.gossip, token: readFileSync(join(dir, "token"), "utf8").trim() });
    });
  });
}

async function api(node, method, path, token, body) {
  const res = await fetch(node.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

async function eventually(name, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`FAIL ${name}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main() {
  const keyFile = join(root, "cluster.key");
  execFileSync(bin, ["cluster-key", keyFile]);
  const cluster = ["--cluster-key", keyFile, "--gossip", "127.0.0.1:0", "--anti-entropy", "500ms"];
  const a = await startNode("alice", cluster);
  const c = await startNode("carol", [...cluster, "--join", a.gossip]);

  // Seed through the API: alice's private memory, a team both nodes hold,
  // and bob, a principal hosted on alice's node with a token of his own.
  const secret = await api(a, "POST", "/v1/memories", a.token, {
    type: "decision", title: "Zebra launch plan (alice only)", content: "The zebra launch moves to Thursday; tell nobody yet.",
    tags: ["launch", "private"], subject_type: "project", subject_id: "zebra",
  });
  await api(a, "POST", "/v1/memories", a.token, {
    type: "preference", title: "Alice prefers short standups", content: "Standups stay under ten minutes.", tags: ["team"],
  });
  await api(a, "POST", "/v1/namespaces", a.token, { namespace: "team://eng" });
  await api(a, "POST", "/v1/grants", a.token, { namespace: "team://eng", principal: "agent://carol", permissions: ["read", "write"] });
  await api(a, "POST", "/v1/grants", a.token, { namespace: "team://eng", principal: "agent://bob", permissions: ["read"] });
  const team = await api(a, "POST", "/v1/memories", a.token, {
    namespace: "team://eng", type: "decision", title: "Postgres for the orders service", content: "We use Postgres 16 for orders.",
    tags: ["db", "orders"],
  });
  await api(a, "POST", "/v1/projections", a.token, {
    source: "agent://alice", target: "agent://carol", filter: { tags: ["team"] }, level: "L2", live: true,
  });
  const bobToken = (await api(a, "POST", "/v1/tokens", a.token, { principal: "agent://bob" })).token;
  await api(a, "POST", "/v1/memories", bobToken, { type: "observation", title: "Bob's scratch note", content: "Remember to rotate the CI cache." });
  check("seeded through the API", secret.id && team.id && bobToken);

  const userDataDir = mkdtempSync(join(tmpdir(), "mnemo-ui-chromium-"));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const consoleErrors = [];
  try {
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    // Pages the test means to fail (a wrong token, bob's 404) log "Failed
    // to load resource"; anything else logged as an error (a CSP violation,
    // a script error) fails the test.
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    page.on("dialog", (d) => d.accept());
    mkdirSync(shots, { recursive: true });
    const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

    // Sign in with the owner token.
    await page.goto(a.url + "/ui/");
    check("signed out, /ui/ sends the browser to sign-in", page.url().endsWith("/ui/signin"), page.url());
    await page.fill("input[name=token]", "not a token");
    await page.click("button[type=submit]");
    check("a wrong token is refused", await page.isVisible("#signin-error"));
    await page.fill("input[name=token]", a.token);
    await shot("signin");
    await page.click("button[type=submit]");
    await page.waitForURL("**/ui/memories");
    check("the owner token signs in as agent://alice", (await page.textContent("#principal")) === "agent://alice");
    check("no token in the URL", !page.url().includes(a.token), page.url());
    const cookies = await ctx.cookies(a.url + "/ui/");
    check("the session cookie is HttpOnly and SameSite=Strict",
      cookies.length === 1 && cookies[0].httpOnly && cookies[0].sameSite === "Strict", cookies);
    await page.waitForSelector("#live.on");
    check("the live-update stream is open", true);
    await shot("memories");

    // Search with a filter, open the memory.
    await page.fill("#search input[name=q]", "zebra");
    await page.fill("#search input[name=tags]", "launch");
    await page.click("#search button[type=submit]");
    await page.waitForURL("**/ui/memories?q=zebra*");
    const rows = await page.locator("#results tbody tr").allTextContents();
    check("search finds alice's memory", rows.length === 1 && rows[0].includes("Zebra launch plan"), rows);
    await page.click("#results a");
    await page.waitForURL(`**/ui/memories/${secret.id}`);
    check("the memory page shows its content", (await page.textContent("#memory-content")).includes("moves to Thursday"));
    check("and its provenance", (await page.textContent("#provenance")).includes("original"));

    // Propose an amendment; it waits for approval; approve it; see it applied.
    await page.selectOption("#propose select[name=op]", "amend");
    await page.fill("#propose input[name=reason]", "the date moved again");
    await page.fill("#propose textarea[name=text]", "The zebra launch moves to Friday.");
    await page.click("#propose button[type=submit]");
    await page.waitForURL(`**/ui/memories/${secret.id}`);
    check("the amendment is pending", (await page.textContent("#edits tbody")).includes("pending"));
    check("the content is unchanged until approved", (await page.textContent("#memory-content")).includes("Thursday"));
    await shot("memory");
    await page.click("nav >> text=Governance");
    await page.waitForURL("**/ui/governance");
    check("governance lists the pending edit", (await page.textContent("#pending")).includes("the date moved again"));
    await shot("governance");
    await page.click("#pending button.approve");
    await page.waitForURL("**/ui/governance");
    check("nothing pending after approval", (await page.textContent("#pending")).includes("Nothing waits"));
    check("the audit log records the approval", (await page.textContent("#audit")).includes("approved"));
    await page.goto(`${a.url}/ui/memories/${secret.id}`);
    check("the approved amendment is applied", (await page.textContent("#memory-content")).includes("Friday"),
      await page.textContent("#memory-content"));

    // Namespaces and grants.
    await page.click("nav >> text=Namespaces");
    const eng = page.locator('section[data-namespace="team://eng"]');
    check("team://eng lists carol's grant and who signed it", (await eng.textContent()).includes("agent://carol") &&
      (await eng.locator("table.acl").textContent()).includes("agent://alice"));
    await shot("namespaces");

    // Cluster: carol's node is a member; wait for gossip if need be.
    await eventually("carol's node on alice's cluster page", async () => {
      await page.goto(a.url + "/ui/cluster");
      return (await page.locator("#members tr.member").count()) === 2 &&
        (await page.textContent("#members")).includes("agent://carol");
    });
    check("the cluster page shows the second node", true);
    await eventually("team://eng replicated to carol", async () => {
      const res = await fetch(`${c.url}/v1/memories/${team.id}`, { headers: { Authorization: `Bearer ${c.token}` } });
      return res.status === 200;
    });
    await page.goto(a.url + "/ui/cluster");
    check("per-peer counters are shown to the owner", (await page.locator("#peers tbody tr").count()) >= 1);
    await shot("cluster");

    // Live: carol saves on her node; alice's open page shows it without a
    // reload by the user.
    await page.goto(a.url + "/ui/memories?namespace=team://eng");
    await page.waitForSelector("#live.on");
    await api(c, "POST", "/v1/memories", c.token, {
      namespace: "team://eng", type: "observation", title: "Orders p99 is 40 ms after the index", content: "Measured on carol's node.",
    });
    await page.waitForSelector("#results >> text=Orders p99 is 40 ms", { timeout: 20000 });
    check("a save on the other node shows live", true);

    await page.click("nav >> text=Projections");
    check("the projection to carol is listed", (await page.textContent("#projections")).includes("agent://carol"));
    await shot("projections");

    // Sign in as bob (a principal-bound token): alice's private memory is
    // nowhere, the team memory he may read is there.
    // The owner token may view the console as bob, a principal this node hosts.
    await page.selectOption("#view-as select", "agent://bob");
    await page.click("#view-as button");
    await page.waitForURL("**/ui/memories");
    const asBob = await page.textContent("#results");
    check("the owner viewing as bob sees bob's note and not alice's plan",
      (await page.textContent("#principal")) === "agent://bob" && asBob.includes("Bob's scratch note") && !asBob.includes("Zebra"), asBob);

    await page.click("#signout button");
    await page.waitForURL("**/ui/signin");
    await ctx.clearCookies();
    await page.fill("input[name=token]", bobToken);
    await page.click("button[type=submit]");
    await page.waitForURL("**/ui/memories");
    check("bob's token signs in as agent://bob", (await page.textContent("#principal")) === "agent://bob");
    const bobList = await page.textContent("#results");
    check("bob sees his own note and the team memory", bobList.includes("Bob's scratch note") && bobList.includes("Postgres for the orders service"), bobList);
    check("bob does not see alice's private memory", !bobList.includes("Zebra") && !bobList.includes("standups"), bobList);
    await shot("memories-as-bob");
    await page.goto(`${a.url}/ui/memories?q=zebra`);
    check("bob's search for it finds nothing", (await page.locator("#results a").count()) === 0);
    const res = await page.goto(`${a.url}/ui/memories/${secret.id}`);
    check("bob opening its address gets 404 and not its content",
      res.status() === 404 && !(await page.content()).includes("Friday"), res.status());
    await page.goto(`${a.url}/ui/governance`);
    check("bob's governance page shows none of alice's edits", !(await page.content()).includes("the date moved again"));
    await page.goto(`${a.url}/ui/namespaces`);
    const bobNs = await page.content();
    check("bob's namespaces page shows team://eng but not alice's namespace",
      bobNs.includes("team://eng") && !bobNs.includes('data-namespace="agent://alice"'));
    await page.goto(`${a.url}/ui/cluster`);
    check("bob's cluster page hides the owner-only counters", (await page.locator("#peers").count()) === 0);

    check("no errors in the browser console (CSP violations among them)", consoleErrors.length === 0, consoleErrors);
  } finally {
    await ctx.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}

let failed = 0;
try {
  await main();
} catch (e) {
  failed = 1;
  console.error(e.message ?? e);
} finally {
  for (const p of procs) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => (p.exitCode === null ? new Promise((r) => p.on("exit", r)) : null)));
  rmSync(root, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed);
