package dev.sandboxsdk;

import java.util.Map;

/**
 * The sandbox has no egress proxy, so there is no policy to read or change and no audit: its
 * agent was started without an egress policy ({@code --egress-policy}), or is too old to have one.
 * Create the sandbox with {@link SandboxSpec.Builder#egressPolicy(EgressPolicy)} (or
 * {@code LocalSandbox.Builder.egressPolicy}) to get one; a policy cannot be added to a running agent.
 */
public class EgressNotEnabledException extends SandboxNotFoundException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; see {@link SandboxException#SandboxException(String, Throwable, String, int, Map)}. */
  public EgressNotEnabledException(String message, Throwable cause, String code, int httpStatus,
      Map<String, Object> context) {
    super(message, cause, code, httpStatus, context);
  }
}
