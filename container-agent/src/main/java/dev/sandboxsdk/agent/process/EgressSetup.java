package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.egress.CertificateAuthority;
import dev.sandboxsdk.agent.egress.Egress;
import dev.sandboxsdk.agent.egress.EgressProxy;
import dev.sandboxsdk.agent.egress.EgressTrust;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the agent's egress proxy where its commands can reach it. Commands on the agent's own
 * network (no isolation, or bwrap with the network on) reach it on {@code 127.0.0.1:PORT} of the
 * host. Isolated commands without network live in a namespace with only loopback: the proxy then
 * listens on a Unix-domain socket in the agent's private directory, and the {@link NetnsRelay}
 * listens on {@code 127.0.0.1:PORT} inside the namespace and forwards there, so that the proxy is
 * the one way out.
 */
final class EgressSetup {
  private static final Logger log = LoggerFactory.getLogger(EgressSetup.class);

  private EgressSetup() {}

  /** The running egress, or null when the agent was started without a policy. */
  static Egress start(AgentConfig config, Bubblewrap bubblewrap) {
    if (config.egressPolicy() == null) {
      return null;
    }
    EgressProxy.Builder b = EgressProxy.builder().policy(config.egressPolicy())
        .resolver(Egress.resolver(config.egressTestHosts()));
    Path caDir = null;
    if (!config.egressSecrets().isEmpty()) {
      CertificateAuthority ca = CertificateAuthority.create("Sandbox egress CA");
      b.secrets(config.egressSecrets()).authority(ca)
          .trust(EgressTrust.systemAnd(config.egressTestTrust()));
      try {
        caDir = Egress.writeCaFiles(ca);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write the egress CA's certificate: " + e.getMessage(), e);
      }
      if (bubblewrap != null) {
        bubblewrap.bindReadOnly(caDir);
      }
      log.info("egress secrets {} with TLS interception for their hosts; CA bundle for commands in {}",
          config.egressSecrets(), caDir);
    }
    NetnsRelay relay = bubblewrap == null ? null : bubblewrap.relay();
    try {
      Egress egress = relay == null ? onLoopback(b, caDir) : inNamespace(b, relay, bubblewrap.scratch(), caDir);
      log.info("egress proxy for commands at {} ({} with {} rule(s){})", egress.proxyUrl(),
          config.egressPolicy().mode(), config.egressPolicy().rules().size(),
          relay == null ? "; only a firewall such as the image's SANDBOX_NETWORK=egress stops a command that"
              + " ignores the proxy variables" : ", via the network relay");
      return egress;
    } catch (IOException e) {
      Egress.deleteCaFiles(caDir);
      throw new UncheckedIOException("cannot start the egress proxy: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      Egress.deleteCaFiles(caDir);
      throw e;
    }
  }

  private static Egress onLoopback(EgressProxy.Builder b, Path caDir) throws IOException {
    EgressProxy proxy = b.start();
    return new Egress(proxy, "http://127.0.0.1:" + proxy.port(), caDir);
  }

  private static Egress inNamespace(EgressProxy.Builder b, NetnsRelay relay, Path dir, Path caDir) throws IOException {
    Path socket = dir.resolve("egress.sock");
    Files.deleteIfExists(socket);
    ServerSocketChannel ch = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    EgressProxy proxy;
    try {
      ch.bind(UnixDomainSocketAddress.of(socket), 1024);
      proxy = b.start(ch);
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    try {
      return new Egress(proxy, "http://127.0.0.1:" + relay.forwardEgress(socket), caDir);
    } catch (IOException | RuntimeException e) {
      proxy.close();
      throw e;
    }
  }
}
