'use strict';
// The browser half of the web terminal: xterm.js on a WebSocket to the sample's server (see
// TerminalSocket.java for the messages). The terminal's id is kept in the URL (#id): a reload, or
// the same URL in another tab, attaches to the same terminal and replays its output.
(() => {
  const CHUNK = 32 * 1024;             // the server takes input messages up to 64 KiB
  const status = document.getElementById('status');
  const encoder = new TextEncoder();

  const term = new Terminal({ cursorBlink: true, scrollback: 10000, theme: { background: '#1e1e1e' } });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(document.getElementById('terminal'));
  fit.fit();

  let socket = null;   // the open (or opening) WebSocket, null while there is none
  let offset = 0;      // output bytes seen: a lost connection resumes here
  let ended = false;   // the terminal has exited: nothing to reconnect to
  let retryMs = 250;

  // For the browser test (and the curious): the screen buffer is term.buffer.active.
  window.webterm = { term, get socket() { return socket; }, get offset() { return offset; } };

  const terminalId = () => decodeURIComponent(location.hash.slice(1));
  const setStatus = (text) => { status.textContent = text; };
  const forgetTerminal = () => history.replaceState(null, '', location.pathname + location.search);

  function connect() {
    const params = new URLSearchParams({ cols: term.cols, rows: term.rows });
    if (terminalId()) {
      params.set('id', terminalId());
      params.set('offset', offset);
    }
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(`${scheme}://${location.host}/ws?${params}`);
    ws.binaryType = 'arraybuffer';
    socket = ws;
    ws.onmessage = (event) => {
      if (typeof event.data === 'string') {
        control(JSON.parse(event.data));
      } else {
        const bytes = new Uint8Array(event.data);
        offset += bytes.length;
        term.write(bytes);   // xterm.js decodes UTF-8 across chunk boundaries itself
      }
    };
    ws.onclose = (event) => {
      if (socket === ws) {
        socket = null;
        closed(event);
      }
    };
  }

  function control(message) {
    switch (message.type) {
      case 'attached':
        history.replaceState(null, '', '#' + encodeURIComponent(message.id));
        setStatus(`terminal ${message.id}`);
        retryMs = 250;
        sendResize();   // attaching: the terminal takes this page's size
        break;
      case 'offset':
        if (message.offset > offset) {
          term.write(`\r\n[${message.offset - offset} bytes of earlier output are no longer kept]\r\n`);
        }
        offset = message.offset;
        break;
      case 'exit':
        ended = true;
        forgetTerminal();
        term.write(`\r\n[the terminal ended, exit code ${message.exitCode}]\r\n`);
        setStatus('the terminal ended; "New terminal" opens another');
        break;
      case 'error':
        setStatus(message.message);
        break;
    }
  }

  function closed(event) {
    if (ended) {
      return;
    }
    if (event.code === 4404) {          // the server does not know the terminal (any more)
      forgetTerminal();
      setStatus(`${event.reason}; "New terminal" opens another`);
      return;
    }
    if (event.code === 4400 || event.code === 1007 || event.code === 1008 || event.code === 1009) {
      setStatus(`the server refused: ${event.reason}`);   // retrying would be refused again
      return;
    }
    setStatus(`connection lost (${event.code}); retrying in ${retryMs} ms`);
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 5000);
  }

  function send(bytes) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      for (let i = 0; i < bytes.length; i += CHUNK) {
        socket.send(bytes.subarray(i, i + CHUNK));
      }
    }
  }

  function sendControl(message) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(message));
    }
  }

  const sendResize = () => sendControl({ type: 'resize', cols: term.cols, rows: term.rows });

  term.onData((data) => send(encoder.encode(data)));
  // Some mouse reports are bytes above 127 that are not UTF-8: send them as they are.
  term.onBinary((data) => send(Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff)));
  term.onResize(sendResize);
  window.addEventListener('resize', () => fit.fit());
  setInterval(() => sendControl({ type: 'ping' }), 20000);   // the server closes idle sockets after 60 s

  document.getElementById('end-terminal').onclick = () => sendControl({ type: 'kill' });
  document.getElementById('new-terminal').onclick = () => {
    const old = socket;
    socket = null;             // its close is not a lost connection: no retry
    if (old) {
      old.close();             // detaches only: the old terminal runs on
    }
    forgetTerminal();
    ended = false;
    offset = 0;
    retryMs = 250;
    term.reset();
    connect();
    term.focus();
  };

  connect();
  term.focus();
})();
