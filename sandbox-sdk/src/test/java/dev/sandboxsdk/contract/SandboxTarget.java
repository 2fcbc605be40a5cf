package dev.sandboxsdk.contract;

import dev.sandboxsdk.Sandbox;
import java.net.URI;
import java.util.Objects;
import java.util.concurrent.Callable;

/**
 * What a provider hands {@link SandboxContract}: a running sandbox, where its workspace is, and a
 * way to look at its processes and files. See {@link SandboxContract} for an example.
 */
public interface SandboxTarget extends AutoCloseable {
  /**
   * The sandbox under test. Its agent runs with {@link SandboxContract#agentArguments()} and is not
   * stopped for idleness while the suite runs. The suite never closes it; {@link #close()} does.
   */
  Sandbox sandbox();

  /** The base URL of the sandbox's agent as this JVM reaches it (the suite connects a client with a wrong token). */
  URI baseUrl();

  /**
   * The workspace as commands in the sandbox see it, for example {@code /workspace} in a
   * container: their default working directory, against which relative {@code cwd}s resolve.
   */
  String workspace();

  /**
   * Looks at the sandbox's processes and files; called once, after the sandbox started. The
   * default, an {@link ExecProbe}, asks through {@link #sandbox()} itself and so works wherever the
   * Sandbox API reaches; a target whose processes and workspace this JVM can see directly may
   * look there instead.
   */
  default SandboxProbe probe() {
    return new ExecProbe(sandbox(), workspace());
  }

  /**
   * An agent for one test to connect clients of its own to, and to close or destroy them: either
   * a new agent started like the one under test (with {@link SandboxContract#agentArguments()}),
   * or the agent under test itself when more clients can be connected to it
   * ({@link OwnAgent#connect}). The test closes it.
   */
  OwnAgent startOwnAgent() throws Exception;

  /** Stops the sandbox and everything it started. */
  @Override
  void close() throws Exception;

  /**
   * A target for a sandbox that runs elsewhere (a container, a pod), looked into through itself
   * (the default {@link #probe()}).
   *
   * @param baseUrl the base URL of its agent as this JVM reaches it
   * @param workspace the workspace as its commands see it
   * @param ownAgents starts an agent for one test, usually a second sandbox like this one
   * @param stop what {@link #close()} does: destroy the sandbox and release what it needed
   */
  static SandboxTarget of(Sandbox sandbox, URI baseUrl, String workspace, Callable<OwnAgent> ownAgents,
      AutoCloseable stop) {
    Objects.requireNonNull(sandbox, "sandbox == null");
    Objects.requireNonNull(baseUrl, "baseUrl == null");
    Objects.requireNonNull(workspace, "workspace == null");
    Objects.requireNonNull(ownAgents, "ownAgents == null");
    Objects.requireNonNull(stop, "stop == null");
    return new SandboxTarget() {
      @Override
      public Sandbox sandbox() {
        return sandbox;
      }

      @Override
      public URI baseUrl() {
        return baseUrl;
      }

      @Override
      public String workspace() {
        return workspace;
      }

      @Override
      public OwnAgent startOwnAgent() throws Exception {
        return ownAgents.call();
      }

      @Override
      public void close() throws Exception {
        stop.close();
      }

      @Override
      public String toString() {
        return "SandboxTarget{" + sandbox + "}";
      }
    };
  }

  /** An agent a test connects its own clients to; see {@link SandboxTarget#startOwnAgent()}. */
  interface OwnAgent extends AutoCloseable {
    /** A new builder for a client of this agent, with base URL and token set and the rest at defaults. */
    Sandbox.Builder clientBuilder();

    /** Looks into this agent's sandbox; keeps working after clients from {@link #clientBuilder()} are closed or destroyed. */
    SandboxProbe probe();

    /** Releases the probe and stops the agent if it was started for the test. */
    @Override
    void close() throws Exception;

    /**
     * An agent reachable at {@code baseUrl} with {@code token}, looked into by an {@link ExecProbe}
     * on a client of its own. {@link #close()} closes that client, then calls {@code stop} (pass
     * {@code () -> {}} when the agent is the one under test and must keep running).
     *
     * @param workspace the workspace as the agent's commands see it
     */
    static OwnAgent connect(URI baseUrl, String token, String workspace, AutoCloseable stop) {
      Objects.requireNonNull(baseUrl, "baseUrl == null");
      Objects.requireNonNull(token, "token == null");
      Objects.requireNonNull(stop, "stop == null");
      Sandbox probeClient = Sandbox.connect(baseUrl, token);
      ExecProbe probe = new ExecProbe(probeClient, workspace);
      return new OwnAgent() {
        @Override
        public Sandbox.Builder clientBuilder() {
          return Sandbox.builder().baseUrl(baseUrl).token(token);
        }

        @Override
        public SandboxProbe probe() {
          return probe;
        }

        @Override
        public void close() throws Exception {
          try {
            probeClient.close();
          } finally {
            stop.close();
          }
        }

        @Override
        public String toString() {
          return "OwnAgent{" + baseUrl + "}";
        }
      };
    }
  }
}
