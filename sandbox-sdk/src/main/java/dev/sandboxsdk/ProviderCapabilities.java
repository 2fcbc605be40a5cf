package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
/**
 * What a {@link SandboxProvider} can do, as data: the differences between providers that code
 * written against the seam must know, so that no caller branches on which provider it has.
 *
 * <pre>{@code
 * ProviderCapabilities can = provider.capabilities();
 * if (can.resumable()) {
 *   sandbox.shutdown();                      // files and checkpoints stay; wake() starts it again
 * } else {
 *   sandbox.destroy();                       // a Kubernetes pod ends for good when it stops
 * }
 * }</pre>
 *
 * @param managed whether the provider starts each sandbox and ends it ({@link ManagedSandbox#destroy()}
 *     removes it with its files); {@code false} describes an agent that someone else runs (one reached
 *     with {@link Sandbox#connect}), which its user neither creates, stops nor removes
 * @param resumable whether {@link ManagedSandbox#shutdown()} stops a sandbox with its files and
 *     checkpoints kept and {@link ManagedSandbox#wake()} starts it again; {@code false} where a sandbox
 *     ends for good when its agent stops (a Kubernetes pod: the provider refuses to shut it down, and a
 *     stopped one is {@link SandboxState#EXITED})
 * @param fromImage whether sandboxes are created from a container image ({@link SandboxSpec#image()},
 *     with its memory, CPU and process limits); {@code false} where the spec's image and limits are ignored
 * @param hostWorkspace whether each sandbox's workspace is a directory on this machine that the caller
 *     can read: {@link SandboxProvider#hostWorkspace(String)} returns it
 * @param workspace the directory commands start in, the same in every sandbox (the image's
 *     {@code /workspace}), or {@code null} where each sandbox has its own ({@link #hostWorkspace()})
 * @param isolation what keeps a sandbox's commands from the host, the same for every sandbox
 *     ({@code container}, {@code pod}), or {@code null} where it depends on the sandbox (a local
 *     sandbox: bubblewrap or none, see {@link LocalSandbox#isolation()})
 */
public record ProviderCapabilities(boolean managed, boolean resumable, boolean fromImage, boolean hostWorkspace,
    String workspace, String isolation) {

  /** A builder: managed, everything else off or unknown. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder with these capabilities, to change some. */
  public Builder toBuilder() {
    return new Builder().managed(managed).resumable(resumable).fromImage(fromImage).hostWorkspace(hostWorkspace)
        .workspace(workspace).isolation(isolation);
  }

  /** Builds {@link ProviderCapabilities}; not thread-safe. */
  public static final class Builder {
    private boolean managed = true;
    private boolean resumable;
    private boolean fromImage;
    private boolean hostWorkspace;
    private String workspace;
    private String isolation;

    private Builder() {
    }

    /** See {@link ProviderCapabilities#managed()}; default {@code true}. */
    public Builder managed(boolean managed) {
      this.managed = managed;
      return this;
    }

    /** See {@link ProviderCapabilities#resumable()}; default {@code false}. */
    public Builder resumable(boolean resumable) {
      this.resumable = resumable;
      return this;
    }

    /** See {@link ProviderCapabilities#fromImage()}; default {@code false}. */
    public Builder fromImage(boolean fromImage) {
      this.fromImage = fromImage;
      return this;
    }

    /** See {@link ProviderCapabilities#hostWorkspace()}; default {@code false}. */
    public Builder hostWorkspace(boolean hostWorkspace) {
      this.hostWorkspace = hostWorkspace;
      return this;
    }

    /** See {@link ProviderCapabilities#workspace()}; default {@code null}. */
    public Builder workspace(String workspace) {
      this.workspace = workspace;
      return this;
    }

    /** See {@link ProviderCapabilities#isolation()}; default {@code null}. */
    public Builder isolation(String isolation) {
      this.isolation = isolation;
      return this;
    }

    /** The capabilities. */
    public ProviderCapabilities build() {
      return new ProviderCapabilities(managed, resumable, fromImage, hostWorkspace, workspace, isolation);
    }
  }
}
