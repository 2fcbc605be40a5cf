// The JavaScript runner of a code context: one long-lived node process that reads one request per
// line on stdin ({"code": ..., "maxOutputBytes": ...}) and answers with JSON lines on fd 1. The
// user's code runs in one vm context, so top-level let/const/function persist between runs; its
// console and process.stdout/stderr send "stdout"/"stderr" events instead of writing to fd 1.
'use strict';
const vm = require('vm');
const util = require('util');
const fs = require('fs');
const { Writable } = require('stream');

function send(obj) {
  const line = Buffer.from(JSON.stringify(obj) + '\n', 'utf8');
  let off = 0;
  while (off < line.length) {
    try {
      off += fs.writeSync(1, line, off, line.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') {
        throw e;
      }
    }
  }
}

let run = null;

function emit(name, text) {
  if (run === null || run.truncated) {
    return;
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  const room = run.limit - run.used;
  if (bytes > room) {
    text = Buffer.from(text, 'utf8').subarray(0, Math.max(room, 0)).toString('utf8').replace(/\uFFFD$/, '');
    text += '\n[output truncated: this run wrote more than ' + run.limit + ' bytes]\n';
    run.truncated = true;
  }
  run.used += bytes;
  send({ type: name, text });
}

function writer(name) {
  return new Writable({
    decodeStrings: false,
    write(chunk, encoding, callback) {
      emit(name, typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      callback();
    }
  });
}

const out = writer('stdout');
const err = writer('stderr');
const userConsole = new console.Console({ stdout: out, stderr: err });
process.stdout.write = (chunk, encoding, callback) => out.write(chunk, encoding, callback);
process.stderr.write = (chunk, encoding, callback) => err.write(chunk, encoding, callback);

const sandbox = {
  console: userConsole, process, require, Buffer, URL, URLSearchParams, TextEncoder, TextDecoder,
  setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate, queueMicrotask,
  structuredClone, fetch: globalThis.fetch, AbortController, module: { exports: {} }
};
sandbox.exports = sandbox.module.exports;
sandbox.global = sandbox;
const context = vm.createContext(sandbox);
let cells = 0;

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

function errorEvent(e, interrupted) {
  const isObj = e !== null && typeof e === 'object';
  const name = isObj && typeof e.name === 'string' ? e.name : 'Error';
  const message = isObj && e.message !== undefined ? String(e.message) : String(e);
  const stack = isObj && typeof e.stack === 'string' ? e.stack : name + ': ' + message;
  const traceback = stack.split('\n').filter(l => !l.includes('[eval]') && !l.includes('node:vm'));
  return { type: 'error', ename: name, evalue: message, traceback, interrupted };
}

async function handle(request) {
  run = { limit: request.maxOutputBytes || 1048576, used: 0, truncated: false };
  const results = [];
  let error = null;
  try {
    cells += 1;
    const script = new vm.Script(request.code, { filename: 'cell-' + cells + '.js' });
    let value = script.runInContext(context, { breakOnSigint: true, displayErrors: false });
    if (isThenable(value)) {
      value = await value;
    }
    if (value !== undefined) {
      sandbox._ = value;
      const data = { 'text/plain': util.inspect(value, { depth: 4, colors: false }) };
      try {
        if (value !== null && typeof value === 'object') {
          const json = JSON.stringify(value);
          if (json !== undefined && json.length <= 1048576) {
            data['application/json'] = JSON.parse(json);
          }
        }
      } catch (ignored) {
        // not JSON: text/plain only
      }
      results.push(data);
    }
  } catch (e) {
    const interrupted = e !== null && typeof e === 'object' && typeof e.message === 'string'
      && e.message.startsWith('Script execution was interrupted by `SIGINT`');
    error = errorEvent(e, interrupted);
    if (interrupted) {
      error.ename = 'KeyboardInterrupt';
    }
  }
  results.forEach((data, i) => send({ type: 'result', data, isMainResult: i === 0 }));
  if (error !== null) {
    send(error);
  }
  send({ type: 'done', truncated: run.truncated });
  run = null;
}

process.on('SIGINT', () => {}); // between runs Ctrl-C does nothing; during one breakOnSigint takes it
let queue = Promise.resolve();
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', chunk => {
  pending += chunk;
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    let request;
    try {
      request = JSON.parse(line);
    } catch (ignored) {
      continue;
    }
    queue = queue.then(() => handle(request));
  }
});
process.stdin.on('end', () => process.exit(0));
send({ type: 'ready', language: 'javascript', version: process.versions.node, pid: process.pid });
