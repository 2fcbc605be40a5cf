package dev.sandboxsdk.samples.webterm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.Keys;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The web terminal sample as a user meets it: started with the command the docs give (the
 * samples jar, {@code --port 0}), driven in a real headless Chromium through Debian's
 * chromedriver, and poked at with hostile WebSocket clients. The browser test reads the screen
 * from xterm.js's buffer (not from pixels) and leaves a screenshot in
 * {@code samples/target/webterm-screenshot.png}.
 *
 * <p>Without chromium and chromedriver the browser test is skipped, unless {@code CI=true}: then
 * it fails.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class WebTerminalIT {
  private static final Path CHROMIUM = Path.of(System.getProperty("webterm.chromium", "/usr/bin/chromium"));
  private static final Path CHROMEDRIVER = Path.of(System.getProperty("webterm.chromedriver", "/usr/bin/chromedriver"));
  private static final Path SCREENSHOT = Path.of("target", "webterm-screenshot.png").toAbsolutePath();
  private static final Pattern SIZE = Pattern.compile("(?m)^size=(\\d+) (\\d+)$");
  private static final Duration WAIT = Duration.ofSeconds(30);

  private static Process sample;
  private static URI page;
  private static final StringBuffer sampleOutput = new StringBuffer();

  @BeforeAll
  static void startTheSample() throws Exception {
    Path jar = Path.of("target", "samples.jar");
    assertThat(jar).as("built by the package phase").exists();
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // The run command of the docs, on any free port.
    sample = new ProcessBuilder(java, "-cp", jar.toString(), "dev.sandboxsdk.samples.webterm.WebTerminal", "--port", "0")
        .redirectErrorStream(true).start();
    CompletableFuture<URI> ready = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(sample.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          sampleOutput.append(line).append('\n');
          System.out.println("[sample] " + line);
          Matcher m = Pattern.compile("^web terminal: (\\S+)").matcher(line);
          if (m.find()) {
            ready.complete(URI.create(m.group(1)));
          }
        }
      } catch (java.io.IOException e) {
        // the sample has ended
      }
      ready.completeExceptionally(new AssertionError("the sample ended without a URL:\n" + sampleOutput));
    }, "sample-output");
    reader.setDaemon(true);
    reader.start();
    page = ready.get(90, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stopTheSample() throws Exception {
    if (sample != null) {
      sample.destroy(); // SIGTERM: its shutdown hook closes the sandbox and so ends the terminals
      if (!sample.waitFor(30, TimeUnit.SECONDS)) {
        sample.descendants().forEach(ProcessHandle::destroyForcibly);
        sample.destroyForcibly();
      }
      // Every hostile client above got a message and a close; none left a stack trace behind.
      assertThat(sampleOutput.toString()).doesNotContain("Exception").doesNotContain(" WARN ");
    }
  }

  // ---- in the browser

  @Test
  void typeResizeReconnectAndReloadInChromium() throws Exception {
    String missing = !Files.isExecutable(CHROMIUM) ? CHROMIUM + " (Debian package chromium)"
        : !Files.isExecutable(CHROMEDRIVER) ? CHROMEDRIVER + " (Debian package chromium-driver)" : null;
    if (missing != null) {
      if ("true".equals(System.getenv("CI"))) {
        fail("CI=true and the browser test cannot run: no " + missing);
      }
      System.err.println("[browser test skipped] no " + missing + " (CI=true makes this a failure)");
      assumeTrue(false, "no " + missing);
    }
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    // --no-sandbox: Chromium's own sandbox cannot start as root in a container (CI runs as root).
    options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,800");
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(CHROMEDRIVER.toFile()).usingAnyFreePort().build();
    WebDriver browser = new ChromeDriver(service, options);
    try {
      browser.get(page.toString());
      String id = awaitAttached(browser);
      assertThat(browser.getTitle()).isEqualTo("Sandbox terminal");

      // Keys into xterm.js's input element, as a user's typing arrives.
      type(browser, "echo hello-$((6*7))");
      await("hello-42 on the screen", () -> lines(browser).contains("hello-42"));
      // Output is bytes: UTF-8 (and escape sequences) reach xterm.js as the program wrote them.
      type(browser, "printf 'caf\\xc3\\xa9 \\xe2\\x9c\\x93 \\033[1;32mgreen\\033[0m\\n'");
      await("café ✓ green, decoded by xterm.js", () -> lines(browser).contains("café ✓ green"));

      type(browser, "echo \"size=$(stty size)\"");
      int[] before = lastSize(browser, 1);
      assertThat(before).as("stty size (rows cols) = the page's terminal").containsExactly(rows(browser), cols(browser));

      browser.manage().window().setSize(new Dimension(760, 520));
      await("the page refits the terminal to the smaller window", () -> cols(browser) < before[1]);
      type(browser, "echo \"size=$(stty size)\"");
      int[] after = lastSize(browser, 2);
      assertThat(after).as("stty size after the resize").containsExactly(rows(browser), cols(browser));
      assertThat(after).isNotEqualTo(before);

      // A lost connection: the page reconnects and resumes where it was, with nothing twice.
      js(browser, "webterm.socket.close()");
      awaitAttached(browser);
      type(browser, "echo again-$((1+1))");
      await("again-2 after the reconnect", () -> lines(browser).contains("again-2"));
      assertThat(lines(browser).stream().filter("hello-42"::equals)).as("output replayed twice?").hasSize(1);

      // A reload: a fresh page attaches to the same terminal (its id is in the URL) and replays it.
      browser.navigate().refresh();
      assertThat(awaitAttached(browser)).isEqualTo(id);
      await("the earlier output, replayed", () -> lines(browser).containsAll(List.of("hello-42", "again-2")));
      assertThat(lines(browser).stream().filter("hello-42"::equals)).hasSize(1);
      type(browser, "echo after-reload-$((2*3))");
      await("after-reload-6", () -> lines(browser).contains("after-reload-6"));
    } finally {
      try { // kept as the test's artifact, passed or failed
        Files.createDirectories(SCREENSHOT.getParent());
        Files.write(SCREENSHOT, ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));
        System.out.println("screenshot of the page: " + SCREENSHOT);
        System.out.println("screen buffer:\n" + String.join("\n", lines(browser)));
      } catch (WebDriverException e) {
        System.out.println("no screenshot, the browser failed: " + e.getMessage()); // the test's own failure stays the one reported
      } finally {
        browser.quit();
      }
    }
  }

  // ---- hostile clients

  @Test
  void badJsonIsAnsweredWithAMessageAndAClose() throws Exception {
    Client c = Client.open(page, "");
    String attached = c.text();
    assertThat(attached).contains("\"type\":\"attached\"");

    c.socket.sendText("{\"type\":", true);

    assertThat(c.textOfType("error")).contains("a control message is a JSON object");
    assertThat(c.closeCode()).isEqualTo(1007);
  }

  @Test
  void unknownMessagesAndBadSizesAreRefused() throws Exception {
    Client unknown = Client.open(page, "");
    unknown.text();
    unknown.socket.sendText("{\"type\":\"format-disk\"}", true);
    assertThat(unknown.textOfType("error")).contains("unknown control message");
    assertThat(unknown.closeCode()).isEqualTo(1008);

    Client huge = Client.open(page, "");
    huge.text();
    huge.socket.sendText("{\"type\":\"resize\",\"cols\":100000,\"rows\":5}", true);
    assertThat(huge.textOfType("error")).contains("from 1 to 1000");
    assertThat(huge.closeCode()).isEqualTo(1008);

    Client query = Client.open(page, "?cols=0&rows=24");
    assertThat(query.textOfType("error")).contains("'cols' must be a whole number from 1 to 1000");
    assertThat(query.closeCode()).isEqualTo(4400);
  }

  @Test
  void anUnknownTerminalIdIsAClearCloseNotAStackTrace() throws Exception {
    Client c = Client.open(page, "?id=no-such-terminal");

    assertThat(c.textOfType("error")).contains("no terminal 'no-such-terminal'");
    assertThat(c.closeCode()).isEqualTo(4404);
    assertThat(c.closeReason()).startsWith("no terminal 'no-such-terminal'");

    for (String bad : List.of("a%2Fb", "..%2F..%2Fprocess", "%00")) {
      Client badId = Client.open(page, "?id=" + bad);
      assertThat(badId.textOfType("error")).as(bad).contains("not a valid process id");
      assertThat(badId.closeCode()).as(bad).isEqualTo(4400);
    }
  }

  @Test
  void aMessageAboveTheLimitClosesTheSocket() throws Exception {
    Client c = Client.open(page, "");
    c.text();

    c.socket.sendBinary(ByteBuffer.wrap(new byte[WebTerminal.MAX_INPUT_BYTES + 1]), true);

    assertThat(c.closeCode()).isEqualTo(1009); // MESSAGE_TOO_BIG
  }

  @Test
  void closingTheSocketDetachesAndTheTerminalRunsOn() throws Exception {
    Client first = Client.open(page, "");
    String id = idOf(first.text());
    first.socket.sendBinary(ByteBuffer.wrap("sleep 1; echo still-$((40+2))\r".getBytes(StandardCharsets.UTF_8)), true);
    first.socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").join();

    Client second = Client.open(page, "?id=" + id + "&offset=0");
    assertThat(idOf(second.text())).isEqualTo(id);
    StringBuilder screen = new StringBuilder();
    await("still-42 from the detached terminal", () -> {
      screen.append(second.drainBinary());
      return screen.toString().contains("still-42\r\n");
    });
    second.socket.sendText("{\"type\":\"kill\"}", true);
    assertThat(second.textOfType("exit")).contains("\"exitCode\"");
    assertThat(second.closeCode()).isEqualTo(1000);
  }

  @Test
  void aSecondViewerWatchesWhatTheFirstTypes() throws Exception {
    Client typist = Client.open(page, "");
    String id = idOf(typist.text());
    Client viewer = Client.open(page, "?id=" + id);
    assertThat(idOf(viewer.text())).isEqualTo(id);

    typist.socket.sendBinary(ByteBuffer.wrap("echo watched-$((6*7))\r".getBytes(StandardCharsets.UTF_8)), true);

    StringBuilder seen = new StringBuilder();
    await("watched-42 on the viewer's socket", () -> {
      seen.append(viewer.drainBinary());
      return seen.toString().contains("watched-42\r\n");
    });
    viewer.socket.sendText("{\"type\":\"kill\"}", true);
    assertThat(typist.textOfType("exit")).contains("\"exitCode\"");
    assertThat(viewer.textOfType("exit")).contains("\"exitCode\"");
  }

  @Test
  void pagesOfOtherSitesAndOtherHostNamesAreRefused() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    HttpResponse<String> own = http.send(HttpRequest.newBuilder(page).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(own.statusCode()).isEqualTo(200);
    assertThat(own.body()).contains("vendor/xterm/xterm.js");
    assertThat(http.send(HttpRequest.newBuilder(page.resolve("vendor/xterm/xterm.js")).build(),
        HttpResponse.BodyHandlers.ofString()).body()).contains("Terminal");

    var refused = http.newWebSocketBuilder().header("Origin", "http://evil.example")
        .buildAsync(URI.create("ws://" + page.getAuthority() + "/ws"), new WebSocket.Listener() { });
    assertThat(refused).failsWithin(WAIT).withThrowableThat().havingCause()
        .isInstanceOfSatisfying(WebSocketHandshakeException.class, e -> assertThat(e.getResponse().statusCode()).isEqualTo(403));

    // DNS rebinding: another name that resolves to this machine.
    try (Socket raw = new Socket(page.getHost(), page.getPort())) {
      raw.getOutputStream().write("GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
          .getBytes(StandardCharsets.US_ASCII));
      String status = new BufferedReader(new InputStreamReader(raw.getInputStream(), StandardCharsets.US_ASCII)).readLine();
      assertThat(status).isEqualTo("HTTP/1.1 421 Misdirected Request");
    }
  }

  // ---- helpers

  private static String awaitAttached(WebDriver browser) {
    await("the page attached to a terminal", () -> Boolean.TRUE.equals(js(browser,
        "return !!(webterm.socket && webterm.socket.readyState === 1 && location.hash.length > 1"
            + " && document.getElementById('status').textContent.startsWith('terminal '))")));
    return (String) js(browser, "return decodeURIComponent(location.hash.slice(1))");
  }

  private static void type(WebDriver browser, String command) {
    WebElement input = browser.findElement(By.cssSelector(".xterm-helper-textarea"));
    input.sendKeys(command + Keys.ENTER);
  }

  /** The screen buffer, scrollback included, one string per row, as xterm.js holds it. */
  @SuppressWarnings("unchecked")
  private static List<String> lines(WebDriver browser) {
    return (List<String>) js(browser, "const b = webterm.term.buffer.active, out = [];"
        + " for (let i = 0; i < b.length; i++) { out.push(b.getLine(i).translateToString(true)); }"
        + " return out;");
  }

  private static int[] lastSize(WebDriver browser, int count) {
    List<int[]> sizes = new ArrayList<>();
    await(count + " line(s) of stty size", () -> {
      sizes.clear();
      Matcher m = SIZE.matcher(String.join("\n", lines(browser)));
      while (m.find()) {
        sizes.add(new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))});
      }
      return sizes.size() >= count;
    });
    return sizes.get(sizes.size() - 1);
  }

  private static int cols(WebDriver browser) {
    return ((Number) js(browser, "return webterm.term.cols")).intValue();
  }

  private static int rows(WebDriver browser) {
    return ((Number) js(browser, "return webterm.term.rows")).intValue();
  }

  private static Object js(WebDriver browser, String script) {
    return ((JavascriptExecutor) browser).executeScript(script);
  }

  private static String idOf(String attached) {
    Matcher m = Pattern.compile("\"id\":\"([^\"]+)\"").matcher(attached);
    assertThat(m.find()).as("an id in %s", attached).isTrue();
    return m.group(1);
  }

  private static void await(String what, Supplier<Boolean> condition) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!Boolean.TRUE.equals(condition.get())) {
      if (System.nanoTime() > deadline) {
        fail("waited " + WAIT.toSeconds() + " s for " + what);
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        fail("interrupted waiting for " + what);
      }
    }
  }

  /** A WebSocket client that queues what it receives. */
  private static final class Client implements WebSocket.Listener {
    private final BlockingQueue<String> texts = new LinkedBlockingQueue<>();
    private final BlockingQueue<byte[]> binary = new LinkedBlockingQueue<>();
    private final CompletableFuture<Integer> closeCode = new CompletableFuture<>();
    private volatile String closeReason;
    private final StringBuilder partText = new StringBuilder();
    private WebSocket socket;

    static Client open(URI page, String query) {
      Client c = new Client();
      c.socket = HttpClient.newHttpClient().newWebSocketBuilder()
          .buildAsync(URI.create("ws://" + page.getAuthority() + "/ws" + query), c).join();
      return c;
    }

    String text() throws Exception {
      String t = texts.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertThat(t).as("a text message within %s", WAIT).isNotNull();
      return t;
    }

    String textOfType(String type) throws Exception {
      for (;;) {
        String t = text();
        if (t.contains("\"type\":\"" + type + "\"")) {
          return t;
        }
      }
    }

    String drainBinary() {
      StringBuilder s = new StringBuilder();
      for (byte[] b; (b = binary.poll()) != null; ) {
        s.append(new String(b, StandardCharsets.UTF_8));
      }
      return s.toString();
    }

    int closeCode() throws Exception {
      return closeCode.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    String closeReason() throws Exception {
      closeCode();
      return closeReason;
    }

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      partText.append(data);
      if (last) {
        texts.add(partText.toString());
        partText.setLength(0);
      }
      ws.request(1);
      return null;
    }

    @Override
    public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
      byte[] b = new byte[data.remaining()];
      data.get(b);
      binary.add(b);
      ws.request(1);
      return null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
      closeReason = reason;
      closeCode.complete(statusCode);
      return null;
    }

    @Override
    public void onError(WebSocket ws, Throwable error) {
      closeCode.completeExceptionally(error);
    }
  }

}
