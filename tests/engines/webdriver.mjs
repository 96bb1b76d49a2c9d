// A minimal W3C WebDriver client over Node's fetch: the few commands the two-window tests
// use (session, new window, switch, navigate, execute). No npm dependency: selenium-webdriver
// or webdriverio would add a large tree for six HTTP calls, and the npm geckodriver package
// downloads a binary at install, which fails where only package registries are reachable.

export class WebDriverError extends Error {}

export class Session {
  constructor(driverUrl, id) {
    this.driverUrl = driverUrl;
    this.id = id;
    this.current = null;
  }

  /** Opens a session with `capabilities` (W3C `alwaysMatch`). */
  static async create(driverUrl, capabilities) {
    const value = await call(driverUrl, "POST", "/session", { capabilities: { alwaysMatch: capabilities } });
    const s = new Session(driverUrl, value.sessionId);
    s.capabilities = value.capabilities;
    s.current = await s.cmd("GET", "/window");
    return s;
  }

  cmd(method, path, body) {
    return call(this.driverUrl, method, `/session/${this.id}${path}`, body);
  }

  /** A new top-level window of the same browser (same profile, so same IndexedDB per origin). */
  async newWindow() {
    const { handle } = await this.cmd("POST", "/window/new", { type: "window" });
    return handle;
  }

  async use(handle) {
    if (this.current !== handle) {
      await this.cmd("POST", "/window", { handle });
      this.current = handle;
    }
  }

  async goto(handle, url) {
    await this.use(handle);
    await this.cmd("POST", "/url", { url });
  }

  /**
   * Runs `fn(...args)` in the page of window `handle` and returns what its promise resolves
   * to (JSON). A rejection comes back as a WebDriverError with the page's message.
   */
  async run(handle, fn, ...args) {
    await this.use(handle);
    const script = `const done = arguments[arguments.length - 1];
      Promise.resolve().then(() => (${fn}).apply(null, Array.from(arguments).slice(0, -1)))
        .then((v) => done({ ok: v === undefined ? null : v }), (e) => done({ err: String(e && (e.code ? e.code + ": " : "") + (e.message ?? e)) }));`;
    const r = await this.cmd("POST", "/execute/async", { script, args });
    if (r && "err" in r) throw new WebDriverError(`in page: ${r.err}`);
    return r.ok;
  }

  async close() {
    await this.cmd("DELETE", "").catch(() => {});
  }
}

async function call(base, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new WebDriverError(`${method} ${path}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  }
  if (!res.ok || (json.value && json.value.error)) {
    const v = json.value ?? {};
    throw new WebDriverError(`${method} ${path}: ${v.error ?? res.status}: ${v.message ?? text.slice(0, 300)}`);
  }
  return json.value;
}
