package dev.sandboxsdk.agent.session;

import java.util.List;

/** Wire records of the session routes ({@link SessionRoutes}); every component is always written. */
final class SessionMessages {
  private SessionMessages() {
  }

  /** One session: its id, when it was made and last used, how many commands ran, whether one runs now. */
  record Info(String id, String createdAt, String lastUsedAt, long commandCount, boolean busy) {
    static Info of(Session s) {
      return new Info(s.id(), s.createdAt().toString(), s.lastUsedAt().toString(), s.commands(), s.busy());
    }
  }

  /** The answer of create and get: the session, and its id at the top as Cloudflare's answer has it. */
  record One(String sessionId, Info session) {
    static One of(Session s) {
      return new One(s.id(), Info.of(s));
    }
  }

  /** The sessions, oldest first. */
  record All(List<Info> sessions) {
  }

  /** The answer of delete. */
  record Deleted(String sessionId) {
  }
}
