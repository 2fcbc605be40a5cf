# The Python runner of a code context: one long-lived interpreter that reads one request per line
# on stdin ({"code": ..., "maxOutputBytes": ...}) and answers with JSON lines on the file
# descriptor that was stdout when it started. The user's sys.stdout and sys.stderr become writers
# that send "stdout"/"stderr" events; fd 1 is pointed at fd 2, so what subprocesses and C code
# write arrives on the process's stderr pipe and never corrupts the protocol.
import ast, base64, io, json, linecache, os, signal, sys, threading, time, traceback

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
os.dup2(2, 1)
_send_lock = threading.Lock()


def _send(obj):
    line = json.dumps(obj, ensure_ascii=True, default=str)
    with _send_lock:
        _proto.write(line + "\n")
        _proto.flush()


class _Run:
    def __init__(self, limit):
        self.limit = limit
        self.used = 0
        self.truncated = False


_run = None
_running = False


class _Writer(io.TextIOBase):
    """Buffers the user's text and sends it as events: at 8 KiB, and every 20 ms otherwise."""

    def __init__(self, name):
        self.name = name
        self.buf = []
        self.size = 0
        self.lock = threading.Lock()

    @property
    def encoding(self):
        return "utf-8"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        with self.lock:
            self.buf.append(s)
            self.size += len(s)
            if self.size >= 8192:
                self._flush_locked()
        return len(s)

    def flush(self):
        with self.lock:
            self._flush_locked()

    def _flush_locked(self):
        if not self.buf:
            return
        text = "".join(self.buf)
        self.buf = []
        self.size = 0
        run = _run
        if run is None:
            return
        if run.truncated:
            return
        data = text.encode("utf-8", "surrogatepass")
        room = run.limit - run.used
        if len(data) > room:
            text = data[:max(room, 0)].decode("utf-8", "ignore")
            run.truncated = True
            text += "\n[output truncated: this run wrote more than %d bytes]\n" % run.limit
        run.used += len(data)
        _send({"type": self.name, "text": text})


_out = _Writer("stdout")
_err = _Writer("stderr")
sys.stdout = _out
sys.stderr = _err


def _flusher():
    while True:
        time.sleep(0.02)
        try:
            _out.flush()
            _err.flush()
        except Exception:
            pass


threading.Thread(target=_flusher, name="sandbox-output", daemon=True).start()


def _on_sigint(signum, frame):
    if _running:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)

_REPRS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_json_", "application/json"),
    ("_repr_latex_", "text/latex"),
)


def _bundle(value):
    data = {"text/plain": repr(value)}
    if isinstance(value, type):
        return data
    for attr, mime in _REPRS:
        try:
            method = getattr(value, attr, None)
            if not callable(method):
                continue
            r = method()
            if isinstance(r, tuple):
                r = r[0]
            if r is None:
                continue
            if mime.startswith("image/") and isinstance(r, (bytes, bytearray)) and mime != "image/svg+xml":
                r = base64.b64encode(bytes(r)).decode("ascii")
            if mime == "application/json":
                json.dumps(r)
            data[mime] = r
        except Exception:
            continue
    return data


def _figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    out = []
    try:
        for num in plt.get_fignums():
            fig = plt.figure(num)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", bbox_inches="tight")
            out.append({"text/plain": repr(fig), "image/png": base64.b64encode(buf.getvalue()).decode("ascii")})
    finally:
        plt.close("all")
    return out


def _error(e, interrupted):
    if isinstance(e, SyntaxError):
        lines = traceback.format_exception_only(type(e), e)
    else:
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != "<string>"]
        lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames) \
            + traceback.format_exception_only(type(e), e)
    return {"type": "error", "ename": type(e).__name__, "evalue": str(e), "traceback": lines,
            "interrupted": interrupted}


_globals = {"__name__": "__main__", "__builtins__": __builtins__}


_cells = [0]


def _execute(code):
    global _running
    _cells[0] += 1
    name = "<cell-%d>" % _cells[0]
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, name, "exec")
    _running = True
    try:
        exec(body, _globals)
        value = eval(compile(last, name, "eval"), _globals) if last is not None else None
    finally:
        _running = False
    return value


def _handle(request):
    global _run, _running
    _run = _Run(int(request.get("maxOutputBytes", 1 << 20)))
    results = []
    error = None
    main = False
    try:
        value = _execute(request["code"])
        if value is not None:
            _globals["_"] = value
            results.append(_bundle(value))
            main = True
    except BaseException as e:  # KeyboardInterrupt and SystemExit are data too
        _running = False
        error = _error(e, isinstance(e, KeyboardInterrupt))
    try:
        results.extend(_figures())
    except Exception as e:
        error = error or _error(e, False)
    _out.flush()
    _err.flush()
    for i, data in enumerate(results):
        _send({"type": "result", "data": data, "isMainResult": main and i == 0})
    if error is not None:
        _send(error)
    _send({"type": "done", "truncated": _run.truncated})
    _run = None


def _main():
    os.environ.setdefault("MPLBACKEND", "Agg")
    _send({"type": "ready", "language": "python", "version": sys.version.split()[0], "pid": os.getpid()})
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        try:
            _handle(request)
        except KeyboardInterrupt:  # arrived after the user's code ended: the run still gets its end
            _send({"type": "done", "truncated": False})


_main()
