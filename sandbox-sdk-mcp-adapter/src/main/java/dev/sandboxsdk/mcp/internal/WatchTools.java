package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.FileEvent;
import dev.sandboxsdk.FileEventType;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.WatchOptions;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The file watch tool group: {@code watchFiles} follows a directory for a bounded time and
 * returns the changes it saw (at most {@code maxEvents}), each also sent as a progress message.
 * The call holds no thread while it waits: the SDK's publisher delivers the events. Thread-safe.
 */
final class WatchTools implements ToolGroup {
  static final Duration DEFAULT_TIME = Duration.ofSeconds(10);
  static final int DEFAULT_MAX_EVENTS = 200;

  private final Sandboxes sandboxes;
  private final ScheduledExecutorService timer;

  WatchTools(Sandboxes sandboxes, ScheduledExecutorService timer) {
    this.sandboxes = sandboxes;
    this.timer = timer;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("watchFiles", ToolHandler.of(WatchArgs.Watch.class, this::watchFiles));
  }

  private CompletableFuture<ToolOutcome> watchFiles(WatchArgs.Watch args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path() != null ? args.path() : ".";
    WatchOptions options = WatchOptions.defaults().withRecursive(args.recursive() == null || args.recursive());
    if (args.include() != null) {
      options = options.withInclude(args.include().toArray(new String[0]));
    }
    if (args.exclude() != null) {
      options = options.withExclude(args.exclude().toArray(new String[0]));
    }
    Duration time = SandboxTools.seconds(args.seconds(), DEFAULT_TIME);
    int max = args.maxEvents() != null ? args.maxEvents() : DEFAULT_MAX_EVENTS;
    Collector c = new Collector(sb, path, time, max, ctx);
    sb.sandbox().files().watch(path, options).subscribe(c);
    ctx.onCancel(c::cancel);
    var limit = timer.schedule(() -> c.finish("timeLimit"), time.toMillis(), TimeUnit.MILLISECONDS);
    c.result.whenComplete((r, e) -> limit.cancel(false)); // ended early: the limit must not hold the events
    return c.result;
  }

  /** Gathers one watch's events until the time limit, the event cap, or the end of the stream. */
  private static final class Collector implements Flow.Subscriber<FileEvent> {
    final CompletableFuture<ToolOutcome> result = new CompletableFuture<>();
    private final Sandboxes.Entry sandbox;
    private final String path;
    private final Duration time;
    private final int max;
    private final CallContext ctx;
    private final ArrayNode events = Json.array();
    private Flow.Subscription subscription;
    private boolean watching;
    private boolean overflow;
    private long pathChars;
    private boolean done;

    Collector(Sandboxes.Entry sandbox, String path, Duration time, int max, CallContext ctx) {
      this.sandbox = sandbox;
      this.path = path;
      this.time = time;
      this.max = max;
      this.ctx = ctx;
    }

    @Override
    public synchronized void onSubscribe(Flow.Subscription s) {
      subscription = s;
      if (done) {
        s.cancel();
      } else {
        s.request(Long.MAX_VALUE); // bounded by the cap below: the subscription is cancelled there
      }
    }

    @Override
    public void onNext(FileEvent e) {
      String message;
      synchronized (this) {
        if (done) {
          return;
        }
        if (e.type() == FileEventType.WATCHING) {
          watching = true;
          message = "watching " + path;
        } else {
          overflow |= e.type() == FileEventType.OVERFLOW;
          String type = e.type().name().toLowerCase(Locale.ROOT);
          events.add(Json.object().put("type", type).put("path", e.relativePath())
              .put("isDirectory", e.isDirectory()).put("time", e.timestamp().toString()));
          pathChars += e.relativePath().length();
          message = type + " " + e.relativePath();
        }
      }
      ctx.progress(1, message, null);
      synchronized (this) {
        if (events.size() >= max) {
          finish("maxEvents");
        } else if (pathChars >= FileTools.MAX_LISTING_CHARS) {
          finish("sizeLimit");
        }
      }
    }

    @Override
    public void onError(Throwable t) {
      synchronized (this) {
        if (done) {
          return;
        }
        done = true;
      }
      // A path the watch cannot follow reads as it does for the file tools; other failures go on to SandboxTools.
      result.completeExceptionally(t instanceof SandboxException e ? FileTools.fileError(e, "watchFiles", path, sandbox)
          : t);
    }

    @Override
    public void onComplete() {
      finish("stopped");
    }

    void cancel() {
      synchronized (this) {
        done = true;
        if (subscription != null) {
          subscription.cancel();
        }
      }
      result.cancel(false);
    }

    synchronized void finish(String why) {
      if (done) {
        return;
      }
      done = true;
      if (subscription != null) {
        subscription.cancel();
      }
      ObjectNode r = Json.object().put("path", path).put("watching", watching).put("count", events.size())
          .put("ended", why).put("overflow", overflow);
      r.set("events", events);
      r.put("note", note(why));
      result.complete(ToolOutcome.ok(SandboxTools.withSandbox(r, sandbox)));
    }

    private String note(String why) {
      String end = switch (why) {
        case "maxEvents" -> "Stopped at maxEvents (" + max + "): more changes may have happened; call watchFiles again"
            + " or list the directory with listFiles.";
        case "sizeLimit" -> "Stopped once the events' paths reached " + FileTools.MAX_LISTING_CHARS + " characters:"
            + " more changes may have happened; watch a smaller directory, or list it with listFiles.";
        case "stopped" -> "The watch ended because the directory was deleted or moved, or the sandbox stopped.";
        default -> "Watched for " + time.toMillis() / 1000.0 + " s.";
      };
      return (watching ? "" : "The watch had not started when the call ended: nothing was observed. ")
          + (overflow ? "Some events were lost (overflow): list the directory to see its state. " : "") + end;
    }
  }
}
