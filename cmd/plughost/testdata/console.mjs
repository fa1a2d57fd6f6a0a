// The console's real-browser test, driven by console_e2e_test.go: Debian's Chromium through Playwright's driver
// (playwright-core, pinned in internal/browsertest), against a running `plughost serve --http` whose console signs
// people in through oidc-provider (conformance/oidc-provider.mjs).
//
//   node console.mjs '<JSON input>'
//
// The input (see consoleScriptInput in console_e2e_test.go) names the console's origin, the issuer, the browser, the
// screenshots' directory, the attacker's page (another origin) and the plugins of the scene. Each step prints one
// line ("step NAME") and leaves a screenshot NN-NAME.png; the last line is "ok" and the exit status 0, or the error
// (and a screenshot of every open page) and 1. The script asserts what a person sees; the Go test checks what the host
// recorded afterwards.
import { createRequire } from "node:module";
import path from "node:path";

const input = JSON.parse(process.argv[2]);
const { chromium } = createRequire(input.playwright)("playwright-core");

const base = input.console; // http://127.0.0.1:PORT
const console_ = (p) => base + "/console" + p;
const TIMEOUT = 30_000; // the longest any one wait may take: a plugin starting on two loaded cores

let shots = 0;
const pages = new Set();
async function shot(page, name) {
  shots++;
  await page.screenshot({ path: path.join(input.screenshots, `${String(shots).padStart(2, "0")}-${name}.png`), fullPage: true });
}

// step runs one step of the scene and screenshots page after it; it prints the step's name, and how long it took.
async function step(name, page, fn) {
  const start = performance.now();
  process.stdout.write(`step ${name}`);
  await fn();
  await shot(page, name);
  console.log(` (${Math.round(performance.now() - start)} ms)`);
}

function fail(message) {
  throw new Error(message);
}

// Every dialog any page opens (an alert that a plugin's text managed to run) is recorded, and fails the test.
const dialogs = [];
function watch(page) {
  pages.add(page);
  page.setDefaultTimeout(TIMEOUT);
  page.on("dialog", (d) => {
    dialogs.push(`${page.url()}: ${d.type()} ${JSON.stringify(d.message())}`);
    d.dismiss().catch(() => {});
  });
  page.on("close", () => pages.delete(page));
  return page;
}

// markNoReload sets a value in the page's window: a reload or navigation would lose it, so finding it later proves
// the page changed in place (the console's script, on a Server-Sent Event).
async function markNoReload(page) {
  await page.evaluate(() => {
    window.__plughostConsoleTest = "not reloaded";
  });
}
async function assertNotReloaded(page, what) {
  const mark = await page.evaluate(() => window.__plughostConsoleTest);
  if (mark !== "not reloaded") fail(`${what}: the page was reloaded (the change was to come live, without a reload)`);
}

// injected lists what markup from a plugin's text would have made of the page: elements no console page has.
async function injected(page) {
  return page.evaluate(() => {
    const found = [];
    for (const el of document.querySelectorAll("[data-injected], img[src='x'], a[href^='javascript:' i]")) found.push(el.outerHTML);
    for (const el of document.querySelectorAll("script")) {
      if (!el.src || new URL(el.src).origin !== location.origin) found.push(el.outerHTML);
    }
    for (const el of document.querySelectorAll("*")) {
      for (const a of el.attributes) if (/^on/i.test(a.name)) found.push(`${el.tagName} ${a.name}=${a.value}`);
    }
    return found;
  });
}

// signIn signs user in through the console's "Sign in with" link and the provider's real login and consent pages,
// in context, and returns the page, on the plugins page.
async function signIn(context, user) {
  const page = watch(await context.newPage());
  await step(`${user}-console-login`, page, async () => {
    await page.goto(console_("/"));
    await page.waitForURL((u) => u.href.startsWith(console_("/login")));
    await page.locator("a[data-testid=login-oauth]").waitFor();
  });
  await step(`${user}-provider-login`, page, async () => {
    await page.click("a[data-testid=login-oauth]");
    await page.waitForURL((u) => u.href.startsWith(input.issuer + "/"));
    await page.fill("input[name=login]", user);
    await page.fill("input[name=password]", `${user}'s password`);
  });
  await step(`${user}-provider-consent`, page, async () => {
    await page.click("button[type=submit]");
    await page.getByRole("button", { name: "Continue" }).waitFor();
  });
  await step(`${user}-signed-in`, page, async () => {
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL((u) => u.href.startsWith(console_("/plugins")));
    const who = await page.locator("[data-testid=whoami]").innerText();
    if (!who.includes(user)) fail(`signed in as ${user}, the page says ${JSON.stringify(who)}`);
  });
  return page;
}

