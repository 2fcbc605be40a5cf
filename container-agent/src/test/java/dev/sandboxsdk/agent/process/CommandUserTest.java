package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CommandUserTest {
  @TempDir Path tmp;
  Path passwd;

  @BeforeEach
  void writePasswd() throws IOException {
    passwd = tmp.resolve("passwd");
    Files.writeString(passwd, String.join("\n",
        "root:x:0:0:root:/root:/bin/bash",
        "# a comment:x:1:1:::",
        "sandbox:x:1000:1000:Sandbox:/home/sandbox:/bin/sh",
        "nohome:x:1001:1002::/:/usr/sbin/nologin",
        "rootgroup:x:1003:0::/tmp:/bin/sh",
        ""));
  }

  @Test
  void aNameIsLookedUpWithItsGroupAndHomeAndGetsItsSupplementaryGroups() {
    CommandUser user = CommandUser.resolve("sandbox", passwd, "/usr/bin/setpriv");

    assertThat(user.uid()).isEqualTo(1000);
    assertThat(user.gid()).isEqualTo(1000);
    assertThat(user.name()).isEqualTo("sandbox");
    assertThat(user.home()).isEqualTo("/home/sandbox");
    assertThat(user.prefix()).containsExactly("/usr/bin/setpriv", "--reuid=1000", "--regid=1000", "--init-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--");
  }

  @Test
  void aUidWithAnEntryIsThatUserAndAGivenGroupWins() {
    CommandUser byUid = CommandUser.resolve("1001", passwd, "setpriv");
    assertThat(byUid.name()).isEqualTo("nohome");
    assertThat(byUid.gid()).isEqualTo(1002);

    CommandUser withGroup = CommandUser.resolve("1000:2000", passwd, "setpriv");
    assertThat(withGroup.name()).isEqualTo("sandbox");
    assertThat(withGroup.gid()).isEqualTo(2000);
    assertThat(withGroup.home()).isEqualTo("/home/sandbox");
  }

  @Test
  void aUidWithoutAnEntryNeedsItsGroupAndGetsNoSupplementaryGroupsAndHomeSlash() {
    assertThatThrownBy(() -> CommandUser.resolve("4242", passwd, "setpriv"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("--command-user 4242: uid 4242 has no entry in " + passwd
            + "; give its group as well (--command-user 4242:GID)");

    CommandUser user = CommandUser.resolve("4242:4343", passwd, "setpriv");
    assertThat(user.name()).isNull();
    assertThat(user.home()).isEqualTo("/");
    assertThat(user.prefix()).contains("--clear-groups").doesNotContain("--init-groups");
    assertThat(user.toString()).isEqualTo("(uid 4242, gid 4343)");
  }

  @Test
  void unknownNamesRootAndAMissingSetprivAreRefusedInOneLine() {
    assertThatThrownBy(() -> CommandUser.resolve("nosuchuser", passwd, "setpriv"))
        .hasMessage("--command-user nosuchuser: no such user in " + passwd);
    assertThatThrownBy(() -> CommandUser.resolve("root", passwd, "setpriv"))
        .hasMessageContaining("must not run as root");
    assertThatThrownBy(() -> CommandUser.resolve("rootgroup", passwd, "setpriv"))
        .hasMessageContaining("must not run as root (uid 1003, gid 0)");
    assertThatThrownBy(() -> CommandUser.resolve("sandbox", passwd, null))
        .hasMessage("--command-user needs setpriv(1) on the agent's PATH (Debian/Ubuntu: util-linux)");
    assertThatThrownBy(() -> CommandUser.resolve("sandbox", tmp.resolve("missing"), "setpriv"))
        .hasMessageStartingWith("--command-user: cannot read ");
  }

  @Test
  void syntaxIsANameOrUidOrUidColonGid() {
    assertThat(CommandUser.syntaxError("nobody")).isNull();
    assertThat(CommandUser.syntaxError("build-bot_2")).isNull();
    assertThat(CommandUser.syntaxError("65534")).isNull();
    assertThat(CommandUser.syntaxError("1000:1000")).isNull();
    assertThat(CommandUser.syntaxError("0")).contains("must not run as root");
    assertThat(CommandUser.syntaxError("1000:0")).contains("must not run as root");
    assertThat(CommandUser.syntaxError("4294967295")).contains("out of range");
    assertThat(CommandUser.syntaxError("1000:x")).contains("neither a user name nor UID or UID:GID");
    assertThat(CommandUser.syntaxError("")).contains("neither");
  }

  @Test
  void theProbeAcceptsOnlyTheUserWithoutAnyCapabilityAndWithNoNewPrivs() {
    CommandUser user = CommandUser.resolve("4242:4343", passwd, "setpriv");
    String good = String.join("\n", "Uid:\t4242\t4242\t4242\t4242", "Gid:\t4343\t4343\t4343\t4343",
        "CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1");

    assertThat(user.leftOver(good)).isNull();
    // What setpriv 2.38 leaves when the agent lacks CAP_SETPCAP: it exits 0 all the same.
    assertThat(user.leftOver(good.replace("CapBnd:\t0000000000000000", "CapBnd:\t00000000000000e0")))
        .isEqualTo("it would keep CapBnd 00000000000000e0");
    assertThat(user.leftOver(good.replace("NoNewPrivs:\t1", "NoNewPrivs:\t0").replace("Uid:\t4242", "Uid:\t0")))
        .isEqualTo("it would keep Uid 0 4242 4242 4242, NoNewPrivs 0");
    assertThat(user.leftOver("")).contains("Uid null").contains("CapEff null");
  }
}
