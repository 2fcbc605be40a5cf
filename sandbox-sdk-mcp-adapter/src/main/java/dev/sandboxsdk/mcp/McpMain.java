package dev.sandboxsdk.mcp;

import dev.sandboxsdk.mcp.internal.AdapterConfig;
import dev.sandboxsdk.mcp.internal.HttpTransport;
import dev.sandboxsdk.mcp.internal.McpServer;
import dev.sandboxsdk.mcp.internal.Redactor;
import dev.sandboxsdk.mcp.internal.StdioTransport;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runnable MCP server, {@code java -jar sandbox-mcp.jar}: the sandbox SDK's methods as MCP
 * tools over stdio (the default) or Streamable HTTP ({@code --http}). Run with {@code --help} for
 * the options; {@code docs/mcp.md} describes them and every tool.
 */
public final class McpMain {
  private McpMain() {
  }

  /** Parses the options and serves until stdin closes (stdio) or the process is stopped (HTTP). */
  public static void main(String[] args) throws Exception {
    // stdout belongs to the protocol: keep the real one and send anything else printed to stderr.
    OutputStream protocolOut = new FileOutputStream(FileDescriptor.out);
    PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
    System.setOut(err);
    if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
      err.println(AdapterConfig.USAGE);
      return;
    }
    AdapterConfig config;
    try {
      config = AdapterConfig.parse(args, System.getenv());
    } catch (AdapterConfig.UsageException e) {
      err.println("sandbox-mcp: " + e.getMessage());
      err.println(AdapterConfig.USAGE);
      System.exit(2);
      return;
    }
    Logger log = LoggerFactory.getLogger(McpMain.class);
    config.passEnv().forEach((name, value) -> {
      if (value.length() < Redactor.MIN_LENGTH) {
        log.warn("--pass-env {}: the value is shorter than {} characters, so it is passed but not redacted",
            name, Redactor.MIN_LENGTH);
      }
    });
    McpServer server = new McpServer(config);
    log.info("sandbox-mcp {}", config);
    server.sandboxes().logProviderInBackground();
    if (!config.http()) {
      Runtime.getRuntime().addShutdownHook(new Thread(server::close, "mcp-shutdown"));
      new StdioTransport(server, System.in, protocolOut).run();
      server.close();
      System.exit(0);
      return;
    }
    HttpTransport transport = new HttpTransport(server);
    URI url;
    try {
      url = transport.start();
    } catch (IOException e) {
      err.println("sandbox-mcp: cannot listen on " + config.bind() + ":" + config.port() + ": " + e.getMessage());
      server.close();
      System.exit(1);
      return;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      transport.close();
      server.close();
      stopped.countDown();
    }, "mcp-shutdown"));
    err.println("SANDBOX_MCP_READY " + url); // a stable line for scripts to wait for
    err.flush();
    stopped.await();
  }
}