// pluginRow is the plugins table's row of name.
const pluginRow = (page, name, state) =>
  page.locator(`tr[data-plugin="${name}"]${state ? `[data-state="${state}"]` : ""}`);

// approveForm is the approve form of plugin on a page (the held page has one per plugin).
const approveForm = (page, plugin) =>
  page.locator(`form[data-testid=approve]:has(input[name=plugin][value="${plugin}"])`);

const browser = await chromium.launch({
  executablePath: input.chromium,
  headless: true,
  // Debian's Chromium as the machine runs it: no sandbox (root), no GPU, and none of its own traffic to the
  // outside (refused here, and slow to fail). Playwright gives each launch a fresh, empty user data directory.
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const { quarantined, held, hostile } = input;

  // alice (groups ops, readers) signs in through the provider's login page, and sees the plugin nobody approved.
  const alice = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const list = await signIn(alice, "alice");
  await step("alice-sees-quarantined", list, async () => {
    await pluginRow(list, quarantined.name, "quarantined").waitFor();
    await markNoReload(list);
  });

  // Its page: state, and the approve form with the digest the page shows.
  const review = watch(await alice.newPage());
  let digest, aliceCSRF;
  await step("alice-reviews-quarantined", review, async () => {
    await review.goto(console_(`/plugins/${encodeURIComponent(quarantined.name)}`));
    const form = approveForm(review, quarantined.name);
    await form.waitFor();
    digest = await form.locator("input[name=digest]").inputValue();
    aliceCSRF = await form.locator("input[name=csrf]").inputValue();
    if (!digest) fail("the approve form carries no digest");
  });

  // A page of another origin (same site: 127.0.0.1 on another port, so alice's SameSite=Strict cookie goes along)
  // posts the approve form on its own, even with alice's CSRF token, as a leaked one would be: the console refuses it
  // (its Origin is not the console's) and nothing changes.
  const attack = watch(await alice.newPage());
  await step("cross-site-post-refused", attack, async () => {
    const answer = attack.waitForResponse((r) => r.url() === console_("/approve") && r.request().method() === "POST");
    const forge = new URL(input.attacker);
    forge.search = new URLSearchParams({ action: console_("/approve"), plugin: quarantined.name, digest, csrf: aliceCSRF }).toString();
    await attack.goto(forge.href);
    const r = await answer;
    if (r.status() !== 403) fail(`a cross-site POST to /console/approve was answered ${r.status()}, want 403`);
    await attack.waitForLoadState();
  });
  await attack.close();
  const check = watch(await alice.newPage());
  await step("cross-site-post-changed-nothing", check, async () => {
    await check.goto(console_("/plugins"));
    await pluginRow(check, quarantined.name, "quarantined").waitFor();
  });
  await check.close();

  // bob (groups readers) sees the console, but the rules let only ops approve: no button, and his own forged POST
  // (his session, his CSRF token, from the console's own origin) is refused.
  const bobContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const bob = await signIn(bobContext, "bob");
  await step("bob-sees-no-approve-button", bob, async () => {
    await bob.goto(console_(`/plugins/${encodeURIComponent(quarantined.name)}`));
    await bob.locator("main#main").waitFor();
    const text = await bob.locator("main#main").innerText();
    if (!text.includes(quarantined.name)) fail(`bob's page of ${quarantined.name} does not name it:\n${text}`);
    if ((await bob.locator("form[data-testid=approve], [data-testid=approve-button]").count()) !== 0) {
      fail("bob, whom the rules do not let approve, is shown an approve form");
    }
  });
  await step("bob-forged-post-refused", bob, async () => {
    const csrf = await bob.locator("form[action$='/console/logout'] input[name=csrf]").first().inputValue();
    const status = await bob.evaluate(async ({ plugin, digest, csrf }) => {
      const r = await fetch("/console/approve", { method: "POST", body: new URLSearchParams({ plugin, digest, csrf }), redirect: "manual" });
      return r.status;
    }, { plugin: quarantined.name, digest, csrf });
    if (status !== 403) fail(`bob's POST to /console/approve was answered ${status}, want 403`);
  });
  await bobContext.close();

  // alice approves: the approve POST, then (no reload) the plugins list shows it running and its page its tools.
  await step("alice-approves-quarantined", review, async () => {
    await review.click(`form[data-testid=approve]:has(input[name=plugin][value="${quarantined.name}"]) [data-testid=approve-button]`);
    await review.waitForURL(console_(`/plugins/${encodeURIComponent(quarantined.name)}`));
    await markNoReload(review);
  });
  await step("quarantined-starts-live", list, async () => {
    await pluginRow(list, quarantined.name, "running").waitFor();
    await assertNotReloaded(list, "the plugins list");
  });
  await step("its-tools-appear", review, async () => {
    await review.locator("[data-testid=tools] li", { hasText: quarantined.tool }).first().waitFor();
    await assertNotReloaded(review, `${quarantined.name}'s page`);
  });

  // The approved plugin whose tool changed: its diff on the held page, approved there.
  const heldPage = watch(await alice.newPage());
  await step("alice-reads-held-diff", heldPage, async () => {
    await heldPage.goto(console_("/held"));
    const item = heldPage.locator(`[data-testid=held][data-kind="tool"][data-name="${held.tool}"]`);
    await item.first().waitFor();
    const diff = await item.first().locator("[data-testid=diff]").innerText();
    // The words added are marked as such: on a "+ " line, or inside a word diff's {+…+}.
    const added = diff.split("\n").some((l) => (l.startsWith("+ ") && l.includes(held.added)) || l.includes(`{+${held.added}`));
    if (!added) fail(`the diff of ${held.name}'s ${held.tool} does not show ${JSON.stringify(held.added)} added:\n${diff}`);
  });
  await step("alice-approves-held", heldPage, async () => {
    await heldPage.click(`form[data-testid=approve]:has(input[name=plugin][value="${held.name}"]) [data-testid=approve-button]`);
    await heldPage.waitForURL(console_(`/plugins/${encodeURIComponent(held.name)}`));
    await heldPage.locator("[data-testid=tools] li", { hasText: held.added }).first().waitFor();
    await heldPage.locator("[data-testid=held]").first().waitFor({ state: "detached" });
  });

  // The plugin whose description is markup: shown as text, character for character; nothing of it runs or renders.
  const hostilePage = watch(await alice.newPage());
  await step("hostile-description-is-text", hostilePage, async () => {
    await hostilePage.goto(console_(`/plugins/${encodeURIComponent(hostile.name)}`));
    const tool = hostilePage.locator("[data-testid=tools] li", { hasText: hostile.tool }).first();
    await tool.waitFor();
    const text = await tool.textContent();
    if (!text.includes(hostile.description)) fail(`${hostile.name}'s description is not shown as text: ${JSON.stringify(text)}`);
    const found = await injected(hostilePage);
    if (found.length) fail(`markup from ${hostile.name}'s description made it into the page: ${found.join(", ")}`);
  });
  await step("catalog-shows-hostile-as-text", hostilePage, async () => {
    await hostilePage.goto(console_("/catalog"));
    await hostilePage.locator("[data-testid=catalog-tools] li", { hasText: hostile.tool }).first().waitFor();
    const found = await injected(hostilePage);
    if (found.length) fail(`markup from ${hostile.name}'s description made it into the catalog: ${found.join(", ")}`);
  });
  for (const p of [list, review, heldPage]) {
    const found = await injected(p);
    if (found.length) fail(`markup from a plugin made it into ${p.url()}: ${found.join(", ")}`);
  }
  if (dialogs.length) fail(`dialogs opened: ${dialogs.join("; ")}`);
  console.log("ok");
} catch (err) {
  console.log(`\nerror: ${err.stack ?? err}`);
  for (const p of pages) await shot(p, "failure").catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}
