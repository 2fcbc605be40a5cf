package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.SandboxConflictException;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.Session;
import dev.sandboxsdk.SessionInfo;
import dev.sandboxsdk.SessionOptions;
import java.util.List;
import java.util.Map;

/**
 * The session tool group: {@code listSessions} and {@code deleteSession}, over {@link
 * dev.sandboxsdk.SandboxSessions}. A session is created by the first {@code exec} that names it
 * ({@link #open}), so a model needs no create step. Thread-safe and stateless.
 */
final class SessionTools implements ToolGroup {
  private final Sandboxes sandboxes;

  SessionTools(Sandboxes sandboxes) {
    this.sandboxes = sandboxes;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("listSessions", ToolHandler.blocking(SessionArgs.Listing.class, this::listSessions));
    tools.put("deleteSession", ToolHandler.blocking(SessionArgs.Delete.class, this::deleteSession));
  }

  /**
   * The session named {@code name} in {@code sb}, created now if it does not exist (two calls
   * racing to create it both get it).
   */
  static Session open(Sandboxes.Entry sb, String name) {
    for (int attempt = 0; ; attempt++) {
      var found = sb.sandbox().sessions().get(name);
      if (found.isPresent()) {
        return found.get();
      }
      try {
        return sb.sandbox().sessions().create(SessionOptions.defaults().withId(name));
      } catch (SandboxConflictException raced) {
        if (attempt > 0) {
          throw raced;
        }
      }
    }
  }

  // ---- results, in the order their fields are written

  record Info(String session, String createdAt, String lastUsedAt, long commandCount, boolean busy) {
    static Info of(SessionInfo s) {
      return new Info(s.id(), s.createdAt().toString(), s.lastUsedAt().toString(), s.commandCount(), s.busy());
    }
  }

  record Listing(List<Info> sessions, int count, String sandboxId) {
  }

  record Deleted(String session, boolean deleted, String sandboxId) {
  }

  ToolOutcome listSessions(SessionArgs.Listing args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    List<Info> all = sb.sandbox().sessions().list().stream().map(Info::of).toList();
    String text = all.isEmpty() ? "No shell sessions in sandbox '" + sb.id() + "'; exec with a session name"
        + " creates one." : all.size() + " shell session(s) in sandbox '" + sb.id() + "': "
        + String.join(", ", all.stream().map(Info::session).toList()) + ".";
    return new ToolOutcome(SandboxTools.json(new Listing(all, all.size(), sb.id())), text, false);
  }

  ToolOutcome deleteSession(SessionArgs.Delete args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    try {
      sb.sandbox().sessions().delete(args.session());
    } catch (SandboxNotFoundException e) {
      throw new ToolException("Sandbox '" + sb.id() + "' has no session '" + args.session() + "'. listSessions"
          + " shows the ones it has.");
    }
    return new ToolOutcome(SandboxTools.json(new Deleted(args.session(), true, sb.id())), "Deleted session '"
        + args.session() + "' of sandbox '" + sb.id() + "': its directory, variables and functions are gone;"
        + " a command that ran in it was stopped.", false);
  }
}
